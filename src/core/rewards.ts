// Reward schemes. Each returns one breakdown object; the trainer (through the environment server's grader),
// `coa score` and the editor's hover all call scoreRecords, so a reward is computed in exactly one place.
import { z } from 'zod';
import { DIALECT_NAMES } from './dialects';
import { coverExactMatch, exactMatch, f1Score } from './answer';
import { checkFormat, FormatReport } from './rules';
import { recordFormatOptions } from './recordFormat';
import type { RewardBreakdown, Scheme, TrajectoryRecord } from './record';

export const RewardParamsSchema = z
  .object({
    /** OTC smoothing constant c in cos(m·π/(2m+c)). */
    c: z.number().positive().default(4),
    /** OTC scale α. */
    alpha: z.number().default(1),
    /** Any format error sets the reward to 0 (always on for `autocoa`). */
    format_penalty: z.boolean().default(true),
    strictness: z.enum(['lenient', 'strict']).default('lenient'),
    tools: z.array(z.string().min(1)).default(['search']),
    max_turns: z.number().int().positive().optional(),
    dialect: z.enum([...DIALECT_NAMES, 'auto']).default('auto'),
  })
  .strict();
export type RewardParams = z.input<typeof RewardParamsSchema>;
type ResolvedParams = z.output<typeof RewardParamsSchema>;

/**
 * Schemes whose reward of one answer depends on the other answers to the same question (OTC-GRPO's n is the fewest
 * tool calls among the group's correct answers). A caller that hands the grader one sample at a time (verl's naive
 * and reward-loop managers) cannot give them their group and must refuse them (schemas/rewards.json).
 */
export const GROUP_SCHEMES: readonly Scheme[] = ['otc-grpo'];

/** OTC-PPO: r_tool = cos(m·π/(2m+c)). */
export function otcPpoToolReward(m: number, c: number): number {
  return Math.cos((m * Math.PI) / (2 * m + c));
}

/** OTC-GRPO mapping f(m, n) (arXiv 2504.14870 §3.3). */
export function otcMapping(m: number, n: number): number {
  if (m === 0 && n === 0) return 0;
  if (n === 0) return m;
  return (2 * n * m) / (m + n);
}

/** OTC-GRPO r_tool: 1 if f(m,n)=n=0; cos(m·π/(2m+c)) if n=0; sin(f(m,n)·π/(2n)) otherwise. */
export function otcGrpoToolReward(m: number, n: number, c: number): number {
  const f = otcMapping(m, n);
  if (f === 0 && n === 0) return 1;
  if (n === 0) return otcPpoToolReward(m, c);
  return Math.sin((f * Math.PI) / (2 * n));
}

/**
 * Running minimum of tool calls among correct trajectories, per question (OTC-GRPO's n). Kept by the grader for
 * a training run and saved in its checkpoints.
 */
export class OtcState {
  private readonly minCalls = new Map<string, number>();

  get(question: string): number | undefined {
    return this.minCalls.get(keyOf(question));
  }

  observe(question: string, toolCalls: number): void {
    const k = keyOf(question);
    const prev = this.minCalls.get(k);
    if (prev === undefined || toolCalls < prev) this.minCalls.set(k, toolCalls);
  }

  get size(): number {
    return this.minCalls.size;
  }

  toJSON(): { version: 1; min_tool_calls: Record<string, number> } {
    return { version: 1, min_tool_calls: Object.fromEntries(this.minCalls) };
  }

  static fromJSON(value: unknown): OtcState {
    return OtcState.fromEntries(Object.entries(OtcStateJsonSchema.parse(value).min_tool_calls));
  }

  /** A state of these (key, minimum) pairs as given (checked already: a state's JSON, or what it was packed from). */
  static fromEntries(entries: Iterable<[string, number]>): OtcState {
    const state = new OtcState();
    for (const [k, v] of entries) state.minCalls.set(k, v);
    return state;
  }

  /** The (key, minimum) pairs. */
  entries(): IterableIterator<[string, number]> {
    return this.minCalls.entries();
  }
}

export const OtcStateJsonSchema = z.object({
  version: z.literal(1),
  min_tool_calls: z.record(z.string(), z.number().int().nonnegative()),
});

function keyOf(question: string): string {
  return question.trim();
}

/**
 * What OTC-GRPO's running minimum is kept per: `meta.question_key` when the caller names the question itself, else
 * the question text. verl's reward call carries no question text (its parquets' `extra_info` is only `{index,
 * split}`), so its adapter keys by data source, split and row index; keying every such call by an empty question
 * made all questions share one minimum.
 */
