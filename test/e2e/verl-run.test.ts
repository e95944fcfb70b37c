// Issue 16 real-editor proof: a verl run CoA Studio did not start (test/fixtures/verl: a metrics file and rollout
// dumps written the way verl writes them) watched in code-server with the packaged extension — "CoA: Watch verl/TRL
// Run…" lists the metrics file found in the workspace, the panel draws verl's metrics with the core's alert, and a
// click on a step lists that step's dump rows, read by the host. Screenshots: .cache/artifacts/e2e/verl-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pickQuick, repoRoot, runCommand, startEditor, webviewFrame, type Editor } from './harness';

const FIX = join(repoRoot, 'test', 'fixtures', 'verl');
const read = (p: string) => readFileSync(join(FIX, p), 'utf8');

let ed: Editor;
before(async () => {
  ed = await startEditor({
    name: 'verl-run',
    files: {
      'experiments/search_r1/metrics.jsonl': read('metrics.jsonl'),
      'experiments/search_r1/rollouts/1.jsonl': read('rollouts/1.jsonl'),
      'experiments/search_r1/rollouts/2.jsonl': read('rollouts/2.jsonl'),
      'experiments/search_r1/rollouts/3.jsonl': read('rollouts/3.jsonl'),
    },
  });
});
after(async () => {
  await ed?.close();
});

test('Watch verl/TRL Run: the metrics file is found, charted with the alert, a step lists its dump rows', async () => {
  await runCommand(ed.page, 'CoA: Watch verl/TRL Run…');
  await pickQuick(ed.page, 'metrics.jsonl', 'CoA: Watch verl/TRL Run');
  // The optional tool-health URL: skipped.
  await ed.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Tool health' }).waitFor({ timeout: 60_000 });
  await ed.page.keyboard.press('Enter');
  const frame = await webviewFrame(ed.page, async (f) => (await f.locator('.chart[data-metric="critic/score/mean"].drawn').count()) > 0, 90_000);
  assert.deepEqual(await frame.locator('#tabs .tab').allTextContents(), ['verl']);
  assert.equal(await frame.locator('.chart[data-metric="critic/score/mean"]').getAttribute('data-points'), '16');
  assert.deepEqual(await frame.locator('#alerts .alert-group .title').allTextContents(), ['1 × tool-call explosion']);
  await ed.shot('verl-panel');
  // Click step 2 on the score chart: the host reads rollouts/2.jsonl.
  const over = frame.locator('.chart[data-metric="critic/score/mean"] .u-over');
  const box = (await over.boundingBox())!;
  const list = frame.locator('#step-rollouts ul.step-rollouts');
  for (const x of [0.02, 0.05, 0.08, 0.1]) {
    await over.click({ position: { x: box.width * x, y: box.height * 0.5 } });
    if (await list.waitFor({ timeout: 10_000 }).then(() => true, () => false)) break;
  }
  const step = Number(await list.getAttribute('data-step'));
  assert.ok([1, 2, 3].includes(step), `clicked step ${step}`);
  const ids = await list.locator('li[data-id]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id));
  assert.deepEqual(ids, Array.from({ length: 8 }, (_, i) => `verl-${step}-${i}`));
  await ed.shot('verl-step-rollouts');
});
