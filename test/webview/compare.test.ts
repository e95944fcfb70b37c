// The "Compare runs" page in headless Chromium: bundled like scripts/build.mjs (IIFE), served in the page that
// src/extension/webview/html.ts makes (nonce-only CSP, state embedded), with a real comparison of two files. The
// page's messages reach the host's own answer (compare/model.ts pairAnswer) through an exposed function, as the
// extension host answers them. Served through Playwright routing: no port is opened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Page } from 'playwright-core';
import { renderWebviewHtml } from '../../src/extension/webview/html';
import { compareFiles, pageState, pairAnswer } from '../../src/extension/providers/compare/model';
import type { DiffData } from '../../src/core/diff/types';
import type { PageToHost } from '../../src/protocols/compare';
import { launchChromium } from './chromium';

const ROOT = join(__dirname, '../..');
const OUT = join(ROOT, '.cache/webview-test/compare');
const ORIGIN = 'http://compare.test';

const rec = (id: string, question: string, answer: string, searches = 0, extra: object = {}) =>
  JSON.stringify({
    id,
    question,
    golden_answers: ['paris'],
    response: `<think> start </think> ${'<search> q </search> <observation> d </observation> '.repeat(searches)}<answer> ${answer} </answer>`,
    ...extra,
  });

/** The page for a comparison of two files' texts: bundled as the build does, served with its state embedded. */
async function comparePage(a: string, b: string): Promise<{ html: string; data: DiffData }> {
  mkdirSync(OUT, { recursive: true });
  await build({
    entryPoints: [join(ROOT, 'webview/compare/main.ts')],
    outfile: join(OUT, 'compare.js'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
  });
  const data = compareFiles({ text: a, label: 'a.jsonl' }, { text: b, label: 'b.jsonl' }, { scheme: 'em' });
  const html = renderWebviewHtml(
    {
      title: 'Compare runs',
      scripts: ['compare.js'],
      initialState: pageState(data, { scheme: 'em' }),
      body: '<div id="app"></div>',
    },
    ORIGIN,
    (p) => `${ORIGIN}/${p}`,
    (p) => readFileSync(join(OUT, p), 'utf8'),
  );
  return { html, data };
}

/** The page served, its messages answered by the host's model; returns what it asked to open. */
async function serve(page: Page, html: string, data: DiffData): Promise<PageToHost[]> {
  const sent: PageToHost[] = [];
  await page.exposeFunction('__toHost', async (m: PageToHost) => {
    sent.push(m);
    if (m.type === 'pair')
      await page.evaluate((answer) => window.postMessage(answer, '*'), pairAnswer(data, m.key, m.a, m.b));
  });
  // A string, not a function: tsx would compile a function with helpers the page does not have.
  await page.addInitScript({
    content: 'window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__toHost(m) });',
  });
  await page.route(`${ORIGIN}/**`, (route) =>
    route.fulfill(
      new URL(route.request().url()).pathname === '/'
        ? { contentType: 'text/html', body: html }
        : { status: 404, body: '' },
    ),
  );
  await page.goto(`${ORIGIN}/`);
  return sent;
}

const cells = (page: Page, sel: string) =>
  page.$$eval(sel, (rows) => rows.map((r) => Array.from(r.children).map((c) => c.textContent)));

test('compare page: the flip table with groups, flips listed, a row opens both trajectories aligned by step, no CSP or console error', {
  timeout: 60_000,
}, async () => {
  const src = (s: string) => ({ meta: { source_file: `${s}_dev.json` } });
  const a = [
    rec('q1', 'Capital of France?', 'lyon', 0, src('NQ')),
    rec('q2', 'Who wrote <b>it</b>?', 'paris', 1, src('NQ')),
    rec('q3', 'Where?', 'paris', 1, src('HotpotQA')),
    rec('q4', 'When?', 'x', 0, src('HotpotQA')),
  ].join('\n');
  const b = [
    rec('q1', 'Capital of France?', 'paris', 2, src('NQ')),
    rec('q2', 'Who wrote <b>it</b>?', 'paris', 1, src('NQ')),
    rec('q3', 'Where?', 'rome', 1, src('HotpotQA')),
    rec('q4', 'When?', 'y', 0, src('HotpotQA')),
    '{bad',
  ].join('\n');
  const { html, data } = await comparePage(a, b);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    const sent = await serve(page, html, data);
    await page.waitForSelector('#flips');
    const flips = await cells(page, '#flips tr');
    assert.deepEqual(flips[0].slice(0, 11), [
      '',
      'questions',
      'gained',
      'lost',
      'both right',
      'both wrong',
      'mixed',
      'net',
      'EM A',
      'EM B',
      'ΔEM',
    ]);
    assert.deepEqual(flips[1].slice(0, 11), ['all', '4', '1', '1', '1', '1', '0', '0', '0.5', '0.5', '0']);
    assert.deepEqual(
      flips.slice(2).map((r) => r.slice(0, 4)),
      [
        ['source = HotpotQA_dev', '2', '0', '1'],
        ['source = NQ_dev', '2', '1', '0'],
      ],
    );
    assert.match(
      (await page.textContent('#identity')) ?? '',
      /ΔEM \+0 = net 0 \/ 4 shared questions \(gained 1 − lost 1\)/,
    );
    // Tool calls are not good or bad in themselves (OTC's goal is fewer): ΔTC carries no colour.
    assert.equal(await page.$eval('#flips tr:nth-child(2) td:nth-child(12) span', (e) => e.className), '');
    // By default the flips are listed: gained and lost.
    const rows = await cells(page, '#rows summary');
    assert.deepEqual(rows.map((r) => [r[0], r[1]]).sort(), [
      ['gained', 'Capital of France?'],
      ['lost', 'Where?'],
    ]);
    assert.equal(await page.$$eval('#rows b', (e) => e.length), 0, 'question text shown as text, not HTML');
    assert.match((await page.textContent('body')) ?? '', /b\.jsonl:5:\d+: COA101/);
    // A count in a group's row lists those questions.
    await page.click('#flips tr[data-group="source=NQ_dev"] button[data-cls="both_right"]');
    assert.deepEqual(
      (await cells(page, '#rows summary')).map((r) => r[1]),
      ['Who wrote <b>it</b>?'],
    );
    assert.equal(await page.textContent('#group'), 'source = NQ_dev ✕');
    await page.click('#group');
    await page.selectOption('#class', 'flips');
    // Opening the gained row: both trajectories side by side, aligned by step, the first divergence marked.
    await page.click('#rows details[data-class="gained"] summary');
    await page.waitForSelector('#rows details[data-class="gained"] table.aligned');
    const aligned = await cells(page, '#rows details[data-class="gained"] table.aligned tr');
    assert.equal(aligned.length, 1 + 6, "header + the longer side's 6 steps");
    assert.match(aligned[2][0] ?? '', /^2first divergence$/);
    assert.match(aligned[2][1] ?? '', /^answer/);
    assert.match(aligned[2][2] ?? '', /^action/);
    assert.equal(await page.$$eval('#rows details[data-class="gained"] tr.diverge', (e) => e.length), 1);
    await page.click('#rows details[data-class="gained"] button.open-b');
    await page.waitForFunction(() => true);
    assert.deepEqual(
      sent.filter((m) => m.type === 'openRecord'),
      [{ type: 'openRecord', side: 'b', line: 1 }],
    );
    assert.equal(
      await page.$eval('style', (s) => s.sheet !== null),
      true,
      'the nonce’d stylesheet applies under the CSP',
    );
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});

test('compare page on RL rollouts: reward per step, the flip table over the last shared step, pooled on request', {
  timeout: 60_000,
}, async () => {
  const at = (id: string, step: number, answer: string) =>
    rec(id, 'Capital of France?', answer, 0, { meta: { stage: 'rl2', step } });
  const a = [at('a1', 1, 'lyon'), at('a2', 1, 'lyon'), at('a3', 2, 'paris'), at('a4', 2, 'paris')].join('\n');
  const b = [at('b1', 1, 'paris'), at('b2', 2, 'lyon'), at('b3', 3, 'paris')].join('\n');
  const { html, data } = await comparePage(a, b);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await serve(page, html, data);
    await page.waitForSelector('#steps');
    assert.deepEqual(
      (await cells(page, '#steps tr')).map((r) => r.slice(0, 4)),
      [
        ['step', 'A reward', 'B reward', 'Δ reward'],
        ['1', '0', '1', '+1'],
        ['2', '1', '0', '-1'],
        ['3', '—', '1', '—'],
      ],
    );
    assert.match(
      await page.$eval('#window', (e) => (e as HTMLSelectElement).selectedOptions[0].textContent ?? ''),
      /^step 2 \(the last both runs sampled\)/,
    );
    assert.deepEqual((await cells(page, '#flips tr'))[1].slice(0, 4), ['all', '1', '0', '1']);
    assert.deepEqual((await cells(page, '#rows summary'))[0].slice(0, 3), ['lost', 'Capital of France?', '1 → 0']);
    await page.selectOption('#window', { label: 'all steps, pooled' });
    assert.deepEqual((await cells(page, '#rows summary'))[0].slice(0, 3), [
      'gained',
      'Capital of France?',
      '0.5 → 0.667',
    ]);
    assert.equal(await page.textContent('.row-head span:nth-child(2)'), 'question (all records)');
    assert.match((await page.textContent('#identity')) ?? '', /net 0\.167 \/ 1 shared questions \(Σ per question/);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});
