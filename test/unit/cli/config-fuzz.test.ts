// A seeded slice of the config and data-line fuzz (test/fuzz; bench/reliability/run.ts runs 10,000+): hostile run
// configs through `coa data check`, the core's config reader and the trainer's config loader, and hostile JSONL
// through `coa validate` and `coa stats`. No reader may fail with anything but a clean refusal, and the core and the
// trainer must judge every config alike (what one accepts the other accepts) — one set of config rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFuzz } from '../../fuzz/run';

const root = join(__dirname, '../../..');

test('fuzz: 400 hostile configs and 150 hostile JSONL files — no internal error anywhere, the core and the trainer agree on every config', {
  timeout: 180_000,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-config-fuzz-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runFuzz({ root, seed: 38, configs: 400, dataFiles: 150, dir });
  assert.equal(r.runs.trainerConfig, 400);
  assert.ok(r.dataLines >= 500, `${r.dataLines} data lines`);
  assert.deepEqual(r.internal, [], 'internal errors');
  assert.deepEqual(r.disagreements, [], 'configs the core and the trainer judge differently');
});
