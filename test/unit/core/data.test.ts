// Users' data through the core: question sets, SFT trajectories, SFT-1 pairs, the run-config check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { loadQuestions } from '../../../src/core/data/questions';
import { emptyIdReport, idSummary } from '../../../src/core/data/ids';
import { importVerlParquet } from '../../../src/core/importers/verl-parquet';
import { loadSft, prepareTrajectory, emptySftSummary } from '../../../src/core/data/sft';
import { buildPairs, emptyPairReport, readPairInputs } from '../../../src/core/data/pairs';
import { checkRunConfig } from '../../../src/core/data/check';
import { modelDirProblem } from '../../../src/core/data/model';
import { codePointIndexer } from '../../../src/core/data/codepoints';
import { DataError } from '../../../src/core/data/errors';
import { RunConfigSchema } from '../../../src/core/config';
import { scan } from '../../../src/core/scanner';
import { scoreRecords } from '../../../src/core/rewards';

const root = join(__dirname, '../../..');
const examples = join(root, 'examples/data');
const fixtures = join(root, 'test/fixtures/data');
const dir = mkdtempSync(join(tmpdir(), 'coa-data-'));
let n = 0;
const file = (lines: (string | object)[], ext = '.jsonl') => {
  const p = join(dir, `f${n++}${ext}`);
  writeFileSync(p, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return p;
};

/** The DataError `fn` throws, checked against FILE:LINE:COL: error: FIELD: … */
async function dataError(
  fn: () => Promise<unknown>,
  file: string,
  line: number,
  field: string,
  message?: RegExp,
): Promise<DataError> {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof DataError, `expected a DataError, got ${(e as Error).stack}`);
    assert.equal(e.file, file);
    assert.equal(e.line, line);
    assert.equal(e.field, field);
    assert.match(
      e.message,
      new RegExp(
        `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${line}:\\d+: error: ${field.replace(/\./g, '\\.')}: .+`,
      ),
    );
    if (message) assert.match(e.detail, message);
    return e;
  }
  assert.fail('no error thrown');
}

test('the embedded default has no data section', () => {
  assert.equal(RunConfigSchema.parse({}).data, null);
  const d = RunConfigSchema.parse({ data: { questions: { train: 'a.parquet' } } }).data!;
  assert.deepEqual(d, {
    questions: { train: 'a.parquet', dev: null, test: null },
    sft: [],
    sft1_pairs: null,
    corpus: null,
    sft_filter: { dialect: 'run', format_ok: true, correct: true },
    strict_ids: false,
  });
});

test('AutoCoA parquet questions: every row, question out of the instructions, origin = row + 1', async () => {
  const train = join(examples, 'autocoa/hotpotqa_train.parquet');
  const qs = await loadQuestions(train);
  assert.equal(qs.length, 6144);
  assert.deepEqual(qs[0], {
    id: '5a800da55542992e7d278df4',
    question: 'Who is an English author, known for her award-winning novel "Chocolat", Joanne Harris or Alice Walker ?',
    golden_answers: ['Joanne Michèle Sylvie Harris'],
    data_source: 'HotpotQA',
    origin: { file: train, line: 1 },
  });
  assert.equal(qs[6143].origin.line, 6144);
  assert.equal(new Set(qs.map((q) => q.id)).size, 6144);
  for (const q of qs)
    assert.ok(q.question && !q.question.includes('Web Search Format') && q.golden_answers.length >= 1);
  assert.equal((await loadQuestions(join(examples, 'autocoa/hotpotqa_dev.parquet'))).length, 400);
});

test('ground truth as a list or Search-R1 {target: [...]}; ids fall back to data_source-index', async () => {
  const sr = await loadQuestions(join(fixtures, 'search-r1-target.parquet'));
  assert.deepEqual(
    sr.map((q) => [q.id, q.question, q.golden_answers, q.data_source]),
    [
      ['nq-0', 'who wrote jaws?', ['Peter Benchley', 'Benchley'], 'nq'],
      ['nq-1', 'capital of france?', ['Paris'], 'nq'],
    ],
  );
  const [l] = await loadQuestions(join(fixtures, 'list-truth.parquet'));
  assert.deepEqual([l.id, l.golden_answers], ['hotpotqa-7', ['Steven Spielberg', 'Spielberg']]);
});

