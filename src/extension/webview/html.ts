// The one way our webviews get their HTML: a nonce-only Content-Security-Policy (no remote content, no inline
// script without the nonce), theme colours from VS Code's CSS variables, and the initial state embedded in the
// page so a panel draws on first paint without a round trip to the extension host.
import { randomBytes } from 'node:crypto';
import type * as vscode from 'vscode';

export interface WebviewPage {
  title: string;
  /** Bundled scripts (dist/webview/*.js), as extension-relative paths. */
  scripts: string[];
  /** Stylesheets (e.g. the codicons CSS), as extension-relative paths. */
  styles?: string[];
  /** JSON-serialisable state the page reads synchronously from `#initial-state`. */
  initialState?: unknown;
  /** Markup placed in <body> before the scripts. */
  body?: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

/** JSON for a <script type="application/json"> block: `<` escaped so no string can close the tag. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value ?? null)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * The page's HTML. `cspSource` is `webview.cspSource`; `asUri` maps an extension-relative path to a webview URI
 * (`webview.asWebviewUri(Uri.joinPath(extensionUri, path)).toString()`). Pure: testable without VS Code.
 */
export function renderWebviewHtml(page: WebviewPage, cspSource: string, asUri: (path: string) => string, nonce = makeNonce()): string {
  const csp = [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    // Styles: our stylesheets plus the nonce'd <style>; web components (vscode-elements) adopt constructable
    // stylesheets, which CSP does not govern.
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  const styles = (page.styles ?? []).map((s) => `<link rel="stylesheet" nonce="${nonce}" href="${escapeHtml(asUri(s))}">`).join('\n');
  const scripts = page.scripts.map((s) => `<script nonce="${nonce}" src="${escapeHtml(asUri(s))}"></script>`).join('\n');
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
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, page: WebviewPage, joinPath: (base: vscode.Uri, p: string) => vscode.Uri): string {
  return renderWebviewHtml(page, webview.cspSource, (p) => webview.asWebviewUri(joinPath(extensionUri, p)).toString());
}
