// `coa diff A B`: which questions a checkpoint gained and lost against another — two evaluation or rollout files,
// or two stages of a run directory (`coa diff runs/<id> rl2 rl2-otc`: their test-split evaluations when the run has
// them, else their rollouts). The table is src/core/diff (Compare Runs in the editor draws the same one).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { readDiff, describeReward } from '../core/diff/read';
import { CLASS_WORDS, flipTable, windowLabel, type FlipCounts, type FlipRow, type FlipTable } from '../core/diff/flips';
import type { DiffData, StepWindow } from '../core/diff/types';
import { RESULT_SETTINGS } from '../core/stages';
import { SCHEMES, type Scheme } from '../core/record';
import { CliError, type ParsedArgs } from './args';
import { convertHint, requireFile, rewardParams } from './common';

export const DIFF_FLAGS = {
  split: 'string',
  step: 'string',
  scheme: 'string',
  by: 'string',
  all: 'boolean',
  limit: 'number',
  json: 'boolean',
  c: 'number',
  alpha: 'number',
  dialect: 'string',
  strict: 'boolean',
  tools: 'string',
  'max-turns': 'number',
} as const;

/**
 * A stage of a run directory → its file: the results table's evaluation of that stage (`eval/results-<setting>-<split>
 * .jsonl`, a setting id or the stage it evaluates), an `eval` command's (`eval/<stage>-agent-<split>.jsonl`), else the
 * stage's rollouts (`stages/<stage>/rollouts.coa.jsonl`).
 */
export function resolveStage(runDir: string, name: string, split: string): string {
  const settings = RESULT_SETTINGS.filter((s) => s.id === name || (s.stage === name && s.mode === 'agent')).map(
    (s) => s.id,
  );
  const tried = [
    ...settings.map((s) => join(runDir, 'eval', `results-${s}-${split}.jsonl`)),
    join(runDir, 'eval', `${name}-agent-${split}.jsonl`),
    join(runDir, 'stages', name, 'rollouts.coa.jsonl'),
  ];
  const found = tried.find((p) => existsSync(p));
  if (!found)
    throw new CliError(
      `diff: ${runDir} has no file for "${name}" (looked for ${tried.map((p) => relative(runDir, p)).join(', ')})`,
    );
  return found;
}

function inputs(args: ParsedArgs): [string, string] {
  const p = args.positional;
  const split = (args.flags.split as string | undefined) ?? 'test';
  if (p.length === 3 && existsSync(p[0]) && statSync(p[0]).isDirectory())
    return [resolveStage(p[0], p[1], split), resolveStage(p[0], p[2], split)];
  if (p.length !== 2)
    throw new CliError(
      'diff: give two files (coa diff A.jsonl B.jsonl) or a run directory and two stages (coa diff runs/<id> rl2 rl2-otc)',
    );
  for (const f of p) {
    requireFile(f);
    const hint = convertHint(f);
    if (hint) throw new CliError(`${f}: ${hint}`);
  }
  return [p[0], p[1]];
}

function windowOf(flag: string | undefined, data: DiffData): StepWindow {
  if (flag === undefined || flag === 'last') return data.window;
  if (flag === 'all') return { kind: 'all' };
  const step = Number(flag);
  if (!Number.isInteger(step) || step < 0)
    throw new CliError(`--step expects a step number, "last" or "all", got "${flag}"`);
  if (!data.steps.some((s) => s.step === step))
    throw new CliError(
      `--step ${step}: neither file has records of step ${step}${data.steps.length ? ` (steps ${data.steps[0].step}–${data.steps[data.steps.length - 1].step})` : ' (their records carry no meta.step)'}`,
    );
  return { kind: 'step', step };
}

export async function runDiff(args: ParsedArgs): Promise<number> {
  const [fa, fb] = inputs(args);
  const scheme = args.flags.scheme as string | undefined;
  if (scheme !== undefined && !SCHEMES.includes(scheme as Scheme))
    throw new CliError(`unknown scheme "${scheme}" (known: ${SCHEMES.join(', ')})`);
  const by = args.flags.by as string | undefined;
  if (by !== undefined && by !== 'id' && by !== 'question')
    throw new CliError(`--by expects id or question, got "${by}"`);
  const read = (f: string) => {
    try {
      return readFileSync(f, 'utf8');
    } catch (e) {
      throw new CliError(`${f}: ${(e as Error).message}`);
    }
  };
  const data = readDiff(
    { text: read(fa), label: fa },
    { text: read(fb), label: fb },
    { scheme: scheme as Scheme | undefined, params: rewardParams(args), keyBy: by as 'id' | 'question' | undefined },
  );
  const table = flipTable(data.questions, windowOf(args.flags.step as string | undefined, data));
  if (args.flags.json) console.log(JSON.stringify(diffJson(data, table), null, 1));
  else console.log(diffText(data, table, { all: !!args.flags.all, limit: args.flags.limit as number | undefined }));
  for (const bad of [...data.a.invalid, ...data.b.invalid].slice(0, 20)) console.error(bad.message);
  return 0;
}

