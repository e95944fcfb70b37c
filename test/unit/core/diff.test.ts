// The checkpoint diff (src/core/diff): two evaluations of AutoCoA's 2,935 test questions (the parquet, one exact
// repeat row dropped by the importer) → the flip table whose net equals the EM difference exactly, as `coa stats`
// computes each file's EM on its own; groups by source; trajectories aligned by step; a run directory's stages.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readDiff } from '../../../src/core/diff/read';
import { flipTable } from '../../../src/core/diff/flips';
import { alignTrajectories } from '../../../src/core/diff/align';
import { iterateJsonlText } from '../../../src/core/jsonl';
import { StatsAccumulator } from '../../../src/core/stats';
import { main } from '../../../src/cli/main';
import { resolveStage } from '../../../src/cli/diff';
import { autocoaEvalPair } from '../../fixtures/autocoaEvals';
import { demoRun } from '../../fixtures/demoRun';

/** A file's EM and record count the way `coa stats` gets them: every record's stored breakdown, on its own. */
function statsOf(text: string): { em: number; n: number } {
  const acc = new StatsAccumulator();
  for (const e of iterateJsonlText(text)) acc.add(e.record!.reward!, { dialect: 'coa' });
  const all = acc.rows()[0];
  return { em: all.em!, n: all.count };
}

let pair: Awaited<ReturnType<typeof autocoaEvalPair>>;
test.before(async () => {
  pair = await autocoaEvalPair();
});

test('two evaluations of the 2,935 AutoCoA test questions: gained − lost is N × ΔEM exactly, the groups add up', () => {
  const data = readDiff({ text: pair.a, label: 'a.jsonl' }, { text: pair.b, label: 'b.jsonl' });
  assert.equal(data.keyBy, 'id', 'one record per id, the same ids: paired by id');
  assert.equal(pair.questions, 2935);
  const t = flipTable(data.questions, data.window);
  const A = statsOf(pair.a);
  const B = statsOf(pair.b);
  assert.equal(t.totals.shared, A.n);
  assert.equal(t.totals.shared, B.n);
  assert.equal(t.onlyA + t.onlyB, 0);
  // Integers: the number of right answers each file has, from its own EM.
  const rightA = Math.round(A.em * A.n);
  const rightB = Math.round(B.em * B.n);
  assert.equal(t.totals.gained - t.totals.lost, rightB - rightA);
  assert.equal(t.totals.net, rightB - rightA);
  assert.equal(t.totals.mixed, 0, 'one sample per question: every question is right or wrong on each side');
  assert.ok(Math.abs(t.totals.delta_em - (B.em - A.em)) < 1e-12, `${t.totals.delta_em} vs ${B.em - A.em}`);
  assert.equal(t.totals.gained + t.totals.lost + t.totals.both_right + t.totals.both_wrong, 2935);
  assert.ok(t.totals.gained > 0 && t.totals.lost > 0);
  // Grouped by what the data says: the parquet's source files (7), each group's counts summing to the totals.
  const source = t.dimensions.find((d) => d.name === 'source');
  assert.ok(source, `dimensions: ${t.dimensions.map((d) => d.name)}`);
  assert.deepEqual(
    source.groups.map((g) => g.value),
    ['2WIKI_dev', 'Bamboogle_dev', 'Fanout_dev', 'HotpotQA_dev', 'MuSiQue_dev', 'NQ_dev', 'TriviaQA_dev'],
  );
  for (const k of ['shared', 'gained', 'lost', 'both_right', 'both_wrong', 'net'] as const) {
    assert.equal(
      source.groups.reduce((s, g) => s + g.counts[k], 0),
      t.totals[k],
      k,
    );
  }
  // Flips first, and each row's class agrees with its EMs.
  assert.ok(t.rows[0].cls === 'gained' || t.rows[0].cls === 'lost');
  for (const r of t.rows)
    assert.equal(
      r.cls,
      r.b!.em > r.a!.em ? 'gained' : r.b!.em < r.a!.em ? 'lost' : r.a!.em === 1 ? 'both_right' : 'both_wrong',
    );
  // ΔTC is the mean of B's minus A's tool calls per question.
  const tc = (text: string) => [...iterateJsonlText(text)].reduce((s, e) => s + e.record!.reward!.tool_calls, 0) / 2935;
  assert.ok(Math.abs(t.totals.delta.tool_calls - (tc(pair.b) - tc(pair.a))) < 1e-9);
});

