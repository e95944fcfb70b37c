// The record view's pure path on a real run's rollouts (test/fixtures/demo-run: RL-2-OTC, 1,536 records, written
// before line indexes: its lines are parsed): the live panel lists a step's rollouts by line, the host knows their
// byte offsets, the record is read at its offset, and its notebook says which line
// of which file it is, shows its steps and a reward equal to the one its run stored (OTC-GRPO with the run's own
// n), and saves back byte-identical.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoRun } from '../../fixtures/demoRun';
import { rolloutsOfStep } from '../../../src/extension/providers/livePanel/records';
import { StepIndex } from '../../../src/core/lineIndex';
import { readLineAt } from '../../../src/extension/providers/notebook/recordFile';
import { notebookToText, textToNotebook } from '../../../src/extension/providers/notebook/codec';
import {
  META_KEY,
  REWARD_MIME,
  cellMeta,
  type NotebookMeta,
  type RewardOutput,
} from '../../../src/extension/providers/notebook/cells';
import { readFileSync } from 'node:fs';

const run = demoRun(mkdtempSync(join(tmpdir(), 'coa-record-view-')));
const FILE = join(run, 'stages/rl2-otc/rollouts.coa.jsonl');
const lines = readFileSync(FILE, 'utf8').split('\n').filter(Boolean);

const rewardOf = (text: string, line: number) => {
  const nb = textToNotebook(text, { scheme: 'em', within: { line, file: 'stages/rl2-otc/rollouts.coa.jsonl' } });
  const out = nb.cells.flatMap((c) => (c.outputs ?? []).flat()).find((o) => o.mime === REWARD_MIME)
    ?.data as RewardOutput;
  return { nb, out };
};

test('a listed rollout of a 1,536-record file is read at its offset and opens as its own notebook', async () => {
  assert.equal(lines.length, 1536);
  const index = new StepIndex(FILE);
  const { items, total } = await rolloutsOfStep(index, 40);
  assert.ok(total > 0 && items.length === total);
  for (const it of [items[0], items.at(-1)!]) {
    const where = (await index.locate(it.line))!;
    const at = await readLineAt(FILE, it.line + 1, where);
    assert.equal(at.offset, where.offset, 'the offset the host keeps is where the line is');
    assert.equal(at.bytes.toString(), lines[it.line]);
    const text = at.bytes.toString() + at.eol;
    const { nb, out } = rewardOf(text, it.line + 1);
    const header = nb.cells[0];
    // Markdown-escaped: `rl2\-otc`.
    assert.ok(
      header.value.includes(`*line ${(it.line + 1).toLocaleString('en-US')} of stages/rl2\\-otc/rollouts.coa.jsonl`),
      header.value,
    );
    assert.equal(cellMeta(header.metadata)?.line, it.line + 1);
    assert.deepEqual((nb.metadata[META_KEY] as NotebookMeta).record, {
      line: it.line + 1,
      file: 'stages/rl2-otc/rollouts.coa.jsonl',
    });
    const steps = nb.cells.filter((c) => cellMeta(c.metadata)?.kind === 'step');
    assert.ok(steps.length >= 3, 'think, action, observation, …: one cell each');
    assert.equal(steps.map((c) => c.value).join(''), JSON.parse(lines[it.line]).response);
    assert.equal(out.id, it.id);
    assert.equal(notebookToText(nb), text, 'an unedited record view saves the line byte-identical');
  }
});

test("each RL-2-OTC record alone is rescored with its run's n: the recomputed reward equals the stored one", () => {
  let same = 0;
  const differ: string[] = [];
  for (const [i, l] of lines.entries()) {
    const { out } = rewardOf(l + '\n', i + 1);
    assert.equal(out.breakdown.scheme, 'otc-grpo');
    assert.equal(out.stored?.scheme, 'otc-grpo');
    if (Math.abs(out.breakdown.total - out.stored!.total) < 1e-9) same++;
    else differ.push(`${out.id}: stored ${out.stored!.total}, recomputed ${out.breakdown.total}`);
  }
  // Read alone, a record cannot see its group: without the stored n, every correct answer would lose r_tool's n.
  assert.deepEqual(differ, []);
  assert.equal(same, lines.length);
});
