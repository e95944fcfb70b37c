// "Compare runs", the pure part: two rollout files (or two checkpoints' replays) → one row per question with each
// side's trajectories, their reward breakdowns (src/core/rewards.ts, each file scored as a whole, so OTC-GRPO's
// per-question minimum is that file's) and the difference B − A. No `vscode` import.
import { iterateJsonlText } from '../../../core/jsonl';
import type { RewardBreakdown, Scheme, TrajectoryRecord } from '../../../core/record';
import { type RewardParams, describeFormula, scoreRecords } from '../../../core/rewards';

export interface Sample {
  id: string;
  line: number;
  response: string;
  breakdown: RewardBreakdown;
}

export interface Means {
  n: number;
  total: number;
  em: number;
  f1: number;
  tool_calls: number;
  format_ok: number;
}

export interface Side {
  samples: Sample[];
  mean: Means;
}

export interface CompareRow {
  question: string;
  golden: string[];
  a: Side | null;
  b: Side | null;
  /** B − A of the means; null when a side has no trajectory for the question. */
  delta: Omit<Means, 'n'> | null;
}

export interface CompareModel {
  scheme: Scheme;
  formula: string;
  a: { label: string; records: number; invalid: { line: number; message: string }[] };
  b: { label: string; records: number; invalid: { line: number; message: string }[] };
  rows: CompareRow[];
  summary: { a: Means; b: Means; delta: Omit<Means, 'n'>; shared: number; onlyA: number; onlyB: number };
}

const KEYS = ['total', 'em', 'f1', 'tool_calls', 'format_ok'] as const;

export function means(breakdowns: readonly RewardBreakdown[]): Means {
  const m: Means = { n: breakdowns.length, total: 0, em: 0, f1: 0, tool_calls: 0, format_ok: 0 };
  if (!breakdowns.length) return m;
  for (const b of breakdowns) {
    m.total += b.total;
    m.em += b.em;
    m.f1 += b.f1;
    m.tool_calls += b.tool_calls;
    m.format_ok += b.format_ok ? 1 : 0;
  }
  for (const k of KEYS) m[k] /= breakdowns.length;
  return m;
}

function diff(a: Means, b: Means): Omit<Means, 'n'> {
  return { total: b.total - a.total, em: b.em - a.em, f1: b.f1 - a.f1, tool_calls: b.tool_calls - a.tool_calls, format_ok: b.format_ok - a.format_ok };
}

/** Questions are matched by their text with whitespace and case folded (ids differ between runs). */
export function questionKey(q: string): string {
  return q.trim().replace(/\s+/g, ' ').toLowerCase();
}

function readSide(text: string, label: string, scheme: Scheme, params: RewardParams) {
  const records: { r: TrajectoryRecord; line: number }[] = [];
  const invalid: { line: number; message: string }[] = [];
  for (const e of iterateJsonlText(text)) {
    if (e.record) records.push({ r: e.record, line: e.line });
    else if (e.problem) invalid.push({ line: e.line, message: `${label}:${e.line}:${e.problem.column}: ${e.problem.code} ${e.problem.message}` });
  }
  const scored = scoreRecords(records.map((x) => x.r), scheme, params);
  const byQ = new Map<string, { question: string; golden: string[]; samples: Sample[] }>();
  records.forEach(({ r, line }, i) => {
    const k = questionKey(r.question);
    const g = byQ.get(k) ?? { question: r.question, golden: r.golden_answers ?? [], samples: [] };
    g.samples.push({ id: r.id, line, response: r.response, breakdown: scored[i] });
    byQ.set(k, g);
  });
  return { byQ, info: { label, records: records.length, invalid } };
}

export function compareRuns(a: { text: string; label: string }, b: { text: string; label: string }, scheme: Scheme = 'em', params: RewardParams = {}): CompareModel {
  const A = readSide(a.text, a.label, scheme, params);
  const B = readSide(b.text, b.label, scheme, params);
  const keys = [...new Set([...A.byQ.keys(), ...B.byQ.keys()])];
  const rows: CompareRow[] = keys.map((k) => {
    const x = A.byQ.get(k);
    const y = B.byQ.get(k);
    const side = (g: typeof x): Side | null => (g ? { samples: g.samples, mean: means(g.samples.map((s) => s.breakdown)) } : null);
    const sa = side(x);
    const sb = side(y);
    return { question: (x ?? y)!.question, golden: (x ?? y)!.golden, a: sa, b: sb, delta: sa && sb ? diff(sa.mean, sb.mean) : null };
  });
  // Largest changes first: where the runs disagree is what a comparison is for.
  rows.sort((p, q) => Math.abs(q.delta?.total ?? 0) - Math.abs(p.delta?.total ?? 0) || p.question.localeCompare(q.question));
  const shared = rows.filter((r) => r.delta);
  // Summary over shared questions only, so a question one run skipped does not skew the comparison.
  const sa = means(shared.flatMap((r) => r.a!.samples.map((s) => s.breakdown)));
  const sb = means(shared.flatMap((r) => r.b!.samples.map((s) => s.breakdown)));
  return {
    scheme, formula: describeFormula(scheme, params), a: A.info, b: B.info, rows,
    summary: { a: sa, b: sb, delta: diff(sa, sb), shared: shared.length, onlyA: rows.filter((r) => r.a && !r.b).length, onlyB: rows.filter((r) => r.b && !r.a).length },
  };
}
