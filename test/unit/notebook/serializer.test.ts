// The notebook serializer's pure core: real files in, cells out, and byte-identical saves for unchanged records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import {
  decodeNotebook,
  encodeNotebook,
  notebookToText,
  textToNotebook,
  NotebookContent,
} from '../../../src/extension/providers/notebook/codec';
import { REWARD_MIME, RewardOutput, StepCellMeta, cellMeta } from '../../../src/extension/providers/notebook/cells';
import { importVerlParquet } from '../../../src/core/importers/verl-parquet';
import { importSearchR1Transcripts } from '../../../src/core/importers/search-r1';
import { RecordSchema } from '../../../src/core/record';

const root = join(__dirname, '../../..');
const shared = join(root, 'examples/data');
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');

function roundTrip(text: string): { nb: NotebookContent; out: string } {
  const nb = decodeNotebook(enc(text));
  return { nb, out: dec(encodeNotebook(nb)) };
}

/** Step cells of one record, in order. */
function steps(nb: NotebookContent, record: number) {
  return nb.cells.filter((c) => {
    const m = cellMeta(c.metadata);
    return m?.kind === 'step' && m.record === record;
  });
}

test('examples/trajectories.coa.jsonl: header + step cells, steps concatenate to the response, byte-identical save', () => {
  const text = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8');
  const { nb, out } = roundTrip(text);
  assert.equal(out, text);
  const lines = text.split('\n').filter((l) => l.trim());
  const headers = nb.cells.filter((c) => cellMeta(c.metadata)?.kind === 'header');
  assert.equal(headers.length, lines.length);
  lines.forEach((line, i) => {
    const r = JSON.parse(line);
    assert.equal(
      steps(nb, i)
        .map((c) => c.value)
        .join(''),
      r.response,
      `record ${i}`,
    );
    assert.ok(steps(nb, i).every((c) => c.languageId === 'coa'));
  });
  // The one-search record: think, action, observation, think, answer — and its header names the question.
  const one = lines.findIndex((l) => l.includes('"coa-one-search"'));
  const kinds = steps(nb, one).map((c) => (cellMeta(c.metadata) as StepCellMeta).step);
  assert.deepEqual(kinds, ['think', 'action', 'observation', 'think', 'answer']);
  assert.match(headers[one].value, /coa\\-one\\-search/);
  assert.match(headers[one].value, /\*\*Question:\*\* What American author/);
  assert.match(headers[one].value, /Herman Wouk/);
  // The reward breakdown rides on the last step cell as the custom MIME, computed by the core.
  const last = steps(nb, one).at(-1)!;
  const reward = last.outputs![0].find((o) => o.mime === REWARD_MIME)!.data as RewardOutput;
  assert.equal(reward.id, 'coa-one-search');
  assert.equal(reward.breakdown.scheme, 'em');
  assert.equal(reward.breakdown.em, 1);
  assert.equal(reward.breakdown.tool_calls, 1);
  assert.equal(reward.answer, 'Herman Wouk');
});

test('AutoCoA HotpotQA data converted by the core round-trips byte-identically (with AutoCoA-dialect responses)', async () => {
  const dev = join(shared, 'autocoa/hotpotqa_dev.parquet');
  assert.ok(existsSync(dev), 'examples/data/autocoa must be present');
  const records = await importVerlParquet(dev);
  assert.equal(records.length, 400);
  // Give every other record an AutoCoA-style response (search inside <think>, \boxed{} answer, pre-filled <think>).
  const lines = records.map((r, i) => {
    if (i % 2) return JSON.stringify(r);
    const g = r.golden_answers?.[0] ?? '';
    const response = `Let me look this up.\n<begin_search> ${r.question.slice(0, 40)} </end_search>\n<search_result>\nDoc 1: … ${g} …\n</search_result>\nSo the answer is ${g}.</think>\n\n\\boxed{${i % 4 ? g : 'wrong'}}`;
    return JSON.stringify({ ...r, response, dialect: 'autocoa' });
  });
  const text = lines.join('\n') + '\n';
  const { nb, out } = roundTrip(text);
  assert.equal(out, text);
  const kinds = steps(nb, 0).map((c) => (cellMeta(c.metadata) as StepCellMeta).step);
  assert.deepEqual(kinds, ['think', 'action', 'observation', 'think', 'answer']);
  assert.equal(
    steps(nb, 0)
      .map((c) => c.value)
      .join(''),
    JSON.parse(lines[0]).response,
  );
  const rewardOf = (i: number) => (steps(nb, i).at(-1)!.outputs![0][0].data as RewardOutput).breakdown;
  assert.equal(rewardOf(0).total, 0); // boxed 'wrong'
  assert.equal(rewardOf(2).total, 1);
  assert.equal(rewardOf(2).tool_calls, 1);
});

