// A jump before the browser's index is built: locateRecord finds a record by line or id in the file itself, and
// what it finds is what the index would say (same line, offset and length), across chunk boundaries, CRLF lines,
// blank lines, decoys (the id inside another record) and ids JSON escapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/extension/providers/browser/indexer';
import { locateId, locateRecord } from '../../../src/extension/providers/browser/locate';
import { findIndexed, findPage } from '../../../src/extension/providers/browser/query';
import type { RecordSummary } from '../../../src/protocols/browser';

const root = join(__dirname, '../../..');
const examples = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim());

/** ~3 MB (more than two 1 MB chunks) of the example records with fresh ids, CRLF in places, blank lines, a bad line,
 *  a record whose meta names another's id (a decoy), and ids with quotes and non-ASCII. */
function makeFile(dir: string): string {
  const lines: string[] = [];
  let bytes = 0;
  for (let k = 0; bytes < 3 * (1 << 20); k++) {
    for (const l of examples) {
      lines.push(JSON.stringify({ ...JSON.parse(l), id: `${JSON.parse(l).id}-${k}` }));
      bytes += lines[lines.length - 1].length + 1;
    }
  }
  lines.splice(10, 0, '{"id": "broken"', '');
  lines.splice(
    20,
    0,
    JSON.stringify({
      ...JSON.parse(examples[0]),
      id: 'decoy-holder',
      golden_answers: ['late "one" é'],
      meta: { id: 'late "one" é' },
    }),
  );
  lines.push(JSON.stringify({ ...JSON.parse(examples[0]), id: 'late "one" é' }));
  lines.push('{"id":"compact-last","question":"q?","response":"<answer>x</answer>"}');
  const text = lines.map((l, i) => l + (i % 5 === 2 ? '\r\n' : '\n')).join('');
  const path = join(dir, 'big.coa.jsonl');
  writeFileSync(path, text);
  assert.ok(text.length > 2.5 * (1 << 20), 'spans several read chunks');
  return path;
}

/** Where the index puts a record: what locate must answer. */
const want = (r: RecordSummary) => ({ line: r.line, offset: r.offset, length: r.length });

