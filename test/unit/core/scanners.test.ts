// The reward-hacking scanners (src/core/scanners.ts) on a whole demo run's real RL-2 rollouts: nothing fires on the
// clean file; a format-gate exploit and a leaked answer injected into two of its records are flagged on exactly
// those, by `coa scan` and by the environment server's POST /v1/scan (what the trainer calls every step).
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iterateJsonlText } from '../../../src/core/jsonl';
import { scanBatch, scanRecord, lengthLimit } from '../../../src/core/scanners';
import type { TrajectoryRecord } from '../../../src/core/record';
import { scanFile } from '../../../src/cli/scan';
import { startEnvServer } from '../../../src/env/server';
import { demoRunFile, DEMO_RUN } from '../../fixtures/demoRun';

const RL2 = demoRunFile('stages/rl2/rollouts.coa.jsonl').toString('utf8');
const records = (text: string) => [...iterateJsonlText(text)].map((e) => e.record!);

/** The real rollouts with two records changed: a broken format kept rewarded, a golden answer written into a query. */
function injected(): {
  text: string;
  gate: TrajectoryRecord;
  leak: TrajectoryRecord;
  gateLine: number;
  leakLine: number;
} {
  const rs = records(RL2);
  const rewarded = rs
    .map((r, i) => [r, i] as const)
    .filter(([r]) => r.reward!.total > 0 && /<search>/.test(r.response));
  const [gate, gi] = rewarded[10];
  const [leak, li] = rewarded.find(([r], k) => k > 40 && r.meta!.step === rewarded[40][0].meta!.step)!;
  // A grader without the format gate scored it: the closing answer tag is gone, the stored reward still 1.
  rs[gi] = { ...gate, response: gate.response.replace('</answer>', '') };
  // The first query carries the golden answer before any observation shows it.
  rs[li] = {
    ...leak,
    response: leak.response.replace(/<search>[^<]*<\/search>/, `<search> ${leak.golden_answers![0]} </search>`),
  };
  return {
    text: rs.map((r) => JSON.stringify(r)).join('\n') + '\n',
    gate: rs[gi],
    leak: rs[li],
    gateLine: gi + 1,
    leakLine: li + 1,
  };
}

