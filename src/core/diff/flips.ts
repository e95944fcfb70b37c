// The flip table of a checkpoint diff: per question, whether B gained it, lost it, or both sides got it right or
// wrong, with the change in tool calls and in each reward component; totals and the same counts per group of what
// the data says about a question (its source, kind, hops, level). Pure arithmetic over `DiffQuestion`s (no Node, no
// DOM), so `coa diff`, Compare Runs and its page compute the same table.
//
// A side's EM on a question is the mean EM of its samples in the window (0 or 1 for an evaluation). The net of the
// table, Σ over shared questions of (EM_B − EM_A), is by construction the question count × the EM difference of the
// two sides over those questions: for two evaluations of one question set, gained − lost = N · ΔEM exactly.
import type { RewardBreakdown } from '../record';
import {
  MEAN_KEYS,
  type Attributes,
  type Delta,
  type DiffQuestion,
  type DiffSample,
  type Means,
  type StepRow,
  type StepWindow,
} from './types';

/** gained: B right more often than A; lost: less often; both_right / both_wrong: equal at 1 / 0; mixed: equal in between. */
export const FLIP_CLASSES = ['gained', 'lost', 'both_right', 'both_wrong', 'mixed'] as const;
export type FlipClass = (typeof FLIP_CLASSES)[number];

/** What the table reads of a sample (a page holds samples without their responses). */
export type SampleLike = Pick<DiffSample, 'step' | 'breakdown'>;
/** A question with each side's samples, of any sample shape. */
export type QuestionLike<S extends SampleLike> = Omit<DiffQuestion, 'a' | 'b'> & { a: S[]; b: S[] };

export interface FlipRow<S extends SampleLike = DiffSample> {
  key: string;
  question: string;
  golden: string[];
  attrs: Attributes;
  /** null: only one side has the question in this window. */
  cls: FlipClass | null;
  a: Means | null;
  b: Means | null;
  /** B − A of the means; null when a side is missing. */
  delta: Delta | null;
  aSamples: S[];
  bSamples: S[];
}

export interface FlipCounts {
  /** Questions both sides have in the window. */
  shared: number;
  gained: number;
  lost: number;
  both_right: number;
  both_wrong: number;
  mixed: number;
  /** Σ (EM_B − EM_A) over the shared questions: gained − lost for evaluations. */
  net: number;
  /** Question-weighted EM of each side over the shared questions, and their difference (= net / shared). */
  em_a: number;
  em_b: number;
  delta_em: number;
  /** Mean over shared questions of B − A, per component (tool calls, reward, r_tool, …). */
  delta: Delta;
}

export interface FlipGroup {
  value: string;
  counts: FlipCounts;
}

export interface FlipDimension {
  /** The attribute (`source`, `kind`, `hops`, `level`, `group`). */
  name: string;
  groups: FlipGroup[];
}

export interface FlipTable<S extends SampleLike = DiffSample> {
  window: StepWindow;
  rows: FlipRow<S>[];
  totals: FlipCounts;
  onlyA: number;
  onlyB: number;
  dimensions: FlipDimension[];
}

export function means(breakdowns: readonly RewardBreakdown[]): Means {
  const m: Means = {
    n: breakdowns.length,
    total: 0,
    em: 0,
    f1: 0,
    tool_calls: 0,
    r_tool: 0,
    r_correct: 0,
    format_ok: 0,
  };
  if (!breakdowns.length) return m;
  for (const b of breakdowns) {
    m.total += b.total;
    m.em += b.em;
    m.f1 += b.f1;
    m.tool_calls += b.tool_calls;
    m.r_tool += b.r_tool;
    m.r_correct += b.r_correct;
    m.format_ok += b.format_ok ? 1 : 0;
  }
  for (const k of MEAN_KEYS) m[k] /= breakdowns.length;
  return m;
}

export function diffMeans(a: Means, b: Means): Delta {
  const d = {} as Delta;
  for (const k of MEAN_KEYS) d[k] = b[k] - a[k];
  return d;
}

export function classify(emA: number, emB: number): FlipClass {
  if (emB > emA) return 'gained';
  if (emB < emA) return 'lost';
  return emA === 1 ? 'both_right' : emA === 0 ? 'both_wrong' : 'mixed';
}

export const inWindow = (w: StepWindow) => (s: SampleLike) => w.kind === 'all' || s.step === w.step;

/** One row per question that has a sample in the window on either side. */
export function flipRows<S extends SampleLike>(questions: readonly QuestionLike<S>[], w: StepWindow): FlipRow<S>[] {
  const keep = inWindow(w);
  const out: FlipRow<S>[] = [];
  for (const q of questions) {
    const aSamples = w.kind === 'all' ? q.a : q.a.filter(keep);
    const bSamples = w.kind === 'all' ? q.b : q.b.filter(keep);
    if (!aSamples.length && !bSamples.length) continue;
    const a = aSamples.length ? means(aSamples.map((s) => s.breakdown)) : null;
    const b = bSamples.length ? means(bSamples.map((s) => s.breakdown)) : null;
    out.push({
      key: q.key,
      question: q.question,
      golden: q.golden,
      attrs: q.attrs,
      cls: a && b ? classify(a.em, b.em) : null,
      a,
      b,
      delta: a && b ? diffMeans(a, b) : null,
      aSamples,
      bSamples,
    });
  }
  return out;
}

