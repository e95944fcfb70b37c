// Notebook or browser: the cell-count limit, checked cheaply on bytes before parsing and exactly after decoding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  describeTooLarge,
  tooLargeBeforeParsing,
  tooManyCells,
} from '../../../src/extension/providers/notebook/threshold';
import { textToNotebook } from '../../../src/extension/providers/notebook/codec';

const enc = (s: string) => new TextEncoder().encode(s);
const q = (i: number) =>
  JSON.stringify({ id: `q${i}`, question: `question ${i}?`, golden_answers: ['a'], response: '' });
const t = (i: number) =>
  JSON.stringify({
    id: `t${i}`,
    question: 'q',
    golden_answers: ['a'],
    response: '<think>x</think>\n<search>y</search>\n<observation>z</observation>\n<answer>a</answer>',
  });

test('before parsing: bytes over the MB limit, or more non-blank lines than cells allowed', () => {
  const limits = { maxBytes: 1e6, maxCells: 10 };
  assert.equal(
    tooLargeBeforeParsing(enc(Array.from({ length: 10 }, (_, i) => q(i)).join('\n') + '\n\n\r\n'), limits),
    null,
    'blank lines are not cells',
  );
  assert.deepEqual(tooLargeBeforeParsing(enc(Array.from({ length: 11 }, (_, i) => q(i)).join('\r\n')), limits), {
    why: 'cells',
    cells: 11,
    limit: 10,
  });
  assert.equal(tooLargeBeforeParsing(enc('x'.repeat(2e6)), limits)?.why, 'bytes');
});

test('after decoding: questions are one cell each (plus the questions view), trajectories a header and their steps', () => {
  const questions = textToNotebook(Array.from({ length: 9 }, (_, i) => q(i)).join('\n'));
  assert.equal(questions.cells.length, 10);
  assert.equal(tooManyCells(questions.cells.length, { maxBytes: 1e6, maxCells: 10 }), null);
  const rollouts = textToNotebook(Array.from({ length: 3 }, (_, i) => t(i)).join('\n'));
  assert.equal(rollouts.cells.length, 3 * 5);
  const over = tooManyCells(rollouts.cells.length, { maxBytes: 1e6, maxCells: 10 });
  assert.deepEqual(over, { why: 'cells', cells: 15, limit: 10 });
  assert.match(describeTooLarge(over!), /15 cells is above `coaStudio.notebook.maxCells` \(10/);
});
