// The live panel's model (no DOM): metric grouping, the run-global step axis with stage boundaries, smoothing,
// overlays and resets; and the host's record lookup for "open this rollout".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PanelModel, ema, groupOf } from '../../../webview/live-panel/model';
import { chunk, findRecordLine, isSafeStageName } from '../../../src/extension/providers/livePanel/records';
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
    loss: 'loss', reward_mean: 'loss', 'eval/dev/reward_total': 'loss', sft_margin: 'loss',
    em: 'quality', f1: 'quality', 'eval/dev/em_known_1hop': 'quality', cover_em: 'quality',
    tc: 'agent', tp: 'agent', tool_failure_rate: 'agent', malformed_call_rate: 'agent', truncation_ratio: 'agent',
    all_correct_groups: 'agent', all_wrong_groups: 'agent', 'eval/dev/tool_calls_mean': 'agent',
    kl: 'policy', entropy: 'policy', clip_frac: 'policy', grad_norm: 'policy', lr: 'policy',
    tokens_per_s: 'throughput', gen_tokens_per_s: 'throughput', train_tokens_per_s: 'throughput', trained_tokens: 'throughput',
    questions: 'other', 'eval/dev/questions': 'other', zeta: 'other',
  };
  for (const [name, group] of Object.entries(cases)) assert.equal(groupOf(name), group, name);
});

test('the recorded run: stages follow each other on one step axis, evals and samples land on it', () => {
  const events = recorded();
  const m = new PanelModel();
  m.addRun({ key: 'k', label: 'tiny' });
  m.apply('k', events);
  assert.equal(m.received, events.length);
  const run = m.runs.get('k')!;
  assert.deepEqual(run.stages, [{ stage: 'pretrain', x: 0 }, { stage: 'sft1', x: 20 }]);
  const loss = run.metrics.get('loss')!;
  assert.equal(loss.x.length, events.filter((e) => e.type === 'metrics' && 'loss' in e.values).length);
  assert.deepEqual(loss.x.slice(0, 3), [1, 2, 3]);
  assert.equal(loss.x[loss.x.length - 1], 40);
  assert.deepEqual(run.metrics.get('eval/dev/em')!.x, [20]); // pretrain's closed-book eval
  assert.deepEqual(run.metrics.get('eval/dev/pair_acc')!.x, [40]); // sft1's pairwise eval
  assert.equal(m.metricNames.get('eval/dev/pair_acc'), 'quality');
  assert.equal(run.samples.length, events.filter((e) => e.type === 'sample').length);
  assert.match(run.status, /sft1: ok/);
  assert.ok(m.metricNames.has('tokens_per_s') && m.metricNames.get('tokens_per_s') === 'throughput');
});

test('EMA smoothing is debiased and keeps gaps', () => {
  assert.deepEqual(ema([1, 2, 3], 0), [1, 2, 3]);
  const s = ema([2, null, 2, 4], 0.5);
  assert.equal(s[0], 2); // debiased: the first value is itself
  assert.equal(s[1], null);
  assert.equal(s[2], 2);
  assert.ok(Math.abs((s[3] as number) - (0.5 * 0.75 * 2 + 0.5 * 4) / 0.875) < 1e-12);
});

test('overlaid runs share the x axis (union of steps, null where a run has none); reset forgets a run', () => {
  const m = new PanelModel();
  m.addRun({ key: 'a', label: 'a' });
  m.addRun({ key: 'b', label: 'b' });
  const mk = (run: string, step: number, loss: number | null): TrainerEvent => ({ v: 1, time: step, run, type: 'metrics', stage: 'rl1', step, values: { loss } });
  m.apply('a', [mk('a', 1, 1), mk('a', 3, 3)]);
  m.apply('b', [mk('b', 2, 20), mk('b', 3, null)]);
  assert.deepEqual(m.aligned('loss', 0).data, [[1, 2, 3], [1, null, 3], [null, 20, null]]);
  // A resumed stage re-logging a step: sorted, last value wins.
  m.apply('a', [mk('a', 2, 2), mk('a', 3, 30)]);
  assert.deepEqual(m.aligned('loss', 0).data, [[1, 2, 3], [1, 2, 30], [null, 20, null]]);
  m.resetRun('a');
  assert.deepEqual(m.aligned('loss', 0).data, [[2, 3], [null, null], [20, null]]);
  m.removeRun('b');
  assert.deepEqual(m.aligned('loss', 0).data, [[], []]);
  assert.equal(m.received, 6);
});

test('the host finds a rollout by id in a stage rollouts file and accepts only plain stage names', () => {
  const text = ['{"id":"a","question":"mentions \\"b\\""}', 'not json "b"', '{"id":"b"}', ''].join('\n');
  assert.equal(findRecordLine(text, 'b'), 2);
  assert.equal(findRecordLine(text, 'a'), 0);
  assert.equal(findRecordLine(text, 'zz'), -1);
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
