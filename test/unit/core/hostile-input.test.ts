// Hostile input to the core's JSONL path: deep nesting, a UTF-8 BOM, invalid UTF-8.
// Each is one reported problem at line:column with the rest of the file intact — never a RangeError, never a
// silently replaced byte, never a shifted offset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iterateJsonlText, MAX_NESTING, parseRecordLine, readJsonl } from '../../../src/core/jsonl';
import { isValidName, nameError, NAME_RULE } from '../../../src/core/names';

const dir = mkdtempSync(join(tmpdir(), 'coa-hostile-'));
const good = (id: string, response = '<think>t</think><answer>a</answer>') =>
  JSON.stringify({ id, question: 'q', response });
const deep = (n: number, open = '[', close = ']') => open.repeat(n) + close.repeat(n);

async function collect(path: string, chunkSize?: number) {
  const out = [];
  for await (const e of readJsonl(path, { chunkSize })) out.push(e);
  return out;
}

test('a line nested 5,000+ levels is COA101 at the bracket that goes too deep; its neighbours are read', async () => {
  const lines = [
    good('a'),
    `{"id":"b","question":"q","response":"r","x":${deep(5000)}}`,
    `{"id":"c","question":"q","response":"r","meta":${'{"k":'.repeat(6000)}1${'}'.repeat(6000)}}`,
    deep(20000, '{"a":', '}').replace(/\}+$/, (m) => `1${m}`),
    deep(6000),
    good('f'),
  ];
  const path = join(dir, 'deep.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  const entries = await collect(path);
  assert.deepEqual(
    entries.map((e) => e.record?.id ?? e.problem?.code),
    ['a', 'COA101', 'COA101', 'COA101', 'COA101', 'f'],
  );
  for (const e of entries.slice(1, 5)) {
    assert.match(e.problem!.message, new RegExp(`nested deeper than ${MAX_NESTING} levels`));
    const raw = lines[e.line - 1];
    // The column is the opening bracket of level MAX_NESTING + 1 (the record object itself is level 1).
    const col = e.problem!.column;
    assert.ok(raw[col - 1] === '[' || raw[col - 1] === '{', `column ${col} is a bracket`);
    const before = raw.slice(0, col - 1);
    assert.equal((before.match(/[[{]/g) ?? []).length - (before.match(/[\]}]/g) ?? []).length, MAX_NESTING);
  }
  // Exactly at the limit is still a record.
  const atLimit = `{"id":"l","question":"q","response":"r","x":${deep(MAX_NESTING - 1)}}`;
  assert.equal(parseRecordLine(atLimit, 1).record?.id, 'l');
  assert.equal(
    parseRecordLine(`{"id":"l","question":"q","response":"r","x":${deep(MAX_NESTING)}}`, 1).problem?.code,
    'COA101',
  );
  // Brackets inside strings do not count.
  assert.equal(parseRecordLine(good('s', '['.repeat(10_000)), 1).record?.id, 's');
  // A deep line that is also a schema violation (the path locator recurses) is the nesting error, not a crash.
  assert.equal(parseRecordLine(`{"id":1,"x":${deep(8000)}}`, 1).problem?.code, 'COA101');
});

