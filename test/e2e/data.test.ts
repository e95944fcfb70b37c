// Real-editor proof, data side: "CoA: Train Stage" offers the run config's data, checks it with
// `coa data check` before anything starts (bad data → an error naming file, line and field, no run, the file
// opens at the line), and the Runs view shows which data a run used.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pickQuick, runCommand, startEditor, until, type Editor } from './harness';

const RUN = '20261124-000000-sft2';
const ev = (e: Record<string, unknown>) => JSON.stringify({ v: 1, time: 1_790_000_000, run: RUN, ...e });

let ed: Editor;
before(async () => {
  ed = await startEditor({
    name: 'data',
    files: {
      'plain.run.json': JSON.stringify({ threads: 1, seed: 5 }),
      'configs/good.run.json': JSON.stringify({ threads: 1, data: { questions: { dev: '../data/good.jsonl' } } }),
      'data/good.jsonl': '{"id": "q1", "question": "who wrote jaws?", "golden_answers": ["Peter Benchley"]}\n',
      'bad.run.json': JSON.stringify({ threads: 1, data: { questions: { train: 'data/bad.jsonl' } } }, null, 2),
      'data/bad.jsonl':
        '{"id": "q1", "question": "who wrote jaws?", "golden_answers": ["Peter Benchley"]}\n{"id": "q2", "question": "", "golden_answers": ["Paris"]}\n',
      // A finished run whose config names its data (as Train Stage writes it: absolute paths).
      [`runs/${RUN}/config.json`]: JSON.stringify({
        data: { questions: { train: '/data/hotpotqa_train.parquet' }, corpus: '/data/wiki-18.jsonl' },
      }),
      [`runs/${RUN}/events.jsonl`]:
        [
          ev({ type: 'run_started', stage: 'sft2', config: {}, total_steps: 2, device: 'cpu', world_size: 1, pid: 1 }),
          ev({ type: 'stage_finished', stage: 'sft2', step: 2, status: 'ok', checkpoint: null }),
        ].join('\n') + '\n',
    },
  });
});
after(async () => {
  await ed?.close();
});

test('Train Stage with bad data: the check names file, line and field, nothing starts, the file opens there', async () => {
  const runs = () => readdirSync(join(ed.workspace, 'runs'));
  const before = runs();
  await runCommand(ed.page, 'CoA: Train Stage');
  await pickQuick(ed.page, /^SFT-2/, 'CoA: Train Stage (1/4)');
  await pickQuick(ed.page, 'bad.run.json', 'CoA: Train Stage (2/4)');
  await pickQuick(ed.page, 'Data from the run config', 'CoA: Train Stage: data');
  await pickQuick(ed.page, 'Embedded default model', 'CoA: Train Stage (3/4)');
  await pickQuick(ed.page, 'None (start fresh)', 'CoA: Train Stage (4/4)');
  const toast = ed.page.locator('.notification-toast', { hasText: 'did not pass the check' }).first();
  await toast.waitFor({ timeout: 90_000 });
  await ed.shot('data-check-error');
  const text = await toast.innerText();
  assert.match(text, /bad\.jsonl:2:\d+: error: question: empty question/);
  assert.deepEqual(runs(), before, 'no run directory is left behind');
  await toast.getByRole('button', { name: 'Open File' }).click();
  await ed.page.locator('.tabs-container .tab.active', { hasText: 'bad.jsonl' }).waitFor({ timeout: 30_000 });
  await ed.page.locator('.statusbar', { hasText: /Ln 2, Col \d+/ }).waitFor({ timeout: 30_000 });
  await ed.shot('data-check-open-file');
});

test('the Runs view shows the data a run used', async () => {
  await ed.page
    .locator(
      '.activitybar .action-item a[aria-label^="CoA Studio"], .activitybar .action-item[aria-label^="CoA Studio"]',
    )
    .first()
    .click();
  const row = ed.page.locator('.sidebar .monaco-list-row', { hasText: RUN }).first();
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  const data = ed.page.locator('.sidebar .monaco-list-row', { hasText: 'hotpotqa_train.parquet' }).first();
  await data.waitFor({ timeout: 30_000 });
  await ed.shot('runs-data-node');
  assert.match(await data.innerText(), /data[\s\S]*hotpotqa_train\.parquet · wiki-18\.jsonl/);
  assert.ok(existsSync(join(ed.workspace, 'runs', RUN)));
});

test('a config without data goes from the config straight to the model pick, unchecked, as before', async () => {
  const before = new Set(readdirSync(join(ed.workspace, 'runs')));
  await runCommand(ed.page, 'CoA: Train Stage');
  await pickQuick(ed.page, /^SFT-2/, 'CoA: Train Stage (1/4)');
  await pickQuick(ed.page, 'plain.run.json', 'CoA: Train Stage (2/4)');
  // No data step: the next quick pick is the model.
  await pickQuick(ed.page, 'Embedded default model', 'CoA: Train Stage (3/4)');
  await pickQuick(ed.page, 'None (start fresh)', 'CoA: Train Stage (4/4)');
  // The run directory is created (the trainer is started; SFT-2 without a model then stops on its own).
  const created = await until(
    'the new run directory',
    () => readdirSync(join(ed.workspace, 'runs')).find((d) => !before.has(d) && d.endsWith('-sft2')),
    60_000,
  );
  const config = JSON.parse(readFileSync(join(ed.workspace, 'runs', created, 'config.json'), 'utf8'));
  assert.equal(config.seed, 5);
  assert.equal(config.data, undefined);
});

test("good data passes the check; the run's config copy holds the data paths resolved against the config file", async () => {
  const before = new Set(readdirSync(join(ed.workspace, 'runs')));
  await runCommand(ed.page, 'CoA: Train Stage');
  await pickQuick(ed.page, /^SFT-2/, 'CoA: Train Stage (1/4)');
  await pickQuick(ed.page, 'configs/good.run.json', 'CoA: Train Stage (2/4)');
  await pickQuick(ed.page, 'Data from the run config', 'CoA: Train Stage: data');
  await pickQuick(ed.page, 'Embedded default model', 'CoA: Train Stage (3/4)');
  await pickQuick(ed.page, 'None (start fresh)', 'CoA: Train Stage (4/4)');
  // The check passed and the trainer was started (it writes events.jsonl).
  const created = await until(
    "the trainer's events.jsonl in a new run directory",
    () =>
      readdirSync(join(ed.workspace, 'runs')).find(
        (d) => !before.has(d) && d.endsWith('-sft2') && existsSync(join(ed.workspace, 'runs', d, 'events.jsonl')),
      ),
    90_000,
  );
  const config = JSON.parse(readFileSync(join(ed.workspace, 'runs', created, 'config.json'), 'utf8'));
  assert.equal(config.data.questions.dev, join(ed.workspace, 'data', 'good.jsonl'));
});