/** makeFile's file and its full index (built by the browser's indexer), removed afterwards. */
async function withIndexedFile(check: (path: string, index: RecordSummary[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coa-locate-'));
  try {
    const path = makeFile(dir);
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    await check(path, index);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('locateRecord finds records by id and by line exactly where the index puts them, before any index exists', async () => {
  await withIndexedFile(async (path, index) => {
    // Ids across the file (first, in the middle, past chunk boundaries, the last ones), and the same by line.
    const picks = [
      0,
      1,
      17,
      index.length >> 2,
      index.length >> 1,
      index.length - 3,
      index.length - 2,
      index.length - 1,
    ].map((i) => index[i]);
    for (const r of picks) {
      if (r.id) assert.deepEqual(await locateRecord(path, r.id), want(r), `id ${r.id}`);
      assert.deepEqual(await locateRecord(path, String(r.line)), want(r), `line ${r.line}`);
    }
    // The decoy names "late "one" é" first (as a golden answer, and as an "id" in its meta); the record with that id is the one at the end.
    const late = index.find((r) => r.id === 'late "one" é')!;
    assert.ok(late.line > index.length - 3);
    assert.deepEqual(await locateRecord(path, 'late "one" é'), want(late));
    assert.equal((await locateId(path, 'compact-last'))?.line, index[index.length - 1].line);
    // Nothing there: an unknown id, a line past the end, line 0, an empty target.
    assert.equal(await locateRecord(path, 'no-such-id'), null);
    assert.equal(await locateRecord(path, String(index[index.length - 1].line + 5)), null);
    assert.equal(await locateRecord(path, '0'), null);
    assert.equal(await locateRecord(path, '  '), null);
    // Progress is reported as bytes; an aborted search finds nothing.
    const seen: number[] = [];
    await locateRecord(path, 'no-such-id', { everyMs: 0, onProgress: (b) => seen.push(b) });
    assert.ok(seen.length >= 2 && seen.every((b, i) => i === 0 || b > seen[i - 1]), `progress ${seen.join(', ')}`);
    const ctl = new AbortController();
    ctl.abort();
    assert.equal(await locateRecord(path, late.id, { signal: ctl.signal }), null);
  });
});

test('a jump past the index searches from its frontier (line and id), and an aborted line scan finds nothing', async () => {
  await withIndexedFile(async (path, index) => {
    // The index so far: about its first half, once ending on a CRLF line and once on an LF one (the frontier is
    // the last row's end, before its terminator).
    const bytes = readFileSync(path);
    const half = index.length >> 1;
    const endsIn = (eol: number) => half + index.slice(half).findIndex((r) => bytes[r.offset + r.length] === eol) + 1;
    for (const k of [endsIn(13), endsIn(10)]) {
      const last = index[k - 1];
      const from = { offset: last.offset + last.length, line: last.line };
      const next = index[k];
      const far = index[index.length - 2];
      assert.deepEqual(
        await locateRecord(path, String(next.line), { from }),
        want(next),
        `line ${next.line} from line ${last.line}`,
      );
      assert.deepEqual(await locateRecord(path, String(far.line), { from }), want(far));
      assert.deepEqual(await locateRecord(path, far.id!, { from }), want(far));
      assert.deepEqual(await locateId(path, next.id!, { from }), want(next));
      // The part before the frontier is not read again: progress starts past it, and an id only there is not found.
      const seen: number[] = [];
      assert.equal(await locateRecord(path, index[1].id!, { from, everyMs: 0, onProgress: (b) => seen.push(b) }), null);
      assert.ok(seen.length > 0 && seen[0] > from.offset, `progress ${seen.join(', ')} from ${from.offset}`);
    }
    // A frontier at or past the line wanted is not used: the line is still found.
    const last = index[index.length - 1];
    assert.deepEqual(
      await locateRecord(path, String(index[3].line), { from: { offset: last.offset, line: last.line } }),
      want(index[3]),
    );
    // A line scan (the whole file for the last line) stops on the signal, like an id search.
    const ctl = new AbortController();
    ctl.abort();
    assert.equal(await locateRecord(path, String(last.line), { signal: ctl.signal }), null);
    let calls = 0;
    const stopper = new AbortController();
    const got = await locateRecord(path, String(last.line), {
      signal: stopper.signal,
      everyMs: 0,
      onProgress: () => ++calls === 2 && stopper.abort(),
    });
    assert.equal(got, null, 'aborted while scanning');
  });
});

test('an id jump in a verl dump says only the index knows its ids (not "no such record"); a line jump still works', async () => {
  const dump = join(root, 'test/fixtures/verl/rollouts/3.jsonl');
  const index: RecordSummary[] = [];
  await buildIndex(dump, (rows) => index.push(...rows));
  assert.ok(index.length > 1 && index[0].id);
  assert.equal(await locateRecord(dump, index[0].id!), 'indexOnly', 'read from the file head');
  assert.equal(await locateRecord(dump, index[0].id!, { verl: true }), 'indexOnly', 'the caller decided');
  assert.deepEqual(await locateRecord(dump, String(index[1].line), { verl: true }), {
    line: index[1].line,
    offset: index[1].offset,
    length: index[1].length,
  });
});

test('a jump to an indexed record the filter hides finds it in the index, not on the table page', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-locate-'));
  try {
    const path = join(dir, 'small.coa.jsonl');
    writeFileSync(path, examples.join('\r\n') + '\r\n');
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    const target = index[2];
    const noHits = new Set<number>([index[0].i]); // a search whose only hit is another record
    assert.equal(findPage(index, { pageSize: 50 }, target.id!, noHits), null, 'hidden from the table');
    assert.equal(findIndexed(index, target.id!), target);
    assert.equal(findIndexed(index, ` ${target.line} `), target);
    assert.equal(findIndexed(index, 'no-such-id'), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
