// `coa data prepare` / `coa data check` as the trainer runs them: the built CLI in a child process.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const dir = mkdtempSync(join(tmpdir(), 'coa-data-cli-'));
const coa = (...args: string[]) => {
  const r = spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const lines = (p: string) =>
  readFileSync(p, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

before(() => {
  const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
  assert.equal(b.status, 0, b.stderr);
});

test('prepare questions: the AutoCoA parquet as contract records, summary on stderr', () => {
  const out = join(dir, 'q.jsonl');
  const r = coa('data', 'prepare', 'questions', 'examples/data/autocoa/hotpotqa_dev.parquet', '--out', out);
  assert.equal(r.code, 0, r.err);
  const qs = lines(out);
  assert.equal(qs.length, 400);
  for (const q of qs) assert.deepEqual(Object.keys(q), ['id', 'question', 'golden_answers', 'data_source', 'origin']);
  assert.deepEqual(qs[1].origin, { file: 'examples/data/autocoa/hotpotqa_dev.parquet', line: 2 });
  assert.deepEqual(JSON.parse(r.err.trim()), {
    kind: 'questions',
    out,
    records: 400,
    data_sources: { HotpotQA: 400 },
    ids: { exact_duplicates_dropped: 0, ids_qualified: 0, rows_renamed: 0, examples: [] },
  });
});

test("AutoCoA's test parquet (ids repeated across source files): prepare and convert give the same unique ids and say so; --strict-ids refuses", () => {
  const parquet = 'examples/data/autocoa/all_test.parquet';
  const out = join(dir, 'all-test.jsonl');
  const r = coa('data', 'prepare', 'questions', parquet, '--out', out);
  assert.equal(r.code, 0, r.err);
  const qs = lines(out);
  assert.equal(qs.length, 2935);
  assert.equal(new Set(qs.map((q) => q.id)).size, 2935);
  assert.match(
    r.err,
    /all_test\.parquet: ids: 1 exact repeat row\(s\) dropped; 343 id\(s\) repeated: the first row keeps each, 369 later row\(s\) qualified, the original in meta.source_id \(dev_4558 → /,
  );
  assert.equal(qs.filter((q) => q.id === 'dev_4558').length, 1, 'the first row of a repeated id keeps it');
  assert.ok(qs.some((q) => q.meta?.source_id === 'dev_4558' && q.id !== 'dev_4558'));
  const converted = join(dir, 'all-test.coa.jsonl');
  const c = coa('convert', '--from', 'verl-parquet', parquet, '-o', converted);
  assert.equal(c.code, 0, c.err);
  assert.match(c.err, /ids: 1 exact repeat row\(s\) dropped; 343 id\(s\)/);
  assert.deepEqual(
    lines(converted).map((x) => x.id),
    qs.map((q) => q.id),
  );
  const v = coa('validate', converted);
  assert.doesNotMatch(v.out + v.err, /COA103/, 'no duplicate ids left for validate to report');

  const strictOut = join(dir, 'strict.jsonl');
  const s = coa('data', 'prepare', 'questions', parquet, '--out', strictOut, '--strict-ids');
  assert.equal(s.code, 2);
  assert.match(s.err, /all_test\.parquet:666:1: error: id: duplicate id "dev_265" \(first on line 493;/);
  assert.equal(existsSync(strictOut), false);
  assert.equal(coa('convert', '--from', 'verl-parquet', parquet, '-o', strictOut, '--strict-ids').code, 2);
});

test('prepare sft and pairs: contract fields, --report, code-point offsets', () => {
  const src = join(dir, 'astral.coa.jsonl');
  const response =
    '<think>🦈 search</think><search>jaws</search><observation>Benchley 📚</observation><answer>Peter Benchley</answer>';
  writeFileSync(
    src,
    [
      { id: 'a', question: 'who wrote jaws?', golden_answers: ['Peter Benchley'], response },
      {
        id: 'b',
        question: 'who wrote jaws?',
        golden_answers: ['Peter Benchley'],
        response: '<think>🦈</think><answer>Spielberg</answer>',
      },
    ]
      .map((o) => JSON.stringify(o))
      .join('\n'),
  );
  const sft = join(dir, 'sft.jsonl');
  const r = coa('data', 'prepare', 'sft', src, '--out', sft);
  assert.equal(r.code, 0, r.err);
  const [a] = lines(sft);
  assert.deepEqual(Object.keys(a), [
    'id',
    'question',
    'golden_answers',
    'dialect',
    'prompt',
    'response',
    'segments',
    'tool_calls',
    'reward',
    'correct',
    'format_ok',
    'origin',
  ]);
  const obs = a.segments.find((s: { kind: string }) => s.kind === 'observation');
  assert.equal(Array.from(response).slice(obs.start, obs.end).join(''), '<observation>Benchley 📚</observation>');
  assert.equal(a.segments.at(-1).end, Array.from(response).length);
  const pairs = join(dir, 'pairs.jsonl');
  const report = join(dir, 'report.json');
  const p = coa('data', 'prepare', 'pairs', sft, '--out', pairs, '--report', report);
  assert.equal(p.code, 0, p.err);
  const [pair] = lines(pairs);
  assert.deepEqual([pair.chosen.id, pair.rejected.id, pair.kind], ['a', 'b', 'tool-vs-notool']);
  assert.deepEqual(Object.keys(pair), [
    'id',
    'question',
    'golden_answers',
    'prompt',
    'kind',
    'act',
    'chosen',
    'rejected',
  ]);
  assert.deepEqual(Object.keys(pair.chosen), [
    'id',
    'dialect',
    'response',
    'segments',
    'tool_calls',
    'correct',
    'origin',
  ]);
  assert.deepEqual(pair.chosen.segments, a.segments, 'pairs carry the prepared segments unchanged');
  assert.deepEqual(JSON.parse(readFileSync(report, 'utf8')).by_kind, {
    'tool-vs-notool': 1,
    'tool-vs-tool': 0,
    'notool-vs-tool': 0,
    'notool-vs-notool': 0,
  });
});

test('bad data: one FILE:LINE:COL: error: FIELD line, exit 2, nothing written', () => {
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(
    bad,
    '{"id": "1", "question": "q?", "golden_answers": ["a"]}\n{"id": "2", "question": "q2", "golden_answers": [3]}\n',
  );
  for (const i of [1, 2]) {
    const out = join(dir, `bad-out-${i}.jsonl`);
    const r = coa('data', 'prepare', 'questions', bad, '--out', out);
    assert.equal(r.code, 2);
    assert.equal(r.err, `${bad}:2:50: error: golden_answers.0: number, expected a string\n`);
    assert.ok(!existsSync(out));
  }
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('.tmp-')),
    [],
    'no temporary file left',
  );
  const parquet = coa(
    'data',
    'prepare',
    'questions',
    'test/fixtures/data/bad-truth-type.parquet',
    '--out',
    join(dir, 'x.jsonl'),
  );
  assert.equal(parquet.code, 2);
  assert.match(
    parquet.err,
    /^test\/fixtures\/data\/bad-truth-type\.parquet:1:1: error: reward_model\.ground_truth: expected a string or a list of strings, got number\n$/,
  );
  const usage = coa('data', 'prepare', 'questions', bad);
  assert.equal(usage.code, 2);
  assert.match(usage.err, /^coa: data prepare questions: give the output file/);
});

test('check: counts per file, exit 2 with the error naming the file', () => {
  const cfg = join(dir, 'run.json');
  writeFileSync(
    cfg,
    JSON.stringify({
      data: {
        questions: { train: join(root, 'examples/data/autocoa/hotpotqa_train.parquet') },
        corpus: join(root, 'examples/data/search-r1/corpus_example.jsonl'),
      },
    }),
  );
  const ok = coa('data', 'check', cfg, '--json');
  assert.equal(ok.code, 0, ok.err);
  assert.deepEqual(
    JSON.parse(ok.out).files.map((f: { key: string; count: number }) => [f.key, f.count]),
    [
      ['data.questions.train', 6144],
      ['data.corpus', 10],
    ],
  );
  // questions but no SFT data: "ok" for RL, and a warning that the SFT stages have nothing to train on
  assert.match(JSON.parse(ok.out).warnings.join('\n'), /^no SFT data \(data\.sft and data\.sft1_pairs are empty\)/);
  const text = coa('data', 'check', cfg);
  assert.match(text.out, /\nwarning: no SFT data .*\ndata check: ok, 1 warning\(s\)\n$/);
  // SFT trajectories from which no pair can be built (every answer right): SFT-1 would train on nothing
  const right = join(dir, 'all-right.coa.jsonl');
  writeFileSync(
    right,
    `${JSON.stringify({ id: 'a', question: 'who wrote jaws?', golden_answers: ['Peter Benchley'], response: '<think>x</think><answer>Peter Benchley</answer>' })}\n`,
  );
  writeFileSync(cfg, JSON.stringify({ data: { sft: [right] } }));
  const noPairs = coa('data', 'check', cfg);
  assert.equal(noPairs.code, 0, noPairs.err);
  assert.match(
    noPairs.out,
    /warning: SFT-1 pairs built from data\.sft: 0 — no question has both a correct and a wrong trajectory/,
  );
  const corpus = join(dir, 'corpus.jsonl');
  writeFileSync(corpus, '{"id": "0", "contents": "x"}\n{"id": "1", "content": "x"}\n');
  writeFileSync(cfg, JSON.stringify({ data: { corpus: 'corpus.jsonl' } }));
  const bad = coa('data', 'check', cfg);
  assert.equal(bad.code, 2);
  assert.equal(bad.err, `${corpus}:2:1: error: contents: must be a string\n`);
});
