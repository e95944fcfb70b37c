// parseRecordLine validates common records without zod: the result must be exactly zod's (same value, same key
// order), and anything the shortcut does not cover must still get zod's verdict and message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseRecordLine } from '../../../src/core/jsonl';
import { RecordSchema } from '../../../src/core/record';

// Values near the schema: the right type most of the time, a wrong one sometimes.
const str = fc.string({ maxLength: 6 });
const near = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) });
const metaFields = {
  run: near(str),
  stage: near(str),
  step: near(fc.oneof(fc.integer(), fc.constantFrom(2 ** 53, -(2 ** 53), 2 ** 53 - 1, 1e300))),
  sample: near(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))),
  group: near(fc.oneof(str, fc.integer())),
  extra: fc.jsonValue({ maxDepth: 1 }),
  __proto__: fc.constant({ x: 1 }),
};
// tokens and reward: each field right most of the time (so whole valid ones are common), wrong now and then —
// another type, a non-integer, a huge number, a per-token array of another length than ids.
const mostly = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 1 })) =>
  fc.oneof({ weight: 20, arbitrary: good }, { weight: 1, arbitrary: bad });
const int = fc.integer({ min: 0, max: 9 });
const real = fc.double({ noNaN: true, noDefaultInfinity: true, min: -2, max: 2 });
const badNumber = fc.constantFrom(1.5, 2 ** 53, '1', null, true);
const perToken = (n: number, x: fc.Arbitrary<unknown>, bad: fc.Arbitrary<unknown>) =>
  mostly(
    fc.array(mostly(x, bad), { minLength: n, maxLength: n }),
    fc.oneof(fc.array(x, { minLength: n + 1, maxLength: n + 2 }), fc.jsonValue({ maxDepth: 1 })),
  );
