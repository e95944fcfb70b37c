// Record-level format diagnostics placed in step cells: a lone step is never flagged for what its record has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { textToNotebook } from '../../../src/extension/providers/notebook/codec';
import {
  cellMessage,
  notebookDiagnostics,
  recordDiagnostics,
} from '../../../src/extension/providers/notebook/diagnostics';
import { checkFormat } from '../../../src/core/rules';
import { cellMeta } from '../../../src/extension/providers/notebook/cells';

test('a well-formed record has no diagnostics although its cells alone would', () => {
  const texts = ['<think>hm</think>\n', '<search>q</search>\n', '<observation>o</observation>\n', '<answer>a</answer>'];
  assert.ok(checkFormat(texts[0]).diagnostics.length > 0, 'a lone think cell is not a trajectory');
  assert.deepEqual(recordDiagnostics(texts), []);
});

test('findings land in the cell holding them, at offsets of that cell', () => {
  // An action with no observation (COA005) in cell 1; content after the answer (COA008) in cell 3.
  const texts = ['<think>a</think>\n', '<search>q</search>\n', '<answer>x</answer>\n', 'trailing text'];
  const d = recordDiagnostics(texts);
  const coa005 = d.find((x) => x.code === 'COA005')!;
  assert.equal(coa005.cell, 1);
  assert.equal(texts[1].slice(coa005.start, coa005.end), '<search>');
  const coa008 = d.find((x) => x.code === 'COA008')!;
  assert.equal(coa008.cell, 3);
  assert.equal(texts[3].slice(coa008.start, coa008.end), 'trailing text');
  // A missing answer points at the end of the last cell.
  const missing = recordDiagnostics(['<think>a</think>']).find((x) => x.code === 'COA006')!;
  assert.equal(missing.cell, 0);
});

test('over a whole notebook: every finding of the example file, in the right record', () => {
  const text = readFileSync(join(__dirname, '../../../examples/trajectories.coa.jsonl'), 'utf8');
  const nb = textToNotebook(text);
  const diags = notebookDiagnostics(nb.cells);
  const records = text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
  const expected = records.flatMap((r, i) => checkFormat(r.response).diagnostics.map((d) => `${i}:${d.code}`));
  assert.ok(expected.length > 0);
  assert.deepEqual(
    diags.map((d) => `${cellMeta(nb.cells[d.cell].metadata)!.record}:${d.code}`),
    expected,
  );
  assert.ok(diags.every((d) => cellMeta(nb.cells[d.cell].metadata)?.kind === 'step'));
});

test('with a cache, only records whose cells changed are checked again', () => {
  const text = readFileSync(join(__dirname, '../../../examples/trajectories.coa.jsonl'), 'utf8');
  const nb = textToNotebook(text);
  const versions = nb.cells.map(() => 1);
  const cache = { key: (i: number) => `${i}@${versions[i]}`, records: new Map() };
  const first = notebookDiagnostics(nb.cells, {}, cache);
  assert.deepEqual(notebookDiagnostics(nb.cells, {}, cache), first);
  // Poison the cached findings of every record, then edit one record: only that one is recomputed.
  for (const [k, v] of cache.records)
    cache.records.set(
      k,
      v.map((d: { code: string }) => ({ ...d, code: 'CACHED' })),
    );
  const answer = nb.cells.findIndex((c) => c.value === '<answer>Herman Wouk</answer>');
  const record = cellMeta(nb.cells[answer].metadata)!.record;
  nb.cells[answer].value = '<answer>Herman Wouk</answer> trailing';
  versions[answer]++;
  const after = notebookDiagnostics(nb.cells, {}, cache);
  const recordOf = (d: { cell: number }) => cellMeta(nb.cells[d.cell].metadata)!.record;
  assert.ok(after.filter((d) => recordOf(d) !== record).every((d) => d.code === 'CACHED'));
  assert.deepEqual(
    after.filter((d) => recordOf(d) === record).map((d) => d.code),
    ['COA008'],
  );
});

test('each finding names its record (id and line): Problems shows a cell only as "Ln 1, Col 1"', () => {
  const lines = [
    JSON.stringify({ id: 'ok-1', question: 'q', response: '<think>a</think><answer>x</answer>' }),
    '',
    JSON.stringify({ id: 'bad-2', question: 'q', response: '<think>a</think><search>q</search><answer>x</answer>' }),
  ];
  const nb = textToNotebook(lines.join('\n'));
  const [d] = notebookDiagnostics(nb.cells);
  assert.deepEqual([d.code, d.record], ['COA005', { id: 'bad-2', line: 3 }]);
  assert.equal(cellMessage(d), `bad-2 (line 3): ${d.message}`);
});