export function flipCounts(rows: readonly FlipRow<SampleLike>[]): FlipCounts {
  const c: FlipCounts = {
    shared: 0,
    gained: 0,
    lost: 0,
    both_right: 0,
    both_wrong: 0,
    mixed: 0,
    net: 0,
    em_a: 0,
    em_b: 0,
    delta_em: 0,
    delta: zeroDelta(),
  };
  let sumA = 0;
  let sumB = 0;
  for (const r of rows) {
    if (!r.cls) continue;
    c.shared++;
    c[r.cls]++;
    sumA += r.a!.em;
    sumB += r.b!.em;
    for (const k of MEAN_KEYS) c.delta[k] += r.delta![k];
  }
  if (c.shared) {
    c.net = sumB - sumA;
    c.em_a = sumA / c.shared;
    c.em_b = sumB / c.shared;
    c.delta_em = c.net / c.shared;
    for (const k of MEAN_KEYS) c.delta[k] /= c.shared;
  }
  return c;
}

function zeroDelta(): Delta {
  return { total: 0, em: 0, f1: 0, tool_calls: 0, r_tool: 0, r_correct: 0, format_ok: 0 };
}

/** Dimensions worth grouping by: present on the shared questions with 2 to `maxGroups` distinct values. */
export function dimensions(rows: readonly FlipRow<SampleLike>[], maxGroups = 40): FlipDimension[] {
  const values = new Map<string, Map<string, FlipRow<SampleLike>[]>>();
  for (const r of rows) {
    if (!r.cls) continue;
    for (const [name, value] of Object.entries(r.attrs)) {
      let byValue = values.get(name);
      if (!byValue) values.set(name, (byValue = new Map()));
      let list = byValue.get(value);
      if (!list) byValue.set(value, (list = []));
      list.push(r);
    }
  }
  const out: FlipDimension[] = [];
  for (const [name, byValue] of values) {
    if (byValue.size < 2 || byValue.size > maxGroups) continue;
    const groups = [...byValue].map(([value, list]) => ({ value, counts: flipCounts(list) }));
    groups.sort((x, y) => naturalCompare(x.value, y.value));
    out.push({ name, groups });
  }
  return out.sort(
    (x, y) => DIMENSION_ORDER.indexOf(x.name) - DIMENSION_ORDER.indexOf(y.name) || x.name.localeCompare(y.name),
  );
}

/** The order dimensions are shown in (unknown names after). */
export const DIMENSION_ORDER = ['source', 'hops', 'kind', 'level', 'group'];

function naturalCompare(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
}

/** Where a row belongs: flips before the unchanged (one side only last), the largest |ΔEM| then |Δreward| first; each
 * row's keys computed once, and code-unit order for ties (localeCompare made sorting 3,000 rows take a third of a second). */
export function sortedByChange<R extends FlipRow<SampleLike>>(rows: R[]): R[] {
  const keyed = rows.map((r) => ({
    r,
    rank: r.cls === 'gained' || r.cls === 'lost' ? 0 : r.cls === null ? 2 : 1,
    em: Math.abs(r.delta?.em ?? 0),
    total: Math.abs(r.delta?.total ?? 0),
  }));
  keyed.sort(
    (p, q) =>
      p.rank - q.rank ||
      q.em - p.em ||
      q.total - p.total ||
      (p.r.question < q.r.question ? -1 : p.r.question > q.r.question ? 1 : 0),
  );
  return keyed.map((k) => k.r);
}

/** The flip table of a window: rows (flips first), totals over the shared questions, and the groups. */
export function flipTable<S extends SampleLike>(questions: readonly QuestionLike<S>[], w: StepWindow): FlipTable<S> {
  const rows = sortedByChange(flipRows(questions, w));
  return {
    window: w,
    rows,
    totals: flipCounts(rows),
    onlyA: rows.filter((r) => r.a && !r.b).length,
    onlyB: rows.filter((r) => r.b && !r.a).length,
    dimensions: dimensions(rows),
  };
}

/** Mean reward per step of each side (all of its samples at that step: the curve a reward chart draws). */
export function stepTable(questions: readonly QuestionLike<SampleLike>[]): StepRow[] {
  const by = new Map<number, { a: RewardBreakdown[]; b: RewardBreakdown[] }>();
  const add = (side: 'a' | 'b', s: SampleLike) => {
    if (s.step === null) return;
    let g = by.get(s.step);
    if (!g) by.set(s.step, (g = { a: [], b: [] }));
    g[side].push(s.breakdown);
  };
  for (const q of questions) {
    for (const s of q.a) add('a', s);
    for (const s of q.b) add('b', s);
  }
  return [...by.entries()]
    .sort(([x], [y]) => x - y)
    .map(([step, g]) => {
      const a = g.a.length ? means(g.a) : null;
      const b = g.b.length ? means(g.b) : null;
      return { step, a, b, delta: a && b ? diffMeans(a, b) : null };
    });
}

/** The default window: the last step both sides sampled, or every record when they carry no step in common. */
export function defaultWindow(steps: readonly StepRow[]): StepWindow {
  const shared = steps.filter((s) => s.a && s.b);
  return shared.length ? { kind: 'step', step: shared[shared.length - 1].step } : { kind: 'all' };
}

export const windowLabel = (w: StepWindow) => (w.kind === 'all' ? 'all records' : `step ${w.step}`);

export const CLASS_WORDS: Record<FlipClass, string> = {
  gained: 'gained',
  lost: 'lost',
  both_right: 'both right',
  both_wrong: 'both wrong',
  mixed: 'same, mixed',
};