export function questionKey(record: Pick<TrajectoryRecord, 'question' | 'meta'>): string {
  const key = record.meta?.question_key;
  return typeof key === 'string' && key.trim() !== '' ? key : record.question;
}

/** Format-check a record's response with the reward's parameters. */
export function formatOf(record: TrajectoryRecord, params: RewardParams = {}): FormatReport {
  return formatWith(record, RewardParamsSchema.parse(params));
}

function formatWith(record: TrajectoryRecord, p: ResolvedParams): FormatReport {
  return checkFormat(
    record.response,
    recordFormatOptions(record, {
      dialect: p.dialect,
      strictness: p.strictness,
      tools: p.tools,
      maxTurns: p.max_turns,
    }),
  );
}

/**
 * Score records with one scheme. OTC-GRPO takes n per question from the correct trajectories among `records`
 * (grouped by `questionKey`: `meta.question_key` or the question text) and, when `state` is given, from its running minimum, which it also updates.
 * When a question has no correct trajectory yet, n is unknown (optimal_tool_calls = null) and r_tool falls back
 * to the n = 0 branch; that only matters for display, since r_correct is then 0.
 */
export function scoreRecords(
  records: readonly TrajectoryRecord[],
  scheme: Scheme,
  params: RewardParams = {},
  state?: OtcState,
): RewardBreakdown[] {
  const p = RewardParamsSchema.parse(params);
  const parts = records.map((r) => correctness(r, scheme, p));

  let optimal: (q: string) => number | undefined = () => undefined;
  if (scheme === 'otc-grpo') {
    const batch = new OtcState();
    records.forEach((r, i) => {
      if (parts[i].correct > 0) {
        batch.observe(questionKey(r), parts[i].format.toolCalls);
        state?.observe(questionKey(r), parts[i].format.toolCalls);
      }
    });
    optimal = (q) => {
      const a = batch.get(q);
      const b = state?.get(q);
      if (a === undefined) return b;
      if (b === undefined) return a;
      return Math.min(a, b);
    };
  }

  return records.map((r, i) => {
    const { format, em, f1, correct } = parts[i];
    const m = format.toolCalls;
    let n: number | null = null;
    let rTool = 1;
    if (scheme === 'otc-ppo') rTool = otcPpoToolReward(m, p.c);
    if (scheme === 'otc-grpo') {
      n = optimal(questionKey(r)) ?? null;
      rTool = otcGrpoToolReward(m, n ?? 0, p.c);
    }
    const otc = scheme === 'otc-ppo' || scheme === 'otc-grpo';
    const total = otc ? p.alpha * rTool * correct : correct;
    return {
      scheme,
      em,
      f1,
      format_ok: format.formatOk,
      violations: [...new Set(format.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code))],
      tool_calls: m,
      optimal_tool_calls: n,
      r_tool: round(rTool),
      r_correct: correct,
      total: round(total),
    };
  });
}

function correctness(r: TrajectoryRecord, scheme: Scheme, p: ResolvedParams) {
  const format = formatWith(r, p);
  const golden = r.golden_answers ?? [];
  const em = exactMatch(format.answer, golden);
  const f1 = round(f1Score(format.answer, golden));
  let correct = scheme === 'f1' ? f1 : scheme === 'cover-em' ? coverExactMatch(format.answer, golden) : em;
  if ((p.format_penalty || scheme === 'autocoa') && !format.formatOk) correct = 0;
  return { format, em, f1, correct };
}

/** Rewards are compared across languages: round away float noise past 1e-12. */
function round(x: number): number {
  return Math.round(x * 1e12) / 1e12;
}

/** The formula behind a breakdown, for hovers and reports. */
export function describeFormula(scheme: Scheme, params: RewardParams = {}): string {
  const p = RewardParamsSchema.parse(params);
  const penalty = p.format_penalty || scheme === 'autocoa' ? ' · [format ok]' : '';
  switch (scheme) {
    case 'em':
      return `total = EM${penalty}`;
    case 'cover-em':
      return `total = cover-EM${penalty}`;
    case 'f1':
      return `total = F1${penalty}`;
    case 'autocoa':
      return 'total = EM · [format ok]';
    case 'otc-ppo':
      return `total = α · cos(m·π/(2m+c)) · EM${penalty}, α=${p.alpha}, c=${p.c}`;
    case 'otc-grpo':
      return `total = α · r_tool(m, n) · EM${penalty}; r_tool = 1 if f=n=0, cos(m·π/(2m+c)) if n=0, sin(f·π/(2n)) else; f = 2nm/(m+n); α=${p.alpha}, c=${p.c}`;
  }
}
