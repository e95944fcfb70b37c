// The large-file browser's index: streamed offsets that read back the exact lines, summaries scored by the core,
// filters/sorts/jumps, and the worker thread producing the same index as the in-process build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { build } from 'esbuild';
import { buildIndex, firstRecords, readLines } from '../../../src/extension/providers/browser/indexer';
import { findPage, questionsLine, runQuery, stagesOf } from '../../../src/extension/providers/browser/query';
import type { RecordSummary } from '../../../src/protocols/browser';
import type { WorkerMessage } from '../../../src/extension/providers/browser/worker';
import { scoreRecords } from '../../../src/core/rewards';

const root = join(__dirname, '../../..');
const examples = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim());

/** A file of the example records repeated with fresh ids and stages/steps, plus a bad line and a blank line, CRLF in places. */
function makeFile(dir: string, copies: number): { path: string; lines: string[] } {
  const lines: string[] = [];
  for (let k = 0; k < copies; k++) {
    examples.forEach((l) => {
      const r = JSON.parse(l);
      lines.push(
        JSON.stringify({ ...r, id: `${r.id}-${k}`, meta: { ...r.meta, stage: k % 2 ? 'rl' : 'sft2', step: k } }),
      );
    });
  }
  lines.splice(5, 0, '{"id": "broken"');
  const text = lines
    .map((l, i) => l + (i % 7 === 3 ? '\r\n' : '\n'))
    .join('')
    .replace(/\n(?=.*"id":"coa-direct-1")/, '\n\n');
  const path = join(dir, 'big.coa.jsonl');
  writeFileSync(path, text);
  return { path, lines };
}

