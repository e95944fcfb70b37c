// The live panel's model (no DOM): metric grouping, per-stage step axes and stage tabs, sibling and run overlays,
// raw + smoothed data, the results table, grouped alerts; and the host's rollout lookups.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  PanelModel,
  alertWords,
  ema,
  groupOf,
  matchesFilter,
  nearestIndex,
  readout,
  stepGaps,
} from '../../../webview/live-panel/model';
import {
  chunk,
  isSafeStageName,
  lineOfSample,
  rolloutsOfStep,
  sampleFromEvents,
} from '../../../src/extension/providers/livePanel/records';
import { StepIndex } from '../../../src/core/lineIndex';
import { parseEvent, type TrainerEvent } from '../../../src/core/events';

const FIXTURE = join(__dirname, '../../fixtures/live-panel/tiny-pretrain-sft1.events.jsonl');
const recorded = (): TrainerEvent[] =>
  readFileSync(FIXTURE, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const p = parseEvent(l);
      assert.ok(p.ok);
      return p.event;
    });

test('metric names are grouped by pattern; unknown names go to other', () => {
  const cases: Record<string, string> = {
    loss: 'loss',
    reward_mean: 'loss',
    'eval/dev/reward_total': 'loss',
    sft_margin: 'loss',
    em: 'quality',
    f1: 'quality',
    'eval/dev/em_known_1hop': 'quality',
    cover_em: 'quality',
    tc: 'agent',
    tp: 'agent',
    tool_failure_rate: 'agent',
    malformed_call_rate: 'agent',
    truncation_ratio: 'agent',
    all_correct_groups: 'agent',
    all_wrong_groups: 'agent',
    'eval/dev/tool_calls_mean': 'agent',
    kl: 'policy',
    entropy: 'policy',
    clip_frac: 'policy',
    grad_norm: 'policy',
    lr: 'policy',
    tokens_per_s: 'throughput',
    gen_tokens_per_s: 'throughput',
    train_tokens_per_s: 'throughput',
    trained_tokens: 'throughput',
    questions: 'other',
    'eval/dev/questions': 'other',
    zeta: 'other',
  };
  for (const [name, group] of Object.entries(cases)) assert.equal(groupOf(name), group, name);
});

test("verl's and TRL's namespaced metrics are grouped by namespace", () => {
  const cases: Record<string, string> = {
    'critic/score/mean': 'loss',
    'critic/rewards/max': 'loss',
    'critic/advantages/min': 'loss',
    'critic/vf_explained_var': 'loss',
    'actor/pg_loss': 'policy',
    'actor/entropy': 'policy',
    'actor/lr': 'policy',
    'actor/grad_norm': 'policy',
    'response_length/mean': 'length',
    'response_length/clip_ratio': 'length',
    'prompt_length/max': 'length',
    'response/aborted_ratio': 'length',
    'num_turns/mean': 'agent',
    'tool_call_counts/max': 'agent',
    'agent_loop/tool_calls/mean': 'agent',
    'coa/all_wrong_groups': 'agent',
    'perf/throughput': 'throughput',
    'perf/mfu/actor': 'throughput',
    'timing_s/gen': 'throughput',
    'val-core/nq/acc/mean@1': 'validation',
    'val-aux/num_turns/mean': 'validation',
    'training/global_step': 'other',
    // TRL GRPOTrainer
    reward: 'loss',
    'rewards/coa_reward/mean': 'loss',
    frac_reward_zero_std: 'loss',
    'clip_ratio/region_mean': 'policy',
    learning_rate: 'policy',
    'completions/mean_length': 'length',
    'tools/call_frequency': 'agent',
    'tools/failure_frequency': 'agent',
  };
  for (const [name, group] of Object.entries(cases)) assert.equal(groupOf(name), group, name);
});

const DEMO = join(__dirname, '../../fixtures/live-panel/demo-pipeline.events.jsonl');
const ROLLOUTS = join(__dirname, '../../fixtures/live-panel/rl2.rollouts.coa.jsonl');
const read = (file: string): TrainerEvent[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      const p = parseEvent(l);
      assert.ok(p.ok, `${file}:${i + 1}`);
      return p.event;
    });