test('Search-R1 transcripts converted by the core round-trip and split into steps', () => {
  const records = importSearchR1Transcripts(readFileSync(join(root, 'examples/search-r1-transcripts.txt'), 'utf8'));
  assert.ok(records.length >= 2);
  const text = records.map((r) => JSON.stringify(r)).join('\n') + '\n';
  const { nb, out } = roundTrip(text);
  assert.equal(out, text);
  records.forEach((r, i) =>
    assert.equal(
      steps(nb, i)
        .map((c) => c.value)
        .join(''),
      r.response,
    ),
  );
  const kinds = new Set(steps(nb, 0).map((c) => (cellMeta(c.metadata) as StepCellMeta).step));
  for (const k of ['think', 'action', 'observation', 'answer']) assert.ok(kinds.has(k as never), `no ${k} cell`);
});

test('bad lines become error cells and everything is written back verbatim (CRLF, blank lines, BOM, no final newline)', () => {
  const good = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n')[0];
  const text = [
    '\uFEFF' + good, // BOM: skipped by the core, so line 1 is a record; written back with its BOM
    '',
    '{"id": "x", "question": "q", "response": 5}', // schema error
    '   ',
    '{"id": "broken", ',
    good.replace('"coa-direct"', '"crlf"') + '\r',
    good.replace('"coa-direct"', '"last"'),
  ].join('\n');
  const { nb, out } = roundTrip(text);
  assert.equal(out, text);
  const errors = nb.cells.filter((c) => cellMeta(c.metadata)?.kind === 'error');
  assert.equal(errors.length, 2);
  const schema = cellMeta(errors[0].metadata)!;
  assert.equal(schema.line, 3);
  assert.match((schema as { message: string }).message, /line:3:\d+: COA102 response/);
  assert.equal(errors[1].value, '{"id": "broken", ');
  assert.equal(nb.cells.filter((c) => cellMeta(c.metadata)?.kind === 'header').length, 3);
  // Fixing an error cell writes the fixed line.
  errors[1].value = good.replace('"coa-direct"', '"fixed"');
  assert.equal(notebookToText(nb).split('\n')[4], errors[1].value);
  // Editing the BOM record's first step keeps its BOM.
  const first = nb.cells.find((c) => cellMeta(c.metadata)?.kind === 'step')!;
  first.value = `${first.value} (edited)`;
  const line1 = notebookToText(nb).split('\n')[0];
  assert.ok(line1.startsWith('\uFEFF{') && JSON.parse(line1.slice(1)).response.includes('(edited)'));
});

