// The record view's file access (recordFile.ts): a line found by scanning or at a checked offset, CRLF and a last
// line without terminator, stale offsets ignored, and a save that replaces exactly the record's bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  parseRecordViewPath,
  readLineAt,
  readSpan,
  recordViewPath,
  replaceSpan,
  safeName,
} from '../../../src/extension/providers/notebook/recordFile';

const dir = mkdtempSync(join(tmpdir(), 'coa-record-file-'));
const rec = (id: string, pad = 0) =>
  JSON.stringify({ id, question: 'q', response: `<answer> ${'x'.repeat(pad)} </answer>` });

test('a line is found by scanning, across chunk boundaries, and at a checked offset', async () => {
  // Lines longer than the 1 MiB read chunk: the scan must carry a line across chunks.
  const lines = [rec('a'), rec('b', 1_500_000), '', rec('c'), rec('d', 2_100_000), rec('e')];
  const path = join(dir, 'big.coa.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  const bytes = readFileSync(path);
  let offset = 0;
  for (const [k, l] of lines.entries()) {
    const at = await readLineAt(path, k + 1);
    assert.equal(at.offset, offset, `line ${k + 1} offset`);
    assert.equal(at.bytes.toString(), l);
    assert.equal(at.eol, '\n');
    const again = await readLineAt(path, k + 1, { offset: at.offset, length: at.length });
    assert.deepEqual(again, at);
    offset += Buffer.byteLength(l) + 1;
  }
  assert.equal(bytes.length, offset);
  // A stale hint (not a whole line there) is ignored: the scan finds the line.
  assert.equal((await readLineAt(path, 4, { offset: 3, length: 10 })).bytes.toString(), rec('c'));
  assert.equal((await readLineAt(path, 4, { offset: 0, length: 5 })).bytes.toString(), rec('c'));
  await assert.rejects(readLineAt(path, 7), /no line 7/);
  await assert.rejects(readLineAt(path, 99), /no line 99/);
});

test('CRLF terminators and a last line without one', async () => {
  const path = join(dir, 'crlf.coa.jsonl');
  writeFileSync(path, `${rec('a')}\r\n${rec('b')}\r\n${rec('c')}`);
  const b = await readLineAt(path, 2);
  assert.equal(b.bytes.toString(), rec('b'));
  assert.equal(b.eol, '\r\n');
  const c = await readLineAt(path, 3);
  assert.equal(c.bytes.toString(), rec('c'));
  assert.equal(c.eol, '');
  assert.deepEqual(await readLineAt(path, 3, c), c);
});

test("a save replaces exactly the record's bytes, and refuses when they changed on disk", async () => {
  const path = join(dir, 'save.coa.jsonl');
  const original = [rec('a'), rec('b'), rec('c')].join('\n') + '\n';
  writeFileSync(path, original);
  const b = await readLineAt(path, 2);
  const old = Buffer.concat([b.bytes, Buffer.from(b.eol)]);
  assert.ok(await readSpan(path, b.offset, old));
  const edited = `${rec('b', 3)}\n${rec('b#replay-env')}\n`;
  await replaceSpan(path, b.offset, old, Buffer.from(edited));
  assert.equal(readFileSync(path, 'utf8'), `${rec('a')}\n${edited}${rec('c')}\n`);
  // The old bytes are gone: a second save from the same view state is refused and the file is untouched.
  const now = readFileSync(path);
  await assert.rejects(replaceSpan(path, b.offset, old, Buffer.from('x\n')), /changed on disk/);
  assert.deepEqual(readFileSync(path), now);
  assert.equal(await readSpan(path, b.offset, old), null);
  // A span that does not start a line is not a record's.
  assert.equal(await readSpan(path, 1, now.subarray(1, 5)), null);
});

test('record view paths: the id as a file name, the file and line recoverable', () => {
  assert.equal(safeName('q0315-5-0'), 'q0315-5-0');
  assert.equal(safeName('a/b c?'), 'a_b_c_');
  assert.equal(safeName('..'), '_');
  const p = recordViewPath('/w/runs/r/stages/rl2/rollouts.coa.jsonl', 1451, 'q1#replay-env');
  assert.equal(p, '/w/runs/r/stages/rl2/rollouts.coa.jsonl/1451/q1#replay-env.coa.jsonl');
  assert.deepEqual(parseRecordViewPath(p), {
    file: '/w/runs/r/stages/rl2/rollouts.coa.jsonl',
    line: 1451,
    name: 'q1#replay-env',
  });
  assert.equal(parseRecordViewPath('/w/x.coa.jsonl'), null);
});
