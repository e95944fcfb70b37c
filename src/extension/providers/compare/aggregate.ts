// "Compare runs" arithmetic over scored samples, with no imports: the extension computes the first view with it
// and the compare page recomputes when the step window changes. RL rollout files hold every sampled step, so
// pooling them would compare step 1's policy as much as the last one's: rewards are per step, and the
// headline and the per-question rows are over one window of steps — by default the last step both runs have.
import type { RewardBreakdown } from '../../../core/record';

export interface Sample {
  id: string;
  line: number;
  /** meta.step of an RL rollout; null for records without one (an evaluation, a collection). */
  step: number | null;
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
export type Delta = Omit<Means, 'n'>;

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
  delta: Delta | null;
}

export interface Summary {
  a: Means;
  b: Means;
  delta: Delta;
  shared: number;
  onlyA: number;
  onlyB: number;
}

/** Which steps a comparison covers: every step pooled, or one step. */
export type StepWindow = { kind: 'all' } | { kind: 'step'; step: number };

export interface StepRow {
  step: number;
  a: Means | null;
  b: Means | null;
  delta: Delta | null;
}

export const MEAN_KEYS = ['total', 'em', 'f1', 'tool_calls', 'format_ok'] as const;

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
  for (const k of MEAN_KEYS) m[k] /= breakdowns.length;
  return m;
}

export function diff(a: Means, b: Means): Delta {
  return { total: b.total - a.total, em: b.em - a.em, f1: b.f1 - a.f1, tool_calls: b.tool_calls - a.tool_calls, format_ok: b.format_ok - a.format_ok };
}

function sideOf(samples: Sample[]): Side | null {
  return samples.length ? { samples, mean: means(samples.map((s) => s.breakdown)) } : null;
}

const inWindow = (w: StepWindow) => (s: Sample) => w.kind === 'all' || s.step === w.step;

/** The rows restricted to a window of steps (sides without a sample there drop out), largest change first. */
export function windowRows(rows: readonly CompareRow[], w: StepWindow): CompareRow[] {
  const keep = inWindow(w);
  const out: CompareRow[] = [];
  for (const r of rows) {
    const a = sideOf(r.a?.samples.filter(keep) ?? []);
    const b = sideOf(r.b?.samples.filter(keep) ?? []);
    if (a || b) out.push({ question: r.question, golden: r.golden, a, b, delta: a && b ? diff(a.mean, b.mean) : null });
  }
  // Largest changes first: where the runs disagree is what a comparison is for.
  out.sort((p, q) => Math.abs(q.delta?.total ?? 0) - Math.abs(p.delta?.total ?? 0) || p.question.localeCompare(q.question));
  return out;
}

/** Means over the questions both sides have in these rows, so a question one run skipped does not skew them. */
export function summarize(rows: readonly CompareRow[]): Summary {
  const shared = rows.filter((r) => r.delta);
  const a = means(shared.flatMap((r) => r.a!.samples.map((s) => s.breakdown)));
  const b = means(shared.flatMap((r) => r.b!.samples.map((s) => s.breakdown)));
  return { a, b, delta: diff(a, b), shared: shared.length, onlyA: rows.filter((r) => r.a && !r.b).length, onlyB: rows.filter((r) => r.b && !r.a).length };
}

/** Mean reward per step of each run (all of its samples at that step: the curve a reward chart draws). */
export function stepTable(rows: readonly CompareRow[]): StepRow[] {
  const by = new Map<number, { a: RewardBreakdown[]; b: RewardBreakdown[] }>();
  const add = (side: 'a' | 'b', s: Sample) => {
    if (s.step === null) return;
    let g = by.get(s.step);
    if (!g) by.set(s.step, (g = { a: [], b: [] }));
    g[side].push(s.breakdown);
  };
  for (const r of rows) {
    r.a?.samples.forEach((s) => add('a', s));
    r.b?.samples.forEach((s) => add('b', s));
  }
  return [...by.entries()].sort(([x], [y]) => x - y).map(([step, g]) => {
    const a = g.a.length ? means(g.a) : null;
    const b = g.b.length ? means(g.b) : null;
    return { step, a, b, delta: a && b ? diff(a, b) : null };
  });
}

/** The default window: the last step both runs sampled, or every record when they carry no steps in common. */
export function defaultWindow(steps: readonly StepRow[]): StepWindow {
  const shared = steps.filter((s) => s.a && s.b);
  return shared.length ? { kind: 'step', step: shared[shared.length - 1].step } : { kind: 'all' };
}
