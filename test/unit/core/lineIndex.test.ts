// The line index beside a rollouts file, read by the editor (src/core/lineIndex.ts): the shared vector the trainer's
// writer makes byte for byte (test/conformance/line-index.json, run by src/trainer/tests/test_line_index.py too) gives
// the same rows read through its index as parsed without one; a file growing, cut back on resume, edited in place or
// described by a stale or wrong index is still read right. No step is ever found by searching the text.
import test from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StepIndex, chainedEntries, lineIndexPath, type LineIndexEntry } from '../../../src/core/lineIndex';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const VECTOR = JSON.parse(readFileSync(join(ROOT, 'test/conformance/line-index.json'), 'utf8')) as {
  file: string;
  entries: LineIndexEntry[];
  steps: Record<string, number[]>;
};
const indexText = (entries: LineIndexEntry[]) => entries.map((e) => JSON.stringify(e) + '\n').join('');

function withDir(body: (dir: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coa-line-index-'));
    try {
      await body(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

/** Every step's rows as (line, offset, length), and the ids read back. */
async function rowsByStep(
  index: StepIndex,
): Promise<Record<string, { at: [number, number, number][]; ids: unknown[] }>> {
  const out: Record<string, { at: [number, number, number][]; ids: unknown[] }> = {};
  for (const step of await index.stepList()) {
    const rows = await index.rowsOf(step);
    out[step] = {
      at: rows.map((r) => [r.line, r.offset, r.length]),
      ids: rows.map((r) => (r.value as { id: unknown }).id),
    };
  }
  return out;
}

/** What the vector's entries say each step's rows are. */
function expectedRows(): Record<string, [number, number, number][]> {
  const out: Record<string, [number, number, number][]> = {};
  for (const e of VECTOR.entries) {
    const bounds = [...e.offsets, e.end];
    (out[e.step] ??= []).push(
      ...e.offsets.map((o, i) => [e.line + i, o, bounds[i + 1] - o - 1] as [number, number, number]),
    );
  }
  return out;
}

test('the index file is named after the file it describes', () => {
  assert.equal(lineIndexPath('/r/stages/rl2/rollouts.coa.jsonl'), '/r/stages/rl2/rollouts.index.jsonl');
  assert.equal(lineIndexPath('/r/stages/rl2/flagged.coa.jsonl'), '/r/stages/rl2/flagged.index.jsonl');
  assert.equal(lineIndexPath('/d/12.jsonl'), '/d/12.index.jsonl');
});

test(
  'the shared vector: through its index and without one (each line parsed), the same rows of each step',
  withDir(async (dir) => {
    const file = join(dir, 'rollouts.coa.jsonl');
    writeFileSync(file, VECTOR.file);
    const want = expectedRows();
    assert.deepEqual(
      Object.fromEntries(Object.entries(VECTOR.steps).map(([s, lines]) => [s, lines])),
      Object.fromEntries(Object.entries(want).map(([s, r]) => [s, r.map((x) => x[0])])),
      'the vector agrees with itself',
    );
    const parsed = new StepIndex(file);
    const byParse = await rowsByStep(parsed);
    assert.deepEqual(Object.fromEntries(Object.entries(byParse).map(([s, r]) => [s, r.at])), want);
    assert.equal(parsed.last.fromIndex, 0);
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    const indexed = new StepIndex(file);
    await indexed.refresh();
    assert.deepEqual(
      [indexed.last.fromIndex, indexed.last.parsedBytes],
      [VECTOR.entries.length, 0],
      'nothing of the file is read to index it',
    );
    assert.deepEqual(await rowsByStep(indexed), byParse);
    // Step 1 is the rows of step 1, not the question that holds the text "step": 1, nor step 10's.
    assert.deepEqual(byParse[1].ids, ['q1-1-0', 'q1-1-1']);
    assert.deepEqual(byParse[10].ids, ['q2-10-0', 'q2-10-1']);
  }),
);

test(
  'however a writer spaces its JSON (compact, CRLF), without an index the rows are found by their parsed step',
  withDir(async (dir) => {
    const file = join(dir, 'dump.jsonl');
    const values = VECTOR.file
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as unknown);
    writeFileSync(file, values.map((v) => JSON.stringify(v)).join('\r\n') + '\r\n');
    const rows = await rowsByStep(new StepIndex(file));
    assert.deepEqual(
      Object.fromEntries(Object.entries(rows).map(([s, r]) => [s, r.at.map((x) => x[0])])),
      VECTOR.steps,
    );
    const text = readFileSync(file);
    for (const { at } of Object.values(rows))
      for (const [, offset, length] of at)
        assert.doesNotThrow(() => JSON.parse(text.subarray(offset, offset + length).toString()));
    // Python writes a NaN log-prob as a bare NaN: the line is still read (as the rest of the editor reads it).
    appendFileSync(file, '{"id": "nan", "tokens": {"logprobs": [NaN, -0.5]}, "meta": {"step": 7}}\n');
    assert.deepEqual(
      (await new StepIndex(file).rowsOf(7)).map((r) => (r.value as { id: string }).id),
      ['nan'],
    );
  }),
);

test(
  'a growing file: new steps come from the index as it is appended, or from the new lines before their entry',
  withDir(async (dir) => {
    const file = join(dir, 'rollouts.coa.jsonl');
    const [first, ...rest] = VECTOR.entries;
    const upTo = (e: LineIndexEntry) => Buffer.from(VECTOR.file).subarray(0, e.end);
    writeFileSync(file, upTo(first));
    writeFileSync(lineIndexPath(file), indexText([first]));
    const index = new StepIndex(file);
    assert.deepEqual(await index.stepList(), [1]);
    // The trainer has written step 10's first record, not yet its entry: read from the file's new line.
    writeFileSync(file, upTo(rest[0]));
    assert.deepEqual(
      (await index.rowsOf(10)).map((r) => r.line),
      [2],
    );
    assert.deepEqual(
      [index.last.fromIndex, index.last.parsedBytes],
      [0, rest[0].end - first.end],
      'only the new bytes',
    );
    // Then its entry, and the rest of the file with theirs.
    writeFileSync(file, VECTOR.file);
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    await index.refresh();
    assert.deepEqual(
      [index.last.fromIndex, index.last.parsedBytes],
      [2, 0],
      'the two entries after the part already read',
    );
    assert.deepEqual(
      (await index.rowsOf(10)).map((r) => r.line),
      [2, 3],
    );
    assert.deepEqual(
      (await index.rowsOf(2)).map((r) => r.line),
      [4],
    );
    assert.deepEqual(await index.locate(3), {
      line: 3,
      offset: rest[1].offsets[0],
      length: rest[1].end - rest[1].offsets[0] - 1,
    });
  }),
);

test(
  'a resumed stage cuts the file back and writes its steps again: rows of the cut steps go, the new ones come',
  withDir(async (dir) => {
    const file = join(dir, 'rollouts.coa.jsonl');
    writeFileSync(file, VECTOR.file);
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    const index = new StepIndex(file);
    assert.deepEqual(await index.stepList(), [1, 2, 10]);
    truncateSync(file, VECTOR.entries[1].end);
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries.slice(0, 2)));
    assert.deepEqual(await index.stepList(), [1, 10]);
    assert.deepEqual(
      (await index.rowsOf(10)).map((r) => r.line),
      [2],
    );
    writeFileSync(file, VECTOR.file);
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    assert.deepEqual(
      (await index.rowsOf(10)).map((r) => r.line),
      [2, 3],
    );
  }),
);

test(
  'an index that does not describe its file is not believed: older than the file, stale past its end, or wrong',
  withDir(async (dir) => {
    const file = join(dir, 'rollouts.coa.jsonl');
    const want = expectedRows();
    // The record view saved an edit that moved step 1's lines (swapped, the size unchanged): the index is older.
    const [a, b, ...rest] = VECTOR.file.split('\n');
    writeFileSync(file, [b, a, ...rest].join('\n'));
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    const past = new Date(Date.now() - 60_000);
    utimesSync(lineIndexPath(file), past, past);
    const edited = new StepIndex(file);
    assert.deepEqual(
      (await edited.rowsOf(1)).map((r) => (r.value as { id: string }).id),
      ['q1-1-1', 'q1-1-0'],
    );
    assert.equal(edited.last.fromIndex, 0);
    // An index as new as the file but describing other bytes (a file replaced under it): its rows do not hold the
    // step it says, so the file is parsed instead.
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    const wrong = new StepIndex(file);
    assert.deepEqual(
      (await wrong.rowsOf(1)).map((r) => (r.value as { id: string }).id),
      ['q1-1-1', 'q1-1-0'],
    );
    // Entries past the file's end (a cut the index did not follow) and a torn last line end the chain.
    writeFileSync(file, VECTOR.file);
    const torn = indexText(VECTOR.entries) + '{"step": 3, "line": 5, "off';
    assert.equal(chainedEntries(torn, Buffer.byteLength(VECTOR.file)).length, VECTOR.entries.length);
    assert.equal(chainedEntries(indexText(VECTOR.entries), VECTOR.entries[1].end).length, 2);
    const overlapping = [VECTOR.entries[0], { ...VECTOR.entries[1], offsets: [VECTOR.entries[0].end - 1] }];
    assert.equal(chainedEntries(indexText(overlapping), Buffer.byteLength(VECTOR.file)).length, 1);
    writeFileSync(lineIndexPath(file), indexText(VECTOR.entries));
    const fine = await rowsByStep(new StepIndex(file));
    assert.deepEqual(Object.fromEntries(Object.entries(fine).map(([s, r]) => [s, r.at])), want);
    // A file changed in place after it was read (same size or larger): read again from its start.
    const index = new StepIndex(file);
    await index.stepList();
    writeFileSync(file, VECTOR.file.replace('"step": 2', '"step": 3'));
    // An edit comes later than the read (file times tick per jiffy, so a rewrite in the same millisecond could keep it).
    const later = new Date(Date.now() + 5_000);
    utimesSync(file, later, later);
    assert.deepEqual(await index.stepList(), [1, 3, 10]);
    assert.deepEqual(await new StepIndex(join(dir, 'none.coa.jsonl')).stepList(), [], 'no file: no rows');
  }),
);