const mk = (run: string, stage: string, step: number, values: Record<string, number | null>): TrainerEvent => ({
  v: 1,
  time: step,
  run,
  type: 'metrics',
  stage,
  step,
  values,
});

test('the recorded run: each stage on its own step axis (steps restart at 0), one tab per stage', () => {
  const events = recorded();
  const m = new PanelModel();
  m.addRun({ key: 'k', label: 'tiny' });
  m.apply('k', events);
  assert.equal(m.received, events.length);
  assert.deepEqual(
    m.tabs().map((t) => [t.id, t.label]),
    [
      ['pretrain', 'Pretrain'],
      ['sft1', 'SFT-1'],
    ],
  );
  const run = m.runs.get('k')!;
  const loss = run.stages.get('sft1')!.metrics.get('loss')!;
  assert.equal(
    loss.x.length,
    events.filter((e) => e.type === 'metrics' && e.stage === 'sft1' && 'loss' in e.values).length,
  );
  assert.deepEqual(loss.x.slice(0, 3), [1, 2, 3]); // within the stage, not after pretrain's 20 steps
  assert.equal(loss.x[loss.x.length - 1], 20);
  assert.equal(m.metricsOf('sft1').get('tokens_per_s'), 'throughput');
  assert.ok(![...m.metricsOf('sft1').keys()].some((n) => n.startsWith('eval/')), 'evaluations are not chart series');
  assert.equal(run.samples.length, events.filter((e) => e.type === 'sample').length);
  assert.equal(run.stages.get('sft1')!.status, 'ok');
  assert.match(run.status, /SFT-1: ok/);
});

test('the demo pipeline: tabs in pipeline order, RL-2 and RL-2-OTC overlaid in one tab, results as a table', () => {
  const events = read(DEMO);
  const m = new PanelModel();
  m.addRun({ key: 'demo', label: 'demo' });
  m.apply('demo', events);
  assert.deepEqual(
    m.tabs().map((t) => t.label),
    ['Pretrain', 'SFT-1', 'SFT-2', 'SFT-3', 'RL-1', 'RL-2 · RL-2-OTC'],
  );
  const rl2 = m.tabs().find((t) => t.id === 'rl2')!;
  assert.deepEqual(rl2.stages, ['rl2', 'rl2-otc']);
  assert.match(rl2.description, /real tools.*Sibling of RL-2/);
  const lines = m.lines('rl2');
  assert.deepEqual(
    lines.map((l) => l.label),
    ['RL-2', 'RL-2-OTC'],
  );
  const data = m.chartData(lines, 'reward_mean', 0);
  const steps = (stage: string) =>
    events
      .filter((e) => e.type === 'metrics' && e.stage === stage && 'reward_mean' in e.values)
      .map((e) => (e as { step: number }).step);
  assert.deepEqual(
    data.x,
    [...new Set([...steps('rl2'), ...steps('rl2-otc')])].sort((a, b) => a - b),
  );
  assert.equal(data.x[0], 1, 'both siblings start at their own step 1');
  // The value shown at a step is the one the trainer logged for that stage at that step.
  const at = data.x.indexOf(10);
  const logged = (stage: string) =>
    (
      events.find((e) => e.type === 'metrics' && e.stage === stage && e.step === 10) as {
        values: Record<string, number>;
      }
    ).values.reward_mean;
  assert.deepEqual(
    readout(lines, data, at).map((r) => [r.label, r.raw]),
    [
      ['RL-2', logged('rl2')],
      ['RL-2-OTC', logged('rl2-otc')],
    ],
  );
  // Evaluations: one row per setting in the results table's order, never a series.
  const { settings, stages, columns } = m.results();
  assert.deepEqual(
    settings.map((r) => r.stage),
    ['no-tool', 'workflow', 'sft12', 'sft-rl', 'sft-rl-otc'],
  );
  assert.deepEqual(
    settings.map((r) => r.split),
    ['test', 'test', 'test', 'test', 'test'],
  );
  assert.deepEqual(
    columns.slice(0, 5),
    ['em', 'f1', 'tc', 'tp', 'format_error_rate'].filter((c) => columns.includes(c)),
  );
  const results = JSON.parse(
    readFileSync(join(__dirname, '../../fixtures/live-panel/demo-pipeline.results.json'), 'utf8'),
  ) as { rows: { setting: string; em: number; tc: number }[] };
  for (const row of results.rows) {
    const shown = settings.find((r) => r.stage === row.setting)!;
    assert.equal(shown.values.em, row.em, row.setting);
    assert.equal(shown.values.tc, row.tc, row.setting);
  }
  assert.deepEqual(
    stages.map((r) => r.stage),
    ['pretrain', 'sft1', 'sft2', 'sft3', 'rl1', 'rl2', 'rl2-otc'],
  );
  assert.equal(m.latestTab(), 'rl2');
  // A click on a step lists the rollouts of the nearest step that sampled (the trainer writes them at those steps).
  const sampled = events
    .filter((e) => e.type === 'sample' && e.stage === 'rl2')
    .map((e) => (e as { step: number }).step);
  assert.deepEqual(m.runs.get('demo')!.stages.get('rl2')!.sampledSteps, sampled);
  assert.equal(m.rolloutStep('demo', 'rl2', sampled[1] + 1), sampled[1]);
  assert.equal(m.rolloutStep('demo', 'rl2', 0), sampled[0]);
  assert.equal(m.rolloutStep('demo', 'sft2', 7), 7, 'a stage without samples: the step itself');
});

