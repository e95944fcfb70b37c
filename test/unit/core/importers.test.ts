// Importers on real data: the AutoCoA parquet datasets, Search-R1 chat transcripts and OpenAI tool-call chats.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { importVerlParquet, extractQuestion, goldenAnswers } from '../../../src/core/importers/verl-parquet';
import { importSearchR1Transcripts } from '../../../src/core/importers/search-r1';
import { conversationToRecord } from '../../../src/core/importers/openai';
import { checkFormat } from '../../../src/core/rules';
import { RecordSchema } from '../../../src/core/record';

const shared = join(__dirname, '../../../examples/data');

test('AutoCoA parquet: one record per row, question without instructions, golden answers kept', async (t) => {
  const dev = join(shared, 'autocoa/hotpotqa_dev.parquet');
  const train = join(shared, 'autocoa/hotpotqa_train.parquet');
  assert.ok(existsSync(dev) && existsSync(train), 'examples/data/autocoa must be present');
  const records = await importVerlParquet(dev);
  assert.equal(records.length, 400);
  const first = records[0];
  assert.equal(first.id, '5a7752645542994aec3b728d');
  assert.equal(
    first.question,
    "What American author born in 1915, and won a Pulitzer Prize for Fiction, wrote the 1965 novel, 'Don't Stop the Carnival'?",
  );
  assert.deepEqual(first.golden_answers, ['Herman Wouk']);
  for (const r of records) {
    assert.ok(RecordSchema.safeParse(r).success);
    assert.ok(!r.question.includes('Web Search Format'), `instructions leaked into ${r.id}`);
    assert.ok(r.question.length > 5 && (r.golden_answers?.length ?? 0) >= 1);
  }
  await t.test('train split', async () => {
    const all = await importVerlParquet(train);
    assert.equal(all.length, 6144);
    assert.equal(new Set(all.map((r) => r.id)).size, all.length, 'ids unique');
  });
});

test('ground truth may be a string, a list or {target: [...]}', () => {
  assert.deepEqual(goldenAnswers('x'), ['x']);
  assert.deepEqual(goldenAnswers(['x', 'y']), ['x', 'y']);
  assert.deepEqual(goldenAnswers({ target: ['z'] }), ['z']);
  assert.deepEqual(goldenAnswers(undefined), []);
  assert.equal(extractQuestion('Answer the given question. ... Question: who wrote X?\n'), 'who wrote X?');
});

const transcript = (q: string, body: string) =>
  `<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nAnswer the given question. You must conduct reasoning inside <think> and </think> first every time you get new information. After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> and it will return the top searched results between <information> and </information>. You can search as many times as your want. If you find no further external knowledge needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. Question: ${q}\n<|im_end|>\n<|im_start|>assistant\n${body}<|im_end|>\n`;

test('Search-R1 transcripts: several per file, the assistant part is the response', () => {
  const a = transcript(
    'who wrote the day after roswell?',
    '<think> I need to search. </think>\n<search> The Day After Roswell author </search>\n\n<information>Doc 1(Title: "The Day After Roswell") by Philip J. Corso\n</information>\n\n<think> It is Corso. </think>\n<answer> Philip J. Corso </answer>',
  );
  const b = transcript('capital of france?', '<think> I know it. </think>\n<answer> Paris </answer>');
  const records = importSearchR1Transcripts(a + b);
  assert.equal(records.length, 2);
  assert.equal(records[0].question, 'who wrote the day after roswell?');
  assert.equal(records[1].question, 'capital of france?');
  const r = checkFormat(records[0].response, { strictness: 'strict' });
  assert.equal(r.dialect, 'search-r1');
  assert.deepEqual(r.diagnostics, []);
  assert.equal(r.toolCalls, 1);
  assert.equal(r.answer, 'Philip J. Corso');
});

test('OpenAI chats with tool_calls become Hermes records', () => {
  const rec = conversationToRecord(
    {
      id: 'c1',
      golden_answers: ['Paris'],
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'capital of france?' },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            { id: 't', type: 'function', function: { name: 'search', arguments: '{"query":"capital of france"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 't', content: 'Paris is the capital.' },
        { role: 'assistant', content: 'Paris' },
      ],
    },
    0,
  );
  assert.equal(rec.question, 'capital of france?');
  assert.equal(rec.dialect, 'hermes');
  const r = checkFormat(rec.response, { dialect: 'hermes' });
  assert.deepEqual(r.diagnostics, []);
  assert.equal(r.answer, 'Paris');
  assert.equal(r.segments.find((s) => s.kind === 'action')?.argument, '{"query":"capital of france"}');
  assert.throws(() => conversationToRecord({ messages: [{ role: 'assistant', content: 'x' }] }, 0), /no user message/);
});
