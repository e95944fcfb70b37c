// Train Stage's data step and the Runs view's "data" node, the parts without VS Code: picks merged into a run
// config, paths made absolute for the run's copy, the `coa data check` child process, a run's data read back.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_PATH_FIELDS, dataEntries, resolveConfigPaths } from '../../../src/core/data/paths';
import { applyDataPicks, describeData, hasPicks } from '../../../src/extension/providers/train/data';
import { DataError, parseDataErrorLine } from '../../../src/core/data/errors';
import { runDataCheck } from '../../../src/extension/process/dataCheck';
import { dataFileNodes, dataNode, runDataEntries } from '../../../src/extension/providers/runs/data';
import { composeRunConfig } from '../../../src/extension/process/trainer';
import { z } from 'zod';
import { RunConfigSchema } from '../../../src/core/config';
import type { RunInfo } from '../../../src/extension/providers/runs/model';

const root = join(__dirname, '../../..');
const dir = mkdtempSync(join(tmpdir(), 'coa-train-data-'));

before(() => {
  const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
  assert.equal(b.status, 0, b.stderr);
});

test('config paths: listed in config order, made absolute against the config file, absolute ones kept', () => {
  const config = {
    model: { path: 'models/qwen' },
    data: {
      questions: { train: 'd/train.parquet', dev: '/abs/dev.jsonl', test: null },
      sft: ['t.coa.jsonl', { path: 'u.jsonl', dialect: 'search-r1' }],
      corpus: 'c.jsonl',
    },
  };
  const abs = resolveConfigPaths(config, '/work/proj/configs');
  assert.deepEqual(
    dataEntries(abs).map((e) => [e.key, e.path, e.kind]),
    [
      ['model.path', '/work/proj/configs/models/qwen', 'model'],
      ['data.questions.train', '/work/proj/configs/d/train.parquet', 'questions'],
      ['data.questions.dev', '/abs/dev.jsonl', 'questions'],
      ['data.sft.0', '/work/proj/configs/t.coa.jsonl', 'sft'],
      ['data.sft.1', '/work/proj/configs/u.jsonl', 'sft'],
      ['data.corpus', '/work/proj/configs/c.jsonl', 'corpus'],
    ],
  );
  assert.equal((abs.data.sft[1] as { dialect: string }).dialect, 'search-r1');
  assert.equal(config.data.questions.train, 'd/train.parquet', 'the input is not changed');
  assert.deepEqual(dataEntries({}), []);
  assert.deepEqual(resolveConfigPaths({ seed: 1 }, '/x'), { seed: 1 });
});

test('one path rule: every path field of a run config, not only the data section, is relative to the config file', () => {
  const config = {
    model: { path: 'm' },
    stages: { sft2: { init_from: '../runs/r/stages/sft1/final' }, rl2: { init_from: '/abs/final' }, rl1: {} },
    collect: { teacher: { path: 'teacher', tokenizer: 'tok' } },
    benchmark: { data_dir: 'bench' },
    env: { cli: 'build/cli.js', corpus: 'wiki.jsonl', node: 'node' },
    logging: { wandb: { dir: 'wb' }, tensorboard: { dir: 'tb' } },
  };
  const abs = resolveConfigPaths(config, '/p/configs');
  assert.deepEqual(abs, {
    model: { path: '/p/configs/m' },
    stages: { sft2: { init_from: '/p/runs/r/stages/sft1/final' }, rl2: { init_from: '/abs/final' }, rl1: {} },
    collect: { teacher: { path: '/p/configs/teacher', tokenizer: '/p/configs/tok' } },
    benchmark: { data_dir: '/p/configs/bench' },
    env: { cli: '/p/configs/build/cli.js', corpus: '/p/configs/wiki.jsonl', node: 'node' }, // a command name stays
    logging: { wandb: { dir: '/p/configs/wb' }, tensorboard: { dir: '/p/configs/tb' } },
  });
  assert.equal(resolveConfigPaths({ env: { node: 'bin/node' } }, '/p').env.node, '/p/bin/node');
  // env.cli's old default, written into every copied config, means "not given" (COA_CLI, else the bundled build)
  assert.equal(resolveConfigPaths({ env: { cli: 'dist/cli.js' } }, '/p').env.cli, null);
  // every listed field is a field of the run config (a rename in the schema must rename it here)
  const schema = z.toJSONSchema(RunConfigSchema, { io: 'input' }) as { properties: Record<string, unknown> };
  for (const field of CONFIG_PATH_FIELDS) {
    let node: any = schema;
    for (const part of field.split('.')) {
      const key = part.replace(/\[\]$/, '');
      node = unwrap(node);
      node = key === '*' ? Object.values(node.properties)[0] : node.properties?.[key];
      assert.ok(node, `${field}: no ${key} in the run config schema`);
      if (part.endsWith('[]')) node = unwrap(node).items;
    }
    assert.ok(JSON.stringify(unwrap(node)).includes('"string"'), `${field} is not a string field`);
  }
});

/** The object or array branch of a nullable/defaulted JSON Schema node. */
function unwrap(node: any): any {
  const branches = node.anyOf ?? node.oneOf;
  if (!branches) return node;
  return (
    branches.find((b: any) => b.type === 'object' || b.type === 'array' || b.properties) ??
    branches.find((b: any) => b.type !== 'null') ??
    node
  );
}