test('runs overlaid: lines per run × stage, union of steps with gaps; re-logged steps sorted, last wins; reset and remove', () => {
  const m = new PanelModel();
  m.addRun({ key: 'a', label: 'a' });
  m.addRun({ key: 'b', label: 'b' });
  m.apply('a', [mk('a', 'rl2', 1, { loss: 1 }), mk('a', 'rl2', 3, { loss: 3 })]);
  m.apply('b', [
    mk('b', 'rl2', 2, { loss: 20 }),
    mk('b', 'rl2', 3, { loss: null }),
    mk('b', 'rl2-otc', 1, { loss: 5 }),
  ]);
  const lines = m.lines('rl2');
  assert.deepEqual(
    lines.map((l) => l.label),
    ['a · RL-2', 'b · RL-2', 'b · RL-2-OTC'],
  );
  // undefined: the line has no point there (drawn through); null: a value that was not finite (a gap).
  assert.deepEqual(m.chartData(lines, 'loss', 0).raw, [
    [1, undefined, 3],
    [undefined, 20, null],
    [5, undefined, undefined],
  ]);
  assert.deepEqual(m.chartData(lines, 'loss', 0).x, [1, 2, 3]);
  assert.equal(m.chartSteps(lines, 'loss'), 3);
  m.apply('a', [mk('a', 'rl2', 2, { loss: 2 }), mk('a', 'rl2', 3, { loss: 30 })]);
  assert.deepEqual(m.chartData(lines, 'loss', 0).raw[0], [1, 2, 30]);
  // Raw and smoothed together: smoothing changes only the smoothed column.
  const smoothed = m.chartData(lines, 'loss', 0.5);
  assert.deepEqual(smoothed.raw[0], [1, 2, 30]);
  assert.deepEqual(smoothed.smooth[0], ema([1, 2, 30], 0.5));
  m.resetRun('a');
  assert.deepEqual(
    m.lines('rl2').map((l) => l.label),
    ['b · RL-2', 'b · RL-2-OTC'],
  );
  m.removeRun('b');
  assert.deepEqual(m.tabs(), []);
  assert.equal(m.received, 7);
});