test("the demo run's clean RL-2 rollouts: no rule fires on any of its 1,536 records", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-scan-'));
  try {
    writeFileSync(join(dir, 'rl2.jsonl'), RL2);
    const s = await scanFile(join(dir, 'rl2.jsonl'), { positional: [], flags: {} });
    assert.equal(s.records, 1536);
    assert.ok(
      s.steps.length > 1 && s.steps.every((x) => x.scanned > 0 && x.length_limit !== null),
      'one batch per step, each judged for length',
    );
    assert.deepEqual(s.flagged, []);
    assert.deepEqual(Object.values(s.totals), [0, 0, 0, 0, 0]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an injected format-gate exploit and a leaked answer are flagged, on those records only (coa scan)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-scan-'));
  try {
    const inj = injected();
    writeFileSync(join(dir, 'rl2.jsonl'), inj.text);
    const s = await scanFile(join(dir, 'rl2.jsonl'), { positional: [], flags: {} });
    assert.deepEqual(
      s.flagged.map((f) => [f.line, f.findings.map((x) => x.rule)]),
      [
        [inj.gateLine, ['format_gate']],
        [inj.leakLine, ['answer_in_query']],
      ].sort((a, b) => (a[0] as number) - (b[0] as number)),
    );
    const gate = s.flagged.find((f) => f.line === inj.gateLine)!.findings[0];
    assert.match(gate.detail, /^reward 1 while COA\d{3}.* fires$/);
    const leak = s.flagged.find((f) => f.line === inj.leakLine)!.findings[0];
    assert.match(leak.detail, new RegExp(`query 1 .* contains the golden answer "${inj.leak.golden_answers![0]}"`));
    assert.equal(inj.leak.response.slice(leak.start!, leak.end!), `<search> ${inj.leak.golden_answers![0]} </search>`);
    assert.deepEqual([s.totals.format_gate, s.totals.answer_in_query, s.totals.repeated_query], [1, 1, 0]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("POST /v1/scan: a step's records as the trainer sends them → counts, scan_* metrics and the flagged indices", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-scan-'));
  const server = await startEnvServer({
    corpus: join(DEMO_RUN, 'data/corpus.jsonl'),
    indexDir: join(dir, 'idx'),
    dialect: 'coa',
  });
  try {
    const inj = injected();
    const step = inj.leak.meta!.step;
    const batch = records(inj.text)
      .filter((r) => r.meta!.step === step)
      .map(({ tokens: _t, ...r }) => r);
    const res = await fetch(`${server.url}/v1/scan`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records: batch, params: { dialect: 'coa' } }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      counts: Record<string, number>;
      metrics: Record<string, number>;
      flagged: { index: number; findings: { rule: string }[] }[];
      scanned: number;
    };
    assert.equal(body.scanned, batch.length);
    assert.equal(body.metrics.scan_answer_in_query, 1);
    assert.deepEqual(
      body.flagged.map((f) => [batch[f.index].id, f.findings[0].rule]),
      [
        [inj.leak.id, 'answer_in_query'],
        ...(inj.gate.meta!.step === step ? [[inj.gate.id, 'format_gate']] : []),
      ].sort(),
    );
    const bad = await fetch(`${server.url}/v1/scan`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ records: [{ id: 1 }] }),
    });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: { message: string } }).error.message, /^records\[0\]\.id/);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('each rule: repeated query, answer before thought, a length outlier; unrewarded records are not judged', () => {
  const base = { question: 'Where was Ada born?', golden_answers: ['London'] };
  const rec = (id: string, response: string, total = 1): TrajectoryRecord => ({
    id,
    ...base,
    response,
    reward: {
      scheme: 'em',
      em: total,
      f1: total,
      format_ok: true,
      violations: [],
      tool_calls: 0,
      optimal_tool_calls: null,
      r_tool: 1,
      r_correct: total,
      total,
    },
  });
  const ok =
    '<think>search</think>\n<search>Ada birthplace</search>\n<observation>Ada was born in London.</observation>\n<think>London.</think>\n<answer>London</answer>';
  assert.deepEqual(scanRecord(rec('a', ok)).findings, []);
  const twice =
    '<think>s</think>\n<search>Ada  Birthplace</search>\n<observation>x</observation>\n<search>ada birthplace</search>\n<observation>London</observation>\n<answer>London</answer>';
  assert.deepEqual(
    scanRecord(rec('b', twice)).findings.map((f) => f.rule),
    ['repeated_query'],
  );
  assert.deepEqual(scanRecord(rec('c', twice, 0)).findings, [], 'a failure is not an exploit');
  assert.deepEqual(
    scanRecord(
      rec('d', '<search>Ada</search>\n<observation>London</observation>\n<answer>London</answer>'),
    ).findings.map((f) => f.rule),
    ['answer_before_thought'],
  );
  assert.deepEqual(
    scanRecord(rec('e', '<think></think>\n<answer>London</answer>')).findings,
    [],
    'an empty thought is a thought step',
  );
  // Without a stored reward, a right answer counts as rewarded.
  const { reward: _r, ...noReward } = rec('f', '<answer>London</answer>');
  assert.deepEqual(
    scanRecord(noReward).findings.map((f) => f.rule),
    ['answer_before_thought'],
  );
  // The answer already in the question or in an earlier observation is no leak.
  assert.deepEqual(
    scanRecord({
      ...rec(
        'g',
        '<think>t</think>\n<search>London birth records Ada</search>\n<observation>o</observation>\n<answer>London</answer>',
      ),
      question: 'Was Ada born in London?',
    }).findings,
    [],
  );
  // Length: 9 ordinary answers and one padded far past them.
  const batch = Array.from({ length: 9 }, (_, i) =>
    rec(`n${i}`, `<think>${'word '.repeat(10 + i)}</think>\n<answer>London</answer>`),
  );
  batch.push(rec('long', `<think>${'word '.repeat(400)}</think>\n<answer>London</answer>`));
  const s = scanBatch(batch);
  assert.deepEqual(
    s.flagged.map((f) => [batch[f.index].id, f.findings.map((x) => x.rule)]),
    [['long', ['length_outlier']]],
  );
  assert.equal(lengthLimit([1, 2, 3]), null, 'too few to judge');
});

test("a stage's flagged.coa.jsonl as the trainer writes it (findings in meta.scan): the live panel lists a step's examples with their rules", async () => {
  const { flaggedOfStep } = await import('../../../src/extension/providers/livePanel/records');
  const { StepIndex } = await import('../../../src/core/lineIndex');
  const dir = mkdtempSync(join(tmpdir(), 'coa-scan-'));
  try {
    const inj = injected();
    const batch = records(inj.text).filter((r) => r.meta!.step === inj.leak.meta!.step);
    const s = scanBatch(batch);
    const file = join(dir, 'flagged.coa.jsonl');
    writeFileSync(
      file,
      s.flagged
        .map((f) => JSON.stringify({ ...batch[f.index], meta: { ...batch[f.index].meta, scan: f.findings } }))
        .join('\n') + '\n',
    );
    const items = await flaggedOfStep(new StepIndex(file), inj.leak.meta!.step!);
    assert.deepEqual(
      items.map((i) => [i.id, i.rules]),
      s.flagged.map((f) => [batch[f.index].id, f.findings.map((x) => x.rule)]),
    );
    assert.ok(items.some((i) => i.id === inj.leak.id && /golden answer/.test(i.detail)));
    assert.deepEqual(await flaggedOfStep(new StepIndex(file), 99999), []);
    assert.deepEqual(await flaggedOfStep(new StepIndex(join(dir, 'none.jsonl')), 1), [], 'no file: nothing flagged');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