test("data picks replace the config's entries and give a valid run config; summary line", () => {
  assert.equal(hasPicks({}), false);
  assert.equal(hasPicks({ sft: [] }), false);
  const picked = applyDataPicks(
    { seed: 2, data: { questions: { dev: '/d.parquet' }, corpus: '/old.jsonl' } },
    { train: '/t.parquet', sft: ['/a.coa.jsonl', '/b.coa.jsonl'], corpus: '/c.jsonl' },
  );
  const composed = composeRunConfig({ base: picked, stage: 'sft2', modelPath: '/m', initFrom: null, cli: '/cli.js' });
  const parsed = RunConfigSchema.parse(composed);
  assert.deepEqual(parsed.data, {
    questions: { train: '/t.parquet', dev: '/d.parquet', test: null },
    sft: ['/a.coa.jsonl', '/b.coa.jsonl'],
    sft1_pairs: null,
    corpus: '/c.jsonl',
    sft_filter: { dialect: 'run', format_ok: true, correct: true },
    strict_ids: false,
  });
  assert.equal(describeData(picked), 'train t.parquet · dev d.parquet · sft 2 files · corpus c.jsonl');
  assert.equal(
    describeData({ data: { sft: ['x/one.coa.jsonl'], sft1_pairs: 'p.jsonl' } }),
    'sft one.coa.jsonl · pairs p.jsonl',
  );
  assert.equal(describeData({ model: { path: '/m' } }), null);
});

test("the check's error line parses back into file, line, column and field", () => {
  assert.deepEqual(parseDataErrorLine('/d/train.jsonl:5:38: error: golden_answers.0: number, expected a string\n'), {
    file: '/d/train.jsonl',
    line: 5,
    column: 38,
    field: 'golden_answers.0',
    message: 'number, expected a string',
  });
  assert.equal(parseDataErrorLine('coa: data check: give one run config file'), null);
  const printed = new DataError(
    '/d/a b.parquet',
    12,
    1,
    'reward_model.ground_truth',
    'missing: give the golden answers',
  );
  assert.deepEqual(
    parseDataErrorLine(printed.message),
    {
      file: '/d/a b.parquet',
      line: 12,
      column: 1,
      field: 'reward_model.ground_truth',
      message: 'missing: give the golden answers',
    },
    'what DataError prints is what the editor reads back',
  );
});

test('runDataCheck: counts on success; on bad data the error names file, line and field', async () => {
  const cfg = join(dir, 'ok.json');
  writeFileSync(
    cfg,
    JSON.stringify({ data: { questions: { dev: join(root, 'examples/data/autocoa/hotpotqa_dev.parquet') } } }),
  );
  const cli = join(root, 'dist/cli.js');
  const ok = await runDataCheck({ node: process.execPath, cli, config: cfg });
  assert.ok(ok.ok);
  assert.deepEqual(
    ok.result.files.map((f) => [f.key, f.count]),
    [['data.questions.dev', 400]],
  );
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, '{"question": "q", "golden_answers": ["a"]}\n{"question": "", "golden_answers": ["a"]}\n');
  writeFileSync(cfg, JSON.stringify({ data: { questions: { train: 'bad.jsonl' } } }));
  const failed = await runDataCheck({ node: process.execPath, cli, config: cfg });
  assert.ok(!failed.ok);
  assert.deepEqual(failed.location && [failed.location.file, failed.location.line, failed.location.field], [
    bad,
    2,
    'question',
  ]);
  assert.match(failed.message, /empty question/);
});

test("Runs view: a run's data node from its config.json, else from its run_started event", () => {
  const run = (id: string): RunInfo => ({ id, dir: join(dir, id), status: 'ok', stages: [], badLines: 0, updated: 0 });
  mkdirSync(join(dir, 'r1'));
  writeFileSync(
    join(dir, 'r1', 'config.json'),
    JSON.stringify({
      model: { path: '/models/qwen' },
      data: { questions: { train: '/d/train.parquet' }, corpus: '/d/wiki.jsonl' },
    }),
  );
  const node = dataNode(run('r1'))!;
  assert.equal(node.description, 'train.parquet · wiki.jsonl · model qwen');
  assert.match(node.tooltip, /data\.questions\.train: \/d\/train\.parquet/);
  assert.deepEqual(
    dataFileNodes(node).map((n) => [n.label, n.description]),
    [
      ['model.path', 'qwen'],
      ['questions.train', 'train.parquet'],
      ['corpus', 'wiki.jsonl'],
    ],
  );
  mkdirSync(join(dir, 'r2'));
  const started = {
    v: 1,
    time: 1,
    run: 'r2',
    type: 'run_started',
    stage: 'sft2',
    config: { data: null, model: { path: null } },
    total_steps: 3,
    device: 'cpu',
    world_size: 1,
    pid: 1,
  };
  writeFileSync(join(dir, 'r2', 'events.jsonl'), JSON.stringify(started) + '\n');
  assert.deepEqual(runDataEntries(join(dir, 'r2')), []);
  assert.equal(dataNode(run('r2'))!.description, 'embedded benchmark');
  mkdirSync(join(dir, 'r3'));
  assert.equal(dataNode(run('r3')), null);
});