test('index: offsets read back every line exactly, summaries agree with the core, worker = in-process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-'));
  try {
    const { path, lines } = makeFile(dir, 40);
    const index: RecordSummary[] = [];
    const count = await buildIndex(path, (rows) => index.push(...rows), { batchSize: 64 });
    assert.equal(count, lines.length);
    assert.equal(index.length, lines.length);
    assert.deepEqual(await readLines(path, index), lines);
    const bad = index.filter((r) => r.error);
    assert.equal(bad.length, 1);
    assert.match(bad[0].error!, /^6:\d+: COA101/);
    const good = lines.filter((l) => l !== '{"id": "broken"').map((l) => JSON.parse(l));
    const rewards = scoreRecords(good, 'em');
    assert.deepEqual(
      index.filter((r) => !r.error).map((r) => r.reward),
      rewards.map((b) => b.total),
    );
    assert.deepEqual(
      index.filter((r) => !r.error).map((r) => r.toolCalls),
      rewards.map((b) => b.tool_calls),
    );
    assert.deepEqual(stagesOf(index), ['rl', 'sft2']);

    // The first page comes from the head of the file alone and equals the index's first rows.
    assert.deepEqual(await firstRecords(path, 50), index.slice(0, 50));

    // The worker thread, bundled as scripts/build.mjs bundles it (the editor's path), builds the same index.
    const bundle = join(dir, 'browser-worker.js');
    await build({
      entryPoints: [join(root, 'src/extension/providers/browser/worker.ts')],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      mainFields: ['module', 'main'],
      logLevel: 'warning',
    });
    const fromWorker: RecordSummary[] = [];
    await new Promise<void>((resolve, reject) => {
      const w = new Worker(bundle, { workerData: { path, scheme: 'em' } });
      w.on('message', (m: WorkerMessage) => {
        if (m.type === 'batch') fromWorker.push(...(m.rows as RecordSummary[]));
        else if (m.type === 'done') void w.terminate().then(() => resolve());
        else if (m.type === 'error') reject(new Error(m.message));
      });
      w.on('error', reject);
    });
    assert.deepEqual(fromWorker, index);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('query: failures, tool calls, stage, step, sort by reward, paging and jump', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-'));
  try {
    const { path } = makeFile(dir, 10);
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    const failures = runQuery(index, { failuresOnly: true, pageSize: 1000 });
    assert.ok(failures.total > 0 && failures.total < index.length);
    assert.ok(failures.rows.every((r) => !r.error && ((r.reward ?? 0) <= 0 || r.formatOk === false)));
    const many = runQuery(index, { moreToolCalls: 1, pageSize: 1000 });
    assert.equal(many.total, index.filter((r) => (r.toolCalls ?? -1) > 1).length);
    const em1 = runQuery(index, { em: 1, minReward: 0.5, pageSize: 1000 });
    assert.ok(em1.total > 0);
    assert.equal(em1.total, index.filter((r) => r.em === 1 && (r.reward ?? -1) >= 0.5).length);
    assert.equal(runQuery(index, { em: 0, pageSize: 1000 }).total, index.filter((r) => r.em === 0).length);
    const rl3 = runQuery(index, { stage: 'rl', step: 3, pageSize: 1000 });
    assert.equal(rl3.total, examples.length);
    assert.ok(rl3.rows.every((r) => r.stage === 'rl' && r.step === 3));
    const sorted = runQuery(index, { sort: 'reward', order: 'desc', pageSize: 1000 });
    const rewards = sorted.rows.map((r) => r.reward);
    assert.equal(rewards.at(-1), null, 'the bad line sorts last');
    const scored = rewards.filter((x): x is number => x !== null);
    assert.deepEqual(
      scored,
      [...scored].sort((a, b) => b - a),
    );
    const page2 = runQuery(index, { pageSize: 25, page: 2 });
    assert.deepEqual(page2.rows, index.slice(50, 75));
    assert.equal(runQuery(index, { pageSize: 25, page: 999 }).page, Math.ceil(index.length / 25) - 1);
    const target = index[77];
    assert.deepEqual(findPage(index, { pageSize: 25 }, target.id), { page: 3, i: 77 });
    assert.deepEqual(findPage(index, { pageSize: 25 }, String(target.line)), { page: 3, i: 77 });
    assert.equal(findPage(index, { pageSize: 25 }, 'no-such-id'), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('browser: questions (converted verl rows) show without a reward and are never failures', async () => {
  const { importVerlParquet } = await import('../../../src/core/importers/verl-parquet');
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-'));
  try {
    const questions = (await importVerlParquet(join(root, 'examples/data/autocoa/hotpotqa_dev.parquet'))).slice(0, 50);
    const path = join(dir, 'q.coa.jsonl');
    writeFileSync(path, [...questions.map((q) => JSON.stringify(q)), examples[0]].join('\n') + '\n');
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows));
    assert.equal(index.filter((r) => r.isQuestion).length, 50);
    assert.ok(index.filter((r) => r.isQuestion).every((r) => r.reward === null && r.formatOk === null));
    const failures = runQuery(index, { failuresOnly: true, pageSize: 1000 });
    assert.ok(failures.rows.every((r) => !r.isQuestion));
    assert.equal(
      questionsLine(index),
      '50 questions (no responses yet) · golden answers on 50 (100 %) · sources: HotpotQA 50',
    );
    assert.equal(questionsLine(index.filter((r) => !r.isQuestion)), '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("reward column: a record's stored reward under its run's scheme (RL-2-OTC's real rollouts: 0.866 stays 0.866); only records without one are recomputed, and say so", async () => {
  const { demoRunFile } = await import('../../fixtures/demoRun');
  const dir = mkdtempSync(join(tmpdir(), 'coa-browser-'));
  try {
    const lines = demoRunFile('stages/rl2-otc/rollouts.coa.jsonl').toString('utf8').split('\n').filter(Boolean);
    const records = lines.map((l) => JSON.parse(l) as { reward: { total: number; scheme: string; em: number } });
    // The same rollouts with one record's stored reward dropped: that one alone is recomputed, with the configured scheme.
    const bare = { ...JSON.parse(lines[0]) };
    delete bare.reward;
    const path = join(dir, 'rollouts.coa.jsonl');
    writeFileSync(path, [JSON.stringify({ ...bare, id: 'no-stored-reward' }), ...lines].join('\n') + '\n');
    const index: RecordSummary[] = [];
    await buildIndex(path, (rows) => index.push(...rows), { scheme: 'em' });
    const stored = index.slice(1);
    assert.deepEqual(
      stored.map((r) => r.reward),
      records.map((r) => r.reward.total),
    );
    assert.ok(stored.every((r) => r.stored && r.scheme === 'otc-grpo'));
    // The case the em recomputation hid: a right answer with more calls than the group's fewest, 0.866 under OTC-GRPO.
    const partial = stored.filter((r) => r.em === 1 && r.reward! > 0 && r.reward! < 1);
    assert.ok(
      partial.length > 0 && partial.some((r) => Math.abs(r.reward! - 0.866) < 0.001),
      'right answers scored below 1 by OTC-GRPO',
    );
    assert.deepEqual(
      [index[0].stored, index[0].scheme, index[0].reward],
      [false, 'em', scoreRecords([bare], 'em')[0].total],
    );
    // Sorting and the reward filter read the stored values.
    const atLeast = runQuery(index, { minReward: 0.9, pageSize: 10_000 }).rows;
    assert.ok(atLeast.every((r) => r.reward! >= 0.9) && !atLeast.some((r) => partial.includes(r)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
