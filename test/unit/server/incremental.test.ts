// Incremental re-validation must give what a fresh analysis of the edited text gives — duplicate ids included,
// which the service tracks by counting ids as edits take results out and put them back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TrajectoryService } from '../../../src/server/service';
import type { ContentChange } from '../../../src/server/lines';
import { parseRecordLine } from '../../../src/core/jsonl';

/** Lines whose record id occurred on an earlier line, worked out from the text alone. */
function duplicateLines(text: string): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  text.split('\n').forEach((raw, i) => {
    const id = raw.trim() ? parseRecordLine(raw.replace(/\r$/, ''), i + 1).record?.id : undefined;
    if (id === undefined) return;
    if (seen.has(id)) out.push(i);
    seen.add(id);
  });
  return out;
}

const URI = 'file:///w/t.coa.jsonl';
const line = fc.oneof(
  fc
    .constantFrom('a', 'b', 'c', 'd')
    .map((id) => JSON.stringify({ id, question: 'Q?', response: '<think>x</think><answer>y</answer>' })),
  fc.constantFrom(
    '',
    '{"id":',
    '{"id":"a","question":1,"response":""}',
    '{"id":"b","question":"q","response":"<answer>"}',
  ),
);
const doc = fc.array(line, { maxLength: 8 }).map((ls) => ls.join('\n'));

/** A random LSP change inside a document of `lines` lines (ranges may span lines and end past the end). */
const change = fc.record({
  sL: fc.nat(9),
  sC: fc.nat(30),
  span: fc.nat(3),
  eC: fc.nat(30),
  text: fc.oneof(
    line,
    line.map((l) => `${l}\n`),
    fc.constantFrom('', '\n', 'a', '"', 'b"'),
  ),
});

test('edits re-validated incrementally equal a fresh analysis', () => {
  fc.assert(
    fc.property(doc, fc.array(change, { minLength: 1, maxLength: 8 }), (text, edits) => {
      const s = new TrajectoryService();
      s.open(URI, 'coa-jsonl', 1, text);
      s.diagnose(URI);
      let v = 2;
      for (const e of edits) {
        const c: ContentChange = {
          range: { start: { line: e.sL, character: e.sC }, end: { line: e.sL + e.span, character: e.eC } },
          text: e.text,
        };
        s.change(URI, v++, [c]);
        const fresh = new TrajectoryService();
        fresh.open(URI, 'coa-jsonl', 1, s.text(URI)!);
        const got = s.diagnose(URI);
        assert.deepEqual(got, fresh.diagnose(URI), JSON.stringify(s.text(URI)));
        assert.deepEqual(
          got.filter((d) => d.code === 'COA103').map((d) => d.range.start.line),
          duplicateLines(s.text(URI)!),
        );
      }
    }),
    { numRuns: 400 },
  );
});
