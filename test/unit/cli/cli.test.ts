// The `coa` CLI as a user runs it: the built bundle in a child process (argument array, no shell).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const bin = join(root, 'bin/coa.js');
const dir = mkdtempSync(join(tmpdir(), 'coa-cli-'));
const coa = (...args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

before(() => {
  if (!existsSync(join(root, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
});

test('validate prints file:line:col: severity CODE message and exits 1 on errors', () => {
  const r = coa('validate', 'examples/trajectories.coa.jsonl');
  assert.equal(r.code, 1);
  const lines = r.out.trim().split('\n');
  for (const l of lines) assert.match(l, /^examples\/trajectories\.coa\.jsonl:\d+:\d+: (error|warning) COA\d{3} .+/);
  assert.ok(lines.some((l) => l.includes(':5:') && l.includes('COA001 unclosed tag <think>')));
  // The column points at the tag inside the raw JSON line.
  const line5 = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n')[4];
  const col = Number(/:5:(\d+):/.exec(lines.find((l) => l.includes(':5:'))!)![1]);
  assert.equal(line5.slice(col - 1, col - 1 + 7), '<think>');
});

test('validate exits 0 on a clean file and reports bad JSON lines without stopping', () => {
  const file = join(dir, 'mixed.jsonl');
  writeFileSync(
    file,
    [
      '{"id":"a","question":"q","response":"<think>x</think><answer>y</answer>"}',
      '{oops',
      '{"id":"a","question":"q","response":"<answer>y</answer>"}',
    ].join('\n'),
  );
  const r = coa('validate', file);
  assert.equal(r.code, 1);
  assert.match(r.out, /mixed\.jsonl:2:2: error COA101 invalid JSON/);
  assert.match(r.out, /mixed\.jsonl:3:\d+: error COA103 duplicate id "a" \(first on line 1\)/);
  const clean = join(dir, 'clean.jsonl');
  writeFileSync(clean, '{"id":"a","question":"q","response":"<think>x</think><answer>y</answer>"}\n');
  assert.equal(coa('validate', clean).code, 0);
});

test('bad input gets one clear line and a non-zero exit, never a stack trace', () => {
  const bin_ = join(dir, 'garbage.jsonl');
  writeFileSync(bin_, Buffer.from([0, 1, 2, 3, 255, 10]));
  const cases = [
    coa('validate', join(dir, 'missing.jsonl')),
    coa('validate', '--dialect', 'klingon', 'examples/trajectories.coa.jsonl'),
    coa('score', 'examples/trajectories.coa.jsonl', '--scheme', 'nope'),
    coa('score', 'examples/trajectories.coa.jsonl', '--c', 'abc'),
    coa('convert', '--from', 'verl-parquet', 'examples/trajectories.coa.jsonl', '-o', join(dir, 'x.jsonl')),
    coa('frobnicate'),
  ];
  for (const r of cases) {
    assert.notEqual(r.code, 0);
    assert.match(r.err, /^coa: /);
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
  }
  const b = coa('validate', bin_);
  assert.equal(b.code, 1);
  assert.match(b.out, /COA104/);
});

test('score fills rewards; OTC-GRPO groups by question across the file', () => {
  const out = join(dir, 'scored.jsonl');
  const r = coa('score', 'examples/trajectories.coa.jsonl', '--scheme', 'otc-grpo', '--c', '4', '-o', out);
  assert.equal(r.code, 0, r.err);
  const recs = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const by = Object.fromEntries(recs.map((x) => [x.id, x.reward]));
  // Same question: direct answer (0 calls) is correct, so n = 0 for the whole group.
  assert.equal(by['coa-direct'].total, 1);
  assert.equal(by['coa-one-search'].optimal_tool_calls, 0);
  assert.ok(Math.abs(by['coa-one-search'].total - Math.cos(Math.PI / 6)) < 1e-9);
  assert.ok(Math.abs(by['coa-two-searches'].total - Math.cos(Math.PI / 4)) < 1e-9);
  assert.equal(by['coa-wrong'].total, 0);
  assert.equal(by['coa-unclosed-think'].total, 0, 'format error → 0');
});

test('stats --json gives the paper columns per dialect and per stage', () => {
  const r = coa('stats', 'examples/trajectories.coa.jsonl', '--json');
  assert.equal(r.code, 0, r.err);
  const { rows } = JSON.parse(r.out);
  const all = rows.find((x: { group: string }) => x.group === 'all');
  assert.equal(all.count, 12);
  assert.ok(rows.some((x: { group: string }) => x.group === 'dialect=autocoa'));
  const sft2 = rows.find((x: { group: string }) => x.group === 'stage=sft2');
  assert.deepEqual([sft2.count, sft2.em, sft2.tc], [4, 0.75, 0.75]);
  assert.equal(sft2.tp, 3 / 3);
});

test('stats: EM, F1 and TP are n/a for trajectories without golden answers, not 0 %', () => {
  const file = join(dir, 'stats-unlabelled.coa.jsonl');
  const t = (id: string, answer: string, golden?: string[]) =>
    JSON.stringify({
      id,
      question: 'q',
      ...(golden ? { golden_answers: golden } : {}),
      response: `<think>x</think><search>q</search><observation>o</observation><answer>${answer}</answer>`,
    });
  writeFileSync(file, [t('a', 'Paris'), t('b', 'Rome')].join('\n') + '\n');
  const none = coa('stats', file, '--json');
  assert.equal(none.code, 0, none.err);
  const all = JSON.parse(none.out).rows[0];
  assert.deepEqual([all.count, all.graded, all.em, all.f1, all.tp, all.tc], [2, 0, null, null, null, 1]);
  assert.equal(JSON.parse(none.out).ungraded, 2);
  const table = coa('stats', file);
  assert.match(table.out, /^all\s+2\s+n\/a\s+n\/a\s+1\.00\s+—\s+0\.0%$/m);
  assert.match(table.out, /2 trajectories without golden answers: EM, F1 and TP are over the other 0 — n\/a/);
  // mixed: EM over the labelled one only (was 1 of 2 = 50 %)
  writeFileSync(file, [t('a', 'Paris', ['Paris']), t('b', 'Rome')].join('\n') + '\n');
  const mixed = JSON.parse(coa('stats', file, '--json').out).rows[0];
  assert.deepEqual([mixed.graded, mixed.em, mixed.tp], [1, 1, 1]);
});

test("validate and stats on another engine's file name the coa convert to run", () => {
  const cases: [string, string][] = [
    ['examples/data/autocoa/all_test.parquet', 'verl-parquet'],
    ['examples/search-r1-transcripts.txt', 'search-r1'],
    ['examples/openai-chats.jsonl', 'openai'],
    ['test/fixtures/verl/rollouts/3.jsonl', 'verl-rollouts'],
  ];
  for (const [file, from] of cases) {
    const v = coa('validate', file);
    assert.equal(v.code, 1, `${file}: ${v.err}`);
    assert.equal(v.out.trim().split('\n').length, 1, `one line, not a page of JSON errors: ${v.out}`);
    assert.match(
      v.out,
      new RegExp(
        `^${file.replace(/\./g, '\\.')}:1:1: error COA104 this is a .* file, not trajectory JSONL: convert it first with \`coa convert --from ${from} ${file.replace(/\./g, '\\.')} -o `,
      ),
    );
    const s = coa('stats', file);
    assert.equal(s.code, 2);
    assert.match(s.err, new RegExp(`coa convert --from ${from} `));
  }
  // a parquet by its bytes, whatever its name
  const renamed = join(dir, 'questions.data');
  writeFileSync(renamed, readFileSync(join(root, 'examples/data/autocoa/hotpotqa_dev.parquet')));
  assert.match(coa('validate', renamed).out, /coa convert --from verl-parquet /);
});

test('stats counts questions apart: a converted parquet is data, not 400 format errors', () => {
  const out = join(dir, 'stats-dev.coa.jsonl');
  assert.equal(
    coa('convert', '--from', 'verl-parquet', join(root, 'examples/data/autocoa/hotpotqa_dev.parquet'), '-o', out).code,
    0,
  );
  const mixed = join(dir, 'stats-mixed.coa.jsonl');
  const trajectories = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8');
  writeFileSync(mixed, readFileSync(out, 'utf8') + trajectories);
  const alone = JSON.parse(coa('stats', 'examples/trajectories.coa.jsonl', '--json').out);
  const r = coa('stats', mixed, '--json');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.questions, 400);
  assert.deepEqual(j.rows, alone.rows, 'the questions change no row');
  const table = coa('stats', out);
  assert.equal(table.code, 0, table.err);
  assert.match(table.out, /400 questions without a response skipped/);
});

test('convert: AutoCoA parquet, Search-R1 transcripts and OpenAI chats', () => {
  const parquet = join(root, 'examples/data/autocoa/hotpotqa_dev.parquet');
  const out = join(dir, 'dev.coa.jsonl');
  assert.equal(coa('convert', '--from', 'verl-parquet', parquet, '-o', out).code, 0);
  assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 400);
  const sr1 = join(dir, 'sr1.coa.jsonl');
  assert.equal(coa('convert', '--from', 'search-r1', 'examples/search-r1-transcripts.txt', '-o', sr1).code, 0);
  assert.equal(coa('validate', '--strict', sr1).code, 0);
  const oa = join(dir, 'oa.coa.jsonl');
  assert.equal(coa('convert', '--from', 'openai', 'examples/openai-chats.jsonl', '-o', oa).code, 0);
  assert.equal(coa('validate', oa).code, 0);
});
