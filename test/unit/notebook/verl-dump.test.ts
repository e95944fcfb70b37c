// A verl rollout dump (trainer.rollout_data_dir/<step>.jsonl, test/fixtures/verl) opens directly: as a notebook
// (codec: header + step cells per row, rewards from the core equal to those CoA's verl reward wrote into the dump,
// read-only) and in the paged trajectory browser (first page, full index).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeNotebook, notebookToText, VERL_DUMP_READONLY } from '../../../src/extension/providers/notebook/codec';
import {
  META_KEY,
  REWARD_MIME,
  type NotebookMeta,
  type RewardOutput,
} from '../../../src/extension/providers/notebook/cells';
import { buildIndex, firstRecords, readOptions } from '../../../src/extension/providers/browser/indexer';
import type { RecordSummary } from '../../../src/protocols/browser';

const DUMP = join(__dirname, '../../fixtures/verl/rollouts/3.jsonl');
const rows = readFileSync(DUMP, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));

test('a verl dump decodes to one record per row, with the reward verl trained on, read-only', () => {
  const nb = decodeNotebook(readFileSync(DUMP), { scheme: 'em' });
  const headers = nb.cells.filter((c) => (c.metadata?.[META_KEY] as { kind?: string })?.kind === 'header');
  assert.equal(headers.length, rows.length);
  assert.ok(nb.cells.every((c) => (c.metadata?.[META_KEY] as { kind?: string })?.kind !== 'error'));
  assert.match(headers[0].value, /Who was Evan Morris a lobbyist for\?/);
  const rewards = nb.cells
    .flatMap((c) => c.outputs ?? [])
    .map((o) => o.find((i) => i.mime === REWARD_MIME)?.data as RewardOutput | undefined)
    .filter((x): x is RewardOutput => !!x);
  assert.deepEqual(
    rewards.map((r) => r.id),
    rows.map((_, i) => `verl-3-${i}`),
  );
  assert.deepEqual(
    rewards.map((r) => r.breakdown.total),
    rows.map((r) => r.score),
  );
  assert.deepEqual(
    rewards.map((r) => (r.breakdown.format_ok ? 1 : 0)),
    rows.map((r) => r.format_ok),
  );
  assert.equal((nb.metadata[META_KEY] as NotebookMeta).readonly, VERL_DUMP_READONLY);
  assert.throws(() => notebookToText(nb), /cannot be saved: verl rollout dump/);
});

test('the trajectory browser pages a verl dump: first page and full index agree, rewards scored by the core', async () => {
  const first = await firstRecords(DUMP, 3, { scheme: 'em' });
  assert.deepEqual(
    first.map((r) => r.id),
    ['verl-3-0', 'verl-3-1', 'verl-3-2'],
  );
  const all: RecordSummary[] = [];
  await buildIndex(DUMP, (batch) => all.push(...batch), { scheme: 'em' });
  assert.equal(all.length, rows.length);
  assert.deepEqual(
    all.map((r) => r.reward),
    rows.map((r) => r.score),
  );
  assert.deepEqual(
    all.map((r) => r.step),
    rows.map(() => 3),
  );
  assert.ok(all.every((r) => !r.error));
});

test("a dump opens in its run's dialect: an answer that did not search is not read as another dialect", async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const mixed = rows.map((r, i) =>
    i % 2 ? { ...r, output: '<think> I know this one. </think>\n<answer> Genentech </answer>' } : r,
  );
  const file = join(mkdtempSync(join(tmpdir(), 'coa-verl-dialect-')), '3.jsonl');
  writeFileSync(file, mixed.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const nb = decodeNotebook(readFileSync(file), { scheme: 'em' });
  const headers = nb.cells.filter((c) => (c.metadata?.[META_KEY] as { kind?: string })?.kind === 'header');
  assert.deepEqual(
    headers.map((h) => /· dialect ([a-z0-9-]+)/.exec(h.value)?.[1]),
    rows.map(() => 'search-r1'),
  );
  // the paged browser reads the dump with the same dialect
  const { parse } = await readOptions(file);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  assert.deepEqual(
    lines.map((l, i) => (parse!(l, i + 1).record as { dialect?: string }).dialect),
    rows.map(() => 'search-r1'),
  );
});
