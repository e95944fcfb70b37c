// Real-editor proof: "CoA: Collect Trajectories" in code-server with the packaged extension — Train Stage's
// config and data picks, then the teacher (here: the run config's, the realistic tiny chat model built for the test);
// the extension starts the environment server and `coa_trainer collect`; at the end "Open Collection" opens the
// collection in the trajectory notebook, and "Filter by Reward and Mode" makes a view of one mode.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, pickQuick, repoRoot, runCommand, startEditor, until, type Editor } from './harness';

/** Events of a run directory, parsed (a partly written last line is skipped). */
function readEvents(runDir: string): Record<string, any>[] {
  const file = join(runDir, 'events.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((l) => {
      try {
        return l.trim() ? [JSON.parse(l)] : [];
      } catch {
        return [];
      }
    });
}

let ed: Editor;
let modelRoot = '';
before(async () => {
  // the realistic tiny chat model (src/trainer/tests/realistic_model.py): built here, never downloaded
  modelRoot = mkdtempSync(join(tmpdir(), 'coa-e2e-teacher-'));
  const model = join(modelRoot, 'model');
  execFileSync(paths.python, [join(repoRoot, 'src', 'trainer', 'tests', 'realistic_model.py'), model], {
    stdio: 'pipe',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  const config = {
    threads: 1,
    device: 'cpu',
    seed: 0,
    dialect: 'search-r1',
    model: { user_prompt: 'Search with <search> query </search>, answer in <answer> </answer>. Question: {question}' },
    data: {
      questions: { train: join(repoRoot, 'examples', 'data', 'autocoa', 'hotpotqa_train.parquet') },
      corpus: join(repoRoot, 'examples', 'data', 'search-r1', 'corpus_example.jsonl'),
    },
    // The tiny model's weights are random: its 8 tokens are never a right or well-formed answer, and a collection that
    // keeps nothing fails (nothing for SFT to train on). What is tested here is the editor's path, so every sample is kept.
    collect: {
      teacher: { path: model },
      limit: 2,
      samples: 2,
      modes: ['coa', 'cot'],
      temperature: 0.7,
      max_new_tokens: 8,
      batch_size: 4,
      select: { correct_only: false, format_clean: false },
    },
  };
  ed = await startEditor({ name: 'collect', files: { 'collect.run.json': JSON.stringify(config, null, 2) } });
});
after(async () => {
  await ed?.close();
  if (modelRoot) rmSync(modelRoot, { recursive: true, force: true });
});

test('"CoA: Collect Trajectories": picks, a collection with the env server, opened in the notebook and filtered by mode', async () => {
  const started = Date.now();
  const runsDir = join(ed.workspace, 'runs');
  const before = new Set(existsSync(runsDir) ? readdirSync(runsDir) : []);
  await runCommand(ed.page, 'CoA: Collect Trajectories');
  // Titles and labels: src/extension/providers/train/collectPicks.ts (data: Train Stage's).
  await pickQuick(ed.page, 'collect.run.json', 'CoA: Collect Trajectories (1/2)');
  await pickQuick(ed.page, 'Data from the run config', 'CoA: Train Stage: data');
  await pickQuick(ed.page, 'Teacher from the run config', 'CoA: Collect Trajectories (2/2)');
  // A failed collection ends with an error event and no stage_finished: either ends the wait, so a failure is
  // reported with its message at once instead of at the deadline.
  const runDir = await until(
    'the collection to finish (its stage_finished or error event)',
    () => {
      const id = (existsSync(runsDir) ? readdirSync(runsDir) : []).find(
        (d) => !before.has(d) && d.endsWith('-collect'),
      );
      return (
        id &&
        readEvents(join(runsDir, id)).some(
          (e) => (e.type === 'stage_finished' && e.stage === 'collect') || e.type === 'error',
        ) &&
        join(runsDir, id)
      );
    },
    300_000,
  );
  const events = readEvents(runDir);
  assert.deepEqual(
    events.filter((e) => e.type === 'error'),
    [],
  );
  const finished = events.find((e) => e.type === 'stage_finished')!;
  assert.equal(finished.status, 'ok');
  assert.ok(events.some((e) => e.type === 'progress' && e.stage === 'collect' && e.step === e.total && e.total === 8));
  const records = readFileSync(join(runDir, 'stages', 'collect', 'collection.coa.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(records.map((r) => r.meta.mode).sort(), ['coa', 'coa', 'coa', 'coa', 'cot', 'cot', 'cot', 'cot']);
  assert.ok(
    records.every((r) => r.reward && r.meta.teacher.kind === 'model'),
    'graded, with the teacher in meta',
  );

  const toast = ed.page.locator('.notification-toast', { hasText: 'collection finished' }).first();
  await toast.waitFor({ timeout: 60_000 });
  await ed.shot('collect-finished');
  assert.match(await toast.innerText(), /collected 8 trajectories, kept \d+/);
  await toast.getByRole('button', { name: 'Open Collection' }).click();
  await ed.page
    .locator('.tabs-container .tab.active', { hasText: 'collection.coa.jsonl' })
    .waitFor({ timeout: 60_000 });
  await ed.page.locator('.notebook-editor .cell-list-container').first().waitFor({ timeout: 60_000 });
  await ed.shot('collect-notebook');

  await runCommand(ed.page, 'CoA: Filter by Reward and Mode');
  await pickQuick(ed.page, 'Any reward', 'CoA: Filter Trajectories (1/2)');
  await pickQuick(ed.page, 'cot', 'CoA: Filter Trajectories (2/2)');
  await ed.page.locator('.tabs-container .tab.active', { hasText: 'filter-any-cot' }).waitFor({ timeout: 60_000 });
  await ed.shot('collect-filtered');
  // the view is a file of its own in a temp folder (notebook/register.ts): the cot samples, each line as it was
  const views = readdirSync(tmpdir())
    .filter((d) => d.startsWith('coa-studio-view-'))
    .map((d) => join(tmpdir(), d, 'collection.filter-any-cot.coa.jsonl'))
    .filter((f) => existsSync(f) && statSync(f).mtimeMs >= started);
  assert.equal(views.length, 1, 'one filtered view written by this test');
  const lines = readFileSync(views[0], 'utf8').trim().split('\n');
  assert.deepEqual(
    lines,
    readFileSync(join(runDir, 'stages', 'collect', 'collection.coa.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter((l) => JSON.parse(l).meta.mode === 'cot'),
  );
});