test("alerts grouped by kind with counts, errors first, and marked on their stage's line", () => {
  const m = new PanelModel();
  m.addRun({ key: 'a', label: 'a' });
  const alert = (
    stage: string,
    step: number,
    kind: 'tool_call_explosion' | 'all_wrong_groups' | 'nan_loss',
    severity: 'warning' | 'error' = 'warning',
  ): TrainerEvent => ({
    v: 1,
    time: step,
    run: 'a',
    type: 'alert',
    stage,
    step,
    kind,
    severity,
    message: `${kind} at ${step}`,
  });
  m.apply('a', [
    mk('a', 'rl2', 1, { loss: 1 }),
    mk('a', 'rl2-otc', 1, { loss: 1 }),
    alert('rl2', 3, 'tool_call_explosion'),
    alert('rl2', 5, 'tool_call_explosion'),
    alert('rl2-otc', 4, 'tool_call_explosion'),
    alert('rl2', 6, 'all_wrong_groups'),
    alert('rl1', 2, 'nan_loss', 'error'),
  ]);
  const groups = m.alertGroups();
  assert.deepEqual(
    groups.map((g) => g.title),
    ['1 × NaN loss', '3 × tool-call explosion', '1 × all-wrong groups'],
  );
  assert.equal(groups[1].items[0].step, 4, 'newest first');
  assert.deepEqual(
    m.alertGroups(new Set(['nan_loss'])).map((g) => g.kind),
    ['tool_call_explosion', 'all_wrong_groups'],
  );
  const marks = m.alertMarks(m.lines('rl2'));
  assert.deepEqual(
    marks.map((k) => [k.line, k.step, k.kind]),
    [
      [0, 3, 'tool_call_explosion'],
      [0, 5, 'tool_call_explosion'],
      [0, 6, 'all_wrong_groups'],
      [1, 4, 'tool_call_explosion'],
    ],
  );
});

test('the readout helpers: nearest step, filter words', () => {
  assert.equal(nearestIndex([1, 2, 5, 10], 4), 2);
  assert.equal(nearestIndex([1, 2, 5, 10], 3), 1);
  assert.equal(nearestIndex([1, 2, 5, 10], 100), 3);
  assert.equal(nearestIndex([], 1), -1);
  assert.ok(matchesFilter('reward_mean', 'REW'));
  assert.ok(matchesFilter('gen_tokens_per_s', 'tok gen'));
  assert.ok(!matchesFilter('loss', 'reward'));
  assert.ok(matchesFilter('loss', '  '));
  assert.equal(alertWords('tool_call_explosion'), 'tool-call explosion');
  assert.equal(alertWords('env_unreachable'), 'env unreachable');
});