/** The table as JSON: sides, pairing, window, totals, groups and one row per question (samples as file lines). */
export function diffJson(data: DiffData, t: FlipTable) {
  const lines = (r: FlipRow, side: 'aSamples' | 'bSamples') =>
    r[side].map((s) => ({ id: s.id, line: s.line, step: s.step }));
  return {
    a: data.a,
    b: data.b,
    paired_by: data.keyBy,
    window: t.window,
    totals: t.totals,
    only_a: t.onlyA,
    only_b: t.onlyB,
    dimensions: t.dimensions,
    rows: t.rows.map((r) => ({
      key: r.key,
      question: r.question,
      golden: r.golden,
      attrs: r.attrs,
      class: r.cls,
      a: r.a,
      b: r.b,
      delta: r.delta,
      a_records: lines(r, 'aSamples'),
      b_records: lines(r, 'bSamples'),
    })),
  };
}

const f3 = (x: number) => x.toFixed(3);
const sgn = (x: number, d = 3) => `${x > 0 ? '+' : x < 0 ? '−' : ' '}${Math.abs(x).toFixed(d)}`;
const isInt = (x: number) => Math.abs(x - Math.round(x)) < 1e-9;

const COLUMNS = [
  'questions',
  'gained',
  'lost',
  'both right',
  'both wrong',
  'mixed',
  'net',
  'EM A',
  'EM B',
  'ΔEM',
  'ΔTC',
  'Δreward',
  'ΔF1',
  'Δr_tool',
  'Δformat ok',
];

function countsCells(c: FlipCounts): string[] {
  return [
    String(c.shared),
    String(c.gained),
    String(c.lost),
    String(c.both_right),
    String(c.both_wrong),
    String(c.mixed),
    isInt(c.net) ? sgn(c.net, 0) : sgn(c.net, 2),
    f3(c.em_a),
    f3(c.em_b),
    sgn(c.delta_em),
    sgn(c.delta.tool_calls),
    sgn(c.delta.total),
    sgn(c.delta.f1),
    sgn(c.delta.r_tool),
    sgn(c.delta.format_ok),
  ];
}

function grid(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function diffText(data: DiffData, t: FlipTable, opts: { all?: boolean; limit?: number } = {}): string {
  const out: string[] = [];
  for (const [name, s] of [
    ['A', data.a],
    ['B', data.b],
  ] as const)
    out.push(`${name}  ${s.label} — ${s.records} trajectories, rewards ${describeReward(s)}`);
  const schemes = (s: DiffData['a']) => (s.reward.source === 'stored' ? s.reward.schemes : [s.reward.scheme]);
  if (schemes(data.a).join() !== schemes(data.b).join())
    out.push(
      `   (the sides' reward schemes differ: Δreward compares ${schemes(data.a).join('/')} with ${schemes(data.b).join('/')}; EM, F1 and TC do not depend on the scheme)`,
    );
  out.push(
    `paired by ${data.keyBy === 'id' ? 'record id' : 'question'} · ${windowLabel(t.window)} · ${t.totals.shared} shared questions · ${t.onlyA} only in A · ${t.onlyB} only in B`,
  );
  const c = t.totals;
  out.push(
    `ΔEM ${sgn(c.delta_em)} = net ${isInt(c.net) ? sgn(c.net, 0) : sgn(c.net, 2)} / ${c.shared} questions${isInt(c.net) && c.mixed === 0 ? ` (gained ${c.gained} − lost ${c.lost})` : ' (Σ per-question EM_B − EM_A; questions sampled more than once count their mean)'}`,
  );
  out.push('');
  const rows: string[][] = [
    ['', ...COLUMNS],
    ['all', ...countsCells(c)],
  ];
  for (const d of t.dimensions) for (const g of d.groups) rows.push([`${d.name}=${g.value}`, ...countsCells(g.counts)]);
  out.push(grid(rows));
  const listed = opts.all ? t.rows : t.rows.filter((r) => r.cls === 'gained' || r.cls === 'lost');
  const limit = opts.limit ?? Infinity;
  if (listed.length) {
    out.push('', opts.all ? `questions (${listed.length}, flips first):` : `flips (${listed.length}):`);
    for (const r of listed.slice(0, limit)) out.push(rowText(r));
    if (listed.length > limit) out.push(`… ${listed.length - limit} more (--limit)`);
  }
  return out.join('\n');
}

function rowText(r: FlipRow): string {
  const cls = r.cls ? CLASS_WORDS[r.cls] : r.a ? 'only in A' : 'only in B';
  const where = (ss: FlipRow['aSamples']) =>
    ss.length === 1 ? `line ${ss[0].line}` : ss.length ? `${ss.length} samples` : '—';
  const m = (x: FlipRow['a'], k: 'em' | 'tool_calls' | 'total') => (x ? (isInt(x[k]) ? String(x[k]) : f3(x[k])) : '—');
  const attrs = Object.entries(r.attrs)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return `  ${cls.padEnd(11)} EM ${m(r.a, 'em')}→${m(r.b, 'em')}  TC ${m(r.a, 'tool_calls')}→${m(r.b, 'tool_calls')}  reward ${m(r.a, 'total')}→${m(r.b, 'total')}  ${JSON.stringify(r.question.length > 90 ? `${r.question.slice(0, 89)}…` : r.question)}  golden ${JSON.stringify(r.golden.slice(0, 3))}${attrs ? `  ${attrs}` : ''}  (A ${where(r.aSamples)}, B ${where(r.bSamples)})`;
}
