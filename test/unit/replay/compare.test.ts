// "Compare runs" model: rows per question, breakdowns from core/rewards, B − A, bad lines named.
import test from 'node:test';
import assert from 'node:assert/strict';
import { compareRuns } from '../../../src/extension/providers/compare/model';
import { pageState, MAX_RESPONSE_CHARS } from '../../../src/extension/providers/compare/panel-state';
import { scoreRecords } from '../../../src/core/rewards';
import { summarize, windowRows } from '../../../src/extension/providers/compare/aggregate';

const rec = (id: string, question: string, answer: string, searches = 0) => ({
  id, question, golden_answers: ['paris'],
  response: `${'<think> look </think> <search> q </search> <observation> d </observation> '.repeat(searches)}<answer> ${answer} </answer>`,
});
const A = [rec('a1', 'Capital of France?', 'lyon'), rec('a2', 'Capital of France?', 'paris', 1), rec('a3', 'Only in A', 'x')].map((r) => JSON.stringify(r));
const B = [rec('b1', 'capital of  france?', 'paris', 2), '{"id": ', rec('b3', 'Only in B', 'paris')].map((r) => (typeof r === 'string' ? r : JSON.stringify(r)));

test('compare runs: per-question means and difference, matched by question text', () => {
  const m = compareRuns({ text: A.join('\n'), label: 'a.jsonl' }, { text: B.join('\n') + '\n', label: 'b.jsonl' }, 'em');
  assert.equal(m.a.records, 3);
  assert.equal(m.b.records, 2);
  assert.equal(m.b.invalid.length, 1);
  assert.match(m.b.invalid[0].message, /^b\.jsonl:2:\d+: COA101/);
  assert.deepEqual([m.summary.shared, m.summary.onlyA, m.summary.onlyB], [1, 1, 1]);
  const shared = m.rows.find((r) => r.a && r.b)!;
  assert.equal(shared.a!.samples.length, 2);
  // The breakdowns are core/rewards.ts's, file by file.
  const expectA = scoreRecords(A.slice(0, 3).map((l) => JSON.parse(l)), 'em');
  assert.deepEqual(shared.a!.samples.map((s) => s.breakdown), expectA.slice(0, 2));
  assert.equal(shared.a!.mean.em, 0.5);
  assert.equal(shared.b!.mean.em, 1);
  assert.equal(shared.delta!.em, 0.5);
  assert.equal(shared.delta!.tool_calls, 2 - 0.5);
  assert.equal(m.rows[0], shared, 'largest change first');
  assert.equal(m.summary.delta.em, 0.5);
});

test('compare page state caps long responses', () => {
  const long = JSON.stringify({ ...rec('l', 'Q', 'paris'), response: `<answer> paris </answer>${' x'.repeat(MAX_RESPONSE_CHARS)}` });
  const s = pageState(compareRuns({ text: long, label: 'a' }, { text: long, label: 'b' }));
  assert.ok(s.all[0].a!.samples[0].response.length < MAX_RESPONSE_CHARS + 100);
  assert.ok(!('rows' in s), 'rows are computed by the page, not embedded twice');
  assert.equal(s.truncatedRows, 0);
});

test('RL rollouts: reward per step, and the summary and rows cover the last step both runs sampled, not every step pooled', () => {
  // Run A learns (step 1 wrong, step 2 right); run B is right at step 1 and wrong at step 2, and also has a step 3.
  const at = (id: string, step: number, answer: string) => JSON.stringify({ ...rec(id, 'Capital of France?', answer), meta: { run: 'r', stage: 'rl2', step, sample: 0 } });
  const A = [at('a1', 1, 'lyon'), at('a2', 1, 'lyon'), at('a3', 2, 'paris'), at('a4', 2, 'paris')].join('\n');
  const B = [at('b1', 1, 'paris'), at('b2', 2, 'lyon'), at('b3', 3, 'paris')].join('\n');
  const m = compareRuns({ text: A, label: 'a' }, { text: B, label: 'b' }, 'em');
  assert.deepEqual(m.steps.map((s) => [s.step, s.a?.total ?? null, s.b?.total ?? null, s.delta?.total ?? null]), [[1, 0, 1, 1], [2, 1, 0, -1], [3, null, 1, null]]);
  assert.deepEqual(m.window, { kind: 'step', step: 2 });
  assert.deepEqual([m.summary.a.total, m.summary.b.total, m.summary.delta.total, m.summary.a.n, m.summary.b.n], [1, 0, -1, 2, 1]);
  assert.deepEqual(m.rows[0].a!.samples.map((s) => s.id), ['a3', 'a4']);
  // Pooled, the two runs looked alike (0.5 vs 0.667): the per-step view is what tells them apart.
  const pooled = summarize(windowRows(m.all, { kind: 'all' }));
  assert.deepEqual([pooled.a.total, Number(pooled.b.total.toFixed(3))], [0.5, 0.667]);
  // Records without steps (an evaluation): no step table, everything in one window.
  const plain = compareRuns({ text: A.replace(/"meta":\{[^}]*\}/g, '"meta":{}'), label: 'a' }, { text: B.replace(/"meta":\{[^}]*\}/g, '"meta":{}'), label: 'b' }, 'em');
  assert.deepEqual([plain.steps, plain.window], [[], { kind: 'all' }]);
});
