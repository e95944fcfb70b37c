// Stands in for VS Code around the live panel page: bundles the panel exactly like scripts/build.mjs, serves it on
// 127.0.0.1 with the page renderWebviewHtml makes (same nonce-only CSP), and opens it in headless Chromium with an
// `acquireVsCodeApi` that records what the page posts and saves. Theme variables are set on <html> through the
// CSSOM, as VS Code's webview host does.
import { build } from 'esbuild';
import { createServer, type Server } from 'node:http';
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { renderWebviewHtml } from '../../src/extension/webview/html';
import type { LivePanelInitialState } from '../../src/protocols/livePanel';
import { launchChromium } from './chromium';

export const ROOT = join(__dirname, '../..');
const OUT = join(ROOT, '.cache/webview-test/live-panel');
export const ARTIFACTS = join(ROOT, 'test-results/live-panel');

/** A dark theme's variables (VS Code injects these into every webview). */
const THEME: Record<string, string> = {
  '--vscode-foreground': '#cccccc',
  '--vscode-descriptionForeground': '#9d9d9d',
  '--vscode-editor-background': '#1f1f1f',
  '--vscode-font-family': 'system-ui, sans-serif',
  '--vscode-font-size': '13px',
  '--vscode-editor-font-family': 'monospace',
  '--vscode-widget-border': '#313131',
  '--vscode-panel-border': '#2b2b2b',
  '--vscode-charts-foreground': '#cccccc',
  '--vscode-charts-lines': '#cccccc80',
  '--vscode-charts-blue': '#3794ff',
  '--vscode-charts-orange': '#d18616',
  '--vscode-charts-green': '#89d185',
  '--vscode-charts-purple': '#b180d7',
  '--vscode-charts-red': '#f14c4c',
  '--vscode-charts-yellow': '#cca700',
  '--vscode-inputValidation-warningBorder': '#b89500',
  '--vscode-inputValidation-warningBackground': '#352a05',
  '--vscode-inputValidation-errorBorder': '#be1100',
  '--vscode-inputValidation-errorBackground': '#5a1d1d',
  '--vscode-editorWarning-foreground': '#cca700',
  '--vscode-editorError-foreground': '#f14c4c',
  '--vscode-list-hoverBackground': '#2a2d2e',
  '--vscode-focusBorder': '#0078d4',
  '--vscode-toolbar-hoverBackground': '#5a5d5e50',
};

let built: Promise<void> | undefined;
/** The panel bundle, built with scripts/build.mjs's browser options into a test-only directory. */
export function buildPanel(): Promise<void> {
  built ??= build({
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    bundle: true,
    sourcemap: true,
    logLevel: 'warning',
    loader: { '.ttf': 'file' },
    entryPoints: [join(ROOT, 'webview/live-panel/main.ts')],
    outfile: join(OUT, 'live-panel.js'),
  }).then(() => undefined);
  return built;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.ttf': 'font/ttf',
  '.map': 'application/json',
};

export interface Harness {
  browser: Browser;
  page: Page;
  server: Server;
  /** Console errors, page errors and CSP violations seen so far. */
  errors: string[];
  close(): Promise<void>;
}

export async function openPanel(initialState: LivePanelInitialState): Promise<Harness> {
  await buildPanel();
  mkdirSync(ARTIFACTS, { recursive: true });
  let origin = '';
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (path === '/favicon.ico') {
      res.writeHead(204).end(); // browsers ask for it; a webview never does
      return;
    }
    if (path === '/') {
      const html = renderWebviewHtml(
        { title: 'CoA live training', scripts: ['live-panel.js'], styles: ['live-panel.css'], initialState },
        origin,
        (p) => `${origin}/${p}`,
        (p) => readFileSync(join(OUT, p), 'utf8'),
      );
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
      return;
    }
    const file = normalize(join(OUT, path));
    if (!file.startsWith(OUT) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') errors.push(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  // A string, not a function: tsx's transform would leave helper references (`__name`) in a serialised function.
  await page.addInitScript(`(() => {
    const theme = ${JSON.stringify(THEME)};
    window.__posted = [];
    window.__state = undefined;
    let acquired = false;
    window.acquireVsCodeApi = () => {
      if (acquired) throw new Error('acquireVsCodeApi called twice'); // as in VS Code
      acquired = true;
      return {
        postMessage: (m) => window.__posted.push(m),
        getState: () => window.__state,
        setState: (s) => { window.__state = s; },
      };
    };
    const apply = () => { for (const [k, v] of Object.entries(theme)) document.documentElement.style.setProperty(k, v); };
    if (document.documentElement) apply();
    else new MutationObserver((_, obs) => { if (document.documentElement) { apply(); obs.disconnect(); } }).observe(document, { childList: true });
  })();`);
  await page.goto(origin + '/');
  return {
    browser,
    page,
    server,
    errors,
    close: async () => {
      await browser.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The displayed event count. */
export async function shownCount(page: Page): Promise<number> {
  return Number(await page.locator('#event-count').textContent());
}

/** Data points on a metric's chart (the x values last given to uPlot). */
export async function chartPoints(page: Page, metric: string): Promise<number> {
  const v = await page
    .locator(`.chart[data-metric="${metric}"]`)
    .getAttribute('data-points', { timeout: 2000 })
    .catch(() => null);
  return v === null ? -1 : Number(v);
}

/** Waits until a metric's chart holds `n` points (the page draws received events on its next render). */
export async function waitForPoints(page: Page, metric: string, n: number, timeout = 10_000): Promise<void> {
  await page.waitForFunction(
    ({ metric, n }) =>
      document.querySelector<HTMLElement>(`.chart[data-metric="${metric}"]`)?.dataset.points === String(n),
    { metric, n },
    { timeout, polling: 50 },
  );
}