test('an edited step cell rewrites only its record: new response, stale tokens and reward dropped, key order kept', () => {
  const a = {
    id: 'a',
    question: 'Who wrote it?',
    golden_answers: ['Herman Wouk'],
    response:
      '<think>hm</think>\n<search>who wrote it</search>\n<observation>Doc 1 by Someone</observation>\n<answer>Someone</answer>',
    tokens: { ids: [1, 2] },
    reward: {
      scheme: 'em',
      em: 0,
      f1: 0,
      format_ok: true,
      violations: [],
      tool_calls: 1,
      optimal_tool_calls: null,
      r_tool: 1,
      r_correct: 0,
      total: 0,
    },
    meta: { stage: 'rl', step: 3 },
    extra: { keep: true },
  };
  const b = { ...a, id: 'b' };
  const text = `${JSON.stringify(a, null, 0).replace(/,"/g, ', "')}\n${JSON.stringify(b)}\n`;
  const nb = textToNotebook(text);
  const cells = steps(nb, 0);
  const answer = cells.find((c) => (cellMeta(c.metadata) as StepCellMeta).step === 'answer')!;
  assert.equal(answer.value, '<answer>Someone</answer>');
  answer.value = '<answer>Herman Wouk</answer>';
  const [first, second, tail] = notebookToText(nb).split('\n');
  assert.equal(second, JSON.stringify(b), 'the unchanged record is byte-identical');
  assert.equal(tail, '');
  const edited = JSON.parse(first);
  assert.deepEqual(Object.keys(edited), ['id', 'question', 'golden_answers', 'response', 'meta', 'extra']);
  assert.equal(edited.response, a.response.replace('Someone</answer>', 'Herman Wouk</answer>'));
  assert.ok(RecordSchema.safeParse(edited).success);
  // The edited record re-opens with the new answer scored.
  const again = textToNotebook(first);
  const out = again.cells.at(-1)!.outputs![0][0].data as RewardOutput;
  assert.equal(out.breakdown.em, 1);
});

test('deleting a step cell removes it from the response; a cell with only its line endings changed is not an edit', () => {
  const r = { id: 'x', question: 'q', response: '<think>a\r\nb</think>\n<answer>c</answer>' };
  const text = JSON.stringify(r) + '\n';
  const nb = textToNotebook(text);
  const think = steps(nb, 0)[0];
  think.value = think.value.replace(/\r\n/g, '\n');
  assert.equal(notebookToText(nb), text);
  nb.cells.splice(nb.cells.indexOf(think), 1);
  assert.equal(JSON.parse(notebookToText(nb)).response, '<answer>c</answer>');
});

test('invalid UTF-8 and binary files open read-only and refuse to save', () => {
  const bad = decodeNotebook(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a]));
  assert.throws(() => notebookToText(bad), /not valid UTF-8/);
  const bin = decodeNotebook(new Uint8Array([0x7b, 0x00, 0x7d]));
  assert.equal(bin.cells.length, 1);
  assert.throws(() => notebookToText(bin), /binary/);
});

test('property: any text of lines round-trips byte-identically', () => {
  const line = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replace(/[\n\r]/g, ' ')),
    fc
      .record({
        id: fc.string({ minLength: 1, maxLength: 8 }),
        question: fc.string({ maxLength: 20 }),
        response: fc.string({ unit: 'binary', maxLength: 60 }),
      })
      .map((r) => JSON.stringify(r)),
    fc.constantFrom(
      '',
      '  ',
      '{"id":"t","question":"q","response":"<think>x</think><search>q</search><observation>o</observation><answer>a</answer>"}',
    ),
  );
  const file = fc
    .tuple(fc.array(fc.tuple(line, fc.constantFrom('\n', '\r\n')), { maxLength: 8 }), fc.boolean())
    .map(([ls, final]) => {
      const t = ls.map(([l, e]) => l + e).join('');
      return final ? t : t.replace(/\r?\n$/, '');
    });
  fc.assert(
    fc.property(file, (text) => notebookToText(textToNotebook(text)) === text),
    { numRuns: 300 },
  );
});

test('moving the last record (read without a final newline) up gives it a terminator', () => {
  const a = JSON.stringify({ id: 'a', question: 'q', response: '<answer>x</answer>' });
  const b = JSON.stringify({ id: 'b', question: 'q', response: '<answer>y</answer>' });
  const nb = textToNotebook(`${a}\n${b}`);
  const bCells = nb.cells.filter((c) => cellMeta(c.metadata)?.record === 1);
  const rest = nb.cells.filter((c) => cellMeta(c.metadata)?.record !== 1);
  assert.equal(notebookToText({ ...nb, cells: [...bCells, ...rest] }), `${b}\n${a}\n`);
});
