// lineGeometry finds the `id` and `response` values by skipping JSON values instead of building a jsonc tree:
// it must place them exactly where jsonc's tree does, on any valid JSON line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import { lineGeometry } from '../../../src/server/positions';
import { mapLiteral } from '../../../src/core/jsonstring';

/** Keys written with escapes that decode to `response` and `id`. */
const RAW_KEYS = ['respons\\u0065', 'i\\u0064'];
const key = fc.oneof(fc.constantFrom('id', 'response', 'question', 'x', ...RAW_KEYS), fc.string({ maxLength: 4 }));
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('a\\"b', '\\\\', '"', '}{][', 'x\\\\"'),
);
/** Object text with possibly repeated and escaped keys and random whitespace (JSON.stringify cannot write those). */
const line = fc
  .tuple(
    fc.array(fc.tuple(key, value, fc.constantFrom('', ' ', '\t', ' \r\n ')), { maxLength: 6 }),
    fc.constantFrom('', ' '),
  )
  .map(
    ([props, pad]) =>
      `${pad}{${props.map(([k, v, ws]) => `${ws}${RAW_KEYS.includes(k) ? `"${k}"` : JSON.stringify(k)}${ws}:${ws}${JSON.stringify(v)}${ws}`).join(',')}}${pad}`,
  );

function byTree(raw: string) {
  const root = parseTree(raw);
  const node = root && findNodeAtLocation(root, ['response']);
  if (!root || !node || node.type !== 'string') return null;
  const idNode = findNodeAtLocation(root, ['id']);
  return {
    literalStart: node.offset,
    id: idNode ? { start: idNode.offset, end: idNode.offset + idNode.length } : null,
    map: mapLiteral(raw, node.offset),
  };
}

test('lineGeometry places id and response where the jsonc tree does', () => {
  fc.assert(
    fc.property(line, (raw) => {
      JSON.parse(raw); // the generator writes valid JSON only
      const got = lineGeometry(raw);
      const want = byTree(raw);
      if (!want) return assert.equal(got, null, raw);
      assert.ok(got, raw);
      assert.equal(got.literalStart, want.literalStart, raw);
      assert.deepEqual(got.id, want.id, raw);
      for (let i = 0; i <= 24; i++) assert.equal(got.toRaw(i), want.map.toRaw(i));
    }),
    { numRuns: 3000 },
  );
});

test('lineGeometry on a record line', () => {
  const raw = '{"id":"r1","response":"a\\nb<answer>x</answer>","id":"dup"}';
  const g = lineGeometry(raw)!;
  assert.deepEqual(g.id, { start: 6, end: 10 }); // the first "id", as jsonc finds it
  assert.equal(g.literalStart, 22);
  assert.equal(g.toRaw(2), 26); // "b", after the two-character escape
  assert.equal(lineGeometry('{"id":"r1","response":3}'), null);
  assert.equal(lineGeometry('[1,2]'), null);
});
