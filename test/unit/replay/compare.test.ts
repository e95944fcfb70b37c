// "Compare runs" model: the checkpoint diff of two files (src/core/diff) as the page gets it — breakdowns without
// responses, the default step window — and an opened row's two trajectories aligned by step; bad lines named.
import test from 'node:test';
import assert from 'node:assert/strict';
import { compareFiles, pageState, pairAnswer } from '../../../src/extension/providers/compare/model';
import { flipTable } from '../../../src/core/diff/flips';
import { scoreRecords } from '../../../src/core/rewards';

const rec = (id: string, question: string, answer: string, searches = 0) => ({
  id,
  question,
  golden_answers: ['paris'],
  response: `${'<think> look </think> <search> q </search> <observation> d </observation> '.repeat(searches)}<answer> ${answer} </answer>`,
});
const A = [
  rec('a1', 'Capital of France?', 'lyon'),
  rec('a2', 'Capital of France?', 'paris', 1),
  rec('a3', 'Only in A', 'x'),
].map((r) => JSON.stringify(r));
const B = [rec('b1', 'capital of  france?', 'paris', 2), '{"id": ', rec('b3', 'Only in B', 'paris')].map((r) =>
  typeof r === 'string' ? r : JSON.stringify(r),
);
const opts = { scheme: 'em' as const };

test('compare runs: per-question means, classes and difference, matched by question text; scored with the configured scheme', () => {
  const d = compareFiles(
    { text: A.join('\n'), label: 'a.jsonl' },
    { text: B.join('\n') + '\n', label: 'b.jsonl' },
    opts,
  );
  assert.equal(d.keyBy, 'question', 'ids differ between the files');
  assert.equal(d.a.records, 3);
  assert.equal(d.b.records, 2);
  assert.deepEqual(d.a.reward, { source: 'scored', scheme: 'em' });
  assert.equal(d.b.invalid.length, 1);
  assert.match(d.b.invalid[0].message, /^b\.jsonl:2:\d+: COA101/);
  const t = flipTable(d.questions, d.window);
  assert.deepEqual([t.totals.shared, t.onlyA, t.onlyB], [1, 1, 1]);
  const shared = t.rows[0];
  assert.equal(shared.cls, 'gained', 'A right half the time, B always');
  assert.equal(shared.aSamples.length, 2);
  // The breakdowns are core/rewards.ts's, file by file.
  const expectA = scoreRecords(
    A.slice(0, 3).map((l) => JSON.parse(l)),
    'em',
  );
  assert.deepEqual(
    shared.aSamples.map((s) => s.breakdown),
    expectA.slice(0, 2),
  );
  assert.deepEqual([shared.a!.em, shared.b!.em, shared.delta!.em, shared.delta!.tool_calls], [0.5, 1, 0.5, 2 - 0.5]);
  assert.deepEqual([t.totals.net, t.totals.delta_em], [0.5, 0.5]);
});

test('the page gets breakdowns, not responses; an opened row gets both trajectories aligned by step', () => {
  const d = compareFiles({ text: A.join('\n'), label: 'a' }, { text: B.join('\n'), label: 'b' }, opts);
  const s = pageState(d, opts);
  assert.equal(s.truncated, 0);
  assert.ok(!JSON.stringify(s).includes('<answer>'), 'no response text embedded');
  assert.match(s.formula, /total = EM/);
  const key = d.questions.find((q) => q.a.length && q.b.length)!.key;
  const p = pairAnswer(d, key, 1, 0);
  assert.equal(p.a!.id, 'a2');
  assert.equal(p.b!.id, 'b1');
  assert.equal(p.a!.line, 2);
  // A: look, search, observation, answer; B: two rounds then the answer — the same first three steps.
  assert.equal(p.alignment!.divergence, 3);
  assert.deepEqual(
    p.alignment!.rows.map((r) => r.same),
    [true, true, true, false, false, false, false],
  );
  assert.equal(pairAnswer(d, key, 0, null).alignment, null);
  assert.match(pairAnswer(d, 'nope', 0, 0).error!, /no question "nope"/);
});

test('RL rollouts: reward per step, and the flip table covers the last step both runs sampled, not every step pooled', () => {
  // Run A learns (step 1 wrong, step 2 right); run B is right at step 1 and wrong at step 2, and also has a step 3.
  const at = (id: string, step: number, answer: string) =>
    JSON.stringify({ ...rec(id, 'Capital of France?', answer), meta: { run: 'r', stage: 'rl2', step, sample: 0 } });
  const A = [at('a1', 1, 'lyon'), at('a2', 1, 'lyon'), at('a3', 2, 'paris'), at('a4', 2, 'paris')].join('\n');
  const B = [at('b1', 1, 'paris'), at('b2', 2, 'lyon'), at('b3', 3, 'paris')].join('\n');
  const d = compareFiles({ text: A, label: 'a' }, { text: B, label: 'b' }, opts);
  assert.deepEqual(
    d.steps.map((s) => [s.step, s.a?.total ?? null, s.b?.total ?? null, s.delta?.total ?? null]),
    [
      [1, 0, 1, 1],
      [2, 1, 0, -1],
      [3, null, 1, null],
    ],
  );
  assert.deepEqual(d.window, { kind: 'step', step: 2 });
  const t = flipTable(d.questions, d.window);
  assert.deepEqual([t.rows[0].cls, t.rows[0].aSamples.map((s) => s.id), t.totals.delta_em], ['lost', ['a3', 'a4'], -1]);
  // Pooled, the two runs looked alike (0.5 vs 0.667): the per-step view is what tells them apart.
  const pooled = flipTable(d.questions, { kind: 'all' });
  assert.deepEqual(
    [pooled.rows[0].a!.em, Number(pooled.rows[0].b!.em.toFixed(3)), pooled.rows[0].cls],
    [0.5, 0.667, 'gained'],
  );
  // Records without steps (an evaluation): no step table, everything in one window.
  const plain = compareFiles(
    { text: A.replace(/"meta":\{[^}]*\}/g, '"meta":{}'), label: 'a' },
    { text: B.replace(/"meta":\{[^}]*\}/g, '"meta":{}'), label: 'b' },
    opts,
  );
  assert.deepEqual([plain.steps, plain.window], [[], { kind: 'all' }]);
});
