// Real-editor proof of the RL engineer's diagnostics, on a whole demo pipeline run's own files
// (test/fixtures/demo-run-diag: its events, its test-split evaluations, the RL-2 pair's rollouts, its tokenizer), in code-server:
// Compare Runs draws the flip table of the two RL checkpoints' evaluations (net = N × ΔEM, by kind) and a flipped
// question opens both trajectories aligned by step with the first divergence marked; the live panel charts the
// zero-variance groups, the log-prob drift and the scanners' counts, draws a step's log-prob histogram, and a chart
// step leads to that step's GRPO groups (G samples side by side with their advantages); a rollout's record view says
// what the scanners find and audits its tokens with the run's tokenizer. Screenshots: .cache/artifacts/e2e/diagnostics-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Frame } from 'playwright-core';
import { pickQuick, runCommand, startEditor, webviewFrame, type Editor } from './harness';
import { demoRun, DEMO_RUN_DIAG } from '../fixtures/demoRun';
import { readDiff } from '../../src/core/diff/read';
import { flipTable } from '../../src/core/diff/flips';
import { readFileSync } from 'node:fs';

const RUN = 'demo-diag2';
let ed: Editor;
let panel: Frame;

before(async () => {
  ed = await startEditor({ name: 'diagnostics' });
  demoRun(join(ed.workspace, 'runs', RUN), DEMO_RUN_DIAG);
});
after(async () => {
  await ed?.close();
});

const cells = (f: Frame, sel: string) =>
  f.$$eval(sel, (rows) => rows.map((r) => Array.from(r.children).map((c) => (c.textContent ?? '').trim())));

test('Compare Runs: the flip table of RL-2 against RL-2-OTC on the test split, a flipped question aligned by step', async (t) => {
  await runCommand(ed.page, 'CoA: Compare Runs');
  await pickQuick(ed.page, 'results-sft-rl-test.jsonl', 'Compare runs: A');
  await pickQuick(ed.page, 'results-sft-rl-otc-test.jsonl', 'Compare runs: B');
  const page = await webviewFrame(ed.page, async (f) => (await f.locator('#flips').count()) > 0, 60_000);
  // The page's totals are the core's (coa diff's) on the same two files.
  const dir = join(ed.workspace, 'runs', RUN, 'eval');
  const read = (n: string) => ({ text: readFileSync(join(dir, n), 'utf8'), label: n });
  const want = flipTable(readDiff(read('results-sft-rl-test.jsonl'), read('results-sft-rl-otc-test.jsonl')).questions, {
    kind: 'all',
  }).totals;
  const flips = await cells(page, '#flips tr');
  assert.deepEqual(flips[1].slice(0, 6), [
    'all',
    String(want.shared),
    String(want.gained),
    String(want.lost),
    String(want.both_right),
    String(want.both_wrong),
  ]);
  assert.ok(
    flips.some((r) => /^kind = /.test(r[0])),
    `grouped by the questions' kind: ${flips.map((r) => r[0])}`,
  );
  const identity = (await page.locator('#identity').textContent()) ?? '';
  assert.ok(
    identity.includes(
      `= net ${String(Number(want.net.toFixed(3)))} / ${want.shared} shared questions (gained ${want.gained} − lost ${want.lost})`,
    ),
    identity,
  );
  t.diagnostic(identity);
  await ed.shot('compare-flips');
  // The first flip opened: both trajectories step by step, where they part marked.
  const row = page.locator('#rows details').first();
  await row.locator('summary').click();
  await row.locator('table.aligned').waitFor({ timeout: 30_000 });
  assert.equal(await row.locator('tr.diverge').count(), 1);
  assert.match((await row.locator('tr.diverge td').first().textContent()) ?? '', /first divergence/);
  await ed.shot('compare-aligned');
  await row.locator('button.open-b').click();
  await ed.page.locator('.tabs-container .tab', { hasText: '.coa.jsonl' }).first().waitFor({ timeout: 30_000 });
});

