// The one way our webviews get their HTML: a nonce-only Content-Security-Policy (no remote content, no inline
// script without the nonce), theme colours from VS Code's CSS variables, and the initial state embedded in the
// page so a panel draws on first paint without a round trip to the extension host.
// The page's code travels inside the page too (a nonce'd inline <script>), not as a resource to fetch: a webview's
// resources come through VS Code's webview service worker, and in code-server a webview created while that worker
// first registers can stay controlled by code-server's own root worker, which drops every answer — each resource
// request then hangs until a 408 a minute later, and the page stays blank with no error (reloading its HTML does
// not help; docs/NOTES.md, the paged-browser no-rows flake). Its code inlined, a page starts regardless. Stylesheets stay links: the
// codicon icons of vscode-elements need a stylesheet href to clone, and a lost sheet costs looks, not the page.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as vscode from 'vscode';

export interface WebviewPage {
  title: string;
  /** Bundled scripts (dist/webview/*.js), as extension-relative paths; their text is inlined (see above). */
  scripts: string[];
  /** Stylesheets (e.g. the codicons CSS), as extension-relative paths: links (see above). */
  styles?: string[];
  /** JSON-serialisable state the page reads synchronously from `#initial-state`. */
  initialState?: unknown;
  /** Markup placed in <body> before the scripts. */
  body?: string;
}

export function makeNonce(): string {
  return randomBytes(18)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '');
}

/** JSON for a <script type="application/json"> block: `<` escaped so no string can close the tag. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value ?? null)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** Reads a bundled script's text by its extension-relative path. */
export type ScriptReader = (path: string) => string;

/** A bundle's text for an inline <script>. An HTML parser ends a script at `</script` and treats `<!--` specially
 * inside one; rewriting either could change the code's meaning (a regex), so such a bundle is refused, loudly. */
export function inlineScript(path: string, code: string): string {
  const bad = /<\/script|<!--/i.exec(code);
  if (bad) throw new Error(`${path} cannot be inlined into a webview: it contains "${bad[0]}" at offset ${bad.index}`);
  return code;
}

const scriptCache = new Map<string, string>();

/** Script text from the installed extension's files (cached: an installed extension's files do not change). */
export function extensionScripts(extensionPath: string): ScriptReader {
  return (p) => {
    const file = join(extensionPath, p);
    let code = scriptCache.get(file);
    if (code === undefined) {
      code = readFileSync(file, 'utf8');
      scriptCache.set(file, code);
    }
    return code;
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * The page's HTML. `cspSource` is `webview.cspSource`; `asUri` maps an extension-relative path (a stylesheet) to a
 * webview URI (`webview.asWebviewUri(Uri.joinPath(extensionUri, path)).toString()`); `readScript` gives a script's
 * text. Pure: testable without VS Code.
 */
export function renderWebviewHtml(
  page: WebviewPage,
  cspSource: string,
  asUri: (path: string) => string,
  readScript: ScriptReader,
  nonce = makeNonce(),
): string {
  const csp = [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    // Styles: our stylesheets plus the nonce'd <style>; web components (vscode-elements) adopt constructable
    // stylesheets, which CSP does not govern.
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  const styles = (page.styles ?? [])
    .map((s) => `<link rel="stylesheet" nonce="${nonce}" href="${escapeHtml(asUri(s))}">`)
    .join('\n');
  const scripts = page.scripts
    .map((s) => `<script nonce="${nonce}" data-bundle="${escapeHtml(s)}">${inlineScript(s, readScript(s))}</script>`)
    .join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(page.title)}</title>
${styles}
</head>
<body>
${page.body ?? ''}
<script id="initial-state" type="application/json" nonce="${nonce}">${embedJson(page.initialState)}</script>
${scripts}
</body>
</html>`;
}

/** Convenience for a live `vscode.Webview`. */
export function webviewHtml(
  webview: vscode.Webview,
  extensionUri: vscode.Uri,
  page: WebviewPage,
  joinPath: (base: vscode.Uri, p: string) => vscode.Uri,
): string {
  return renderWebviewHtml(
    page,
    webview.cspSource,
    (p) => webview.asWebviewUri(joinPath(extensionUri, p)).toString(),
    extensionScripts(extensionUri.fsPath),
  );
}
