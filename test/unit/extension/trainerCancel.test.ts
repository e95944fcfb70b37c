// The real trainer under the process manager: cancel = SIGTERM → the trainer saves a checkpoint, reports the
// stage cancelled and exits 130; resume (--resume) continues from that checkpoint's step. A tiny embedded model
// (~20 s on a busy 2-core machine, mostly importing torch). Skipped without the project's .venv.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess, type LogSink } from '../../../src/extension/process/manager';
import { trainerArgs, trainerEnv } from '../../../src/extension/process/trainer';
import { readRun } from '../../../src/extension/providers/runs/model';

const root = join(__dirname, '../../..');
const python = join(root, '.venv/bin/python');
const log: LogSink = { info: () => {}, warn: () => {}, error: () => {} };

const config = {
  seed: 1,
  threads: 1,
  device: 'cpu',
  benchmark: { persons: 24, companies: 6, cities: 6, countries: 3 },
  model: {
    embedded: {
      hidden_size: 32,
      num_layers: 2,
      num_heads: 2,
      num_kv_heads: 1,
      intermediate_size: 64,
      max_position: 256,
    },
  },
  stages: { pretrain: { steps: 4000, batch_size: 4, log_every: 1, warmup_steps: 2, max_len: 128 } },
  eval: { limit: 4, max_new_tokens: 8, max_turns: 1 },
};

/** Runs the trainer and cancels it once it reports `cancelAt`; returns the result and the events it printed. */
async function trainUntil(runDir: string, configPath: string, resume: boolean, cancelAt: number) {
  const events: Record<string, any>[] = [];
  const proc: ManagedProcess = new ManagedProcess({
    what: 'trainer',
    command: python,
    args: trainerArgs({ stage: 'pretrain', config: configPath, runDir, resume }),
    env: trainerEnv({ base: process.env, extensionPath: root, node: process.execPath }),
    log,
    graceMs: 60_000,
    onJson: (e) => {
      events.push(e);
      if (e.type === 'progress' && Number(e.step) >= cancelAt) void proc.cancel();
    },
  });
  return { result: await proc.done, events };
}

test('cancel → SIGTERM → checkpoint + stage_finished cancelled + exit 130; resume continues from it', async () => {
  assert.ok(existsSync(python), `${python} is missing: run npm install (it creates the trainer's .venv)`);
  const dir = mkdtempSync(join(tmpdir(), 'coa-cancel-'));
  try {
    const runDir = join(dir, 'run');
    const configPath = join(dir, 'short.run.json');
    writeFileSync(configPath, JSON.stringify(config));
    const first = await trainUntil(runDir, configPath, false, 3);
    assert.equal(first.result.status, 'cancelled', first.result.message);
    assert.equal(first.result.code, 130);
    const ckpt = first.events.find((e) => e.type === 'checkpoint');
    assert.ok(ckpt && ckpt.path.endsWith('.safetensors') && existsSync(ckpt.path), 'a resumable checkpoint was saved');
    const finished = first.events.find((e) => e.type === 'stage_finished');
    assert.equal(finished?.status, 'cancelled');
    const saved = ckpt.step as number;
    assert.ok(saved >= 3);
    assert.equal(readRun(runDir, 'run')!.stages[0].status, 'cancelled');

    const second = await trainUntil(runDir, configPath, true, saved + 1);
    const started = second.events.find((e) => e.type === 'run_started');
    assert.equal(started?.resumed_from, saved, 'resumed from the saved step');
    assert.ok(second.events.filter((e) => e.type === 'progress').every((e) => e.step > saved));
    assert.equal(second.result.status, 'cancelled');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
