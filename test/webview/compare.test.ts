// The "Compare runs" page in headless Chromium: bundled like scripts/build.mjs (IIFE), served in the page that
// src/extension/webview/html.ts makes (nonce-only CSP, state embedded), with a real comparison of two files.
// Served through Playwright routing: no port is opened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { renderWebviewHtml } from '../../src/extension/webview/html';
import { compareRuns } from '../../src/extension/providers/compare/model';
import { pageState } from '../../src/extension/providers/compare/panel-state';
import { launchChromium } from './chromium';

const ROOT = join(__dirname, '../..');
const OUT = join(ROOT, '.cache/webview-test/compare');
const ORIGIN = 'http://compare.test';

const rec = (id: string, question: string, answer: string, searches = 0) =>
  JSON.stringify({ id, question, golden_answers: ['paris'], response: `${'<search> q </search> <observation> d </observation> '.repeat(searches)}<answer> ${answer} </answer>` });

/** The page for a comparison of two files' texts: bundled as the build does, served with its state embedded. */
async function comparePage(a: string, b: string): Promise<string> {
  mkdirSync(OUT, { recursive: true });
  await build({ entryPoints: [join(ROOT, 'webview/compare/main.ts')], outfile: join(OUT, 'compare.js'), bundle: true, format: 'iife', platform: 'browser', target: 'es2022', logLevel: 'warning' });
  const state = pageState(compareRuns({ text: a, label: 'a.jsonl' }, { text: b, label: 'b.jsonl' }, 'em'));
  return renderWebviewHtml({ title: 'Compare runs', scripts: ['compare.js'], initialState: state, body: '<div id="app"></div>' }, ORIGIN, (p) => `${ORIGIN}/${p}`, (p) => readFileSync(join(OUT, p), 'utf8'));
}

test('compare page: summary, one row per question with Δ, details side by side, no CSP or console error', { timeout: 60_000 }, async () => {
  const a = [rec('a1', 'Capital of France?', 'lyon'), rec('a2', 'Who wrote <b>it</b>?', 'paris'), rec('a3', 'Only A', 'x')].join('\n');
  const b = [rec('b1', 'capital of france?', 'paris', 2), rec('b2', 'Who wrote <b>it</b>?', 'paris'), '{bad'].join('\n');
  const html = await comparePage(a, b);

  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    await page.route(`${ORIGIN}/**`, (route) => {
      const url = new URL(route.request().url());
      if (url.pathname === '/') return route.fulfill({ contentType: 'text/html', body: html });
      return route.fulfill({ status: 404, body: '' });
    });
    await page.goto(`${ORIGIN}/`);
    await page.waitForSelector('#rows details');
    const rows = await page.$$eval('#rows summary', (els) => els.map((e) => Array.from(e.children).map((c) => c.textContent)));
    assert.deepEqual(rows[0], ['Capital of France?', '0', '1', '+1'], 'largest change first');
    assert.equal(rows.length, 3);
    assert.ok(rows.some((r) => r[0] === 'Who wrote <b>it</b>?' && r[3] === '0'), 'question text shown as text, not HTML');
    assert.equal(await page.$$eval('#rows b', (e) => e.length), 0);
    const delta = await page.$eval('#summary tr:last-child', (e) => Array.from(e.children).map((c) => c.textContent));
    assert.deepEqual(delta.slice(0, 3), ['B − A', '+0.5', '+0.5']);
    assert.match(await page.textContent('body') ?? '', /b\.jsonl:3:\d+: COA101/);
    // Details are built on open: both sides with their breakdowns and responses.
    await page.click('#rows details:first-child summary');
    // the toggle event that builds them fires after the click resolves: wait for them rather than race it
    await page.waitForFunction(() => document.querySelectorAll('#rows details:first-child .side').length === 2);
    const sides = await page.$$eval('#rows details:first-child .side', (els) => els.map((e) => e.textContent ?? ''));
    assert.equal(sides.length, 2);
    assert.match(sides[0], /^A · 1 trajectory ·/);
    assert.match(sides[0], /lyon/);
    // Column headers over the question rows (they used to be a note: "columns: question · A · B · Δ reward").
    assert.deepEqual(await page.$$eval('.row-head span', (els) => els.map((e) => e.textContent)), ['question (all records)', 'A reward', 'B reward', 'Δ reward']);
    assert.equal(await page.$$eval('#steps', (e) => e.length), 0, 'no step table for records without steps');
    assert.match(sides[1], /tool calls2/);
    // Filtering.
    await page.fill('input[type=search]', 'only');
    assert.deepEqual(await page.$$eval('#rows summary span:first-child', (els) => els.map((e) => e.textContent)), ['Only A']);
    assert.equal(await page.$eval('style', (s) => s.sheet !== null), true, 'the nonce’d stylesheet applies under the CSP');
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});

test('compare page on RL rollouts: reward per step, the summary over the last shared step, pooled on request', { timeout: 60_000 }, async () => {
  const at = (id: string, step: number, answer: string) => JSON.stringify({ ...JSON.parse(rec(id, 'Capital of France?', answer)), meta: { stage: 'rl2', step } });
  const a = [at('a1', 1, 'lyon'), at('a2', 1, 'lyon'), at('a3', 2, 'paris'), at('a4', 2, 'paris')].join('\n');
  const b = [at('b1', 1, 'paris'), at('b2', 2, 'lyon')].join('\n');
  const html = await comparePage(a, b);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.route(`${ORIGIN}/**`, (route) => route.fulfill(new URL(route.request().url()).pathname === '/' ? { contentType: 'text/html', body: html } : { status: 404, body: '' }));
    await page.goto(`${ORIGIN}/`);
    await page.waitForSelector('#steps');
    const cells = (sel: string) => page.$$eval(sel, (rows) => rows.map((r) => Array.from(r.children).map((c) => c.textContent)));
    assert.deepEqual((await cells('#steps tr')).map((r) => r.slice(0, 4)), [['step', 'A reward', 'B reward', 'Δ reward'], ['1', '0', '1', '+1'], ['2', '1', '0', '-1']]);
    assert.match(await page.$eval('#window', (e) => (e as HTMLSelectElement).selectedOptions[0].textContent ?? ''), /^step 2 \(the last both runs sampled\)/);
    assert.deepEqual((await cells('#summary tr:last-child'))[0].slice(0, 2), ['B − A', '-1']);
    assert.deepEqual((await cells('#rows summary'))[0], ['Capital of France?', '1', '0', '-1']);
    await page.selectOption('#window', { label: 'all steps, pooled' });
    assert.deepEqual((await cells('#summary tr'))[1].slice(0, 2), ['A a.jsonl', '0.5']);
    assert.equal(await page.textContent('.row-head span'), 'question (all records)');
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});
