// Opens a rollouts file as the trajectory notebook does (codec decode → cells → unchanged save) and scores it with
// `coa score` (the CLI bundle, a child process), for tests in other languages (the TRL run of
// src/trainer/tests/test_trl_integration.py). Prints one JSON object: {"records", "byte_identical",
// "notebook_rewards", "coa_score_rewards", "stored_rewards"} — whole breakdowns (total, EM, F1, format codes, tool
// calls), in file order.
// Usage: node --import tsx test/unit/notebook/check-rollouts-file.ts <rollouts.coa.jsonl> <scheme>
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeNotebook, notebookToText } from '../../../src/extension/providers/notebook/codec';
import { REWARD_MIME, type RewardOutput } from '../../../src/extension/providers/notebook/cells';
import type { Scheme } from '../../../src/core/record';

const [file, scheme] = process.argv.slice(2) as [string, Scheme];
const bytes = readFileSync(file);
const nb = decodeNotebook(bytes, { scheme });
const rewards = nb.cells
  .flatMap((c) => c.outputs ?? [])
  .map((o) => o.find((i) => i.mime === REWARD_MIME)?.data as RewardOutput | undefined)
  .filter((x): x is RewardOutput => !!x);
const dir = mkdtempSync(join(tmpdir(), 'coa-check-rollouts-'));
try {
  const out = join(dir, 'scored.jsonl');
  const r = spawnSync(
    process.execPath,
    [join(__dirname, '../../../bin/coa.js'), 'score', file, '--scheme', scheme, '-o', out],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`coa score failed: ${r.stderr}`);
  const scored = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).reward as unknown);
  const stored = bytes
    .toString('utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).reward ?? null);
  console.log(
    JSON.stringify({
      records: rewards.length,
      byte_identical: notebookToText(nb) === bytes.toString('utf8'),
      notebook_rewards: rewards.map((x) => x.breakdown),
      coa_score_rewards: scored,
      stored_rewards: stored,
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
