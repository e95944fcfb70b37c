// parseRecordLine validates common records without zod: the result must be exactly zod's (same value, same key
// order), and anything the shortcut does not cover must still get zod's verdict and message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseRecordLine } from '../../../src/core/jsonl';
import { RecordSchema } from '../../../src/core/record';

// Values near the schema: the right type most of the time, a wrong one sometimes.
const str = fc.string({ maxLength: 6 });
const near = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) });
const metaFields = {
  run: near(str),
  stage: near(str),
  step: near(fc.oneof(fc.integer(), fc.constantFrom(2 ** 53, -(2 ** 53), 2 ** 53 - 1, 1e300))),
  sample: near(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))),
  group: near(fc.oneof(str, fc.integer())),
  extra: fc.jsonValue({ maxDepth: 1 }),
  __proto__: fc.constant({ x: 1 }),
};
const recordFields = {
  id: near(fc.string({ maxLength: 4 })),
  question: near(str),
  golden_answers: near(fc.array(near(str), { maxLength: 3 })),
  response: near(str),
  dialect: near(fc.constantFrom('coa', 'search-r1', 'autocoa', 'hermes', 'other')),
  tokens: fc.constant({ ids: [1, 2] }),
  reward: fc.jsonValue({ maxDepth: 1 }),
  meta: near(shuffled(metaFields, 0.3).map((raw) => new RawJson(raw))),
  note: fc.jsonValue({ maxDepth: 2 }),
  '0': str,
  __proto__: fc.constant({ id: 'x' }),
};

/** Object text inserted as is (so a nested `__proto__` key survives). */
class RawJson {
  constructor(readonly raw: string) {}
}

/** A JSON object text with a random subset of the fields, in random order (written by hand: `__proto__` stays a key). */
function shuffled(fields: Record<string, fc.Arbitrary<unknown>>, rare: number): fc.Arbitrary<string> {
  const names = Object.getOwnPropertyNames(fields);
  return fc
    .tuple(
      fc.shuffledSubarray(names),
      fc.tuple(...names.map((n) => fields[n])),
      fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: names.length, maxLength: names.length }),
    )
    .map(([order, values, dice]) =>
      `{${order
        .filter((n) => (n === '__proto__' || n === 'tokens' ? dice[names.indexOf(n)] < rare : true))
        .map((n) => {
          const v = values[names.indexOf(n)];
          return `${JSON.stringify(n)}:${v instanceof RawJson ? v.raw : JSON.stringify(v ?? null)}`;
        })
        .join(',')}}`,
    );
}

test('the zod-free path gives exactly what zod gives', () => {
  fc.assert(
    fc.property(fc.oneof(shuffled(recordFields, 0.1), fc.constant('{"id":"a","question":"q","response":"r"}')), (line) => {
      const entry = parseRecordLine(line, 1);
      const zod = RecordSchema.safeParse(JSON.parse(line));
      if (zod.success) {
        assert.ok(entry.record, `${line}: ${entry.problem?.message}`);
        assert.deepEqual(entry.record, zod.data);
        assert.equal(JSON.stringify(entry.record), JSON.stringify(zod.data), 'same key order');
        assert.equal(Object.getPrototypeOf(entry.record), Object.prototype);
      } else {
        assert.equal(entry.record, undefined, line);
        assert.equal(entry.problem?.code, 'COA102');
        assert.ok(entry.problem?.message.endsWith(zod.error.issues[0].message), entry.problem?.message);
      }
    }),
    { numRuns: 3000 },
  );
});

test('records in schema order come back as parsed; others are reordered as zod does', () => {
  const inOrder = parseRecordLine('{"id":"a","question":"q","response":"r","meta":{"stage":"s","x":1},"z":2}', 1).record!;
  assert.deepEqual(Object.keys(inOrder), ['id', 'question', 'response', 'meta', 'z']);
  const mixed = parseRecordLine('{"z":2,"meta":{"x":1,"step":3},"response":"r","question":"q","id":"a"}', 1).record!;
  assert.deepEqual(Object.keys(mixed), ['id', 'question', 'response', 'meta', 'z']);
  assert.deepEqual(Object.keys(mixed.meta!), ['step', 'x']);
  const withProto = parseRecordLine('{"id":"a","question":"q","response":"r","__proto__":{"id":"b"}}', 1).record!;
  assert.deepEqual(Object.keys(withProto), ['id', 'question', 'response']);
  assert.equal(parseRecordLine('{"id":"","question":"q","response":"r"}', 1).problem?.code, 'COA102');
  assert.equal(parseRecordLine('{"id":"a","question":"q","response":"r","meta":{"step":1.5}}', 1).problem?.path, 'meta.step');
});
