// "Compare runs" model: rows per question, breakdowns from core/rewards, B − A, bad lines named.
import test from 'node:test';
import assert from 'node:assert/strict';
import { compareRuns } from '../../../src/extension/providers/compare/model';
import { pageState, MAX_RESPONSE_CHARS } from '../../../src/extension/providers/compare/panel-state';
import { scoreRecords } from '../../../src/core/rewards';

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
  assert.ok(s.rows[0].a!.samples[0].response.length < MAX_RESPONSE_CHARS + 100);
  assert.equal(s.truncatedRows, 0);
});