test('rollouts of two RL stages: paired by question, the last step both sampled; a run directory names them by stage', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-diff-'));
  try {
    demoRun(dir);
    // The demo run has no eval/ files: its stages resolve to their rollouts.
    const fa = resolveStage(dir, 'rl2', 'test');
    assert.equal(fa, join(dir, 'stages/rl2/rollouts.coa.jsonl'));
    const out: string[] = [];
    const log = console.log;
    console.log = (s: string) => void out.push(s);
    try {
      assert.equal(await main(['diff', dir, 'rl2', 'rl2-otc', '--json']), 0);
    } finally {
      console.log = log;
    }
    const j = JSON.parse(out.join('\n'));
    assert.equal(j.paired_by, 'question');
    assert.equal(j.window.kind, 'step');
    assert.deepEqual(j.a.reward, { source: 'stored', schemes: ['autocoa'] });
    assert.deepEqual(j.b.reward, { source: 'stored', schemes: ['otc-grpo'] });
    const rows = j.rows as { class: string | null; a: { em: number; n: number }; b: { em: number; n: number } }[];
    assert.ok(
      rows.every((r) => r.a.n > 1),
      'G samples per question at the step',
    );
    const net = rows.reduce((s, r) => s + (r.b.em - r.a.em), 0);
    assert.ok(Math.abs(net - j.totals.net) < 1e-12);
    assert.ok(Math.abs(j.totals.delta_em * j.totals.shared - net) < 1e-9);
    // A stage the run does not have is named with the files looked for.
    await assert.rejects(
      () => main(['diff', dir, 'rl2', 'sft9']),
      /no file for "sft9" \(looked for eval\/sft9-agent-test\.jsonl, stages\/sft9\/rollouts\.coa\.jsonl\)/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the same record file twice: nothing flips; a stored reward is used as stored, --scheme rescoring on request', () => {
  const rec = (id: string, answer: string, reward?: number) =>
    JSON.stringify({
      id,
      question: `Q ${id}?`,
      golden_answers: ['x'],
      response: `<think>t</think>\n<answer>${answer}</answer>`,
      ...(reward === undefined
        ? {}
        : {
            reward: {
              scheme: 'otc-grpo',
              em: answer === 'x' ? 1 : 0,
              f1: 0,
              format_ok: true,
              violations: [],
              tool_calls: 0,
              optimal_tool_calls: null,
              r_tool: reward,
              r_correct: 1,
              total: reward,
            },
          }),
    });
  const text = [rec('1', 'x', 0.866), rec('2', 'y', 0)].join('\n');
  const d = readDiff({ text, label: 'a' }, { text, label: 'b' });
  const t = flipTable(d.questions, d.window);
  assert.deepEqual(
    [t.totals.gained, t.totals.lost, t.totals.both_right, t.totals.both_wrong, t.totals.net],
    [0, 0, 1, 1, 0],
  );
  assert.equal(t.rows.find((r) => r.key === '1')!.a!.total, 0.866, 'the stored reward, not a recomputed one');
  const rescored = readDiff({ text, label: 'a' }, { text, label: 'b' }, { scheme: 'em' });
  assert.deepEqual(rescored.a.reward, { source: 'scored', scheme: 'em' });
  assert.equal(flipTable(rescored.questions, rescored.window).rows.find((r) => r.key === '1')!.a!.total, 1);
});

test('two trajectories aligned by step: the first step where they part is marked', () => {
  const a =
    '<think>Who directed Jaws?</think>\n<search>Jaws director</search>\n<observation>Jaws (1975) by Steven Spielberg.</observation>\n<think>Spielberg.</think>\n<answer>Steven Spielberg</answer>';
  const b =
    '<think>Who  directed Jaws?</think>\n<search>Jaws 1975 film</search>\n<observation>Jaws is a film.</observation>\n<answer>Jaws</answer>';
  const al = alignTrajectories({ response: a }, { response: b });
  assert.equal(al.divergence, 1, 'the thoughts match (spaces folded); the queries differ');
  assert.deepEqual(
    al.rows.map((r) => [r.a?.kind ?? null, r.b?.kind ?? null, r.same]),
    [
      ['think', 'think', true],
      ['action', 'action', false],
      ['observation', 'observation', false],
      ['think', 'answer', false],
      ['answer', null, false],
    ],
  );
  assert.equal(alignTrajectories({ response: a }, { response: a }).divergence, null);
});

test('coa diff refuses what it cannot compare, with the reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-diff-'));
  try {
    writeFileSync(join(dir, 'a.jsonl'), '');
    await assert.rejects(() => main(['diff', join(dir, 'a.jsonl')]), /give two files/);
    await assert.rejects(
      () => main(['diff', join(dir, 'a.jsonl'), join(dir, 'missing.jsonl')]),
      /missing\.jsonl: no such file/,
    );
    await assert.rejects(
      () => main(['diff', join(dir, 'a.jsonl'), join(dir, 'a.jsonl'), '--step', 'x']),
      /--step expects a step number/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