test('bad parquet: missing column, empty question, golden answers of the wrong type', async () => {
  const f = (name: string) => join(fixtures, name);
  await dataError(
    () => loadQuestions(f('bad-no-reward.parquet')),
    f('bad-no-reward.parquet'),
    1,
    'reward_model',
    /missing column/,
  );
  await dataError(
    () => loadQuestions(f('bad-empty-question.parquet')),
    f('bad-empty-question.parquet'),
    2,
    'prompt',
    /empty question/,
  );
  await dataError(
    () => loadQuestions(f('bad-truth-type.parquet')),
    f('bad-truth-type.parquet'),
    1,
    'reward_model.ground_truth',
    /got number/,
  );
  const notParquet = file(['{"question": "q"}'], '.parquet');
  await dataError(() => loadQuestions(notParquet), notParquet, 1, 'file', /not a readable parquet/);
});

test('FlashRAG / *.coa.jsonl questions: ids, golden answers, verl rows as JSONL', async () => {
  const p = file([
    { id: 'train_0', question: ' who wrote jaws? ', golden_answers: ['Peter Benchley'], metadata: {} },
    '',
    { id: 7, question: 'capital of france?', golden_answers: 'Paris', data_source: 'nq' },
    { question: 'no id?', golden_answers: ['x'] },
    {
      data_source: 'hotpotqa',
      prompt: [{ role: 'user', content: 'Question: verl row?' }],
      reward_model: { ground_truth: ['a', 'b'] },
      extra_info: { index: 3 },
    },
    {
      id: 'nq-9',
      question: 'search-r1 row?',
      prompt: [{ role: 'user', content: 'Answer … Question: search-r1 row?' }],
      reward_model: { ground_truth: { target: ['c'] } },
    },
  ]);
  const qs = await loadQuestions(p);
  assert.deepEqual(
    qs.map((q) => [q.id, q.question, q.golden_answers, q.data_source, q.origin.line]),
    [
      ['train_0', 'who wrote jaws?', ['Peter Benchley'], null, 1],
      ['7', 'capital of france?', ['Paris'], 'nq', 3],
      [`f${n - 1}-4`, 'no id?', ['x'], null, 4],
      ['hotpotqa-3', 'verl row?', ['a', 'b'], 'hotpotqa', 5],
      ['nq-9', 'search-r1 row?', ['c'], null, 6],
    ],
  );
});

test('bad JSONL questions: one error naming file, line, column and field', async () => {
  const ok = { id: 'a', question: 'q?', golden_answers: ['x'] };
  const cases: [object | string, string, RegExp][] = [
    [{ id: 'b', golden_answers: ['x'] }, 'question', /missing/],
    [{ id: 'b', question: '  ', golden_answers: ['x'] }, 'question', /empty question/],
    [{ id: 'b', question: 3, golden_answers: ['x'] }, 'question', /expected a string, got number/],
    [{ id: 'b', question: 'q' }, 'golden_answers', /missing/],
    [{ id: 'b', question: 'q', answer: 'x' }, 'golden_answers', /missing .*found "answer"/],
    [{ id: 'b', question: 'q', golden_answers: 42 }, 'golden_answers', /got number/],
    [{ id: 'b', question: 'q', golden_answers: ['x', 1] }, 'golden_answers.1', /number, expected a string/],
    [{ id: 'b', question: 'q', golden_answers: [] }, 'golden_answers', /empty list/],
    ['{"id": "b", "question": ', 'record', /not valid JSON/],
    ['[1, 2]', 'record', /expected a JSON object, got a list/],
  ];
  for (const [bad, field, message] of cases) {
    const p = file([ok, bad]);
    const e = await dataError(() => loadQuestions(p), p, 2, field, message);
    if (field === 'golden_answers' && typeof bad === 'object' && 'golden_answers' in bad) {
      const raw = JSON.stringify(bad);
      assert.equal(
        raw.slice(
          e.column - 1,
          e.column - 1 + JSON.stringify((bad as { golden_answers: unknown }).golden_answers).length,
        ),
        JSON.stringify((bad as { golden_answers: unknown }).golden_answers),
        'the column points at the field',
      );
    }
  }
});

