// Real-editor proof: TensorBoard runs of other trainers in the cockpit. A workspace holding folders of event files
// written by the real writers (test/fixtures/tensorboard: torch's SummaryWriter as verl's tensorboard logger uses it,
// and TensorBoard's own writer as our trainer uses it) shows each folder in the Runs view; a click opens it in the
// live panel with its scalars charted, and points appended to the file while the panel is open are drawn.
// Screenshots: .cache/artifacts/e2e/tensorboard-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startEditor, until, webviewFrame, type Editor } from './harness';

const FIX = join(repoRoot, 'test', 'fixtures', 'tensorboard');
const bytesOf = (run: string) =>
  readFileSync(join(FIX, run, readdirSync(join(FIX, run)).find((n) => n.startsWith('events.out.tfevents.'))!));
const torch = bytesOf('torch');
// The torch file up to the end of its 4th step's records: the rest is appended while the panel shows the run.
const CUT = (() => {
  let pos = 0;
  let kept = 0;
  const view = new DataView(torch.buffer, torch.byteOffset, torch.byteLength);
  for (let records = 0; pos + 12 <= torch.length && records < 1 + 3 * 4; records++) {
    pos += 12 + Number(view.getBigUint64(pos, true)) + 4;
    kept = pos;
  }
  return kept;
})();
const VERL_FILE = 'tensorboard_log/search_r1/grpo-qwen/events.out.tfevents.1700000000.gpu-node.1';

let ed: Editor;
before(async () => {
  ed = await startEditor({
    name: 'tensorboard',
    files: {
      [VERL_FILE]: torch.subarray(0, CUT),
      'logs/sft-sweep/lr-3e-4/events.out.tfevents.1700000000.host.2': bytesOf('tensorboard'),
    },
  });
});
after(async () => {
  await ed?.close();
});

test('the Runs view lists TensorBoard runs; a click charts one in the live panel, and appended points are drawn', async () => {
  await ed.page
    .locator(
      '.activitybar .action-item a[aria-label^="CoA Studio"], .activitybar .action-item[aria-label^="CoA Studio"]',
    )
    .first()
    .click();
  const row = ed.page.locator('.sidebar .monaco-list-row', { hasText: 'grpo-qwen' }).first();
  await row.waitFor({ timeout: 60_000 });
  assert.match((await row.textContent()) ?? '', /TensorBoard · tensorboard_log\/search_r1\/grpo-qwen/);
  const other = ed.page.locator('.sidebar .monaco-list-row', { hasText: 'lr-3e-4' }).first();
  assert.match((await other.textContent()) ?? '', /TensorBoard · logs\/sft-sweep\/lr-3e-4/);
  await ed.shot('tensorboard-runs-view');

  await row.click();
  const frame = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('.chart[data-metric="critic/score/mean"].drawn').count()) > 0,
    90_000,
  );
  assert.equal(await frame.locator('.chart[data-metric="critic/score/mean"]').getAttribute('data-points'), '4');
  for (const name of ['actor/entropy', 'response_length/mean'])
    assert.equal(await frame.locator(`.chart[data-metric="${name}"]`).count(), 1, name);
  assert.equal(
    await frame.locator('.chart[data-metric="actor/logits"]').count(),
    0,
    'a histogram is not a scalar series',
  );

  appendFileSync(join(ed.workspace, VERL_FILE), torch.subarray(CUT));
  await until(
    'the appended steps drawn',
    async () => (await frame.locator('.chart[data-metric="critic/score/mean"]').getAttribute('data-points')) === '6',
    30_000,
  );
  await ed.shot('tensorboard-panel');
});
