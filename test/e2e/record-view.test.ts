// Issue 33 real-editor proof, on a whole demo pipeline run's own files (test/fixtures/demo-run: RL-2 and RL-2-OTC
// rollouts of 1,536 records each, the RL-2-OTC checkpoint): in code-server, a click on a reward chart point lists
// that step's rollouts and one opens in the record view — steps as cells, the reward breakdown, token overlays with
// their legend — without the whole file as a notebook and without an Untitled copy; the browser's row opens the same
// view beside it. Screenshots: .cache/artifacts/e2e/record-view-*.png; timings printed as diagnostics.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Frame } from 'playwright-core';
import { pickQuick, runCommand, startEditor, webviewFrame, type Editor } from './harness';
import { demoRun } from '../fixtures/demoRun';

const RUN = 'demo-issue33';
let ed: Editor;
let panel: Frame;

before(async () => {
  ed = await startEditor({ name: 'record-view' });
  demoRun(join(ed.workspace, 'runs', RUN));
});
after(async () => {
  await ed?.close();
});

test('a chart point of a 1,536-record run opens one rollout in the record view: steps, reward, overlays and legend', async (t) => {
  await runCommand(ed.page, 'CoA: Open Live Training Panel');
  await pickQuick(ed.page, RUN);
  panel = await webviewFrame(ed.page, async (f) => (await f.locator('.chart[data-metric="reward_mean"].drawn').count()) > 0, 90_000);
  const over = panel.locator('.chart[data-metric="reward_mean"] .u-over');
  const box = (await over.boundingBox())!;
  await over.click({ position: { x: box.width * 0.6, y: box.height * 0.5 } });
  const list = panel.locator('#step-rollouts ul.step-rollouts');
  await list.waitFor({ timeout: 30_000 });
  const stage = (await list.getAttribute('data-stage'))!;
  const step = Number(await list.getAttribute('data-step'));
  const first = list.locator('li[data-id]').first();
  const id = (await first.getAttribute('data-id'))!;
  t.diagnostic(`clicked ${stage} step ${step}: ${await list.locator('li[data-id]').count()} rollouts listed, opening ${id}`);
  await ed.shot('step-rollouts');
  const t0 = Date.now();
  await first.click();
  // The record view: a tab named after the record, its header cell, its reward output drawn by our renderer.
  await ed.page.locator('.tabs-container .tab', { hasText: `${id}.coa.jsonl` }).waitFor({ timeout: 30_000 });
  await ed.page.locator('.notebook-editor .code-cell-row').first().waitFor({ timeout: 30_000 });
  const reward = await webviewFrame(ed.page, async (f) => (await f.locator('.coa-reward').count()) > 0, 30_000);
  const opened = Date.now() - t0;
  t.diagnostic(`click → record view with its reward drawn: ${opened} ms`);
  assert.match(await reward.locator('.coa-reward').first().innerText(), /reward/i);
  // Overlays: the log-prob heat map is on (a record with tokens), its legend on the first step cell's status line.
  const legend = ed.page.locator('.notebook-editor .cell-statusbar-container', { hasText: /Overlays: log-prob/ }).first();
  await legend.waitFor({ timeout: 30_000 });
  const decorated = await ed.page.locator('.notebook-editor .cell-editor-part .view-overlays .cdr').count();
  await ed.shot('rollout-record-view');
  assert.ok(decorated > 0, 'step cells carry token decorations');
  // One record, not the file: the header says which line of which file; no Untitled document, nothing dirty.
  // (Markdown cells are drawn in the notebook's webview, with the outputs.)
  assert.equal(await reward.getByText(new RegExp(`line [\\d,]+ of runs/${RUN}/stages/${stage}/rollouts\\.coa\\.jsonl`)).count(), 1);
  assert.equal(await ed.page.locator('.tabs-container .tab', { hasText: /Untitled/ }).count(), 0);
  assert.equal(await ed.page.locator('.tabs-container .tab.dirty').count(), 0);
  assert.deepEqual(ed.consoleErrors.filter((e) => /byteLength|_createOutputCreationMessage|coa/i.test(e)), []);
});
