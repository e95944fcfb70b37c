// What Train Stage / Resume Run / Export ONNX spawn: argument arrays for the real trainer CLI, the run config
// written to runs/<id>/config.json, the child environment, run ids and the quick-pick texts the e2e tests use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  composeRunConfig,
  exportOnnxArgs,
  makeRunId,
  stageLabel,
  trainerArgs,
  trainerEnv,
  trainerTokenEnv,
  ENV_STAGES,
  STAGES,
} from '../../../src/extension/process/trainer';
import { configTeacher, endpointUrlProblem } from '../../../src/extension/providers/train/collectPicks';
import { LABELS, STAGE_PICKS, looksLikeModelDir } from '../../../src/extension/providers/train/picks';
import { RunConfigSchema } from '../../../src/core/config';

const root = join(__dirname, '../../..');

test('trainer argument arrays: stage, resume, env server, pipeline, ONNX export', () => {
  assert.deepEqual(trainerArgs({ stage: 'sft2', config: 'runs/a/config.json', runDir: 'runs/a' }), [
    '-m',
    'coa_trainer',
    'train',
    '--stage',
    'sft2',
    '--config',
    'runs/a/config.json',
    '--run-dir',
    'runs/a',
  ]);
  // The token never goes on the command line (any local user reads it with ps): it travels as COA_ENV_TOKEN.
  const rl1 = {
    stage: 'rl1',
    config: 'c',
    runDir: 'r',
    resume: true,
    env: { url: 'http://127.0.0.1:9', token: 't k' },
  };
  assert.deepEqual(trainerArgs(rl1), [
    '-m',
    'coa_trainer',
    'train',
    '--stage',
    'rl1',
    '--config',
    'c',
    '--run-dir',
    'r',
    '--resume',
    '--env-url=http://127.0.0.1:9',
  ]);
  assert.deepEqual(trainerTokenEnv(rl1), { COA_ENV_TOKEN: 't k' });
  assert.deepEqual(trainerTokenEnv({}), {});
  assert.deepEqual(trainerArgs({ stage: 'pipeline', config: 'c', runDir: 'r', resume: true }), [
    '-m',
    'coa_trainer',
    'pipeline',
    '--config',
    'c',
    '--run-dir',
    'r',
    '--resume',
  ]);
  assert.deepEqual(exportOnnxArgs('runs/a/stages/sft3/final', 'runs/a/stages/sft3/onnx/model.onnx'), [
    '-m',
    'coa_trainer',
    'export-onnx',
    '--checkpoint',
    'runs/a/stages/sft3/final',
    '-o',
    'runs/a/stages/sft3/onnx/model.onnx',
  ]);
});

test('the trainer CLI accepts every argument array we build (argparse of the real CLI)', () => {
  const python = join(root, '.venv/bin/python');
  // No skip: `npm install` creates .venv, and a suite that passes without it proves nothing.
  assert.ok(existsSync(python), `${python} is missing: run npm install (it creates the trainer's .venv)`);
  // The command line parsed into the command's typed options only (the CLI's own function); no training happens.
  // Prints the env server token the options carry.
  const code = `import sys; from coa_trainer.cli import parse_command
o = parse_command(sys.argv[1:]); print(getattr(getattr(o, "env", None), "token", None))`;
  const check = (inv: Parameters<typeof trainerArgs>[0] | string[]) => {
    const args = Array.isArray(inv) ? inv : trainerArgs(inv);
    const env = {
      ...trainerEnv({ base: process.env, extensionPath: root, node: process.execPath }),
      ...(Array.isArray(inv) ? {} : trainerTokenEnv(inv)),
    };
    return execFileSync(python, ['-c', code, ...args.slice(2)], { env, stdio: 'pipe', encoding: 'utf8' }).trim();
  };
  for (const s of STAGES) check({ stage: s.id, config: 'c.json', runDir: 'runs/x', resume: true });
  assert.equal(
    check({ stage: 'rl2', config: 'c.json', runDir: 'runs/x', env: { url: 'http://127.0.0.1:1', token: 'abc' } }),
    'abc',
  );
  // A random token may start with '-' (argparse once read '--env-token -X…' as a missing value): none of that now.
  assert.equal(
    check({ stage: 'rl2', config: 'c.json', runDir: 'runs/x', env: { url: 'http://127.0.0.1:1', token: '-Xy_z' } }),
    '-Xy_z',
  );
  check({ stage: 'pipeline', config: 'c.json', runDir: 'runs/x', resume: true });
  assert.equal(
    check({
      stage: 'collect',
      config: 'c.json',
      runDir: 'runs/x',
      resume: true,
      env: { url: 'http://127.0.0.1:1', token: 'abc' },
    }),
    'abc',
  );
  check(exportOnnxArgs('f', 'o.onnx'));
  // A token given on the command line anyway is refused, naming the variable to use.
  assert.throws(
    () => check(['-m', 'coa_trainer', 'train', '--stage', 'rl2', '--config', 'c', '--run-dir', 'r', '--env-token=abc']),
    (e: { stderr: string }) =>
      e.stderr.includes('--env-token would show the token to every local user (ps); set COA_ENV_TOKEN instead'),
  );
});

