// Filter/sort views of a trajectory file: which records, in which order, with the whole file's rewards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { modesIn, viewNotebook } from '../../../src/extension/providers/notebook/filter';
import { notebookToText } from '../../../src/extension/providers/notebook/codec';
import {
  HeaderCellMeta,
  META_KEY,
  NotebookMeta,
  REWARD_MIME,
  RewardOutput,
  cellMeta,
} from '../../../src/extension/providers/notebook/cells';
import { scoreRecords } from '../../../src/core/rewards';

const text = readFileSync(join(__dirname, '../../../examples/trajectories.coa.jsonl'), 'utf8') + 'not json\n';
const records = text
  .split('\n')
  .filter((l) => l.trim() && l.startsWith('{'))
  .map((l) => JSON.parse(l));
const ids = (nb: ReturnType<typeof viewNotebook>) =>
  nb.cells
    .map((c) => cellMeta(c.metadata))
    .filter((m): m is HeaderCellMeta => m?.kind === 'header')
    .map((m) => m.id);

test('show failures: exactly the records the core scores 0 or with format errors', () => {
  const rewards = scoreRecords(records, 'em');
  const expected = records.filter((_, i) => rewards[i].total <= 0 || !rewards[i].format_ok).map((r) => r.id);
  assert.ok(expected.length > 0 && expected.length < records.length, 'the example file mixes successes and failures');
  const nb = viewNotebook(text, { kind: 'failures' });
  assert.deepEqual(ids(nb), expected);
  assert.equal(nb.count, expected.length);
  assert.equal((nb.metadata[META_KEY] as NotebookMeta).view?.description, 'failures (reward 0 or format errors)');
  // Saving the view writes the chosen lines, each as it was in the file.
  const lines = notebookToText(nb).split('\n').filter(Boolean);
  assert.deepEqual(
    lines,
    text.split('\n').filter((l) => expected.some((id) => l.includes(`"id": "${id}"`))),
  );
  assert.equal(nb.text, lines.join('\n') + '\n');
  assert.deepEqual(
    nb.rewards.own,
    rewards.filter((b) => b.total <= 0 || !b.format_ok),
  );
});

test('more than N tool calls, and sort by reward (stable)', () => {
  const rewards = scoreRecords(records, 'em');
  const more = viewNotebook(text, { kind: 'tool-calls', more: 1 });
  assert.deepEqual(
    ids(more),
    records.filter((_, i) => rewards[i].tool_calls > 1).map((r) => r.id),
  );
  assert.ok(more.count > 0);
  const sorted = viewNotebook(text, { kind: 'sort', by: 'reward', order: 'desc' });
  const totals = sorted.cells.flatMap((c) =>
    (c.outputs ?? []).flatMap((o) =>
      o.filter((x) => x.mime === REWARD_MIME).map((x) => (x.data as RewardOutput).breakdown.total),
    ),
  );
  assert.equal(totals.length, records.length);
  assert.deepEqual(
    totals,
    [...totals].sort((a, b) => b - a),
  );
});

test("filter by reward and mode: a collection's records by reward (> 0 / 0) and meta.mode", () => {
  // records as `coa_trainer collect` writes them: meta.mode is coa or cot
  const collection =
    records
      .map((r, i) => JSON.stringify({ ...r, meta: { ...(r.meta ?? {}), mode: i % 2 ? 'cot' : 'coa' } }))
      .join('\n') + '\n';
  const rewards = scoreRecords(records, 'em');
  const wanted = records.filter((_, i) => i % 2 === 0 && rewards[i].total > 0).map((r) => r.id);
  assert.ok(wanted.length > 0 && wanted.length < records.length / 2, 'some coa records earn a reward, not all');
  const nb = viewNotebook(collection, { kind: 'filter', reward: 'positive', mode: 'coa' });
  assert.deepEqual(ids(nb), wanted);
  assert.equal((nb.metadata[META_KEY] as NotebookMeta).view?.description, 'reward > 0, mode coa');
  assert.deepEqual(
    ids(viewNotebook(collection, { kind: 'filter', reward: 'zero', mode: null })),
    records.filter((_, i) => rewards[i].total <= 0).map((r) => r.id),
  );
  assert.deepEqual(
    ids(viewNotebook(collection, { kind: 'filter', reward: null, mode: 'cot' })),
    records.filter((_, i) => i % 2).map((r) => r.id),
  );
  assert.deepEqual(modesIn(collection), ['coa', 'cot']);
  assert.deepEqual(modesIn(text), []);
});
