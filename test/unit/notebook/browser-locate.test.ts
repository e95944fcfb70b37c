// A jump before the browser's index is built: locateRecord finds a record by line or id in the file itself, and
// what it finds is what the index would say (same line, offset and length), across chunk boundaries, CRLF lines,
// blank lines, decoys (the id inside another record) and ids JSON escapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/extension/providers/browser/indexer';
import { locateRecord } from '../../../src/extension/providers/browser/locate';
import type { RecordSummary } from '../../../src/extension/providers/browser/summary';

const root = join(__dirname, '../../..');
const examples = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n').filter((l) => l.trim());

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
  lines.splice(20, 0, JSON.stringify({ ...JSON.parse(examples[0]), id: 'decoy-holder', golden_answers: ['late "one" é'], meta: { id: 'late "one" é' } }));
  lines.push(JSON.stringify({ ...JSON.parse(examples[0]), id: 'late "one" é' }));
  lines.push('{"id":"compact-last","question":"q?","response":"<answer>x</answer>"}');
  const text = lines.map((l, i) => l + (i % 5 === 2 ? '\r\n' : '\n')).join('');
  const path = join(dir, 'big.coa.jsonl');
  writeFileSync(path, text);
  assert.ok(text.length > 2.5 * (1 << 20), 'spans several read chunks');
  return path;
}

test('locateRecord finds records by id and by line exactly where the index puts them, before any index exists', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-locate-'));
  try {
    const path = makeFile(dir);
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    const want = (r: RecordSummary) => ({ line: r.line, offset: r.offset, length: r.length });
    // Ids across the file (first, in the middle, past chunk boundaries, the last ones), and the same by line.
    const picks = [0, 1, 17, index.length >> 2, index.length >> 1, index.length - 3, index.length - 2, index.length - 1].map((i) => index[i]);
    for (const r of picks) {
      if (r.id) assert.deepEqual(await locateRecord(path, r.id), want(r), `id ${r.id}`);
      assert.deepEqual(await locateRecord(path, String(r.line)), want(r), `line ${r.line}`);
    }
    // The decoy names "late "one" é" first (as a golden answer, and as an "id" in its meta); the record with that id is the one at the end.
    const late = index.find((r) => r.id === 'late "one" é')!;
    assert.ok(late.line > index.length - 3);
    assert.deepEqual(await locateRecord(path, 'late "one" é'), want(late));
    assert.equal((await locateRecord(path, 'compact-last'))?.line, index[index.length - 1].line);
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
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
