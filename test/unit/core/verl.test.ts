// verl's files read as ours: the metrics file (verl/utils/tracking.py FileLogger) as protocol events with the core's
// alerts, the rollout dumps (ray_trainer.py _dump_generations) as records — on fixtures written the way verl writes
// them (test/fixtures/verl/generate.py cites the sources), and `coa convert --from verl-rollouts` end to end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventSchema, type TrainerEvent } from '../../../src/core/events';
import { verlTail } from '../../../src/core/verl/runTail';
import { looksLikeVerlMetrics, parseVerlLine, VerlMetricsAdapter, verlRunName } from '../../../src/core/verl/metrics';
import {
  importVerlRollouts,
  isVerlRolloutRow,
  stepSignals,
  verlRunDialect,
} from '../../../src/core/importers/verl-rollouts';

const root = join(__dirname, '../../..');
const FIX = join(root, 'test/fixtures/verl');
const METRICS = join(FIX, 'metrics.jsonl');
const DUMPS = join(FIX, 'rollouts');

function tmp(t: { after: (f: () => void) => void }): string {
  const d = mkdtempSync(join(tmpdir(), 'coa-verl-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

test('the metrics file becomes valid protocol events: run_started, one metrics event per step, NaN as null', async () => {
  const batch = await verlTail(METRICS, { rolloutDir: DUMPS, now: () => 1 }).read();
  assert.deepEqual(batch.issues, []);
  for (const e of batch.events) assert.ok(EventSchema.safeParse(e).success, JSON.stringify(e).slice(0, 200));
  assert.equal(batch.events[0].type, 'run_started');
  const metrics = batch.events.filter((e): e is Extract<TrainerEvent, { type: 'metrics' }> => e.type === 'metrics');
  assert.deepEqual(
    metrics.map((m) => m.step),
    Array.from({ length: 16 }, (_, i) => i + 1),
  );
  const lines = readFileSync(METRICS, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(metrics[0].values['critic/score/mean'], lines[0].data['critic/score/mean']);
  assert.equal(Object.keys(metrics[0].values).length, Object.keys(lines[0].data).length + 1); // + coa/all_wrong_groups
  assert.equal(metrics[4].values['actor/grad_norm'], null);
  // From the dumps: step 2's second prompt has no correct sample (1 of 2 groups), step 3 has two broken formats.
  assert.equal(metrics[1].values['coa/all_wrong_groups'], 0.5);
  assert.equal(metrics[2].values['coa/format_error_rate'], 2 / 8);
  assert.equal(metrics[3].values['coa/all_wrong_groups'], undefined);
});

test('the core alerts fire on verl names: a tool-call explosion once, after the calls per trajectory triple', async () => {
  const batch = await verlTail(METRICS, { rolloutDir: DUMPS }).read();
  const alerts = batch.events.filter((e): e is Extract<TrainerEvent, { type: 'alert' }> => e.type === 'alert');
  assert.deepEqual(
    alerts.map((a) => a.kind),
    ['tool_call_explosion'],
  );
  assert.ok(alerts[0].step >= 10 && alerts[0].step <= 16, String(alerts[0].step));
  assert.match(alerts[0].message, /tool calls per trajectory/);
  // Without the dumps there is no all-wrong signal but the explosion still fires.
  const bare = await verlTail(METRICS).read();
  assert.deepEqual(
    bare.events.filter((e) => e.type === 'alert').map((e) => (e as { kind: string }).kind),
    ['tool_call_explosion'],
  );
});

test('a live file: appended lines, a malformed line named by line and column, a restarted run resets', async (t) => {
  const d = tmp(t);
  const f = join(d, 'exp.jsonl');
  const lines = readFileSync(METRICS, 'utf8').split('\n');
  writeFileSync(f, lines.slice(0, 3).join('\n') + '\n');
  const tail = verlTail(f);
  const first = await tail.read();
  assert.equal(first.events.filter((e) => e.type === 'metrics').length, 3);
  appendFileSync(f, '{"step": "x", "data": {}}\n' + lines[3] + '\n{"step":5,"da');
  const second = await tail.read();
  assert.deepEqual(
    second.issues.map((i) => [i.line, i.column, i.message.split(':')[0]]),
    [[4, 2, 'step']],
  );
  assert.deepEqual(
    second.events.map((e) => e.type),
    ['metrics'],
  );
  writeFileSync(f, lines[0] + '\n'); // verl opens the file "wb": a restarted run truncates it
  const third = await tail.read();
  assert.equal(third.reset, true);
  assert.deepEqual(
    third.events.map((e) => e.type),
    ['run_started', 'metrics'],
  );
});

test('detection and parsing of verl lines', () => {
  const first = readFileSync(METRICS, 'utf8').split('\n')[0];
  assert.ok(looksLikeVerlMetrics(first));
  assert.ok(!looksLikeVerlMetrics('{"v":1,"type":"metrics","step":1,"data":{}}'));
  assert.ok(!looksLikeVerlMetrics('{"id":"a","question":"q","response":"r"}'));
  const bad = parseVerlLine('{"step": 1, "data": [1]}');
  assert.ok('error' in bad && bad.error.startsWith('data:') && bad.column === 13);
});

test('rollout dumps import as records: question, golden answers, dialect, groups by prompt, verl keys kept', () => {
  const text = readFileSync(join(DUMPS, '3.jsonl'), 'utf8');
  const rows = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.ok(rows.every(isVerlRolloutRow));
  const { records, issues } = importVerlRollouts(text);
  assert.deepEqual(issues, []);
  assert.equal(records.length, 8);
  assert.equal(records[0].id, 'verl-3-0');
  assert.equal(records[0].question, 'Who was Evan Morris a lobbyist for?');
  assert.deepEqual(records[0].golden_answers, ['Genentech', 'Roche']);
  assert.ok(records.every((r) => r.dialect === 'search-r1'));
  assert.deepEqual(
    records.map((r) => r.meta?.group),
    ['3-g0', '3-g0', '3-g0', '3-g0', '3-g1', '3-g1', '3-g1', '3-g1'],
  );
  const verl = (records[3] as unknown as { verl: Record<string, unknown> }).verl;
  assert.equal(verl.score, rows[3].score);
  assert.equal(verl.format_ok, 0); // the fourth sample of each prompt has an unclosed <think>
  assert.match(String(verl.format_codes), /COA/);
  assert.deepEqual(stepSignals(records), { all_wrong_groups: 0, format_error_rate: 2 / 8 });
});

test('bad dump lines are named by line, column and field, the rest is kept', () => {
  const good = readFileSync(join(DUMPS, '1.jsonl'), 'utf8').split('\n')[0];
  const { records, issues } = importVerlRollouts(
    `${good}\n{"input": "p", "output": 3, "gts": "a", "score": 1, "step": 1}\n{oops\n`,
  );
  assert.equal(records.length, 1);
  assert.deepEqual(
    issues.map((i) => [i.line, i.column, i.message.split(':')[0]]),
    [
      [2, 16, 'output'],
      [3, 2, 'invalid JSON'],
    ],
  );
});

test('a dump row with NaN (Python json.dumps of a NaN score) is kept, the NaN read as null; strings keep "NaN"', () => {
  const row = (score: string, extra = '') =>
    `{"input": "user\\nQuestion: NaN or Infinity?\\nassistant\\n", "output": "<answer>NaN</answer>", "gts": ["NaN"], "score": ${score}, "step": 3${extra}}`;
  const text = [row('NaN', ', "acc": NaN'), row('-Infinity'), row('Infinity', ', "f1": [NaN, 1.0]'), row('1.0')].join(
    '\n',
  );
  const { records, issues } = importVerlRollouts(text);
  assert.deepEqual(issues, []);
  assert.equal(records.length, 4);
  const verl = records.map((r) => (r as unknown as { verl: Record<string, unknown> }).verl);
  assert.deepEqual(
    verl.map((v) => v.score),
    [null, null, null, 1],
  );
  assert.equal(verl[0].acc, null);
  assert.deepEqual(verl[2].f1, [null, 1]);
  assert.equal(records[0].question, 'NaN or Infinity?');
  assert.equal(records[0].response, '<answer>NaN</answer>');
  assert.deepEqual(records[0].golden_answers, ['NaN']);
  // a line that is bad for another reason is still reported, not rescued
  assert.equal(importVerlRollouts('{"input": NaN, "output": "x"').issues.length, 1);
});

test('coa convert --from verl-rollouts <dir>: step order, format checked, rewards equal `coa score`', (t) => {
  const d = tmp(t);
  const out = join(d, 'verl.coa.jsonl');
  const coa = (...args: string[]) =>
    spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], { cwd: root, encoding: 'utf8' });
  const r = coa('convert', '--from', 'verl-rollouts', DUMPS, '-o', out);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /3 dump file\(s\); dialects search-r1 24; 2 record\(s\) with format errors \(COA001 ×2\)/);
  const records = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    records.map((x) => x.meta.step),
    [...Array(8).fill(1), ...Array(8).fill(2), ...Array(8).fill(3)],
  );
  // Step 3 was graded by CoA's verl reward (the grader through the env server): `coa score` gives the same totals.
  const step3 = join(d, 'step3.coa.jsonl');
  writeFileSync(
    step3,
    records
      .filter((x) => x.meta.step === 3)
      .map((x) => JSON.stringify(x))
      .join('\n') + '\n',
  );
  const scored = join(d, 'scored.jsonl');
  const s = coa('score', step3, '--scheme', 'em', '-o', scored);
  assert.equal(s.status, 0, s.stderr);
  const totals = readFileSync(scored, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).reward.total);
  assert.deepEqual(
    totals,
    records.filter((x) => x.meta.step === 3).map((x) => x.verl.score),
  );
  // One file works too; a directory without dumps is a clear error.
  copyFileSync(join(DUMPS, '1.jsonl'), join(d, '1.jsonl'));
  assert.equal(coa('convert', '--from', 'verl-rollouts', join(d, '1.jsonl'), '-o', join(d, 'one.coa.jsonl')).status, 0);
  const empty = coa('convert', '--from', 'verl-rollouts', join(root, 'docs'), '-o', join(d, 'x.coa.jsonl'));
  assert.notEqual(empty.status, 0);
  assert.match(empty.stderr, /no <step>\.jsonl files/);
});