test("live panel: zero-variance groups, log-prob drift and scanner counts charted; a step's histogram; a chart step's GRPO groups", async (t) => {
  await runCommand(ed.page, 'CoA: Open Live Training Panel');
  await pickQuick(ed.page, RUN);
  panel = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('.chart[data-metric="zero_variance_groups"]').count()) > 0,
    90_000,
  );
  for (const m of [
    'zero_variance_groups',
    'logprob_diff_mean',
    'logprob_diff_max',
    'scan_format_gate',
    'scan_answer_in_query',
    'scan_repeated_query',
    'scan_answer_before_thought',
    'scan_length_outlier',
  ]) {
    assert.equal(await panel.locator(`.chart[data-metric="${m}"]`).count(), 1, m);
  }
  const bars = panel.locator('#histograms .histogram');
  await bars.first().waitFor({ timeout: 30_000 });
  assert.equal(await bars.count(), 2, 'RL-2 and RL-2-OTC, one histogram each');
  const tokens = await panel
    .locator('#histograms .histogram')
    .first()
    .locator('.bin')
    .evaluateAll((bins) => bins.reduce((s, b) => s + Number((b as HTMLElement).dataset.count), 0));
  t.diagnostic(`log-prob histogram of the last step: ${tokens} tokens`);
  assert.ok(tokens > 0);
  const chart = panel.locator('.chart[data-metric="zero_variance_groups"]');
  await chart.scrollIntoViewIfNeeded();
  await ed.shot('panel-diagnostics');
  const over = chart.locator('.u-over');
  const box = (await over.boundingBox())!;
  await over.click({ position: { x: box.width * 0.8, y: box.height * 0.5 } });
  await panel.locator('#step-rollouts ul.step-rollouts').waitFor({ timeout: 30_000 });
  // What the scanners flagged at the clicked step: exactly the trainer's examples of that step in flagged.coa.jsonl.
  const said = panel.locator('#flagged-none, #flagged');
  await said.first().waitFor({ timeout: 30_000 });
  const text = (await panel.locator('#step-diagnostics').textContent()) ?? '';
  const clicked = Number(/step (\d+)/.exec(text)?.[1]);
  const stage = (await panel.locator('#step-rollouts ul.step-rollouts').getAttribute('data-stage'))!;
  const flaggedFile = join(ed.workspace, 'runs', RUN, 'stages', stage, 'flagged.coa.jsonl');
  const expected = readFileSync(flaggedFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.meta.step === clicked)
    .map((r) => r.id);
  assert.deepEqual(
    await panel.locator('#flagged li[data-id]').evaluateAll((li) => li.map((x) => x.getAttribute('data-id'))),
    expected,
    text,
  );
  t.diagnostic(`${stage} step ${clicked}: ${expected.length} flagged`);
  await panel.locator('#open-groups').click();
  const groups = await webviewFrame(ed.page, async (f) => (await f.locator('table#group-samples').count()) > 0, 60_000);
  const head = await cells(groups, 'table#group-samples tr');
  assert.equal(head[0].length - 1, 8, 'G = 8 samples side by side');
  assert.deepEqual(
    head.slice(1).map((r) => r[0]),
    ['reward', 'advantage', 'EM', 'F1', 'tool calls', 'r_tool', 'r_correct', 'format'],
  );
  assert.match((await groups.locator('#share').textContent()) ?? '', /\d+ groups at this step, \d+ with zero variance/);
  t.diagnostic((await groups.locator('#share').textContent()) ?? '');
  await ed.shot('grpo-group');
});

test("a rollout's record view: the scanners' line and links; Audit Tokens with the run's tokenizer", async () => {
  // The step listed by the previous test's click: its first rollout opens in the record view.
  const first = panel.locator('#step-rollouts ul.step-rollouts li[data-id]').first();
  const id = (await first.getAttribute('data-id'))!;
  await first.click();
  await ed.page.locator('.tabs-container .tab', { hasText: `${id}.coa.jsonl` }).waitFor({ timeout: 30_000 });
  // This record view's header (an RL rollout: both links), not the evaluation record's opened by the first test.
  const view = await webviewFrame(
    ed.page,
    async (f) => (await f.getByText(id).count()) > 0 && (await f.getByText('Audit tokens').count()) > 0,
    60_000,
  );
  assert.equal(await view.getByText(/GRPO group of step \d+/).count(), 1);
  await ed.page.locator('.tabs-container .tab', { hasText: `${id}.coa.jsonl` }).click(); // the record view focused, not a webview
  await runCommand(ed.page, 'CoA: Audit Tokens');
  const note = ed.page.locator('.notification-toast', { hasText: /CoA token audit/ }).first();
  await note.waitFor({ timeout: 60_000 });
  assert.match(await note.innerText(), /model-init\/tokenizer\.json\): 1 record with tokens, 0 drifting/);
  await ed.shot('record-view-audit');
});