test('a UTF-8 BOM at file start is skipped: record 1 parses, offsets count its 3 bytes, columns stay right', async () => {
  const lines = [good('a'), '{"id": "b", "question": "q", "response": 1}'];
  const path = join(dir, 'bom.jsonl');
  writeFileSync(path, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines.join('\n') + '\n')]));
  const buf = readFileSync(path);
  for (const chunkSize of [1, 2, 5, 1 << 20]) {
    const entries = await collect(path, chunkSize);
    assert.deepEqual(
      entries.map((e) => e.record?.id ?? e.problem?.code),
      ['a', 'COA102'],
      `chunk ${chunkSize}`,
    );
    assert.equal(entries[0].offset, 3);
    for (const [i, e] of entries.entries())
      assert.equal(buf.subarray(e.offset, e.offset + e.byteLength).toString('utf8'), lines[i]);
    assert.equal(entries[1].problem!.column, lines[1].indexOf('1}') + 1);
  }
  // An editor's text (decoded, BOM as U+FEFF) gives the same entries and offsets.
  const text = buf.toString('utf8');
  assert.equal(text.charCodeAt(0), 0xfeff);
  assert.deepEqual(
    [...iterateJsonlText(text)].map((e) => [e.line, e.offset, e.record?.id ?? e.problem?.code]),
    [
      [1, 3, 'a'],
      [2, 3 + lines[0].length + 1, 'COA102'],
    ],
  );
  // A BOM left on a line (files concatenated with cat) is skipped too; columns count it.
  assert.equal(parseRecordLine(`\ufeff${good('c')}`, 1).record?.id, 'c');
  const bad = `\ufeff{"id": "d", "question": "q", "response": 1}`;
  assert.equal(parseRecordLine(bad, 1).problem!.column, bad.indexOf('1}') + 1);
});

test('invalid UTF-8 is COA105 at the first bad byte, the original bytes kept; valid multi-byte text is not', async () => {
  const pre = Buffer.from('{"id":"b","question":"é ');
  const cases: [string, Buffer][] = [
    ['lone continuation', Buffer.from([0x80])],
    ['truncated 2-byte', Buffer.from([0xc3, 0x28])],
    ['overlong', Buffer.from([0xc0, 0xaf])],
    ['surrogate', Buffer.from([0xed, 0xa0, 0x80])],
    ['past U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80])],
    ['0xff', Buffer.from([0xff])],
  ];
  for (const [name, badBytes] of cases) {
    const line = Buffer.concat([pre, badBytes, Buffer.from('","response":"r"}')]);
    const path = join(dir, `utf8-${name.replace(/\W/g, '')}.jsonl`);
    writeFileSync(path, Buffer.concat([Buffer.from(good('a') + '\n'), line, Buffer.from('\n' + good('c') + '\n')]));
    const entries = await collect(path);
    assert.deepEqual(
      entries.map((e) => e.record?.id ?? e.problem?.code),
      ['a', 'COA105', 'c'],
      name,
    );
    const p = entries[1];
    assert.equal(p.problem!.column, pre.toString('utf8').length + 1, `${name}: column of the first bad byte`);
    assert.match(p.problem!.message, /invalid UTF-8/);
    assert.deepEqual(p.bytes, line, `${name}: the original bytes are kept`);
  }
  const fine = Buffer.from(good('ok', 'é 中 😀 \u{10FFFF}') + '\n');
  writeFileSync(join(dir, 'utf8-ok.jsonl'), fine);
  assert.equal((await collect(join(dir, 'utf8-ok.jsonl')))[0].record?.id, 'ok');
});

test('one name rule for run ids, stages and labels, exported to the trainer as schemas/names.json', () => {
  for (const ok of ['pretrain', 'rl2-otc', 'r1', '2026-11-24T10-00-00Z-sft2', 'a.b_c-d', 'x'.repeat(128)])
    assert.ok(isValidName(ok), ok);
  for (const bad of [
    '',
    '..',
    '../x',
    'a/../b',
    'a..b',
    '/abs',
    'a/b',
    'a\\b',
    '.hidden',
    '-x',
    'a b',
    'x'.repeat(129),
    'é',
    'C:x',
    'a\nb',
  ]) {
    assert.ok(!isValidName(bad), JSON.stringify(bad));
  }
  assert.match(nameError('--label', '../../x')!, /--label "\.\.\/\.\.\/x" is not a valid name/);
  const generated = JSON.parse(readFileSync(join(__dirname, '../../../schemas/names.json'), 'utf8'));
  assert.deepEqual(generated, NAME_RULE, 'schemas/names.json is generated from src/core/names.ts (npm run build)');
});
