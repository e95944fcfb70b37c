// The scanner finds tags with a char-code scanner and reads the dialect off those tags. Both must agree exactly
// with their definitions: the tag regex below, and detectDialect's own pass over the text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { findTags, scan } from '../../../src/core/scanner';
import { allTags, detectDialect } from '../../../src/core/dialects';

const TAG_RE = /<(\/?)([A-Za-z_][A-Za-z0-9_.:-]{0,63})>|\\boxed\{/g;
const long = 'n'.repeat(63);
const fragment = fc.oneof(
  fc.constantFrom(
    ...allTags(['search', 'calc']),
    '\\boxed{',
    '\\boxed',
    '\\',
    '<',
    '>',
    '</',
    '<<',
    '/',
    '<|im_end|>',
    `<${long}>`,
    `<${long}x>`,
    `<${long}xy>`,
    `</${long}x>`,
    `</${long}xy>`,
    '<a.b:c-1>',
    '<_x>',
    '<1x>',
    '< think>',
    '</ think>',
  ),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
);
const text = fc.oneof(
  fc.array(fragment, { maxLength: 50 }).map((p) => p.join('')),
  fc.string({ unit: 'binary', maxLength: 100 }),
);

test('findTags gives exactly the tag regex matches', () => {
  fc.assert(
    fc.property(text, (t) => {
      assert.deepEqual(
        findTags(t),
        [...t.matchAll(TAG_RE)].map((m) => ({ start: m.index, end: m.index + m[0].length, text: m[0] })),
      );
    }),
    { numRuns: 5000 },
  );
});

test('scan detects the dialect detectDialect names', () => {
  fc.assert(
    fc.property(text, (t) => assert.equal(scan(t).dialect, detectDialect(t))),
    { numRuns: 5000 },
  );
  for (const [t, d] of [
    ['\\boxed{x}', 'autocoa'],
    ['<answer>\\boxed{x}</answer>', 'coa'],
    ['<tool_call>{}</tool_call>\\boxed{1}', 'hermes'],
    ['</information>', 'search-r1'],
  ]) {
    assert.equal(scan(t).dialect, d, t);
  }
});