test('values that are not numbers are not charted (a string, a list); null stays a gap', () => {
  const a = new VerlMetricsAdapter({ run: 'r', source: 'm.jsonl', now: () => 1 });
  const line = parseVerlLine('{"step":3,"data":{"actor/lr":1e-6,"note":"warmup","hist":[1,2],"actor/grad_norm":null}}');
  assert.ok(!('error' in line));
  const metrics = a.events(line, { all_wrong_groups: 0.5 }).find((e) => e.type === 'metrics') as Extract<
    TrainerEvent,
    { type: 'metrics' }
  >;
  assert.deepEqual(metrics.values, { 'actor/lr': 1e-6, 'actor/grad_norm': null, 'coa/all_wrong_groups': 0.5 });
  assert.ok(EventSchema.safeParse(metrics).success);
});

test('a verl run is named by its project/experiment path, a metrics.jsonl by its folder (not all "metrics")', () => {
  // verl's FileLogger: $VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl
  assert.equal(verlRunName('/work/logs/search-r1/qwen-grpo-7b.jsonl'), 'search-r1/qwen-grpo-7b');
  // VERL_FILE_LOGGER_PATH=runs/<run>/metrics.jsonl, as docs/integrations.md suggests
  const names = ['/w/runs/grpo-a/metrics.jsonl', '/w/runs/grpo-b/metrics.jsonl'].map(verlRunName);
  assert.deepEqual(names, ['grpo-a', 'grpo-b']);
  assert.equal(verlRunName('C:\\runs\\ppo-c\\metrics.jsonl'), 'ppo-c');
  assert.equal(verlRunName('metrics.jsonl'), 'metrics');
});

