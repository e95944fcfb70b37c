// A small real run for the replay-equals-evaluation proof: the embedded default pretrained and SFT-2-trained by the
// trainer's own commands, evaluated greedily with `coa_trainer eval` (its records carry token ids and loss masks),
// and exported with `coa_trainer export-onnx` to where the Runs view's "Export ONNX" puts it. The run config sets
// eval limits unlike the replay engine's defaults (top_k 1, max_turns 2, 24 new tokens, max_len 220), so a replay
// that ignored the run's config would not reproduce the records. Built once (~30 s on 2 cores) and cached under
// .cache/ keyed by the sources that shape it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrajectoryRecord } from '../../../src/core/record';
import { REPO, trainerSources } from './fixture';

export const EVAL_RUN_CONFIG = {
  seed: 3,
  threads: 1,
  device: 'cpu',
  benchmark: { persons: 24, companies: 6, cities: 6, countries: 3 },
  model: {
    embedded: {
      hidden_size: 48,
      num_layers: 2,
      num_heads: 2,
      num_kv_heads: 1,
      intermediate_size: 96,
      max_position: 256,
    },
  },
  stages: {
    pretrain: { steps: 60, batch_size: 16, log_every: 20, checkpoint_every: 1000, max_len: 128 },
    sft2: { steps: 300, log_every: 50, checkpoint_every: 1000 },
  },
  eval: { splits: ['dev'], limit: 12, max_turns: 2, max_new_tokens: 24, top_k: 1, max_obs_tokens: 40, max_len: 220 },
};

/** What shapes the run: this file, every module of the trainer, the tags and the observation layout. */
const sources = () => [
  'test/unit/replay/evalRun.ts',
  'src/core/dialects.ts',
  'src/env/observations.ts',
  ...trainerSources(),
];

export interface EvalRun {
  runDir: string;
  onnx: string;
  records: TrajectoryRecord[];
}

let built: EvalRun | undefined;

export function evalRun(): EvalRun {
  if (built) return built;
  const python = join(REPO, '.venv/bin/python');
  if (!existsSync(python))
    throw new Error(`${python} is missing: run npm run setup:python (the replay proof trains a tiny run with it)`);
  if (!existsSync(join(REPO, 'dist/cli.js')))
    throw new Error(
      'dist/cli.js is missing: run npm run build (the evaluation searches through the environment server)',
    );
  const hash = createHash('sha256');
  for (const f of sources()) hash.update(f).update(readFileSync(join(REPO, f)));
  const dir = join(REPO, '.cache', `replay-eval-run-${hash.digest('hex').slice(0, 12)}`);
  const runDir = join(dir, 'run');
  if (!existsSync(join(dir, 'done'))) {
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const config = join(tmp, 'run.json');
    writeFileSync(config, JSON.stringify(EVAL_RUN_CONFIG, null, 2));
    const run = (...args: string[]) =>
      execFileSync(python, ['-m', 'coa_trainer', ...args], {
        cwd: REPO,
        env: { ...process.env, PYTHONPATH: join(REPO, 'src/trainer'), OMP_NUM_THREADS: '1' },
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 300_000,
      });
    const tmpRun = join(tmp, 'run');
    try {
      run('train', '--stage', 'pretrain', '--config', config, '--run-dir', tmpRun);
      run('train', '--stage', 'sft2', '--config', config, '--run-dir', tmpRun);
      run('eval', '--config', config, '--run-dir', tmpRun, '--split', 'dev');
      run(
        'export-onnx',
        '--checkpoint',
        join(tmpRun, 'stages/sft2/final'),
        '-o',
        join(tmpRun, 'stages/sft2/onnx/model.onnx'),
      );
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true }); // nothing half-built is left in .cache
      const err = e as Error & { stderr?: Buffer };
      throw new Error(
        `building the replay proof's run failed: ${err.message.split('\n')[0]}\n${err.stderr?.toString().slice(-2000) ?? ''}`,
        { cause: e },
      );
    }
    writeFileSync(join(tmp, 'done'), '');
    try {
      renameSync(tmp, dir);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process finished first: use its build
    }
  }
  const records = readFileSync(join(runDir, 'eval/sft2-agent-dev.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as TrajectoryRecord);
  built = { runDir, onnx: join(runDir, 'stages/sft2/onnx/model.onnx'), records };
  return built;
}
