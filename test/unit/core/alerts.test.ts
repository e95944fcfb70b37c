// The agent alerts (src/core/alerts.ts) on synthetic series: each kind fires when its condition starts, once, and
// not on a calm run; the response length stands in for the think length in runs that log none (verl, TRL); the
// state survives a JSON round trip and the trainer's older whole-history checkpoints load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AlertMonitor, loadAlertState } from '../../../src/core/alerts';

const TH = { tool_call_explosion: 2.0, think_collapse: 0.5, all_wrong_groups: 0.5, tool_failure_rate: 0.2, window: 3 };
const CALM = {
  tc: 1.0,
  think_len: 20.0,
  all_wrong_groups: 0.1,
  tool_failure_rate: 0.0,
  reward_mean: 0.5,
  format_error_rate: 0.05,
  zero_variance_groups: 0.4,
  logprob_diff_mean: 2e-7,
};
type Values = Record<string, number>;

function run(
  series: Values[],
  heldout: Record<number, number> = {},
  monitor = new AlertMonitor(TH),
): [number, string][] {
  const out: [number, string][] = [];
  series.forEach((values, i) => {
    const step = i + 1;
    if (step in heldout) monitor.observeHeldout(heldout[step]);
    for (const a of monitor.update(step, values)) out.push([step, a.kind]);
  });
  return out;
}
const series = (n: number, after: Values = {}, calm: Values = CALM): Values[] =>
  Array.from({ length: n }, (_, i) => ({ ...calm, ...(i >= n / 2 ? after : {}) }));
const kinds = (got: [number, string][]) => got.map(([, k]) => k);

test('a calm run has no alerts', () => assert.deepEqual(run(series(20)), []));

test('tool-call explosion fires once the recent window crosses the factor', () => {
  const got = run(series(12, { tc: 3.5 }));
  assert.deepEqual(kinds(got), ['tool_call_explosion']);
  assert.ok(got[0][0] > 6);
});

test('think collapse; without think_len the response length is watched and named', () => {
  assert.deepEqual(kinds(run(series(12, { think_len: 4 }))), ['think_collapse']);
  const m = new AlertMonitor(TH);
  const { think_len: _drop, ...noThink } = CALM;
  const alerts = series(12, { response_len: 10 }, { ...noThink, response_len: 80 }).flatMap((v, i) =>
    m.update(i + 1, v),
  );
  assert.deepEqual(
    alerts.map((a) => a.kind),
    ['think_collapse'],
  );
  assert.match(alerts[0].message, /^step 8: response length 33\.3 tokens vs 80\.0 at the start$/); // (80 + 2 × 10) / 3 < 0.5 × 80
});

test('all-wrong groups and tool failures (error severity), re-armed after calm steps', () => {
  assert.deepEqual(kinds(run(series(12, { all_wrong_groups: 0.9 }))), ['all_wrong_groups']);
  const s = [
    ...series(8, { tool_failure_rate: 0.6 }),
    ...Array(6).fill(CALM),
    ...Array(4).fill({ ...CALM, tool_failure_rate: 0.9 }),
  ];
  const m = new AlertMonitor(TH);
  const alerts = s.flatMap((v, i) => m.update(i + 1, v));
  assert.deepEqual(
    alerts.map((a) => [a.kind, a.severity]),
    [
      ['tool_failures', 'error'],
      ['tool_failures', 'error'],
    ],
  );
});

test('zero-variance groups and sampler/trainer log-prob drift: each fires when its window mean crosses the default', () => {
  const zv = run(series(10, { zero_variance_groups: 0.95 }));
  assert.deepEqual(kinds(zv), ['zero_variance_groups']);
  const m = new AlertMonitor();
  const drift = series(10, { logprob_diff_mean: 0.2 }).flatMap((v, i) => m.update(i + 1, v));
  assert.deepEqual(
    drift.map((a) => a.kind),
    ['logprob_drift'],
  );
  assert.match(
    drift[0].message,
    /^step \d+: sampler and trainer log-probs differ by 0\.\d{3} nats per token on average/,
  );
  assert.deepEqual(
    run(series(10, { zero_variance_groups: 0.75, logprob_diff_mean: 0.01 }), {}, new AlertMonitor()),
    [],
    'below the defaults (0.8, 0.05)',
  );
});

test('reward hacking by format errors or by held-out EM, not by learning', () => {
  assert.deepEqual(kinds(run(series(12, { reward_mean: 0.9, format_error_rate: 0.4 }))), ['reward_hacking']);
  assert.deepEqual(run(series(12, { reward_mean: 0.9 })), []);
  assert.deepEqual(kinds(run(series(12, { reward_mean: 0.9 }), { 3: 0.8, 9: 0.5 })), ['reward_hacking']);
  assert.deepEqual(run(series(12, { reward_mean: 0.9 }), { 3: 0.8, 9: 0.82 }), []);
});

test('state: JSON round trip keeps an active alert active; legacy whole-history state loads', () => {
  const m = new AlertMonitor(TH);
  series(8, { tc: 3.5 }).forEach((v, i) => m.update(i + 1, v));
  const n = new AlertMonitor(TH, JSON.parse(JSON.stringify(m.toJSON())));
  assert.deepEqual(n.toJSON(), m.toJSON());
  assert.deepEqual(n.update(9, { ...CALM, tc: 3.5 }), []);
  const history = { tc: [1, 1, 1, 1, 2, 3.5, 3.5, 3.5] };
  const legacy = loadAlertState({ history, heldout: [0.5, 0.6, 0.4], active: ['tool_call_explosion'] }, 3);
  assert.deepEqual(legacy.series.tc, { n: 8, first: [1, 1, 1], recent: [3.5, 3.5, 3.5] });
  assert.deepEqual(legacy.heldout, [0.5, 0.4]);
  assert.throws(() => new AlertMonitor(TH, { series: { tc: { n: -1, first: [], recent: [] } } }));
});

test('non-numbers are ignored; bounded state whatever the run length', () => {
  const m = new AlertMonitor(TH);
  for (let i = 1; i <= 1000; i++)
    m.update(i, { ...CALM, note: 'x', flag: true as unknown as number, missing: null as unknown as number });
  const st = m.toJSON();
  assert.equal(st.series.tc.n, 1000);
  assert.equal(st.series.tc.recent.length, 3);
  assert.equal(st.series.note, undefined);
});
