// Prompt-only data (questions with no response yet) and rewards under the record's own run's scheme, in the
// notebook: real converted AutoCoA data through the core's converter, no hand-made expectations of the core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { importVerlParquet } from '../../../src/core/importers/verl-parquet';
import { serializeRecord } from '../../../src/core/record';
import { scoreRecords } from '../../../src/core/rewards';
import { notebookToText, textToNotebook } from '../../../src/extension/providers/notebook/codec';
import { notebookDiagnostics } from '../../../src/extension/providers/notebook/diagnostics';
import { viewNotebook } from '../../../src/extension/providers/notebook/filter';
import { REWARD_MIME, RewardOutput, cellMeta } from '../../../src/extension/providers/notebook/cells';

const PARQUET = join(__dirname, '../../../examples/data/autocoa/hotpotqa_dev.parquet');

test('a converted verl parquet opens as questions: one header cell each, a questions view first, no failures', async () => {
  const records = await importVerlParquet(PARQUET);
  const text = records.map(serializeRecord).join('\n') + '\n';
  const nb = textToNotebook(text);
  const kinds = nb.cells.map((c) => cellMeta(c.metadata)?.kind);
  assert.equal(kinds[0], 'summary');
  assert.equal(kinds.filter((k) => k === 'header').length, records.length);
  assert.equal(nb.cells.length, records.length + 1, 'one cell per question, plus the questions view');
  assert.ok(!nb.cells.some((c) => c.outputs?.length), 'a question has no reward output');
  const summary = nb.cells[0].value;
  assert.match(summary, new RegExp(`\\*\\*${records.length.toLocaleString('en-US')} questions\\*\\*`));
  assert.match(summary, /golden answers on 400 \(100 %\)/);
  assert.match(summary, /sources: HotpotQA 400/);
  assert.deepEqual(notebookDiagnostics(nb.cells), [], 'no COA006 on questions');
  assert.equal(viewNotebook(text, { kind: 'failures' }).count, 0, 'Show Failures finds none');
  // Saved unchanged: byte-identical (the questions view is not data).
  assert.equal(notebookToText(nb), text);
  // A cell added under a question's header is its response.
  const header = nb.cells.findIndex((c) => cellMeta(c.metadata)?.kind === 'header');
  nb.cells.splice(header + 1, 0, { kind: 'code', value: '<think>t</think><answer>x</answer>', languageId: 'coa' });
  const first = JSON.parse(notebookToText(nb).split('\n')[0]);
  assert.equal(first.response, '<think>t</think><answer>x</answer>');
});

test('an empty response with tokens is a trajectory that failed, without them a question', () => {
  const text =
    [
      JSON.stringify({ id: 'q', question: 'who?', golden_answers: ['a'], response: '' }),
      JSON.stringify({ id: 'e', question: 'who?', golden_answers: ['a'], response: '', tokens: { ids: [2] } }),
    ].join('\n') + '\n';
  const nb = textToNotebook(text);
  assert.equal(nb.cells.filter((c) => cellMeta(c.metadata)?.kind === 'header').length, 2);
  const codes = notebookDiagnostics(nb.cells).map((d) => d.code);
  assert.deepEqual(codes, ['COA006'], 'only the generated empty response misses an answer');
  assert.equal(notebookToText(nb), text);
});

test("rewards are recomputed under the scheme the record's own run stored; the configured one is offered", () => {
  const base = { question: 'Who wrote it?', golden_answers: ['Herman Wouk'] };
  const wrong = { ...base, id: 'w', response: '<think>t</think><answer>Thomas Wolfe</answer>' };
  const right = { ...base, id: 'r', response: '<think>t</think><answer>Herman Wouk</answer>' };
  const stored = (r: typeof wrong) => ({ ...r, reward: scoreRecords([r], 'autocoa')[0] });
  const nogold = { id: 'n', question: 'q', response: '<think>t</think><answer>x</answer>' };
  const text = [
    stored(wrong),
    { ...stored(right), reward: { ...scoreRecords([right], 'autocoa')[0], total: 0.5 } },
    nogold,
  ]
    .map((r) => JSON.stringify(r))
    .join('\n');
  const outs = textToNotebook(text, { scheme: 'em' }).cells.flatMap((c) =>
    (c.outputs ?? []).flatMap((o) => o.filter((x) => x.mime === REWARD_MIME).map((x) => x.data as RewardOutput)),
  );
  assert.equal(outs.length, 3);
  // Both 0 under autocoa: shown, recomputed under autocoa, no "differs"; em offered as the configured scheme.
  assert.equal(outs[0].breakdown.scheme, 'autocoa');
  assert.equal(outs[0].stored?.scheme, 'autocoa');
  assert.equal(outs[0].storedDiffers, false);
  assert.equal(outs[0].setting?.scheme, 'em');
  assert.equal(outs[0].setting?.total, scoreRecords([wrong], 'em')[0].total);
  // A stored reward that disagrees with the recomputation is flagged.
  assert.equal(outs[1].storedDiffers, true);
  // No stored reward: the configured scheme, nothing else to offer; no golden answers is said in words.
  assert.equal(outs[2].breakdown.scheme, 'em');
  assert.equal(outs[2].setting, undefined);
  assert.deepEqual(outs[2].golden, []);
});
