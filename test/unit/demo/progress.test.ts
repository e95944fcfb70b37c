// `npm run demo` renders the trainer's JSON events as progress lines: stage, step/total, loss/reward, ETA.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { duration, ProgressRenderer } from '../../../scripts/demo-progress.mjs';

const base = { v: 1, time: 100, run: 'r1' };

test('a progress line carries the step, the latest loss or reward, and the ETA', () => {
  const r = new ProgressRenderer();
  r.render({ ...base, type: 'run_started', stage: 'sft2', total_steps: 10, device: 'cpu', world_size: 1, config: {} });
  r.render({ ...base, type: 'metrics', stage: 'sft2', step: 2, values: { loss: 1.23456 } });
  const out = r.render({ ...base, type: 'progress', stage: 'sft2', step: 2, total: 10, elapsed_s: 4, eta_s: 16 });
  assert.deepEqual(out.lines, ['  [sft2] step 2/10 · loss 1.235 · 4 s elapsed · ETA 16 s']);
  r.render({
    ...base,
    type: 'metrics',
    stage: 'rl2',
    step: 1,
    values: { loss: 0.1, reward_mean: 0.5, em: 0.25, tc: 1.5 },
  });
  const rl = r.render({ ...base, type: 'progress', stage: 'rl2', step: 1, total: 24, elapsed_s: 90, eta_s: 2070 });
  assert.equal(rl.lines.length, 0, 'only every fifth of the stage is a permanent line');
  assert.equal(rl.live, '  [rl2] step 1/24 · reward 0.500 · EM 0.25 · TC 1.50 · 1 min 30 s elapsed · ETA 34 min 30 s');
});

test('pipeline steps, evaluations, alerts and failures are shown; samples are not', () => {
  const r = new ProgressRenderer();
  assert.deepEqual(r.render({ ...base, type: 'log', level: 'info', message: 'pipeline: rl2-otc (7/8)' }).lines, [
    '\n▶ rl2-otc (7/8)',
  ]);
  const ev = r.render({
    ...base,
    type: 'eval',
    stage: 'workflow',
    step: 0,
    split: 'test',
    metrics: { em: 0.5, tc: 1, tp: 0.5, format_error_rate: 0 },
  });
  assert.deepEqual(ev.lines, ['  [workflow] eval on test: EM 0.500 · TC 1.000 · TP 0.500 · format errors 0.000']);
  const alert = r.render({
    ...base,
    type: 'alert',
    stage: 'rl1',
    step: 3,
    kind: 'all_wrong_groups',
    severity: 'warning',
    message: 'm',
  });
  assert.deepEqual(alert.lines, ['  ⚠ [rl1] step 3 all_wrong_groups: m']);
  assert.deepEqual(r.render({ ...base, type: 'error', message: 'boom', stage: 'sft1' }).lines, ['  ✗ [sft1] boom']);
  assert.deepEqual(r.render({ ...base, type: 'sample', stage: 'rl1', step: 1, record: {} }).lines, []);
  assert.equal(duration(null), '?');
  assert.equal(duration(61), '1 min 01 s');
});
