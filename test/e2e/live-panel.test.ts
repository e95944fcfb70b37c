// Real-editor proof for the live panel: a finished pipeline run (the recorded demo, test/fixtures/live-panel)
// opened in code-server with the packaged extension. Stage tabs, RL-2 and RL-2-OTC overlaid with a legend, the hover
// readout, a click on a reward step listing that step's rollouts from the run's rollouts file (the host reads it) and
// opening one, and the results table. Screenshots: .cache/artifacts/e2e/live-panel-*.png.
// The rollouts files are the demo's own, cut to the first 4 rollouts of each sampled step with `tokens` dropped
// (test/fixtures/live-panel/demo-rl2*.rollouts.coa.jsonl), so the fixture stays small.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Frame } from 'playwright-core';
import { pickQuick, repoRoot, runCommand, startEditor, webviewFrame, type Editor } from './harness';

const FIXTURES = join(repoRoot, 'test', 'fixtures', 'live-panel');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const RUN = 'demo-pipeline';
const events = fixture('demo-pipeline.events.jsonl')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as Record<string, any>);
const rollouts = (stage: string) =>
  fixture(`demo-${stage}.rollouts.coa.jsonl`)
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { id: string; meta: { step: number } });

let ed: Editor;
let frame: Frame;
before(async () => {
  ed = await startEditor({
    name: 'live-panel',
    files: {
      [`runs/${RUN}/events.jsonl`]: fixture('demo-pipeline.events.jsonl'),
      [`runs/${RUN}/stages/rl2/rollouts.coa.jsonl`]: fixture('demo-rl2.rollouts.coa.jsonl'),
      [`runs/${RUN}/stages/rl2-otc/rollouts.coa.jsonl`]: fixture('demo-rl2-otc.rollouts.coa.jsonl'),
    },
  });
});
after(async () => {
  await ed?.close();
});

test('a finished pipeline run: stage tabs, RL-2 and RL-2-OTC overlaid, hover readout of both', async () => {
  await runCommand(ed.page, 'CoA: Open Live Training Panel');
  await pickQuick(ed.page, RUN);
  frame = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('.chart[data-metric="reward_mean"].drawn').count()) > 0,
    90_000,
  );
  assert.deepEqual(await frame.locator('#tabs .tab').allTextContents(), [
    'Pretrain',
    'SFT-1',
    'SFT-2',
    'SFT-3',
    'RL-1',
    'RL-2 · RL-2-OTC',
    'Results',
  ]);
  assert.equal(await frame.locator('#tabs .tab[aria-selected="true"]').getAttribute('data-tab'), 'rl2');
  assert.deepEqual(await frame.locator('#legend .legend-item b').allTextContents(), ['RL-2', 'RL-2-OTC']);
  const over = frame.locator('.chart[data-metric="reward_mean"] .u-over');
  const box = (await over.boundingBox())!;
  await over.hover({ position: { x: box.width * 0.45, y: box.height * 0.5 } });
  const readout = frame.locator('.chart[data-metric="reward_mean"] .readout');
  await frame.waitForFunction(
    () =>
      !/latest/.test(
        document.querySelector('.chart[data-metric="reward_mean"] .readout .step')?.textContent ?? 'latest',
      ),
    undefined,
    { timeout: 10_000 },
  );
  const step = Number(await readout.getAttribute('data-step'));
  const logged = (stage: string) =>
    events.find((e) => e.type === 'metrics' && e.stage === stage && e.step === step)?.values.reward_mean;
  const raws = await readout
    .locator('.row[data-line]')
    .evaluateAll((rows) => rows.map((r) => Number((r as HTMLElement).dataset.raw)));
  assert.deepEqual(raws, [logged('rl2'), logged('rl2-otc')]);
  await ed.shot('demo-rl2-hover');
});