test('composeRunConfig: picks become model.path / stages.<stage>.init_from, and the result is a valid run config', () => {
  const base = {
    $schema: '../schemas/run-config.schema.json',
    seed: 4,
    model: { embedded: { hidden_size: 32 } },
    stages: { sft2: { steps: 5 } },
  };
  const c = composeRunConfig({
    base,
    stage: 'sft2',
    modelPath: '/m/qwen',
    initFrom: '/runs/a/stages/sft1/final',
    cli: '/ext/dist/cli.js',
  }) as any;
  assert.equal(c.$schema, undefined);
  assert.deepEqual(c.model, { embedded: { hidden_size: 32 }, path: '/m/qwen' });
  assert.deepEqual(c.stages.sft2, { steps: 5, init_from: '/runs/a/stages/sft1/final' });
  assert.equal(c.env.cli, '/ext/dist/cli.js');
  assert.equal(base.stages.sft2.steps, 5);
  assert.equal((base.stages.sft2 as any).init_from, undefined, 'the user config object is not modified');
  RunConfigSchema.parse(c);
  const embedded = composeRunConfig({
    base: null,
    stage: 'pretrain',
    modelPath: null,
    initFrom: null,
    cli: '/x/cli.js',
  });
  assert.deepEqual(embedded, { env: { cli: '/x/cli.js' } });
  RunConfigSchema.parse(embedded);
  const pipe = composeRunConfig({
    base: { env: { cli: 'mine.js' } },
    stage: 'pipeline',
    modelPath: null,
    initFrom: '/f',
    cli: '/x',
  }) as any;
  assert.deepEqual([pipe.model.path, pipe.env.cli], ['/f', 'mine.js']);
});

test('Collect Trajectories: `coa_trainer collect` with the env server, and the teacher picks in collect.teacher', () => {
  assert.deepEqual(
    trainerArgs({
      stage: 'collect',
      config: 'c',
      runDir: 'r',
      resume: true,
      env: { url: 'http://127.0.0.1:9', token: 't' },
    }),
    ['-m', 'coa_trainer', 'collect', '--config', 'c', '--run-dir', 'r', '--resume', '--env-url=http://127.0.0.1:9'],
  );
  assert.ok(
    ENV_STAGES.includes('collect') && !STAGES.some((s) => s.id === 'collect'),
    'its own command, not a Train Stage pick',
  );
  const base = {
    model: { path: '/student' },
    collect: { samples: 2, teacher: { url: 'http://old/v1', api: 'chat' as const } },
  };
  const dir = composeRunConfig({
    base,
    stage: 'collect',
    modelPath: null,
    initFrom: '/runs/a/stages/sft3/final',
    cli: '/x',
  }) as any;
  assert.deepEqual(dir.collect, { samples: 2, teacher: { url: null, api: 'chat', path: '/runs/a/stages/sft3/final' } });
  assert.equal(dir.model.path, '/student', 'the teacher pick leaves the student model alone');
  RunConfigSchema.parse(dir);
  const url = composeRunConfig({
    base: null,
    stage: 'collect',
    modelPath: null,
    initFrom: null,
    teacherUrl: 'http://127.0.0.1:8000/v1',
    cli: '/x',
  }) as any;
  assert.deepEqual(url.collect.teacher, { url: 'http://127.0.0.1:8000/v1', path: null });
  RunConfigSchema.parse(url);
  assert.equal(endpointUrlProblem('http://127.0.0.1:8000/v1'), null);
  assert.match(endpointUrlProblem('127.0.0.1:8000')!, /http/);
  assert.match(endpointUrlProblem('not a url')!, /not a URL/);
  assert.equal(configTeacher(base), 'http://old/v1');
  assert.equal(configTeacher({ collect: { teacher: { path: 'm' } } }), 'm');
  assert.equal(configTeacher(null), null);
});

test('child environment, run ids, labels, model directories', () => {
  const env = trainerEnv({ base: { PATH: '/bin', PYTHONPATH: '/old' }, extensionPath: '/ext', node: '/usr/bin/node' });
  assert.equal(env.PYTHONPATH, `${join('/ext', 'src', 'trainer')}:/old`);
  assert.deepEqual([env.PYTHONUNBUFFERED, env.COA_NODE, env.PATH], ['1', '/usr/bin/node', '/bin']);
  assert.equal(makeRunId(new Date(Date.UTC(2026, 10, 2, 3, 4, 5)), 'sft1'), '20261102-030405-sft1');
  // The config's name leads the id, made safe as a path segment.
  assert.equal(
    makeRunId(new Date(Date.UTC(2026, 10, 2, 3, 4, 5)), 'rl2', 'HotpotQA Qwen/0.5B'),
    'hotpotqa-qwen-0.5b-20261102-030405-rl2',
  );
  assert.equal(makeRunId(new Date(Date.UTC(2026, 10, 2, 3, 4, 5)), 'rl2', '../..'), '20261102-030405-rl2');
  assert.deepEqual(
    STAGE_PICKS.map((s) => s.label),
    ['Pretrain', 'SFT-1', 'SFT-2', 'SFT-3', 'RL-1', 'RL-2', 'Whole pipeline'],
  );
  assert.equal(stageLabel('rl2'), 'RL-2');
  assert.equal(stageLabel('rl2-otc'), 'RL-2-OTC'); // from the one stage table (src/core/stages.ts)
  assert.equal(stageLabel('rl2-custom'), 'rl2-custom');
  assert.equal(LABELS.embeddedConfig, 'Embedded default config');
  assert.ok(looksLikeModelDir(['config.json', 'model.safetensors', 'tokenizer.json']));
  assert.ok(!looksLikeModelDir(['config.json']));
});
