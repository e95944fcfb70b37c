// The JSONL reader: bad lines reported with line and column and skipped; byte offsets exact across chunk
// boundaries and multi-byte characters; raw JSON columns for offsets inside the response string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iterateJsonlText, readJsonl } from '../../../src/core/jsonl';
import { mapLiteral, mapStringAt } from '../../../src/core/jsonstring';

const dir = mkdtempSync(join(tmpdir(), 'coa-jsonl-'));
const good = (id: string, response = '<think>t</think><answer>a</answer>') =>
  JSON.stringify({ id, question: 'q', response });

async function collect(path: string, chunkSize?: number) {
  const out = [];
  for await (const e of readJsonl(path, { chunkSize })) out.push(e);
  return out;
}

test('bad lines are reported with line and column and skipped; good lines survive', async () => {
  const lines = [
    good('a'),
    '{"id": "b", "question": "q", "response": 1}',
    '{"id": "c",, }',
    '',
    good('d'),
    '{"id": "e"',
  ];
  const path = join(dir, 'mixed.coa.jsonl');
  writeFileSync(path, lines.join('\n'));
  const entries = await collect(path);
  assert.deepEqual(
    entries.map((e) => [e.line, e.record?.id ?? e.problem?.code]),
    [
      [1, 'a'],
      [2, 'COA102'],
      [3, 'COA101'],
      [5, 'd'],
      [6, 'COA101'],
    ],
  );
  const schema = entries[1].problem!;
  assert.equal(schema.path, 'response');
  assert.equal(schema.column, lines[1].indexOf('1}') + 1, 'column points at the offending value');
  assert.equal(entries[2].problem!.column, lines[2].indexOf(',,') + 2);
});

test('byte offsets are exact with multi-byte text, CRLF and tiny chunks', async () => {
  const lines = [good('é', '<think>ünïcödé 🚀</think><answer>x</answer>'), good('b'), good('ç')];
  const text = lines.join('\r\n') + '\r\n';
  const path = join(dir, 'offsets.jsonl');
  writeFileSync(path, text);
  const buf = readFileSync(path);
  for (const chunkSize of [1, 3, 7, 64, 1 << 20]) {
    const entries = await collect(path, chunkSize);
    assert.deepEqual(
      entries.map((e) => e.record?.id),
      ['é', 'b', 'ç'],
      `chunk ${chunkSize}`,
    );
    for (const [i, e] of entries.entries())
      assert.equal(buf.subarray(e.offset, e.offset + e.byteLength).toString('utf8'), lines[i]);
  }
  assert.deepEqual(
    [...iterateJsonlText(text)].map((e) => [e.line, e.offset]),
    (await collect(path)).map((e) => [e.line, e.offset]),
  );
});

test('binary files are refused in one entry', async () => {
  const path = join(dir, 'binary.jsonl');
  writeFileSync(path, Buffer.from([0x7b, 0x00, 0xff, 0x10, 0x0a, 0x00]));
  const entries = await collect(path);
  assert.equal(entries.length, 1);
  assert.equal(entries[0].problem?.code, 'COA104');
});

test('decoded string offsets map to raw JSON columns through escapes', () => {
  const response = 'a\n"b"\\c\u00e9\u0001<think>';
  const raw = JSON.stringify({ id: 'x', response });
  const map = mapStringAt(raw, ['response'])!;
  const decodedAt = response.indexOf('<think>');
  assert.equal(raw.slice(map.toRaw(decodedAt), map.toRaw(decodedAt) + 7), '<think>');
  assert.equal(raw[map.toRaw(0)], 'a');
  assert.equal(map.toRaw(response.length), raw.lastIndexOf('"'));
  assert.equal(mapStringAt(raw, ['missing']), null);
});

test('the compact string map equals a character-by-character walk', async () => {
  const fc = (await import('fast-check')).default;
  const walk = (raw: string, quote: number) => {
    const at: number[] = [];
    let p = quote + 1;
    while (p < raw.length && raw[p] !== '"') {
      at.push(p);
      p += raw[p] === '\\' ? (raw[p + 1] === 'u' ? 6 : 2) : 1;
    }
    at.push(p);
    return (i: number) => at[Math.max(0, Math.min(i, at.length - 1))];
  };
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom('a', '"', '\\', '\n', '\t', 'é', '😀', '\u0001', '<'), maxLength: 60 }),
      fc.boolean(),
      fc.array(fc.integer({ min: -2, max: 80 }), { maxLength: 10 }),
      (s, truncate, offsets) => {
        let raw = JSON.stringify({ id: 'x', response: s, z: 1 }).replace(/é/g, '\\u00e9');
        const quote = raw.indexOf('"response":') + 11;
        if (truncate) raw = raw.slice(0, raw.length - 8); // an unterminated literal, as while a trainer appends
        const map = mapLiteral(raw, quote);
        const ref = walk(raw, quote);
        for (const o of offsets) assert.equal(map.toRaw(o), ref(o), `offset ${o} in ${raw}`);
      },
    ),
    { numRuns: 2000 },
  );
});