const tokens = fc.integer({ min: 0, max: 3 }).chain((n) =>
  shuffled(
    {
      ids: fc.array(mostly(int, badNumber), { minLength: n, maxLength: n }),
      loss_mask: perToken(n, real, badNumber),
      logprobs: perToken(n, fc.oneof(real, fc.constant(null)), fc.constantFrom('x', true, {})),
      advantages: perToken(n, real, badNumber),
      offsets: perToken(n, int, badNumber),
      extra: fc.jsonValue({ maxDepth: 1 }),
      __proto__: fc.constant({ ids: [] }),
    },
    0.05,
    0.7,
  ),
);
const reward = shuffled(
  {
    scheme: mostly(
      fc.constantFrom('em', 'f1', 'cover-em', 'autocoa', 'otc-ppo', 'otc-grpo'),
      fc.constantFrom('other', 1),
    ),
    em: mostly(real, badNumber),
    f1: mostly(real, badNumber),
    format_ok: mostly(fc.boolean(), fc.constantFrom(0, 'true', null)),
    violations: mostly(fc.array(mostly(str, fc.constantFrom(1, null)), { maxLength: 2 })),
    tool_calls: mostly(int, badNumber),
    optimal_tool_calls: mostly(fc.oneof(int, fc.constant(null)), fc.constantFrom(1.5, 'x')),
    r_tool: mostly(real, badNumber),
    r_correct: mostly(real, badNumber),
    total: mostly(real, badNumber),
    extra: fc.jsonValue({ maxDepth: 1 }),
    __proto__: fc.constant({ em: 1 }),
  },
  0.05,
  0.97,
);
const recordFields = {
  id: near(fc.string({ maxLength: 4 })),
  question: near(str),
  golden_answers: near(fc.array(near(str), { maxLength: 3 })),
  response: near(str),
  dialect: near(fc.constantFrom('coa', 'search-r1', 'autocoa', 'hermes', 'other')),
  tokens: mostly(tokens.map((raw) => new RawJson(raw))),
  reward: mostly(reward.map((raw) => new RawJson(raw))),
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
function shuffled(fields: Record<string, fc.Arbitrary<unknown>>, rare: number, keep = 1): fc.Arbitrary<string> {
  const names = Object.getOwnPropertyNames(fields);
  return fc
    .tuple(
      // keep < 1: every field in random order, each left out with probability 1 − keep; else a random subset
      fc.shuffledSubarray(names, keep < 1 ? { minLength: names.length } : {}),
      fc.tuple(...names.map((n) => fields[n])),
      // unbiased: fast-check leans doubles towards their bounds, which would keep or drop fields far more than asked
      fc.array(fc.noBias(fc.double({ min: 0, max: 1, noNaN: true })), {
        minLength: names.length,
        maxLength: names.length,
      }),
    )
    .map(
      ([order, values, dice]) =>
        `{${order
          // Rare fields (a __proto__ key) now and then; with keep < 1 the other fields are each left out sometimes.
          .filter((n) =>
            n === '__proto__'
              ? dice[names.indexOf(n)] < rare
              : n === 'tokens' || n === 'reward'
                ? dice[names.indexOf(n)] < 0.6
                : dice[names.indexOf(n)] < keep,
          )
          .map((n) => {
            const v = values[names.indexOf(n)];
            return `${JSON.stringify(n)}:${v instanceof RawJson ? v.raw : JSON.stringify(v ?? null)}`;
          })
          .join(',')}}`,
    );
}

test('the zod-free path gives exactly what zod gives', () => {
  fc.assert(
    fc.property(
      fc.oneof(shuffled(recordFields, 0.1), fc.constant('{"id":"a","question":"q","response":"r"}')),
      (line) => {
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
      },
    ),
    { numRuns: 3000 },
  );
});

test('tokens and reward (every RL rollout and evaluation has them): the zod-free path gives exactly what zod gives', () => {
  const line = shuffled(
    {
      id: fc.constant('r1'),
      question: str,
      response: str,
      tokens: tokens.map((raw) => new RawJson(raw)),
      reward: reward.map((raw) => new RawJson(raw)),
      meta: fc.constant({ step: 2 }),
    },
    0,
    0.999,
  );
  let valid = 0;
  fc.assert(
    fc.property(line, (text) => {
      const entry = parseRecordLine(text, 1);
      const zod = RecordSchema.safeParse(JSON.parse(text));
      if (zod.success) {
        valid++;
        assert.ok(entry.record, `${text}: ${entry.problem?.message}`);
        assert.equal(JSON.stringify(entry.record), JSON.stringify(zod.data), 'same value, same key order');
      } else {
        assert.equal(entry.record, undefined, text);
        assert.ok(entry.problem?.message.endsWith(zod.error.issues[0].message), entry.problem?.message);
      }
    }),
    { numRuns: 3000 },
  );
  assert.ok(valid > 300, `${valid} valid records of 3,000: the generator must make valid ones too`);
});

test('records in schema order come back as parsed; others are reordered as zod does', () => {
  const inOrder = parseRecordLine('{"id":"a","question":"q","response":"r","meta":{"stage":"s","x":1},"z":2}', 1)
    .record!;
  assert.deepEqual(Object.keys(inOrder), ['id', 'question', 'response', 'meta', 'z']);
  const mixed = parseRecordLine('{"z":2,"meta":{"x":1,"step":3},"response":"r","question":"q","id":"a"}', 1).record!;
  assert.deepEqual(Object.keys(mixed), ['id', 'question', 'response', 'meta', 'z']);
  assert.deepEqual(Object.keys(mixed.meta!), ['step', 'x']);
  const withProto = parseRecordLine('{"id":"a","question":"q","response":"r","__proto__":{"id":"b"}}', 1).record!;
  assert.deepEqual(Object.keys(withProto), ['id', 'question', 'response']);
  assert.equal(parseRecordLine('{"id":"","question":"q","response":"r"}', 1).problem?.code, 'COA102');
  assert.equal(
    parseRecordLine('{"id":"a","question":"q","response":"r","meta":{"step":1.5}}', 1).problem?.path,
    'meta.step',
  );
});
