// `npm run demo` reads its own run against the spread bench/fidelity measured (bench/fidelity/spread.json): one line
// per claim with the spread over runs and this run's value, or why there is nothing to compare.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spreadVerdict, type Spread } from '../../../scripts/demo-verdict.mjs';

const spread: Spread = {
  date: '2026-11-26',
  commit: 'abc1234',
  machine: 'linux x86_64, AMD EPYC, 2 cores',
  config: 'examples/embedded-demo.run.json',
  split: 'test',
  seeds: 5,
  threads: [1, 2],
  runs: 10,
  claims: [
    {
      id: 'chain',
      text: 'EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL)',
      measure: 'weakest link',
      holds: 9,
      runs: 10,
      spread: '+0.120 ± 0.040',
    },
    {
      id: 'otc_closes_gap',
      text: 'OTC-GRPO closes ≥ 50% of the over-calling gap',
      measure: 'closed',
      holds: 8,
      runs: 10,
      spread: '70 ± 15%',
    },
    {
      id: 'otc_raises_tp',
      text: 'tool productivity rises with OTC-GRPO',
      measure: 'TP difference',
      holds: 0,
      runs: 0,
      spread: '—',
    },
  ],
};
const run = {
  split: 'test',
  claims: {
    chain: { value: 0.1, holds: true, shown: '+0.100' },
    otc_closes_gap: { value: 0.64, holds: true, shown: '64%' },
    otc_raises_tp: { value: null, holds: null, shown: '—' },
  },
};

test('each claim: on how many runs it held, its spread, and this run against it', () => {
  const lines = spreadVerdict(run, spread, 'examples/embedded-demo.run.json');
  assert.match(
    lines[0],
    /^Against the spread bench\/fidelity measured \(10 runs: 5 seeds × 2 thread counts \(1, 2\), test split, 2026-11-26, commit abc1234; linux x86_64, AMD EPYC, 2 cores\):$/,
  );
  assert.equal(
    lines[1],
    '- EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL): on 9/10 runs, weakest link +0.120 ± 0.040; this run: +0.100 (holds).',
  );
  assert.equal(
    lines[2],
    '- OTC-GRPO closes ≥ 50% of the over-calling gap: on 8/10 runs, closed 70 ± 15%; this run: 64% (holds).',
  );
  assert.equal(lines.length, 3, 'a claim no run could measure is left out');
  const failing = spreadVerdict(
    { ...run, claims: { ...run.claims, otc_closes_gap: { value: 0.08, holds: false, shown: '8%' } } },
    spread,
    'examples/embedded-demo.run.json',
  );
  assert.equal(
    failing[2],
    '- OTC-GRPO closes ≥ 50% of the over-calling gap: on 8/10 runs, closed 70 ± 15%; this run: 8% (does NOT hold).',
  );
});

test('nothing to compare is said, not invented', () => {
  assert.deepEqual(spreadVerdict(run, null, 'examples/embedded-demo.run.json'), [
    '(no bench/fidelity spread to read this run against: run bench/fidelity/run.py --write)',
  ]);
  assert.deepEqual(spreadVerdict(run, spread, 'my.run.json'), [
    '(bench/fidelity measured examples/embedded-demo.run.json, not my.run.json: no spread to read this run against)',
  ]);
  assert.deepEqual(spreadVerdict({ ...run, split: 'dev' }, spread, 'examples/embedded-demo.run.json'), [
    '(bench/fidelity measured the test split, this run the dev split: no spread to read it against)',
  ]);
  assert.deepEqual(spreadVerdict({ split: 'test' }, spread, 'examples/embedded-demo.run.json'), [
    '(this results.json has no per-claim values to set against the spread)',
  ]);
  assert.deepEqual(spreadVerdict({ split: 'test', per_seed: [] }, spread, 'examples/embedded-demo.run.json'), []);
});
