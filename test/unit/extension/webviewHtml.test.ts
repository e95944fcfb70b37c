// The webview page HTML: the CSP stays nonce-only, the page's code is inside the page (no script for VS Code's
// webview service worker to lose), and a bundle an HTML parser would cut short is refused, not mangled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { extensionScripts, inlineScript, renderWebviewHtml } from '../../../src/extension/webview/html';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const asUri = (p: string) => `https://res.test/${p}`;

test('scripts are inlined under the nonce; stylesheets stay links; the CSP allows nothing else', () => {
  const code = 'document.body.dataset.ran = "yes";';
  const html = renderWebviewHtml(
    { title: 'T', scripts: ['dist/webview/x.js'], styles: ['dist/webview/x.css'], initialState: { a: '</script>' } },
    'https://csp.test',
    asUri,
    (p) => (p === 'dist/webview/x.js' ? code : ''),
    'N0NCE',
  );
  assert.ok(html.includes(`<script nonce="N0NCE" data-bundle="dist/webview/x.js">${code}</script>`));
  assert.doesNotMatch(html, /<script[^>]*\bsrc=/);
  assert.ok(html.includes('<link rel="stylesheet" nonce="N0NCE" href="https://res.test/dist/webview/x.css">'));
  const csp = /content="([^"]*)"/.exec(html)![1];
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-N0NCE'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https:\/\/res\.test/);
  // The embedded state cannot close its own tag either.
  assert.equal(html.match(/<\/script>/g)?.length, 2);
});

test('a bundle an HTML parser would cut short is refused with its path and offset', () => {
  assert.throws(
    () => inlineScript('dist/webview/bad.js', 'const s = "</SCRIPT>";'),
    /dist\/webview\/bad\.js cannot be inlined.*"<\/SCRIPT".*offset 11/,
  );
  assert.throws(() => inlineScript('b.js', 'x <!-- y'), /b\.js cannot be inlined.*"<!--"/);
  assert.equal(inlineScript('ok.js', 'if (a < b) c = "<scrip";'), 'if (a < b) c = "<scrip";');
});

test('every built webview bundle inlines, read from the extension the way the panels read it', () => {
  const bundles = readdirSync(join(ROOT, 'dist', 'webview')).filter((f) => f.endsWith('.js'));
  assert.ok(
    ['browser.js', 'live-panel.js', 'compare.js'].every((b) => bundles.includes(b)),
    `built bundles: ${bundles.join(', ')}`,
  );
  const read = extensionScripts(ROOT);
  for (const b of bundles) {
    const path = `dist/webview/${b}`;
    const html = renderWebviewHtml({ title: b, scripts: [path] }, 'https://csp.test', asUri, read);
    assert.ok(html.includes(readFileSync(join(ROOT, path), 'utf8')), `${path} is in its page verbatim`);
  }
});