test("clicking a reward step lists the rollouts of that step from the run's rollouts file and opens one", async () => {
  const over = frame.locator('.chart[data-metric="reward_mean"] .u-over');
  const box = (await over.boundingBox())!;
  await over.click({ position: { x: box.width * 0.45, y: box.height * 0.5 } });
  const list = frame.locator('#step-rollouts ul.step-rollouts');
  await list.waitFor({ timeout: 30_000 });
  const stage = (await list.getAttribute('data-stage'))!;
  const step = Number(await list.getAttribute('data-step'));
  const expected = rollouts(stage)
    .filter((r) => r.meta.step === step)
    .map((r) => r.id);
  assert.ok(expected.length > 0, `the fixture has rollouts of ${stage} step ${step}`);
  assert.deepEqual(
    await list.locator('li[data-id]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id)),
    expected,
  );
  await ed.shot('demo-step-rollouts');
  await list.locator('li[data-id]').first().click();
  // The rollout opens in its record view (a notebook of that one record, named after it), beside the panel.
  await ed.page
    .locator('.tabs-container .tab', { hasText: `${expected[0]}.coa.jsonl` })
    .first()
    .waitFor({ timeout: 60_000 });
  await ed.page.locator('.notebook-editor .code-cell-row').first().waitFor({ timeout: 30_000 });
  await ed.shot('demo-rollout-opened');
});

test("a sampled rollout opens by its step and id: from the stage's rollouts file, else from the run's events", async () => {
  // The page sends the sample's run, stage, step and id, never the record; the host finds its line.
  const samples = events.filter((e) => e.type === 'sample');
  const otc = samples.filter((e) => e.stage === 'rl2-otc').at(-1)!;
  const line = rollouts('rl2-otc').findIndex((r) => r.id === otc.record.id) + 1;
  assert.ok(line > 0, "the sample is a row of the fixture's RL-2-OTC rollouts");
  // (RL-2 sampled the same question at that step: the stage tells them apart.)
  await frame.locator(`#samples li[data-id="${otc.record.id}"]`, { hasText: `RL-2-OTC · step ${otc.step}` }).click();
  const view = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('h3', { hasText: otc.record.id }).count()) > 0,
    60_000,
  );
  assert.ok(
    await view.getByText(new RegExp(`line ${line} of .*rollouts\\.coa\\.jsonl`)).count(),
    `line ${line} of the stage's rollouts file`,
  );
  // RL-1 wrote no rollouts file into this workspace: the sample event's own record, read back from events.jsonl.
  const rl1 = samples.find((e) => e.stage === 'rl1')!;
  await frame.locator(`#samples li[data-id="${rl1.record.id}"]`, { hasText: `RL-1 · step ${rl1.step}` }).click();
  const own = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('h3', { hasText: rl1.record.id }).count()) > 0,
    60_000,
  );
  assert.ok(await own.getByText(new RegExp(`line 1 of .*${rl1.record.id}\\.coa\\.jsonl`)).count(), 'a file of its own');
  await ed.shot('demo-samples-opened');
});

test("the results tab shows the pipeline's results table", async () => {
  await frame.locator('.tab[data-tab="results"]').click();
  const rows = frame.locator('#results-table tbody tr');
  await rows.first().waitFor({ timeout: 10_000 });
  assert.deepEqual(await rows.evaluateAll((r) => r.map((x) => (x as HTMLElement).dataset.stage)), [
    'no-tool',
    'workflow',
    'sft12',
    'sft-rl',
    'sft-rl-otc',
  ]);
  const results = JSON.parse(fixture('demo-pipeline.results.json')) as { rows: { setting: string; em: number }[] };
  for (const r of results.rows)
    assert.equal(
      await frame.locator(`#results-table tr[data-stage="${r.setting}"] td[data-col="em"]`).textContent(),
      Number(r.em.toPrecision(4)).toString(),
      r.setting,
    );
  await ed.shot('demo-results');
  assert.deepEqual(
    ed.consoleErrors.filter((e) => /live-panel|uPlot/i.test(e)),
    [],
  );
});
