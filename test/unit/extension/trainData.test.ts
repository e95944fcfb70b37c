// Train Stage's data step and the Runs view's "data" node, the parts without VS Code: picks merged into a run
// config, paths made absolute for the run's copy, the `coa data check` child process, a run's data read back.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { absolutizeDataPaths, dataEntries } from '../../../src/core/data/paths';
import { applyDataPicks, describeData, hasPicks, parseDataErrorLine } from '../../../src/extension/providers/train/data';
import { runDataCheck } from '../../../src/extension/process/dataCheck';
import { dataFileNodes, dataNode, runDataEntries } from '../../../src/extension/providers/runs/data';
import { composeRunConfig } from '../../../src/extension/process/trainer';
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
    data: { questions: { train: 'd/train.parquet', dev: '/abs/dev.jsonl', test: null }, sft: ['t.coa.jsonl', { path: 'u.jsonl', dialect: 'search-r1' }], corpus: 'c.jsonl' },
  };
  const abs = absolutizeDataPaths(config, '/work/proj/configs');
  assert.deepEqual(dataEntries(abs).map((e) => [e.key, e.path, e.kind]), [
    ['model.path', '/work/proj/configs/models/qwen', 'model'],
    ['data.questions.train', '/work/proj/configs/d/train.parquet', 'questions'],
    ['data.questions.dev', '/abs/dev.jsonl', 'questions'],
    ['data.sft.0', '/work/proj/configs/t.coa.jsonl', 'sft'],
    ['data.sft.1', '/work/proj/configs/u.jsonl', 'sft'],
    ['data.corpus', '/work/proj/configs/c.jsonl', 'corpus'],
  ]);
  assert.equal((abs.data.sft[1] as { dialect: string }).dialect, 'search-r1');
  assert.equal(config.data.questions.train, 'd/train.parquet', 'the input is not changed');
  assert.deepEqual(dataEntries({}), []);
  assert.deepEqual(absolutizeDataPaths({ seed: 1 }, '/x'), { seed: 1 });
});

test('data picks replace the config\'s entries and give a valid run config; summary line', () => {
  assert.equal(hasPicks({}), false);
  assert.equal(hasPicks({ sft: [] }), false);
  const picked = applyDataPicks({ seed: 2, data: { questions: { dev: '/d.parquet' }, corpus: '/old.jsonl' } }, { train: '/t.parquet', sft: ['/a.coa.jsonl', '/b.coa.jsonl'], corpus: '/c.jsonl' });
  const composed = composeRunConfig({ base: picked, stage: 'sft2', modelPath: '/m', initFrom: null, cli: '/cli.js' });
  const parsed = RunConfigSchema.parse(composed);
  assert.deepEqual(parsed.data, { questions: { train: '/t.parquet', dev: '/d.parquet', test: null }, sft: ['/a.coa.jsonl', '/b.coa.jsonl'], sft1_pairs: null, corpus: '/c.jsonl', strict_ids: false });
  assert.equal(describeData(picked), 'train t.parquet · dev d.parquet · sft 2 files · corpus c.jsonl');
  assert.equal(describeData({ data: { sft: ['x/one.coa.jsonl'], sft1_pairs: 'p.jsonl' } }), 'sft one.coa.jsonl · pairs p.jsonl');
  assert.equal(describeData({ model: { path: '/m' } }), null);
});

test('the check\'s error line parses back into file, line, column and field', () => {
  assert.deepEqual(parseDataErrorLine('/d/train.jsonl:5:38: error: golden_answers.0: number, expected a string\n'), { file: '/d/train.jsonl', line: 5, column: 38, field: 'golden_answers.0', message: 'number, expected a string' });
  assert.equal(parseDataErrorLine('coa: data check: give one run config file'), null);
});

test('runDataCheck: counts on success; on bad data the error names file, line and field', async () => {
  const cfg = join(dir, 'ok.json');
  writeFileSync(cfg, JSON.stringify({ data: { questions: { dev: join(root, 'examples/data/autocoa/hotpotqa_dev.parquet') } } }));
  const cli = join(root, 'dist/cli.js');
  const ok = await runDataCheck({ node: process.execPath, cli, config: cfg });
  assert.ok(ok.ok);
  assert.deepEqual(ok.result.files.map((f) => [f.key, f.count]), [['data.questions.dev', 400]]);
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, '{"question": "q", "golden_answers": ["a"]}\n{"question": "", "golden_answers": ["a"]}\n');
  writeFileSync(cfg, JSON.stringify({ data: { questions: { train: 'bad.jsonl' } } }));
  const failed = await runDataCheck({ node: process.execPath, cli, config: cfg });
  assert.ok(!failed.ok);
  assert.deepEqual(failed.location && [failed.location.file, failed.location.line, failed.location.field], [bad, 2, 'question']);
  assert.match(failed.message, /empty question/);
});

test('Runs view: a run\'s data node from its config.json, else from its run_started event', () => {
  const run = (id: string): RunInfo => ({ id, dir: join(dir, id), status: 'ok', stages: [], badLines: 0, updated: 0 });
  mkdirSync(join(dir, 'r1'));
  writeFileSync(join(dir, 'r1', 'config.json'), JSON.stringify({ model: { path: '/models/qwen' }, data: { questions: { train: '/d/train.parquet' }, corpus: '/d/wiki.jsonl' } }));
  const node = dataNode(run('r1'))!;
  assert.equal(node.description, 'train.parquet · wiki.jsonl · model qwen');
  assert.match(node.tooltip, /data\.questions\.train: \/d\/train\.parquet/);
  assert.deepEqual(dataFileNodes(node).map((n) => [n.label, n.description]), [['model.path', 'qwen'], ['questions.train', 'train.parquet'], ['corpus', 'wiki.jsonl']]);
  mkdirSync(join(dir, 'r2'));
  const started = { v: 1, time: 1, run: 'r2', type: 'run_started', stage: 'sft2', config: { data: null, model: { path: null } }, total_steps: 3, device: 'cpu', world_size: 1, pid: 1 };
  writeFileSync(join(dir, 'r2', 'events.jsonl'), JSON.stringify(started) + '\n');
  assert.deepEqual(runDataEntries(join(dir, 'r2')), []);
  assert.equal(dataNode(run('r2'))!.description, 'embedded benchmark');
  mkdirSync(join(dir, 'r3'));
  assert.equal(dataNode(run('r3')), null);
});
