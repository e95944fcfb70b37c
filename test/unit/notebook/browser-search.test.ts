// The browser's text search (search.ts) on AutoCoA's published 2,936-row test set (converted as `coa convert`
// does): a name found among the questions, case-insensitively; every field and the hits' indexes checked against a
// plain scan of the parsed records and the browser index; needles a JSON writer escapes (non-ASCII, quotes) found
// in escaped lines too; the questions table's columns by the file's kind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importVerlParquet } from '../../../src/core/importers/verl-parquet';
import { serializeRecord, type TrajectoryRecord } from '../../../src/core/record';
import { recordMatches, searchFile, SEARCH_FIELDS } from '../../../src/extension/providers/browser/search';
import { buildIndex, firstRecords } from '../../../src/extension/providers/browser/indexer';
import { runQuery, tableKind } from '../../../src/extension/providers/browser/query';
import type { RecordSummary } from '../../../src/protocols/browser';

const ROOT = join(__dirname, '../../..');
const dir = mkdtempSync(join(tmpdir(), 'coa-browser-search-'));

async function autocoaTest(): Promise<{ path: string; records: TrajectoryRecord[] }> {
  const records = await importVerlParquet(join(ROOT, 'examples/data/autocoa/all_test.parquet'));
  const path = join(dir, 'all_test.coa.jsonl');
  writeFileSync(path, records.map((r) => serializeRecord(r)).join('\n') + '\n');
  return { path, records };
}

const search = async (path: string, text: string, field?: (typeof SEARCH_FIELDS)[number]) => {
  const hits: number[] = [];
  let batches = 0;
  const total = await searchFile(
    path,
    text,
    (h) => {
      batches++;
      hits.push(...h);
    },
    { field, everyMs: 0 },
  );
  assert.equal(total, hits.length);
  assert.ok(batches >= 1, 'the last batch always comes');
  return hits;
};

test('AutoCoA test set: "drogo" finds the one question about Drogo of Champagne; every field agrees with a plain scan', async () => {
  const { path, records } = await autocoaTest();
  assert.ok(records.length > 2900);
  const hits = await search(path, 'drogo');
  assert.equal(hits.length, 1);
  assert.match(records[hits[0]].question, /Drogo Of Champagne/);
  // The hit is the browser index's row of that record: the page filters by these indexes.
  const index: RecordSummary[] = [];
  await buildIndex(path, (rows) => index.push(...rows));
  assert.equal(index[hits[0]].id, records[hits[0]].id);
  const page = runQuery(index, { pageSize: 50 }, new Set(hits));
  assert.deepEqual(
    page.rows.map((r) => r.id),
    [records[hits[0]].id],
  );
  assert.equal(page.total, 1);
  for (const field of SEARCH_FIELDS) {
    for (const text of ['Paris', 'who ', '1990', 'Pepin of Herstal']) {
      const expected = records.flatMap((r, i) => (recordMatches(r, text.toLowerCase(), field) ? [i] : []));
      assert.deepEqual(await search(path, text, field), expected, `${field}: ${text}`);
    }
  }
  assert.equal(
    (await search(path, 'Pepin of Herstal', 'question')).length,
    0,
    'a golden answer is not in the question',
  );
  assert.ok((await search(path, 'pepin of herstal', 'answers')).length >= 1);
  assert.deepEqual(await search(path, ''), []);
  // A question set: the table shows question / golden answers / source, the source being the row's source file.
  const first = await firstRecords(path, 50);
  assert.equal(tableKind(first), 'questions');
  const drogo = index[hits[0]];
  assert.equal(drogo.golden, 'Pepin of Herstal');
  assert.equal(drogo.source, '2WIKI_dev');
});

test('needles a JSON writer escapes are found in escaped lines; a rollouts file is laid out as trajectories', async () => {
  // Python's json.dumps escapes non-ASCII by default: "Café" is written as "Caf\u00e9".
  const lines = [
    '{"id": "a", "question": "Where is Caf\\u00e9 Central?", "golden_answers": ["Vienna"], "response": "<answer> Vienna </answer>"}',
    '{"id": "b", "question": "He said \\"stop\\"", "golden_answers": ["x"], "response": "<think> a \\\\ b </think><answer> x </answer>"}',
    'not json at all: café',
    '',
    '{"id": "c", "question": "plain", "golden_answers": ["CAFÉ"], "response": "<answer> no </answer>"}',
  ];
  const path = join(dir, 'escaped.coa.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  assert.deepEqual(await search(path, 'café'), [0, 3], 'a bad line is never a hit; indexes count non-blank lines');
  assert.deepEqual(await search(path, '"stop"'), [1]);
  assert.deepEqual(await search(path, 'a \\ b'), [1]);
  assert.deepEqual(await search(path, 'café', 'answers'), [3]);
  const first = await firstRecords(path, 50);
  assert.equal(tableKind(first), 'trajectories');
});
