// The large-file trajectory browser page in headless Chromium: served with the page renderWebviewHtml makes
// (nonce-only CSP) and the first page read by the real indexer embedded, as the custom editor does. Checks the
// first paint (before any message), a page of query results from the real index, a row opening its record (the
// host opens the record view beside), keyboard moves; then AutoCoA's 2,936-question test set: the questions
// columns, sticky headers, Ctrl+F into the text search, the hit count from the real search; no console errors
// (a CSP violation would be one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { renderWebviewHtml } from '../../src/extension/webview/html';
import { buildIndex, firstRecords } from '../../src/extension/providers/browser/indexer';
import { questionsLine, runQuery, tableKind } from '../../src/extension/providers/browser/query';
import { searchFile } from '../../src/extension/providers/browser/search';
import { locateId } from '../../src/extension/providers/browser/locate';
import type { RecordSummary } from '../../src/protocols/browser';
import { importVerlParquet } from '../../src/core/importers/verl-parquet';
import { serializeRecord } from '../../src/core/record';
import { launchChromium } from './chromium';
import type { Browser, Page } from 'playwright-core';

const ROOT = join(__dirname, '../..');
const OUT = join(ROOT, '.cache/webview-test/notebook-browser');
const ORIGIN = 'http://browser.test';

/** The page's script bundled as the extension ships it. */
async function buildPage(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  await build({
    entryPoints: [join(ROOT, 'webview/browser/main.ts')],
    outfile: join(OUT, 'browser.js'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
  });
}

/** A file of the example records repeated `copies` times with fresh ids, in `dir`. */
function examplesFile(dir: string, copies: number): { path: string; lines: string[] } {
  const examples = readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim());
  const lines: string[] = [];
  for (let k = 0; k < copies; k++)
    for (const l of examples) lines.push(JSON.stringify({ ...JSON.parse(l), id: `${JSON.parse(l).id}-${k}` }));
  const path = join(dir, 'f.coa.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  return { path, lines };
}

test('trajectory browser page: first page on first paint, query results, record view, no console error', {
  timeout: 60_000,
}, async () => {
  await buildPage();
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-page-'));
  const { path } = examplesFile(dir, 20);
  const browser = await launchChromium();
  try {
    const first = await firstRecords(path, 50);
    const html = renderWebviewHtml(
      {
        title: 'Trajectory browser',
        scripts: ['dist/webview/browser.js'],
        initialState: { file: 'f.coa.jsonl', size: 1, pageSize: 50, first, questions: '', kind: tableKind(first) },
      },
      ORIGIN,
      (p) => `${ORIGIN}/${p}`,
      () => readFileSync(join(OUT, 'browser.js'), 'utf8'),
    );
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    // A string, not a function: tsx would wrap a function's inner arrows in helpers the page does not have.
    await page.addInitScript(
      'window.__posted = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m) });',
    );
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
    assert.deepEqual(
      ids,
      first.map((r) => r.id),
    );
    // Having drawn, the page tells the host it runs (the host's ready watchdog re-sets silent pages).
    assert.deepEqual(await page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted), [
      { type: 'ready' },
    ]);

    // The host answers a query (failures, sorted by reward) from the real index.
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    const result = runQuery(index, { failuresOnly: true, sort: 'reward', order: 'asc', pageSize: 50 });
    await page.check('#failures');
    const posted = await page.evaluate(
      () => (window as unknown as { __posted: { type: string; query?: { failuresOnly?: boolean } }[] }).__posted,
    );
    assert.equal(posted.at(-1)?.type, 'query');
    assert.equal(posted.at(-1)?.query?.failuresOnly, true);
    await page.evaluate((m) => window.postMessage(m, '*'), {
      type: 'page',
      result,
      indexed: index.length,
      done: true,
      bytes: 1,
      size: 1,
      stages: ['sft2'],
    });
    await page.waitForFunction((n) => document.querySelectorAll('#rows tr').length === n, result.rows.length);
    assert.deepEqual(
      await page.$$eval('#rows tr', (trs) => trs.map((tr) => tr.children[1].textContent)),
      result.rows.map((r) => r.id),
    );
    assert.match((await page.textContent('#status')) ?? '', new RegExp(`${index.length} records indexed`));
    assert.match((await page.textContent('#pageinfo')) ?? '', new RegExp(`${result.total} matching`));

    // Clicking a row asks the host to open that record (in the record view, beside); the browser keeps the focus.
    await page.click('#rows tr:first-child');
    const open = await page.evaluate(() =>
      (window as unknown as { __posted: { type: string; i?: number }[] }).__posted.at(-1),
    );
    assert.deepEqual(open, { type: 'open', i: result.rows[0].i, focus: false });
    assert.equal(await page.getAttribute('#rows tr:first-child', 'class'), 'row sel');
    // ↓ moves to the next record and opens it; Enter moves into its record view.
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    const moves = await page.evaluate(() =>
      (window as unknown as { __posted: { type: string; i?: number; focus?: boolean }[] }).__posted.slice(-2),
    );
    assert.deepEqual(moves, [
      { type: 'open', i: result.rows[1].i, focus: false },
      { type: 'open', i: result.rows[1].i, focus: true },
    ]);
    // The examples store no reward: the column says its values are recomputed, and with which scheme.
    assert.deepEqual(await page.$$eval('thead th', (th) => th.map((x) => x.textContent)), [
      'line',
      'id',
      'reward (em, recomputed)',
      'EM',
      'tools',
      'stage',
      'step',
      'question',
    ]);
    assert.match(
      (await page.getAttribute('#rows tr:first-child td:nth-child(3)', 'title')) ?? '',
      /recomputed with em \(the record stores no reward/,
    );

    // A jump that lands on a row below the fold scrolls it into view (selecting it off screen looked like nothing).
    const full = runQuery(index, { pageSize: 50 });
    await page.evaluate((m) => window.postMessage(m, '*'), {
      type: 'page',
      result: full,
      indexed: index.length,
      done: true,
      bytes: 1,
      size: 1,
      stages: ['sft2'],
    });
    await page.waitForFunction((n) => document.querySelectorAll('#rows tr').length === n, full.rows.length);
    const last = full.rows[full.rows.length - 1];
    assert.ok(
      !(await page.evaluate(() => {
        const r = document.querySelector('#rows tr:last-child')!.getBoundingClientRect();
        return r.top >= 0 && r.bottom <= innerHeight;
      })),
      'the last row starts below the fold',
    );
    await page.evaluate((m) => window.postMessage(m, '*'), { type: 'selected', i: last.i });
    await page.waitForFunction(
      () => {
        const tr = document.querySelector('#rows tr.sel');
        const r = tr?.getBoundingClientRect();
        return !!r && r.top >= 0 && r.bottom <= innerHeight;
      },
      undefined,
      { timeout: 5_000 },
    );
    assert.equal(await page.textContent('#rows tr.sel td:nth-child(2)'), last.id);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function showPage(browser: Browser, html: string, problems: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 600 } });
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  await page.addInitScript(
    'window.__posted = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m) });',
  );
  await page.route(`${ORIGIN}/**`, (route) =>
    new URL(route.request().url()).pathname === '/'
      ? route.fulfill({ contentType: 'text/html', body: html })
      : route.fulfill({ status: 404, body: '' }),
  );
  await page.goto(`${ORIGIN}/`);
  return page;
}

const posted = (page: Page) =>
  page.evaluate(() => (window as unknown as { __posted: { type: string; [k: string]: unknown }[] }).__posted);

test("AutoCoA's 2,936-question test set: question / golden answers / source columns, sticky headers, Ctrl+F searches the text with a hit count", {
  timeout: 60_000,
}, async () => {
  mkdirSync(OUT, { recursive: true });
  await build({
    entryPoints: [join(ROOT, 'webview/browser/main.ts')],
    outfile: join(OUT, 'browser.js'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
  });
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-questions-'));
  const path = join(dir, 'all_test.coa.jsonl');
  const records = await importVerlParquet(join(ROOT, 'examples/data/autocoa/all_test.parquet'));
  writeFileSync(path, records.map((r) => serializeRecord(r)).join('\n') + '\n');
  const browser = await launchChromium();
  const problems: string[] = [];
  try {
    const first = await firstRecords(path, 50);
    const initialState = {
      file: 'all_test.coa.jsonl',
      size: 1,
      pageSize: 50,
      first,
      questions: questionsLine(first),
      kind: tableKind(first),
    };
    const html = renderWebviewHtml(
      { title: 'Trajectory browser', scripts: ['dist/webview/browser.js'], initialState },
      ORIGIN,
      (p) => `${ORIGIN}/${p}`,
      () => readFileSync(join(OUT, 'browser.js'), 'utf8'),
    );
    const page = await showPage(browser, html, problems);
    await page.waitForSelector('#rows tr', { timeout: 10_000 });
    assert.deepEqual(await page.$$eval('thead th', (th) => th.map((x) => x.textContent)), [
      'line',
      'id',
      'question',
      'golden answers',
      'source',
    ]);
    const firstRow = await page.$$eval('#rows tr:first-child td', (td) => td.map((x) => x.textContent));
    assert.deepEqual(firstRow, [
      '1',
      first[0].id,
      first[0].question,
      records[0].golden_answers!.join(' · '),
      first[0].source!,
    ]);
    assert.notEqual(first[0].source, 'HotpotQA', "the row's source file, not the data_source every row shares");
    // Reward filters are hidden for a question set; failures stays (it answers that none failed).
    assert.equal(await page.isVisible('#minReward'), false);
    assert.equal(await page.isVisible('#failures'), true);
    // Sticky headers: scrolled to the bottom of the page, the header row is still at the top of the viewport.
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const top = await page.$eval('thead th', (th) => th.getBoundingClientRect().top);
    assert.ok(
      top >= 0 && top < 5,
      `header top ${top} px after scrolling ${await page.evaluate(() => window.scrollY)} px`,
    );
    // Ctrl+F goes to the search box; typing and Enter ask the host to search.
    await page.click('#rows tr:nth-child(3) td:nth-child(2)');
    await page.keyboard.press('Control+f');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'search');
    await page.keyboard.type('Drogo');
    await page.keyboard.press('Enter');
    const ask = (await posted(page)).filter((m) => m.type === 'search').at(-1);
    assert.deepEqual(ask, { type: 'search', text: 'Drogo', field: 'all' });
    // The host's answers: the search running (Stop shown), then done with the real hits, and the page of hits.
    await page.evaluate((m) => window.postMessage(m, '*'), {
      type: 'search',
      text: 'Drogo',
      count: 0,
      running: true,
      bytes: 100,
    });
    await page.waitForSelector('#search-cancel:not([hidden])');
    await page.click('#search-cancel');
    assert.deepEqual((await posted(page)).at(-1), { type: 'cancelSearch' });
    const hits: number[] = [];
    await searchFile(path, 'Drogo', (h) => hits.push(...h));
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    const result = runQuery(index, { pageSize: 50 }, new Set(hits));
    await page.evaluate((m) => window.postMessage(m, '*'), {
      type: 'search',
      text: 'Drogo',
      count: hits.length,
      running: false,
      bytes: 1,
    });
    await page.evaluate((m) => window.postMessage(m, '*'), {
      type: 'page',
      result,
      indexed: index.length,
      done: true,
      bytes: 1,
      size: 1,
      stages: [],
      questions: questionsLine(index),
    });
    await page.waitForFunction(() => document.querySelectorAll('#rows tr').length === 1);
    assert.equal(await page.textContent('#search-status'), '1 record with “Drogo”');
    assert.equal(await page.isVisible('#search-cancel'), false);
    assert.match((await page.textContent('#rows tr td:nth-child(3)')) ?? '', /Drogo Of Champagne/);
    assert.match((await page.textContent('#pageinfo')) ?? '', /1 matching/);
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-results', 'browser-questions-search.png') });
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a jump past the part indexed so far: the page says it is looking in the file, then which line opened beside; index progress does not erase it', {
  timeout: 60_000,
}, async () => {
  await buildPage();
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-jump-'));
  const { path, lines } = examplesFile(dir, 40);
  const target = (JSON.parse(lines[lines.length - 2]) as { id: string }).id;
  const browser = await launchChromium();
  try {
    const first = await firstRecords(path, 50);
    const html = renderWebviewHtml(
      {
        title: 'Trajectory browser',
        scripts: ['dist/webview/browser.js'],
        initialState: { file: 'f.coa.jsonl', size: 1, pageSize: 50, first, questions: '', kind: tableKind(first) },
      },
      ORIGIN,
      (p) => `${ORIGIN}/${p}`,
      () => readFileSync(join(OUT, 'browser.js'), 'utf8'),
    );
    const problems: string[] = [];
    const page = await showPage(browser, html, problems);
    await page.waitForSelector('#rows tr', { timeout: 10_000 });
    // The jump box sends the target; the host (not indexed that far) looks in the file — locate.ts, for real here.
    await page.fill('#jump', target);
    await page.press('#jump', 'Enter');
    const asked = (await posted(page)).at(-1);
    assert.equal(asked?.type, 'jump');
    assert.equal(asked?.target, target);
    const size = readFileSync(path).length;
    // postMessage dispatches in a later task: resolve from a listener added after the page's own, so the page has
    // handled the message (its handler draws synchronously) before the test reads what it drew.
    const send = (m: unknown) =>
      page.evaluate(
        (x) =>
          new Promise<void>((handled) => {
            window.addEventListener('message', () => handled(), { once: true });
            window.postMessage(x, '*');
          }),
        m,
      );
    await send({ type: 'jump', target, state: 'searching', bytes: size >> 1, size });
    assert.equal(await page.textContent('#jump-status'), `looking for "${target}" in the file… 50%`);
    const found = await locateId(path, target);
    assert.equal(found?.line, lines.length - 1);
    await send({ type: 'jump', target, state: 'ahead', line: found!.line });
    await send({ type: 'progress', indexed: 50, bytes: 1000, size });
    assert.match((await page.textContent('#status')) ?? '', /indexing… \d+% \(50 records so far\)/);
    assert.equal(
      await page.textContent('#jump-status'),
      `"${target}" is line ${found!.line.toLocaleString()}: opened beside (the table shows it once the index gets there)`,
    );
    // Neither in the index nor in the file: said so; a later jump found in the index clears the note.
    await send({ type: 'jump', target: 'nope', state: 'missing' });
    assert.equal(await page.textContent('#jump-status'), 'no record "nope" in the file');
    // Indexed but hidden by the filter or search: opened beside, and said why the table does not show it.
    await send({ type: 'jump', target, state: 'filtered', line: found!.line });
    assert.equal(
      await page.textContent('#jump-status'),
      `"${target}" is line ${found!.line.toLocaleString()}: opened beside (the filter or search hides it from the table)`,
    );
    // A verl dump's id not indexed yet: not "no record" (its ids are made while indexing).
    await send({ type: 'jump', target: 'verl-3-9', state: 'unindexed' });
    assert.equal(
      await page.textContent('#jump-status'),
      'no record "verl-3-9" in the part indexed so far (a verl dump\'s ids exist once indexed)',
    );
    await send({ type: 'jump', target, state: 'done' });
    assert.equal(await page.textContent('#jump-status'), '');
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
