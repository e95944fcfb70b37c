// The Runs view's data model on run directories laid out as the trainer writes them (train.py docstring).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  configFromEvents,
  readRun,
  readRuns,
  resumable,
  stageNodes,
  stageChildren,
  runNode,
} from '../../../src/extension/providers/runs/model';

const alive = (pids: number[]) => (pid: number) => pids.includes(pid);
const ev = (run: string, e: Record<string, unknown>) => JSON.stringify({ v: 1, time: 1_700_000_000, run, ...e });

function makeRun(root: string, id: string, lines: string[], files: string[] = []): string {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'events.jsonl'), lines.join('\n') + '\n');
  for (const f of files) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), '{}');
  }
  return dir;
}

test('a finished pretrain and a cancelled sft1: stages, checkpoints, evals, rollouts, statuses', () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const dir = makeRun(
      root,
      'r1',
      [
        ev('r1', {
          type: 'run_started',
          stage: 'pretrain',
          config: {},
          total_steps: 20,
          device: 'cpu',
          world_size: 1,
          pid: 11,
        }),
        ev('r1', { type: 'progress', stage: 'pretrain', step: 20, total: 20, elapsed_s: 3, eta_s: 0 }),
        ev('r1', { type: 'checkpoint', stage: 'pretrain', step: 20, path: 'runs/r1/stages/pretrain/final' }),
        ev('r1', { type: 'eval', stage: 'pretrain', step: 20, split: 'dev', metrics: { em: 0.25, f1: 0.5 } }),
        ev('r1', {
          type: 'stage_finished',
          stage: 'pretrain',
          step: 20,
          status: 'ok',
          checkpoint: 'runs/r1/stages/pretrain/final',
        }),
        '{not json',
        ev('r1', {
          type: 'run_started',
          stage: 'sft1',
          config: {},
          total_steps: 50,
          device: 'cpu',
          world_size: 1,
          pid: 12,
        }),
        ev('r1', { type: 'progress', stage: 'sft1', step: 10, total: 50, elapsed_s: 1, eta_s: 4 }),
        ev('r1', {
          type: 'checkpoint',
          stage: 'sft1',
          step: 13,
          path: 'runs/r1/stages/sft1/checkpoints/step-000013.safetensors',
        }),
        ev('r1', { type: 'stage_finished', stage: 'sft1', step: 13, status: 'cancelled', checkpoint: null }),
      ],
      [
        'stages/pretrain/final/config.json',
        'stages/pretrain/rollouts.coa.jsonl',
        'stages/sft1/checkpoints/step-000013.safetensors',
      ],
    );
    const run = readRun(dir, 'r1', alive([]))!;
    assert.equal(run.badLines, 1);
    assert.deepEqual(
      run.stages.map((s) => [s.name, s.status, s.step, s.total]),
      [
        ['pretrain', 'ok', 20, 20],
        ['sft1', 'cancelled', 13, 50],
      ],
    );
    assert.equal(run.status, 'cancelled');
    const [pre, sft1] = run.stages;
    assert.equal(pre.finalDir, join(dir, 'stages/pretrain/final'));
    assert.deepEqual(pre.checkpoints, [{ step: 20, path: join(dir, 'stages/pretrain/final'), final: true }]);
    assert.deepEqual(sft1.checkpoints, [
      { step: 13, path: join(dir, 'stages/sft1/checkpoints/step-000013.safetensors'), final: false },
    ]);
    assert.deepEqual(
      stageNodes(run).map((n) => [n.label, n.description]),
      [
        ['pretrain', 'ok · step 20/20'],
        ['sft1', 'cancelled · step 13/50'],
      ],
    );
    assert.deepEqual(
      stageChildren(run, pre).map((n) => [n.kind, n.label, n.description]),
      [
        ['checkpoint', 'final', 'model · step 20'],
        ['eval', 'eval dev', 'em 0.250 · f1 0.500'],
        ['rollouts', 'rollouts', 'rollouts.coa.jsonl'],
      ],
    );
    assert.deepEqual(
      stageChildren(run, sft1).map((n) => [n.kind, n.label]),
      [['checkpoint', 'checkpoint 13']],
    );
    assert.equal(runNode(run, (s) => s.toUpperCase()).description, 'cancelled · PRETRAIN, SFT1');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a collection (coa_trainer collect): a stage without a model, its collection file as the rollouts node', () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const dir = makeRun(
      root,
      'c1',
      [
        ev('c1', {
          type: 'run_started',
          stage: 'collect',
          config: {},
          total_steps: 24,
          device: 'cpu',
          world_size: 1,
          pid: 11,
        }),
        ev('c1', { type: 'progress', stage: 'collect', step: 24, total: 24, elapsed_s: 3, eta_s: 0 }),
        ev('c1', { type: 'eval', stage: 'collect', step: 24, split: 'train', metrics: { collected: 24, kept: 9 } }),
        ev('c1', {
          type: 'stage_finished',
          stage: 'collect',
          step: 24,
          status: 'ok',
          checkpoint: 'runs/c1/stages/collect/selected.coa.jsonl',
        }),
      ],
      ['stages/collect/collection.coa.jsonl', 'stages/collect/selected.coa.jsonl'],
    );
    const run = readRun(dir, 'c1', alive([]))!;
    const [collect] = run.stages;
    assert.deepEqual([collect.name, collect.status, collect.finalDir], ['collect', 'ok', null]);
    assert.deepEqual(
      stageChildren(run, collect).map((n) => [n.kind, n.label, n.description]),
      [
        ['eval', 'eval train', 'collected 24 · kept 9'],
        ['rollouts', 'collection', 'collection.coa.jsonl'],
      ],
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a started stage is running while its pid lives, failed once it is gone; an error event fails it', () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const lines = [
      ev('r2', {
        type: 'run_started',
        stage: 'sft2',
        config: {},
        total_steps: 9,
        device: 'cpu',
        world_size: 1,
        pid: 77,
      }),
    ];
    const dir = makeRun(root, 'r2', lines);
    assert.equal(readRun(dir, 'r2', alive([77]))!.status, 'running');
    const gone = readRun(dir, 'r2', alive([]))!;
    assert.equal(gone.status, 'failed');
    assert.match(gone.stages[0].error!, /process is gone/);
    writeFileSync(
      join(dir, 'events.jsonl'),
      [...lines, ev('r2', { type: 'error', stage: 'sft2', message: 'CUDA out of memory', code: 'internal' })].join(
        '\n',
      ),
    );
    const failed = readRun(dir, 'r2', alive([77]))!;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.stages[0].error, 'CUDA out of memory');
    // Resumed: a new run_started clears the failure.
    writeFileSync(
      join(dir, 'events.jsonl'),
      [
        ...lines,
        ev('r2', { type: 'error', stage: 'sft2', message: 'x' }),
        ev('r2', {
          type: 'run_started',
          stage: 'sft2',
          config: {},
          total_steps: 9,
          device: 'cpu',
          world_size: 1,
          pid: 78,
          resumed_from: 4,
        }),
      ].join('\n'),
    );
    const resumed = readRun(dir, 'r2', alive([78]))!;
    assert.deepEqual([resumed.status, resumed.stages[0].step, resumed.stages[0].error], ['running', 4, null]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('readRuns: only run directories, newest first, stages in pipeline order', () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const older = makeRun(root, 'a-old', [
      ev('a', { type: 'stage_finished', stage: 'rl1', step: 1, status: 'ok', checkpoint: null }),
      ev('a', { type: 'stage_finished', stage: 'sft3', step: 1, status: 'ok', checkpoint: null }),
    ]);
    utimesSync(join(older, 'events.jsonl'), 1_000, 1_000);
    makeRun(root, 'b-new', [ev('b', { type: 'log', level: 'info', message: 'hi' })]);
    mkdirSync(join(root, 'not-a-run'));
    writeFileSync(join(root, 'stray.txt'), '');
    const runs = readRuns(root, alive([]));
    assert.deepEqual(
      runs.map((r) => r.id),
      ['b-new', 'a-old'],
    );
    assert.deepEqual(
      runs[1].stages.map((s) => s.name),
      ['sft3', 'rl1'],
    );
    assert.equal(runs[0].status, 'pending');
    assert.deepEqual(readRuns(join(root, 'missing')), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('configFromEvents: a terminal run (no config.json) can be resumed with the config of its last run_started', () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const dir = makeRun(root, 'r3', [
      ev('r3', {
        type: 'run_started',
        stage: 'pretrain',
        config: { seed: 1 },
        total_steps: 9,
        device: 'cpu',
        world_size: 1,
      }),
      ev('r3', {
        type: 'run_started',
        stage: 'sft1',
        config: { seed: 2 },
        total_steps: 9,
        device: 'cpu',
        world_size: 1,
      }),
      ev('r3', { type: 'log', level: 'info', message: 'run_started' }),
    ]);
    assert.deepEqual(configFromEvents(dir), { seed: 2 });
    assert.equal(configFromEvents(join(root, 'nope')), null);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the demo pipeline: evaluations (results settings) are finished, not pending; Resume is offered only on cancelled or failed runs', async () => {
  const { readFileSync } = await import('node:fs');
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const lines = readFileSync(join(__dirname, '../../fixtures/live-panel/demo-pipeline.events.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean);
    const run = readRun(makeRun(root, 'demo', lines), 'demo', alive([]))!;
    const status = Object.fromEntries(run.stages.map((s) => [s.name, s.status]));
    for (const setting of ['no-tool', 'workflow', 'sft12', 'sft-rl', 'sft-rl-otc'])
      assert.equal(status[setting], 'ok', setting);
    assert.ok(!Object.values(status).includes('pending'), JSON.stringify(status));
    assert.equal(run.status, 'ok');
    assert.deepEqual(
      run.stages.map((s) => s.name),
      [
        'pretrain',
        'sft1',
        'sft2',
        'sft3',
        'rl1',
        'rl2',
        'rl2-otc',
        'no-tool',
        'workflow',
        'sft12',
        'sft-rl',
        'sft-rl-otc',
        'pipeline',
      ],
      'pipeline order, evaluations after the stages',
    );
    // The menus of package.json, applied to the tree items' contextValue (`coaRun.<kind>.<status>[.resumable]`, runs/index.ts).
    const manifest = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8'));
    const resumes = (manifest.contributes.menus['view/item/context'] as { command: string; when: string }[]).filter(
      (m) => m.command === 'coaStudio.resumeRun',
    );
    assert.ok(resumes.length > 0);
    for (const m of resumes) {
      const re = new RegExp(/viewItem =~ \/(.*)\/$/.exec(m.when)![1]);
      for (const st of ['ok', 'running', 'pending'])
        assert.ok(
          !re.test(`coaRun.run.${st}`) && !re.test(`coaRun.stage.${st}`),
          `Resume offered on a ${st} run: ${m.when}`,
        );
      for (const st of ['cancelled', 'failed']) {
        assert.ok(
          re.test(`coaRun.run.${st}.resumable`) && re.test(`coaRun.stage.${st}.resumable`),
          `Resume missing on a ${st} run with a checkpoint`,
        );
        assert.ok(
          !re.test(`coaRun.run.${st}`) && !re.test(`coaRun.stage.${st}`),
          `Resume offered on a ${st} run without a checkpoint: ${m.when}`,
        );
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("resumable: a failed or cancelled stage with a step checkpoint (.safetensors, a sharded .sharded/, an older run's .pt), never one that failed before its first", () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const started = (stage: string) =>
      ev('r4', { type: 'run_started', stage, config: {}, total_steps: 9, device: 'cpu', world_size: 1 });
    const dir = makeRun(
      root,
      'r4',
      [
        started('pretrain'),
        ev('r4', {
          type: 'stage_finished',
          stage: 'pretrain',
          step: 9,
          status: 'ok',
          checkpoint: 'stages/pretrain/final',
        }),
        // SFT-2 with nothing to start from: fails at once, no checkpoint, so no "Resume Run" (it would only fail again).
        started('sft2'),
        ev('r4', { type: 'error', stage: 'sft2', message: 'stage sft2 needs a model' }),
        started('sft1'),
        ev('r4', { type: 'stage_finished', stage: 'sft1', step: 4, status: 'cancelled', checkpoint: null }),
        started('sft3'),
        ev('r4', { type: 'error', stage: 'sft3', message: 'boom' }),
      ],
      [
        'stages/pretrain/final/config.json',
        'stages/pretrain/checkpoints/step-000004.pt',
        'stages/sft1/checkpoints/step-000004.safetensors',
        'stages/sft1/checkpoints/.step-000008.safetensors.tmp',
        'stages/sft3/checkpoints/step-000002.sharded/rank-00000.safetensors',
      ],
    );
    const run = readRun(dir, 'r4', alive([]))!;
    const by = Object.fromEntries(run.stages.map((s) => [s.name, s]));
    assert.deepEqual(Object.fromEntries(run.stages.map((s) => [s.name, resumable(s)])), {
      pretrain: false,
      sft1: true,
      sft2: false,
      sft3: true,
    });
    assert.deepEqual(
      by.sft1.checkpoints.map((c) => c.step),
      [4],
      'a checkpoint being written is not one',
    );
    assert.deepEqual(
      by.sft3.checkpoints.map((c) => [c.step, c.final]),
      [[2, false]],
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('Resume Run lists only what can continue: a finished pipeline run (its stages and its baseline rows) offers nothing; a cancelled stage with a checkpoint is offered', async () => {
  const { demoRun } = await import('../../fixtures/demoRun');
  const { resumableRuns, resumableStages } = await import('../../../src/extension/providers/train/picks');
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-'));
  try {
    const demo = readRun(demoRun(join(root, 'demo')), 'demo', alive([]))!;
    assert.ok(
      demo.stages.some((s) => s.name === 'no-tool') && demo.stages.some((s) => s.name === 'workflow'),
      'the demo run holds the baseline rows',
    );
    assert.deepEqual(
      resumableStages(demo).map((s) => s.name),
      [],
    );
    const started = (stage: string) =>
      ev('r5', { type: 'run_started', stage, config: {}, total_steps: 9, device: 'cpu', world_size: 1 });
    makeRun(
      root,
      'r5',
      [
        started('pretrain'),
        ev('r5', {
          type: 'stage_finished',
          stage: 'pretrain',
          step: 9,
          status: 'ok',
          checkpoint: 'stages/pretrain/final',
        }),
        started('sft1'),
        ev('r5', { type: 'stage_finished', stage: 'sft1', step: 4, status: 'cancelled', checkpoint: null }),
      ],
      [
        'stages/pretrain/final/config.json',
        'stages/pretrain/checkpoints/step-000009.pt',
        'stages/sft1/checkpoints/step-000004.pt',
      ],
    );
    const runs = readRuns(root, alive([]));
    assert.deepEqual(
      resumableRuns(runs).map((r) => r.id),
      ['r5'],
      'the finished demo run is not offered',
    );
    assert.deepEqual(
      resumableStages(runs.find((r) => r.id === 'r5')!).map((s) => s.name),
      ['sft1'],
      'a finished stage keeping a step checkpoint is not offered',
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('checkpoints another engine wrote outside the run (TRL checkpoint-N) are listed as model directories, not resumable', () => {
  const root = mkdtempSync(join(tmpdir(), 'coa-runs-ext-'));
  try {
    const out = join(root, 'trl-out');
    mkdirSync(join(out, 'checkpoint-2'), { recursive: true });
    writeFileSync(join(out, 'checkpoint-2', 'config.json'), '{}');
    const dir = makeRun(
      root,
      'trl-run',
      [
        ev('trl-run', {
          type: 'run_started',
          stage: 'trl',
          config: {},
          total_steps: 4,
          device: 'cpu',
          world_size: 1,
          pid: 5,
        }),
        ev('trl-run', { type: 'checkpoint', stage: 'trl', step: 2, path: join(out, 'checkpoint-2') }),
        ev('trl-run', { type: 'checkpoint', stage: 'trl', step: 4, path: join(out, 'checkpoint-4') }), // deleted since
        ev('trl-run', { type: 'error', stage: 'trl', message: 'boom' }),
      ],
      ['stages/trl/rollouts.coa.jsonl'],
    );
    const run = readRun(dir, 'trl-run', alive([]))!;
    const stage = run.stages.find((s) => s.name === 'trl')!;
    assert.deepEqual(stage.checkpoints, [{ step: 2, path: join(out, 'checkpoint-2'), final: false, external: true }]);
    assert.equal(resumable(stage), false, 'our trainer cannot resume a TRL checkpoint');
    const nodes = stageChildren(run, stage).filter((n) => n.kind === 'checkpoint');
    assert.deepEqual(
      nodes.map((n) => n.kind === 'checkpoint' && [n.label, n.description, n.external]),
      [['checkpoint 2', 'model directory (written by the engine)', true]],
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
