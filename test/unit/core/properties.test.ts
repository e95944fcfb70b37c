// Property tests: the scanner and format checker accept any string without throwing, keep every offset in
// bounds, and their segments partition the text; records survive parse → serialize → parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkFormat } from '../../../src/core/rules';
import { DIALECT_NAMES, allTags } from '../../../src/core/dialects';
import { RecordSchema, serializeRecord } from '../../../src/core/record';
import { parseRecordLine } from '../../../src/core/jsonl';

// Strings built from tag fragments hit the interesting paths far more often than uniform text.
const fragment = fc.oneof(
  fc.constantFrom(
    ...allTags(['search', 'calc']),
    '\\boxed{',
    '}',
    '{',
    '<',
    '>',
    '</',
    '<|im_end|>',
    '\n',
    ' ',
    '{"name":"search","arguments":{}}',
  ),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
);
const tagSoup = fc.array(fragment, { maxLength: 40 }).map((parts) => parts.join(''));
const anyText = fc.oneof(tagSoup, fc.string({ unit: 'binary', maxLength: 200 }));
const options = fc.record({
  dialect: fc.constantFrom(...DIALECT_NAMES, 'auto' as const),
  strictness: fc.constantFrom('lenient' as const, 'strict' as const),
  complete: fc.boolean(),
  maxTurns: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
});

test('checkFormat never throws and keeps offsets in bounds', () => {
  fc.assert(
    fc.property(anyText, options, (text, opts) => {
      const r = checkFormat(text, opts);
      let pos = 0;
      for (const s of r.segments) {
        assert.equal(s.start, pos, 'segments are contiguous');
        assert.ok(
          s.start <= s.contentStart && s.contentStart <= s.contentEnd && s.contentEnd <= s.end,
          'content inside segment',
        );
        assert.ok(
          s.end > s.start || (s.kind === 'think' && (s.open !== null || s.close !== null)),
          'non-empty segment',
        );
        pos = s.end;
      }
      assert.equal(pos, text.length, 'segments cover the text');
      for (const d of r.diagnostics)
        assert.ok(d.start >= 0 && d.start <= d.end && d.end <= text.length, `diagnostic ${d.code} in bounds`);
      assert.equal(r.toolCalls, r.segments.filter((s) => s.kind === 'action').length);
      assert.equal(r.formatOk, !r.diagnostics.some((d) => d.severity === 'error'));
    }),
    { numRuns: 3000 },
  );
});

test('a well-formed episode built from parts passes lenient and strict checks', () => {
  const word = fc.stringMatching(/^[a-z]{1,8}$/);
  fc.assert(
    fc.property(fc.array(fc.tuple(word, word, word), { maxLength: 4 }), word, word, (steps, think, answer) => {
      const text =
        steps.map(([t, q, o]) => `<think>${t}</think><search>${q}</search><observation>${o}</observation>`).join('') +
        `<think>${think}</think><answer>${answer}</answer>`;
      for (const strictness of ['lenient', 'strict'] as const) {
        const r = checkFormat(text, { strictness });
        assert.deepEqual(r.diagnostics, [], text);
        assert.equal(r.toolCalls, steps.length);
        assert.equal(r.answer, answer);
      }
    }),
    { numRuns: 500 },
  );
});

test('records survive parse → serialize → parse', () => {
  const rec = fc.record(
    {
      id: fc.string({ minLength: 1, maxLength: 10 }),
      question: fc.string({ unit: 'binary', maxLength: 30 }),
      golden_answers: fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }),
      response: tagSoup,
      extra_key: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: ['id', 'question', 'response'] },
  );
  fc.assert(
    fc.property(rec, (value) => {
      const once = parseRecordLine(JSON.stringify(value), 1);
      assert.ok(once.record, once.problem?.message);
      const line = serializeRecord(once.record);
      const twice = parseRecordLine(line, 1);
      assert.deepEqual(twice.record, once.record);
      assert.equal(serializeRecord(twice.record!), line);
      assert.ok(RecordSchema.safeParse(JSON.parse(line)).success);
    }),
    { numRuns: 500 },
  );
});