test('a verl run has one dialect: answers that did not search stay in it (convert, notebook rows, coa stats)', (t) => {
  const d = tmp(t);
  const rows = readFileSync(join(DUMPS, '3.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const noSearch = (r: Record<string, unknown>) => ({
    ...r,
    output: '<think> I know this one. </think>\n<answer> Genentech </answer>',
  });
  // step 1: half the answers searched; step 2: none did (the prompt still teaches Search-R1's tags)
  writeFileSync(join(d, '1.jsonl'), rows.map((r, i) => JSON.stringify(i % 2 ? noSearch(r) : r)).join('\n') + '\n');
  writeFileSync(join(d, '2.jsonl'), rows.map((r) => JSON.stringify({ ...noSearch(r), step: 2 })).join('\n') + '\n');
  for (const file of ['1.jsonl', '2.jsonl']) {
    const { records } = importVerlRollouts(readFileSync(join(d, file), 'utf8'));
    assert.deepEqual(new Set(records.map((r) => r.dialect)), new Set(['search-r1']), file);
  }
  assert.equal(verlRunDialect([{ input: 'plain question', output: '<answer> x </answer>' }]), 'coa');
  const coa = (...args: string[]) =>
    spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], { cwd: root, encoding: 'utf8' });
  const out = join(d, 'run.coa.jsonl');
  const r = coa('convert', '--from', 'verl-rollouts', d, '-o', out);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /2 dump file\(s\); dialects search-r1 16;/);
  const stats = JSON.parse(coa('stats', out, '--json').stdout) as { rows: { group: string; count: number }[] };
  assert.deepEqual(
    stats.rows.filter((x) => x.group.startsWith('dialect=')).map((x) => [x.group, x.count]),
    [['dialect=search-r1', 16]],
  );
});