test('the host lists the rollouts of one step from a real rollouts file', async () => {
  const lines = readFileSync(ROLLOUTS, 'utf8').split('\n');
  const index = new StepIndex(ROLLOUTS);
  const { items, total } = await rolloutsOfStep(index, 2);
  const expected = lines.map((l, i) => [l, i] as const).filter(([l]) => l.trim() && JSON.parse(l).meta.step === 2);
  assert.equal(total, expected.length);
  assert.ok(total > 0);
  assert.deepEqual(
    items.map((r) => r.line),
    expected.map(([, i]) => i),
  );
  const first = JSON.parse(expected[0][0]);
  assert.deepEqual(items[0], {
    id: first.id,
    line: expected[0][1],
    question: first.question,
    reward: first.reward.total,
    toolCalls: first.reward.tool_calls,
  });
  // The page gets lines; the host keeps where their bytes are.
  const offset = lines.slice(0, expected[0][1]).reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
  assert.deepEqual(await index.locate(expected[0][1]), {
    line: expected[0][1],
    offset,
    length: Buffer.byteLength(expected[0][0]),
  });
  assert.equal((await rolloutsOfStep(index, 99)).total, 0);
  assert.equal((await rolloutsOfStep(index, 2, 1)).items.length, 1, 'limit');
  const dir = mkdtempSync(join(tmpdir(), 'coa-rollouts-'));
  try {
    const torn = join(dir, 'rollouts.coa.jsonl');
    writeFileSync(torn, '{"id":"x","meta":{"step":2}\ngarbage "step": 2\n{"id":"y","meta":{"step":2}}');
    assert.equal(
      (await rolloutsOfStep(new StepIndex(torn), 2)).total,
      0,
      'a broken line, text that looks like a step and a half-written last line are no rows',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the host finds a sampled rollout by step and id in a stage rollouts file (CRLF lines too) and accepts only plain stage names', async () => {
  // What openSample opens: the line of the record the sample event named, and where its bytes are.
  const rec = (id: string, step: number, question = 'q?') =>
    JSON.stringify({ id, question, response: '<answer>x</answer>', meta: { step } });
  const lines = [rec('a', 1, 'mentions "b"'), 'not json "b"', rec('b', 2), rec('c', 2), rec('b', 3)];
  const dir = mkdtempSync(join(tmpdir(), 'coa-rollouts-'));
  try {
    for (const eol of ['\n', '\r\n']) {
      const text = lines.join(eol) + eol;
      const file = join(dir, 'rollouts.coa.jsonl');
      writeFileSync(file, text);
      const index = new StepIndex(file);
      const at = (i: number) => ({
        line: i,
        offset: Buffer.byteLength(
          lines
            .slice(0, i)
            .map((l) => l + eol)
            .join(''),
        ),
        length: lines[i].length,
      });
      assert.equal(await lineOfSample(index, 2, 'b'), 2, JSON.stringify(eol));
      assert.equal(await lineOfSample(index, 3, 'b'), 4, 'the id of the step asked');
      assert.equal(await lineOfSample(index, 2, 'c'), 3);
      assert.equal(await lineOfSample(index, 1, 'b'), undefined, 'a question that mentions it is not it');
      assert.deepEqual(await index.locate(3), at(3));
      assert.equal(
        Buffer.from(text)
          .subarray(at(3).offset, at(3).offset + at(3).length)
          .toString(),
        rec('c', 2),
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // A sample whose stage keeps no rollouts file holding it: its record read back from the run's events (each line
  // parsed; a NaN written by Python, a torn last line and other events' records are no obstacle).
  const events = join(dir, 'events.jsonl');
  const sample = (step: number, id: string, extra = '') =>
    `{"v": 1, "type": "sample", "stage": "collect", "step": ${step}, "time": 1, "record": {"id": "${id}", "question": "q?"${extra}}}`;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      events,
      [
        sample(1, 'x'),
        '{"v": 1, "type": "metrics", "stage": "collect", "step": 2, "values": {"loss": NaN}, "record": {"id": "y"}}',
        sample(2, 'y', ', "logprob": NaN'),
        '{"type": "sample", "st',
      ].join('\n'),
    );
    assert.deepEqual(await sampleFromEvents(events, 'collect', 2, 'y'), { id: 'y', question: 'q?', logprob: null });
    assert.equal(await sampleFromEvents(events, 'collect', 1, 'y'), undefined, 'the step asked');
    assert.equal(await sampleFromEvents(events, 'rl1', 2, 'y'), undefined, 'the stage asked');
    assert.equal(await sampleFromEvents(join(dir, 'none.jsonl'), 'collect', 2, 'y'), undefined, 'no events file');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const ok of ['pretrain', 'sft1', 'rl-1', 'rl_2.b']) assert.ok(isSafeStageName(ok), ok);
  for (const bad of ['..', '../x', 'a/b', '', 'a\\b', '.hidden']) assert.ok(!isSafeStageName(bad), bad);
  assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
});

test('axis tick labels tell neighbouring ticks apart', async () => {
  const { tickLabels } = await import('../../../webview/live-panel/format');
  assert.deepEqual(tickLabels([0.0029, 0.00295, 0.003]), ['0.00290', '0.00295', '0.00300']);
  assert.deepEqual(tickLabels([0.00001, 0.00002]), ['1e-5', '2e-5']);
  assert.deepEqual(tickLabels([0.25, 0.5, 0.75]), ['0.25', '0.50', '0.75']);
  assert.deepEqual(tickLabels([10000, 20000, 30000]), ['10,000', '20,000', '30,000']);
  assert.deepEqual(tickLabels([2, 4]), ['2', '4']);
  const lr = tickLabels([0.00291, 0.00292, 0.00293]);
  assert.equal(new Set(lr).size, 3, lr.join(' '));
});

test('the y axis grows with its longest tick label, so no digit is cut', async () => {
  const { tickLabels, yAxisWidth } = await import('../../../webview/live-panel/format');
  // the learning-rate case seen in code-server: 0.002999970 was drawn as "299997" in a fixed 60 px axis
  const labels = tickLabels([0.00299997, 0.00299998, 0.00299999, 0.003]);
  const width = yAxisWidth(labels);
  assert.ok(width >= Math.max(...labels.map((l) => l.length)) * 7, `${width}px for ${labels.join(' ')}`);
  assert.ok(yAxisWidth(['1', '2']) < width);
  assert.equal(yAxisWidth(null), yAxisWidth([]));
});

test('step ticks are whole steps; values read with 4 significant digits', async () => {
  const { STEP_INCRS, formatValue } = await import('../../../webview/live-panel/format');
  assert.ok(STEP_INCRS.every((v) => Number.isInteger(v) && v >= 1));
  assert.equal(formatValue(0.917293233), '0.9173');
  assert.equal(formatValue(null), '—');
  assert.equal(formatValue(12), '12');
  assert.equal(formatValue(0.00003), '3.00e-5');
});

test('a collection (coa_trainer collect) is a tab like a stage: before SFT-1, its throughput charted per sample', () => {
  // events of a real run: runs/collect-student (docs/training.md, "What the collection measured"), trimmed
  const events = read(join(__dirname, '../../fixtures/live-panel/collect.events.jsonl'));
  const m = new PanelModel();
  m.addRun({ key: 'c', label: 'collect-student' });
  m.apply('c', events);
  assert.deepEqual(
    m.tabs().map((t) => [t.id, t.label]),
    [
      ['collect', 'Collect'],
      ['sft1', 'SFT-1'],
    ],
  );
  assert.match(m.tabs()[0].description, /SFT data from a teacher/);
  const collect = m.runs.get('c')!.stages.get('collect')!;
  const rate = collect.metrics.get('samples_per_s')!;
  assert.equal(rate.x.length, events.filter((e) => e.type === 'metrics' && e.stage === 'collect').length);
  assert.equal(rate.x[rate.x.length - 1], 4848); // the step axis counts collected samples
  assert.equal(m.metricsOf('collect').get('samples_per_s'), 'throughput');
  assert.equal(collect.status, 'ok');
});

test('chart ticks and ranges are always short, finite and drawable (uPlot loops forever on ranges its table misses)', async () => {
  const { niceTicks, logTicks, safeRange, logTickLabels } = await import('../../../webview/live-panel/format');
  assert.deepEqual(niceTicks(0, 1, 4), [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(niceTicks(1, 64, 6, true), [20, 40, 60]);
  assert.deepEqual(niceTicks(1, 3, 8, true), [1, 2, 3], 'whole steps only');
  assert.deepEqual(niceTicks(0.1, 0.3, 2), [0.1, 0.2, 0.3], 'no 0.30000000000000004');
  assert.deepEqual(niceTicks(5, 5, 4), [5]);
  assert.deepEqual(niceTicks(NaN, 1, 4), []);
  // Ranges no increment table covers: still a handful of ticks.
  for (const [a, b] of [
    [1e300, 3e300],
    [-1e308, 1e308],
    [1e-300, 2e-300],
    [1e17, 1e17 + 32],
    [0.00019999999999999998, 0.0002],
  ] as const) {
    const t = niceTicks(a, b, 5);
    assert.ok(t.length >= 1 && t.length <= 7 && t.every(Number.isFinite), `${a}..${b}: ${t}`);
  }
  assert.deepEqual(logTicks(0.001, 10, 5), [0.001, 0.01, 0.1, 1, 10]);
  assert.deepEqual(logTicks(1, 10, 5), [1, 2, 5, 10]);
  assert.ok(logTicks(1e-300, 1e300, 5).length <= 7);
  assert.deepEqual(logTicks(0, 10, 5), []);
  assert.deepEqual(logTickLabels([0.001, 1, 10, 1e6, null]), ['0.001', '1', '10', '1e+6', '']);
  // A constant (or float-noise) series gets a range around its value; nothing, a unit range; log, whole decades.
  assert.deepEqual(safeRange(0.5, 0.5, false), [0.45, 0.55]);
  assert.deepEqual(safeRange(0, 0, false), [-1, 1]);
  const [lo, hi] = safeRange(0.00019999999999999998, 0.0002, false);
  assert.ok(hi - lo > 1e-5, 'float noise is drawn as the constant it is');
  assert.deepEqual(safeRange(null, null, false), [0, 1]);
  assert.deepEqual(safeRange(0.0012, 2, true), [0.001, 10]);
  assert.deepEqual(safeRange(10, 10, true), [1, 100]);
  assert.deepEqual(safeRange(2, 12, false), [1, 13]);
  assert.deepEqual(safeRange(0.5, 10, false), [0, 10.95]);
});

test("a break in a line's steps much longer than its logging interval is a gap (null), not a straight line drawn across it, smoothed or not", () => {
  const m = new PanelModel();
  m.addRun({ key: 'a', label: 'a' });
  // Logged every 10 steps, then nothing from 40 to 100 (a resumed stage, a logger that stopped).
  m.apply(
    'a',
    [10, 20, 30, 40, 100, 110, 120].map((step) => mk('a', 'rl2', step, { loss: step })),
  );
  assert.deepEqual(stepGaps([10, 20, 30, 40, 100, 110, 120]), { after: [3], interval: 10 });
  assert.deepEqual(stepGaps([10, 20, 30, 40, 50]).after, [], 'a steady interval has none');
  assert.deepEqual(stepGaps([1, 50]).after, [], 'two points tell no interval');
  const data = m.chartData(m.lines('rl2'), 'loss', 0.9);
  assert.deepEqual(data.x, [10, 20, 30, 40, 50, 100, 110, 120]);
  assert.deepEqual(data.raw[0], [10, 20, 30, 40, null, 100, 110, 120]);
  assert.equal(data.smooth[0][4], null, 'the smoothed line breaks there too');
  assert.deepEqual(data.steps[0], [10, 20, 30, 40, undefined, 100, 110, 120]);
  // Sibling lines logging at other steps are no gap of each other: their missing points are undefined.
  m.apply(
    'a',
    [5, 15, 25, 35, 45].map((step) => mk('a', 'rl2-otc', step, { loss: 1 })),
  );
  const both = m.chartData(m.lines('rl2'), 'loss', 0);
  assert.ok(both.raw[1].every((v) => v === 1 || v === undefined));
});

test('time axes: relative (seconds since the stage started) and wall clock, each point keeping its step; alerts placed at their time', () => {
  const m = new PanelModel();
  m.addRun({ key: 'a', label: 'a' });
  const started = (stage: string, time: number): TrainerEvent => ({
    v: 1,
    time,
    run: 'a',
    type: 'run_started',
    stage,
    config: {},
    total_steps: 9,
    device: 'cpu',
    world_size: 1,
  });
  const at = (stage: string, step: number, time: number): TrainerEvent => ({
    ...mk('a', stage, step, { loss: step }),
    time,
  });
  m.apply('a', [
    started('rl2', 1000),
    at('rl2', 1, 1010),
    at('rl2', 2, 1020),
    started('rl2-otc', 2000),
    at('rl2-otc', 1, 2005),
    at('rl2-otc', 2, 2030),
    {
      v: 1,
      time: 1015,
      run: 'a',
      type: 'alert',
      stage: 'rl2',
      step: 1,
      kind: 'tool_call_explosion',
      severity: 'warning',
      message: 'm',
    },
  ]);
  const lines = m.lines('rl2');
  const rel = m.chartData(lines, 'loss', 0, 'relative');
  assert.deepEqual(rel.x, [5, 10, 20, 30], 'both stages from their own start');
  assert.deepEqual(rel.steps, [
    [undefined, 1, 2, undefined],
    [1, undefined, undefined, 2],
  ]);
  assert.deepEqual(
    readout(lines, rel, 1).map((r) => [r.raw, r.step]),
    [
      [1, 1],
      [null, null],
    ],
  );
  const wall = m.chartData(lines, 'loss', 0, 'wall');
  assert.deepEqual(wall.x, [1010, 1020, 2005, 2030]);
  assert.deepEqual(
    m.alertMarks(lines, 'relative').map((a) => a.x),
    [15],
  );
  assert.deepEqual(
    m.alertMarks(lines, 'wall').map((a) => a.x),
    [1015],
  );
  assert.deepEqual(
    m.alertMarks(lines).map((a) => a.x),
    [1],
  );
});

test('the runs line: a cancelled or failed stage shows no ETA; a run without progress events (verl) has its legend follow its metrics', () => {
  const m = new PanelModel();
  m.addRun({ key: 'a', label: 'a' });
  m.apply('a', [
    { v: 1, time: 1, run: 'a', type: 'progress', stage: 'sft1', step: 40, total: 200, elapsed_s: 10, eta_s: 50 },
  ]);
  assert.equal(m.runs.get('a')!.progress!.eta_s, 50);
  m.apply('a', [
    { v: 1, time: 2, run: 'a', type: 'stage_finished', stage: 'sft1', step: 40, status: 'cancelled', checkpoint: null },
  ]);
  assert.deepEqual(m.runs.get('a')!.progress, { stage: 'sft1', step: 40, total: 200, eta_s: null });
  // verl: metrics and an alert, no progress. Every later metrics step marks the lists (legend) for a redraw.
  m.addRun({ key: 'v', label: 'v', engine: 'verl' });
  m.apply('v', [
    mk('v', 'rl2', 5, { loss: 1 }),
    { v: 1, time: 6, run: 'v', type: 'alert', stage: 'rl2', step: 6, kind: 'other', severity: 'warning', message: 'm' },
  ]);
  m.listsChanged = false;
  m.apply('v', [mk('v', 'rl2', 7, { loss: 1 })]);
  assert.equal(m.runs.get('v')!.stages.get('rl2')!.maxStep, 7);
  assert.equal(m.listsChanged, true, 'the legend ("step 7") is redrawn, not left at the alert\'s step');
});

test("system metrics (the trainer's system/*, verl's memory) have their own group beside the charts", async () => {
  const { SYSTEM_METRICS } = await import('../../../src/core/metrics');
  for (const name of [...Object.keys(SYSTEM_METRICS), 'perf/max_memory_allocated_gb', 'perf/cpu_memory_used_gb'])
    assert.equal(groupOf(name), 'system', name);
  assert.equal(groupOf('perf/throughput'), 'throughput');
});

test('time axis ticks: clock-friendly increments, short and finite; labels as durations or the time of day', async () => {
  const { timeTicks, timeLabels, axisLabel } = await import('../../../webview/live-panel/format');
  assert.deepEqual(timeTicks(0, 300, 5), [0, 60, 120, 180, 240, 300]);
  assert.deepEqual(timeTicks(7, 47, 3), [15, 30, 45], '15 s apart, not 20');
  assert.ok(timeTicks(0, 86_400 * 400, 5).length <= 7);
  assert.deepEqual(timeTicks(NaN, 1, 4), []);
  assert.deepEqual(timeLabels([0, 65, 3723], 'relative'), ['0:00', '1:05', '1:02:03']);
  const noon = new Date(2026, 10, 28, 12, 0, 0).getTime() / 1000;
  assert.deepEqual(timeLabels([noon, noon + 300], 'wall'), ['12:00', '12:05']);
  assert.deepEqual(timeLabels([noon + 30], 'wall'), ['12:00:30']);
  assert.deepEqual(timeLabels([noon + 30], 'wall', true), ['2026-11-28 12:00:30']);
  assert.equal(axisLabel('relative'), 'time since the stage started');
});