test('repeated ids: exact repeats dropped, the first row keeps its id, later ones qualified with the original in meta.source_id, the same in every importer; --strict-ids refuses', async () => {
  const ok = { id: 'a', question: 'q?', golden_answers: ['x'] };
  // JSONL: an exact repeat is dropped; the same id on another question (no source named) is qualified by line.
  const p = file([ok, ok, { ...ok, question: 'other?' }, { id: 'b', question: 'q?', golden_answers: ['x'] }]);
  const ids = emptyIdReport();
  const qs = await loadQuestions(p, { ids });
  assert.deepEqual(
    qs.map((q) => [q.id, q.question, q.origin.line, q.meta?.source_id]),
    [
      ['a', 'q?', 1, undefined],
      ['a@3', 'other?', 3, 'a'],
      ['b', 'q?', 4, undefined],
    ],
  );
  assert.deepEqual(ids, { exact_duplicates_dropped: 1, ids_qualified: 1, rows_renamed: 1, examples: [['a', 'a@3']] });
  await dataError(
    () => loadQuestions(p, { strictIds: true }),
    p,
    2,
    'id',
    /duplicate id "a" \(first on line 1; without --strict-ids/,
  );

  // AutoCoA's published test set: 2,936 rows from seven source files, every data_source "HotpotQA".
  const parquet = join(examples, 'autocoa/all_test.parquet');
  const rows = (await parquetReadObjects({
    file: await asyncBufferFromFile(parquet),
    columns: ['id', 'source_file'],
  })) as { id: string; source_file: string }[];
  const report = emptyIdReport();
  const all = await loadQuestions(parquet, { ids: report });
  assert.equal(all.length, 2935);
  assert.equal(new Set(all.map((q) => q.id)).size, 2935);
  assert.deepEqual(
    { ...report, examples: [] },
    { exact_duplicates_dropped: 1, ids_qualified: 343, rows_renamed: 712 - 343, examples: [] },
  );
  assert.deepEqual(
    all.filter((q) => q.id === 'dev_0' || q.id.endsWith('/dev_0')).map((q) => [q.id, q.meta?.source_id]),
    [
      ['dev_0', undefined],
      ['TriviaQA_dev/dev_0', 'dev_0'],
    ],
  );
  assert.match(
    idSummary(report) ?? '',
    /^ids: 1 exact repeat row\(s\) dropped; 343 id\(s\) repeated: the first row keeps each, 369 later row\(s\) qualified, the original in meta.source_id/,
  );
  // results join back to the file's rows: every id of the file names exactly one record (its first row's), and each
  // record's row (origin.line) has the record's original id
  const distinct = new Set(rows.map((r) => r.id));
  const kept = all.filter((q) => q.meta?.source_id === undefined);
  assert.equal(kept.length, distinct.size);
  for (const q of kept)
    assert.equal(rows.findIndex((r) => r.id === q.id) + 1, q.origin.line, `${q.id}: the first row of its id`);
  for (const q of all) assert.equal(rows[q.origin.line - 1].id, q.meta?.source_id ?? q.id);
  // coa convert's importer gives the same ids, in the same order, and joins on (original id, source file)
  const converted = await importVerlParquet(parquet);
  assert.deepEqual(
    converted.map((r) => r.id),
    all.map((q) => q.id),
  );
  assert.deepEqual(
    converted.map((r) => (r.meta as { source_id?: string }).source_id),
    all.map((q) => q.meta?.source_id),
  );
  assert.equal((converted[0].meta as { source_file?: string }).source_file, '2WIKI_dev.json');
  const key = (id: string, source: string) => JSON.stringify([id, source]);
  const rowKeys = new Map<string, number>();
  for (const r of rows) rowKeys.set(key(r.id, r.source_file), (rowKeys.get(key(r.id, r.source_file)) ?? 0) + 1);
  for (const r of converted) {
    const meta = r.meta as { source_id?: string; source_file: string };
    assert.ok(rowKeys.has(key(meta.source_id ?? r.id, meta.source_file)), `${r.id} joins back`);
  }
  assert.equal([...rowKeys.values()].filter((n) => n > 1).length, 1, 'only the exact repeat shares (id, source file)');
  await dataError(
    () => loadQuestions(parquet, { strictIds: true }),
    parquet,
    666,
    'id',
    /duplicate id "dev_265" \(first on line 493;/,
  );
});

test('code points: offsets count an astral character once, as Python does', () => {
  const text = 'a😀b\u{1F600}c';
  const cp = codePointIndexer(text);
  assert.deepEqual([0, 1, 3, 4, 6, 7].map(cp), [0, 1, 2, 3, 4, 5]);
  assert.equal(codePointIndexer('plain')(3), 3);
  // A lone surrogate is one code point in both languages (Python keeps it as one character).
  const lone = codePointIndexer('x\uD800y');
  assert.deepEqual([0, 1, 2, 3].map(lone), [0, 1, 2, 3]);
});

test('SFT: segments in code points cover the response and match the scanner', () => {
  const response =
    '<think>😀 I need 𝔁 to search.</think>\n<search>jaws 🦈 author</search>\n<observation>Doc 1 🦈 Benchley</observation>\n<answer>Peter Benchley</answer>';
  const { sft, formatOk } = prepareTrajectory(
    { id: 'r', question: 'who wrote jaws?', golden_answers: ['Peter Benchley'], response },
    'auto',
    { file: 'x', line: 1 },
  );
  assert.ok(formatOk);
  const chars = Array.from(response); // code points, as a Python str indexes them
  const utf16 = scan(response).segments;
  assert.equal(sft.segments.length, utf16.length);
  sft.segments.forEach((s, i) => {
    assert.equal(chars.slice(s.start, s.end).join(''), response.slice(utf16[i].start, utf16[i].end));
    assert.equal(s.kind, utf16[i].kind);
    assert.equal(s.start, i === 0 ? 0 : sft.segments[i - 1].end, 'contiguous');
  });
  assert.equal(sft.segments[sft.segments.length - 1].end, chars.length);
  assert.ok(chars.length < response.length, 'the test text has astral characters');
  assert.deepEqual(
    sft.segments.map((s) => s.kind).filter((k) => k !== 'text'),
    ['think', 'action', 'observation', 'answer'],
  );
  assert.equal(sft.tool_calls, 1);
  assert.equal(sft.correct, true);
  assert.equal(sft.dialect, 'coa');
});

test('SFT on the example trajectories: correctness is the core reward, counts add up', async () => {
  const path = join(root, 'examples/trajectories.coa.jsonl');
  const summary = emptySftSummary();
  const recs = await loadSft(path, 'auto', summary);
  assert.equal(recs.length, 12);
  assert.equal(summary.records, 12);
  assert.equal(summary.with_tools + summary.tool_free, 12);
  for (const r of recs) {
    const [score] = scoreRecords(
      [{ id: r.id, question: r.question, golden_answers: r.golden_answers, response: r.response, dialect: r.dialect }],
      'em',
    );
    assert.equal(r.correct, score.total === 1);
    assert.equal(r.segments[0].start, 0);
    assert.equal(r.segments[r.segments.length - 1].end, Array.from(r.response).length);
  }
  assert.equal(summary.correct, recs.filter((r) => r.correct).length);
});

test('SFT: bad trajectories name line and field; --dialect applies to records without one', async () => {
  const p = file([
    { id: 'a', question: 'q', response: '<answer>x</answer>' },
    { id: 'b', question: 'q' },
  ]);
  await dataError(() => loadSft(p), p, 2, 'response');
  const e = file([{ id: 'a', question: 'q', response: '   ' }]);
  await dataError(() => loadSft(e), e, 1, 'response', /empty response/);
  const g = file([{ id: 'a', question: 'q', golden_answers: 'x', response: '<answer>x</answer>' }]);
  await dataError(() => loadSft(g), g, 1, 'golden_answers');
  const d = file([
    {
      id: 'a',
      question: 'q',
      response: '<think>x</think><search>y</search><information>z</information><answer>w</answer>',
    },
    { id: 'b', question: 'q', dialect: 'coa', response: '<answer>w</answer>' },
  ]);
  const recs = await loadSft(d, 'search-r1');
  assert.deepEqual(
    recs.map((r) => r.dialect),
    ['search-r1', 'coa'],
  );
  assert.equal(recs[0].correct, null, 'no golden answers: ungraded');
  const chat = await loadSft(join(root, 'examples/openai-chats.jsonl'));
  assert.ok(chat.length === 2 && chat.every((r) => r.dialect === 'hermes'));
});

const traj = (id: string, q: string, response: string) => ({ id, question: q, golden_answers: ['Paris'], response });
const S = '<think>t</think><search>q</search><observation>o</observation>';

test('pairs: correct vs incorrect per question; fewer tool calls chosen; counts by kind', async () => {
  const p = file([
    traj('a-search2', 'capital of france?', `${S}${S}<answer>Paris</answer>`),
    traj('a-search1', 'capital of france?', `${S}<answer>Paris</answer>`),
    traj('a-direct', 'capital of france?', '<think>I know</think><answer>Paris</answer>'),
    traj('a-wrong-search', 'capital of france?', `${S}<answer>Lyon</answer>`),
    traj('b-search', 'where is the louvre?', `${S}<answer>Paris</answer>`),
    traj('b-guess', 'where is the louvre?', '<think>guess</think><answer>London</answer>'),
    traj('b-wrong-search', 'where is the louvre?', `${S}<answer>Rome</answer>`),
    traj('c-wrong', 'only wrong?', '<answer>x</answer>'),
    traj('d-right', 'only right?', '<answer>Paris</answer>'),
    { id: 'e', question: 'ungraded?', response: '<answer>x</answer>' },
  ]);
  const recs = await loadSft(p);
  const report = emptyPairReport();
  const pairs = buildPairs(recs, 1, report);
  assert.deepEqual(
    pairs.map((x) => [x.chosen.id, x.rejected.id, x.kind, x.act]),
    [
      ['a-direct', 'a-wrong-search', 'notool-vs-tool', false],
      ['b-search', 'b-guess', 'tool-vs-notool', true],
    ],
  );
  assert.equal(report.pairs, 2);
  assert.deepEqual(report.by_kind, {
    'tool-vs-notool': 1,
    'tool-vs-tool': 0,
    'notool-vs-tool': 1,
    'notool-vs-notool': 0,
  });
  assert.deepEqual(report.skipped_questions, { no_golden: 1, no_correct: 1, no_incorrect: 1 });
  assert.equal(report.questions, 5);
  // Up to N pairs per question, each trajectory used once.
  const more = buildPairs(recs, 3);
  assert.deepEqual(
    more.filter((x) => x.question === 'where is the louvre?').map((x) => [x.chosen.id, x.rejected.id]),
    [['b-search', 'b-guess']],
  );
  assert.equal(more.filter((x) => x.question === 'capital of france?').length, 1);
  assert.equal(pairs[0].chosen.segments.at(-1)!.kind, 'answer');
});

test('pairs input: TRL-style pair lines pass through; prepared SFT lines are read back', async () => {
  const p = file([
    {
      prompt: 'capital of france?',
      chosen: `${S}<answer>Paris</answer>`,
      rejected: '<answer>Lyon</answer>',
      golden_answers: ['Paris'],
    },
    {
      question: 'q2',
      chosen: [{ role: 'assistant', content: '<answer>a</answer>' }],
      rejected: { response: '<answer>b</answer>' },
    },
    {
      prompt: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'q3?' },
      ],
      chosen: [{ role: 'assistant', content: '<answer>a</answer>' }],
      rejected: [{ role: 'assistant', content: '<answer>b</answer>' }],
    },
  ]);
  const report = emptyPairReport();
  const got = [];
  for await (const i of readPairInputs(p, 'auto', report)) got.push(i);
  assert.equal(report.given, 3);
  const pairs = got.map((i) => ('pair' in i ? i.pair : null));
  assert.deepEqual(
    pairs.map((x) => [x?.question, x?.kind, x?.chosen.correct, x?.rejected.correct]),
    [
      ['capital of france?', 'tool-vs-notool', true, false],
      ['q2', 'notool-vs-notool', null, null],
      ['q3?', 'notool-vs-notool', null, null],
    ],
  );
  const bad = file([{ question: 'q', chosen: 3, rejected: 'x' }]);
  await dataError(
    async () => {
      for await (const _ of readPairInputs(bad)) void _;
    },
    bad,
    1,
    'chosen',
  );
});

