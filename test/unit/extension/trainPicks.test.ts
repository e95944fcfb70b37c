// Train Stage's starting-checkpoint step (picks.ts, no VS Code): a stage that starts from an earlier stage's model
// is offered that model first — SFT-2 used to offer "None (start fresh)" first, which then failed "needs a model".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LABELS,
  checkpointItems,
  finalCheckpoints,
  type FinalCheckpoint,
} from '../../../src/extension/providers/train/picks';
import type { RunInfo, StageInfo } from '../../../src/extension/providers/runs/model';

const stage = (name: string, step: number | null, finalDir: string | null): StageInfo => ({
  name,
  status: finalDir ? 'ok' : 'failed',
  step,
  total: step,
  checkpoints: [],
  evals: [],
  finalDir,
  rollouts: null,
  error: null,
});
const run = (id: string, updated: number, stages: StageInfo[]): RunInfo => ({
  id,
  dir: `/w/runs/${id}`,
  status: 'ok',
  stages,
  badLines: 0,
  updated,
});

// An older run with pretrain and SFT-1 done; a newer one that only has pretrain (SFT-1 failed).
const runs = [
  run('old', 1, [
    stage('pretrain', 600, '/w/runs/old/stages/pretrain/final'),
    stage('sft1', 200, '/w/runs/old/stages/sft1/final'),
  ]),
  run('new', 2, [stage('pretrain', 600, '/w/runs/new/stages/pretrain/final'), stage('sft1', 3, null)]),
];
const finals: FinalCheckpoint[] = finalCheckpoints(runs);

test('final checkpoints: every stage result, newest run first', () => {
  assert.deepEqual(
    finals.map((f) => `${f.runId}/${f.stage}`),
    ['new/pretrain', 'old/pretrain', 'old/sft1'],
  );
});

test("SFT-2 proposes each run's nearest earlier result first (SFT-1, else pretrain), then None, the rest, Browse", () => {
  const items = checkpointItems('sft2', finals, false);
  assert.deepEqual(
    items.map((i) => i.label),
    ['new / pretrain final', 'old / sft1 final', LABELS.noCheckpoint, 'old / pretrain final', LABELS.browseCheckpoint],
  );
  assert.equal(items[0].path, '/w/runs/new/stages/pretrain/final');
  assert.match(items[1].description, /step 200 · the SFT-1 result SFT-2 starts from/);
  assert.match(items[2].description, /needs model\.path or init_from/);
});

test("RL-2-OTC's sibling RL-2 and RL-1 start from RL-1 / SFT-3", () => {
  const rl = [
    run(
      'p',
      1,
      ['pretrain', 'sft1', 'sft2', 'sft3', 'rl1'].map((s) => stage(s, 10, `/w/runs/p/stages/${s}/final`)),
    ),
  ];
  assert.equal(checkpointItems('rl2', finalCheckpoints(rl), false)[0].label, 'p / rl1 final');
  assert.equal(checkpointItems('rl1', finalCheckpoints(rl), false)[0].label, 'p / sft3 final');
});

test('None first where it works: pretrain, the whole pipeline, a model picked before, or no earlier result at all', () => {
  for (const [s, modelPicked] of [
    ['pretrain', false],
    ['pipeline', false],
    ['sft2', true],
  ] as const) {
    const items = checkpointItems(s, finals, modelPicked);
    assert.equal(items[0].label, LABELS.noCheckpoint, s);
    assert.equal(items[0].description, '', s);
  }
  const none = checkpointItems('sft2', [], false);
  assert.deepEqual(
    none.map((i) => i.label),
    [LABELS.noCheckpoint, LABELS.browseCheckpoint],
  );
});

test("RL-1 never proposes first a model that saw no tool call: the newest run's pretrain goes below an older run's SFT-2, marked", () => {
  const mixed = [
    run('new', 2, [stage('pretrain', 600, '/w/runs/new/stages/pretrain/final')]),
    run(
      'old',
      1,
      ['pretrain', 'sft1', 'sft2'].map((s) => stage(s, 10, `/w/runs/old/stages/${s}/final`)),
    ),
  ];
  const items = checkpointItems('rl1', finalCheckpoints(mixed), false);
  assert.equal(items[0].label, 'old / sft2 final');
  assert.match(items[0].description, /the SFT-2 result RL-1 starts from/);
  const pretrain = items.find((i) => i.label === 'new / pretrain final')!;
  assert.match(pretrain.description, /never trained on tool calls/);
  assert.equal(
    items.find((i) => i.label === 'old / sft1 final')!.description.includes('never trained on tool calls'),
    true,
    'SFT-1 (pairwise) wrote no tool call either',
  );
});

test('RL-1 with only a pretrain in the workspace: the first item says no SFT-3 or SFT-2 result exists and browses; it never starts from the pretrain', () => {
  const only = [run('new', 2, [stage('pretrain', 600, '/w/runs/new/stages/pretrain/final')])];
  const items = checkpointItems('rl1', finalCheckpoints(only), false);
  assert.equal(items[0].label, LABELS.browseCheckpoint);
  assert.equal(items[0].path, '');
  assert.match(
    items[0].description,
    /no SFT-3 or SFT-2 result in runs\/ — RL-1 needs a model trained on tool calls: train SFT-2 first/,
  );
  assert.deepEqual(
    items.map((i) => i.label),
    [LABELS.browseCheckpoint, LABELS.noCheckpoint, 'new / pretrain final'],
  );
});
