// The conversion both `coa convert` and the editor's "Convert to Trajectories…" run (src/core/convert.ts): which
// source a file looks like (the editor offers the conversion from that), and what each source converts to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConvertError, convertInput, guessSource } from '../../../src/core/convert';

const root = join(__dirname, '../../..');
const head = (rel: string) => readFileSync(join(root, rel)).subarray(0, 4096).toString('utf8');

test('guessSource: the real example files of each source, and trajectory files are not offered', () => {
  const cases: [string, string | null][] = [
    ['examples/data/autocoa/hotpotqa_dev.parquet', 'verl-parquet'],
    ['examples/search-r1-transcripts.txt', 'search-r1'],
    ['examples/openai-chats.jsonl', 'openai'],
    ['test/fixtures/verl/rollouts/1.jsonl', 'verl-rollouts'],
    ['examples/trajectories.coa.jsonl', null],
    ['examples/data/search-r1/corpus_example.jsonl', null],
    ['examples/embedded-demo.run.json', null],
  ];
  for (const [file, want] of cases) assert.equal(guessSource(file, head(file)), want, file);
  // A BOM before the first line, as an editor may write it.
  assert.equal(guessSource('x.jsonl', `\uFEFF${head('examples/openai-chats.jsonl')}`), 'openai');
});

test('convertInput: every source gives records, skipped lines are reported FILE:LINE:COL', async () => {
  const lines: string[] = [];
  const log = (l: string) => lines.push(l);
  const parquet = await convertInput('verl-parquet', join(root, 'examples/data/autocoa/hotpotqa_dev.parquet'), { log });
  assert.equal(parquet.records.length, 400);
  assert.ok(
    parquet.records.every((r) => r.response === '' && r.golden_answers?.length),
    'questions with golden answers',
  );
  const sr1 = await convertInput('search-r1', join(root, 'examples/search-r1-transcripts.txt'), { log });
  assert.ok(sr1.records.length > 0 && sr1.records.every((r) => r.dialect === 'search-r1'));
  const chats = await convertInput('openai', join(root, 'examples/openai-chats.jsonl'), { log });
  assert.ok(chats.records.length > 0 && chats.records.every((r) => r.dialect === 'hermes'));
  const verl = await convertInput('verl-rollouts', join(root, 'test/fixtures/verl/rollouts'), { log });
  assert.ok(verl.records.length > 0);
  assert.ok(
    lines.some((l) => l.startsWith('convert: 3 dump file(s)')),
    lines.join('\n'),
  );
  // Not a parquet file: one error naming the file, no records.
  await assert.rejects(
    convertInput('verl-parquet', join(root, 'examples/openai-chats.jsonl')),
    (e: Error) => e instanceof ConvertError && e.message.includes('openai-chats.jsonl'),
  );
  await assert.rejects(convertInput('openai', join(root, 'no-such-file.jsonl')), /no-such-file\.jsonl: no such file/);
});