test('check: every file of a config, relative to the config; model dir needs config.json and a tokenizer', async () => {
  const cdir = join(dir, 'cfg');
  mkdirSync(join(cdir, 'data'), { recursive: true });
  mkdirSync(join(cdir, 'model'));
  copyFileSync(join(examples, 'autocoa/hotpotqa_dev.parquet'), join(cdir, 'data/dev.parquet'));
  copyFileSync(join(examples, 'search-r1/corpus_example.jsonl'), join(cdir, 'data/corpus.jsonl'));
  copyFileSync(join(root, 'examples/trajectories.coa.jsonl'), join(cdir, 'data/sft.coa.jsonl'));
  writeFileSync(join(cdir, 'model/config.json'), '{"model_type": "qwen2"}');
  const cfg = join(cdir, 'run.json');
  const write = (data: object, model: string | null = 'model') =>
    writeFileSync(cfg, JSON.stringify({ model: { path: model }, data }, null, 2));
  write({ questions: { dev: 'data/dev.parquet' }, sft: ['data/sft.coa.jsonl'], corpus: 'data/corpus.jsonl' });
  await dataError(() => checkRunConfig(cfg), cfg, 3, 'model.path', /no tokenizer/);
  writeFileSync(join(cdir, 'model/tokenizer.json'), '{}');
  assert.equal(modelDirProblem(join(cdir, 'model')), null);
  const r = await checkRunConfig(cfg);
  assert.deepEqual(
    r.files.map((f) => [f.key, f.kind, f.count]),
    [
      ['model.path', 'model', 1],
      ['data.questions.dev', 'questions', 400],
      ['data.sft.0', 'sft', 12],
      ['data.corpus', 'corpus', 10],
    ],
  );
  assert.equal(r.built_pairs?.pairs, 2);
  write({ questions: { train: 'data/missing.parquet' } });
  const e = await dataError(() => checkRunConfig(cfg), cfg, 7, 'data.questions.train', /no such file/);
  assert.equal(e.column, 16, 'the column points at the path value');
  // A corpus line that is not JSON, or lacks contents.
  writeFileSync(
    join(cdir, 'data/bad-corpus.jsonl'),
    '{"id": "0", "contents": "\\"T\\"\\nx"}\n{"id": "1", "text": "x"}\n',
  );
  write({ corpus: 'data/bad-corpus.jsonl' });
  await dataError(() => checkRunConfig(cfg), join(cdir, 'data/bad-corpus.jsonl'), 2, 'contents');
  writeFileSync(join(cdir, 'data/bad-corpus.jsonl'), '{"id": "0", "contents": "x"}\n\nnot json\n');
  await dataError(() => checkRunConfig(cfg), join(cdir, 'data/bad-corpus.jsonl'), 3, 'record', /invalid JSON/);
  write({ sfts: [] });
  await dataError(() => checkRunConfig(cfg), cfg, 5, 'data', /sfts/);
  write({}, null);
  assert.deepEqual((await checkRunConfig(cfg)).files, []);
});
