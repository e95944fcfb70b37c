// The large-file trajectory browser page in headless Chromium: served with the page renderWebviewHtml makes
// (nonce-only CSP) and the first page read by the real indexer embedded, as the custom editor does. Checks the
// first paint (before any message), a page of query results from the real index, the record view and the
// messages the page posts; no console errors (a CSP violation would be one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { renderWebviewHtml } from '../../src/extension/webview/html';
import { buildIndex, firstRecords, readLines } from '../../src/extension/providers/browser/indexer';
import { runQuery } from '../../src/extension/providers/browser/query';
import type { RecordSummary } from '../../src/extension/providers/browser/summary';
import { checkFormat } from '../../src/core/rules';
import { launchChromium } from './chromium';

const ROOT = join(__dirname, '../..');
const OUT = join(ROOT, '.cache/webview-test/notebook-browser');
const ORIGIN = 'http://browser.test';

test('trajectory browser page: first page on first paint, query results, record view, no console error', { timeout: 60_000 }, async () => {
  mkdirSync(OUT, { recursive: true });
  await build({ entryPoints: [join(ROOT, 'webview/browser/main.ts')], outfile: join(OUT, 'browser.js'), bundle: true, format: 'iife', platform: 'browser', target: 'es2022', logLevel: 'warning' });
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-page-'));
  const examples = readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n').filter((l) => l.trim());
  const lines: string[] = [];
  for (let k = 0; k < 20; k++) for (const l of examples) lines.push(JSON.stringify({ ...JSON.parse(l), id: `${JSON.parse(l).id}-${k}` }));
  const path = join(dir, 'f.coa.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  const browser = await launchChromium();
  try {
    const first = await firstRecords(path, 50);
    const html = renderWebviewHtml({ title: 'Trajectory browser', scripts: ['dist/webview/browser.js'], initialState: { file: 'f.coa.jsonl', size: 1, pageSize: 50, first, questions: '' } }, ORIGIN, (p) => `${ORIGIN}/${p}`, () => readFileSync(join(OUT, 'browser.js'), 'utf8'));
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    // A string, not a function: tsx would wrap a function's inner arrows in helpers the page does not have.
    await page.addInitScript('window.__posted = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m) });');
    await page.route(`${ORIGIN}/**`, (route) => {
      const url = new URL(route.request().url());
      if (url.pathname === '/') return route.fulfill({ contentType: 'text/html', body: html });
      return route.fulfill({ status: 404, body: '' });
    });
    await page.goto(`${ORIGIN}/`);
    // First paint: the embedded first page, with no message from the host yet.
    await page.waitForSelector('#rows tr', { timeout: 10_000 }).catch((e: Error) => {
      throw new Error(`${e.message}; page errors: ${problems.join(' | ')}`);
    });
    const ids = await page.$$eval('#rows tr', (trs) => trs.map((tr) => tr.children[1].textContent));
    assert.deepEqual(ids, first.map((r) => r.id));
    // Having drawn, the page tells the host it runs (the host's ready watchdog re-sets silent pages).
    assert.deepEqual(await page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted), [{ type: 'ready' }]);

    // The host answers a query (failures, sorted by reward) from the real index.
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    const result = runQuery(index, { failuresOnly: true, sort: 'reward', order: 'asc', pageSize: 50 });
    await page.check('#failures');
    const posted = await page.evaluate(() => (window as unknown as { __posted: { type: string; query?: { failuresOnly?: boolean } }[] }).__posted);
    assert.equal(posted.at(-1)?.type, 'query');
    assert.equal(posted.at(-1)?.query?.failuresOnly, true);
    await page.evaluate((m) => window.postMessage(m, '*'), { type: 'page', result, indexed: index.length, done: true, bytes: 1, size: 1, stages: ['sft2'] });
    await page.waitForFunction((n) => document.querySelectorAll('#rows tr').length === n, result.rows.length);
    assert.deepEqual(await page.$$eval('#rows tr', (trs) => trs.map((tr) => tr.children[1].textContent)), result.rows.map((r) => r.id));
    assert.match((await page.textContent('#status')) ?? '', new RegExp(`${index.length} records indexed`));
    assert.match((await page.textContent('#pageinfo')) ?? '', new RegExp(`${result.total} matching`));

    // Clicking a row asks for the record; the record view colours its steps.
    await page.click('#rows tr:first-child');
    const open = await page.evaluate(() => (window as unknown as { __posted: { type: string; i?: number }[] }).__posted.at(-1));
    assert.deepEqual(open, { type: 'open', i: result.rows[0].i });
    const row = result.rows[0];
    const record = JSON.parse((await readLines(path, [row]))[0]);
    const segments = checkFormat(record.response).segments.map((s) => ({ kind: s.kind, start: s.start, end: s.end }));
    await page.evaluate((m) => window.postMessage(m, '*'), { type: 'record', row, record, raw: null, segments });
    await page.waitForSelector('#detail pre span');
    assert.equal(await page.textContent('#detail pre'), record.response);
    assert.deepEqual(await page.$$eval('#detail pre span', (s) => s.map((x) => x.className)), segments.map((s) => `s-${s.kind}`));
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
