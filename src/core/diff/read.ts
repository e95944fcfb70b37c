// Two trajectory files' texts → the checkpoint diff's data (./types.ts): records paired per question, each with its
// reward breakdown — the one the trainer stored in the record when every record has one (an RL rollout's OTC-GRPO
// reward is the one it trained on, with its running minimum), else scored here by the core's rewards with one scheme.
import { iterateJsonlText } from '../jsonl';
import { isQuestion, type RewardBreakdown, type Scheme, type TrajectoryRecord } from '../record';
import { scoreRecords, type RewardParams } from '../rewards';
import { sourceOf } from '../questionSummary';
import { defaultWindow, stepTable } from './flips';
import type { Attributes, DiffData, DiffQuestion, DiffSample, KeyMode, SideInfo } from './types';

export interface DiffOptions {
  /** Score both sides with this scheme; by default each side's stored rewards are used when it has them all. */
  scheme?: Scheme;
  /** The scheme a side without stored rewards is scored with (default em). */
  fallbackScheme?: Scheme;
  params?: RewardParams;
  /** How records are paired; by default `id` when both files are one record per id sharing most ids. */
  keyBy?: KeyMode;
}

interface Side {
  info: SideInfo;
  entries: { r: TrajectoryRecord; line: number; b: RewardBreakdown }[];
}

/** Questions are matched by their text with whitespace and case folded (ids differ between runs). */
export function foldQuestion(q: string): string {
  return q.trim().replace(/\s+/g, ' ').toLowerCase();
}

function readSide(text: string, label: string, opts: DiffOptions): Side {
  const records: { r: TrajectoryRecord; line: number }[] = [];
  const invalid: SideInfo['invalid'] = [];
  for (const e of iterateJsonlText(text)) {
    if (e.record) {
      // A question without a response (prompt-only data) has no trajectory to compare.
      if (!isQuestion(e.record)) records.push({ r: e.record, line: e.line });
    } else if (e.problem)
      invalid.push({
        line: e.line,
        message: `${label}:${e.line}:${e.problem.column}: ${e.problem.code} ${e.problem.message}`,
      });
  }
  const stored = opts.scheme === undefined && records.length > 0 && records.every((x) => x.r.reward !== undefined);
  const scheme = opts.scheme ?? opts.fallbackScheme ?? 'em';
  const breakdowns = stored
    ? records.map((x) => x.r.reward!)
    : scoreRecords(
        records.map((x) => x.r),
        scheme,
        opts.params,
      );
  const reward: SideInfo['reward'] = stored
    ? { source: 'stored', schemes: [...new Set(breakdowns.map((b) => b.scheme))].sort() }
    : { source: 'scored', scheme };
  return {
    info: { label, records: records.length, invalid, reward },
    entries: records.map((x, i) => ({ ...x, b: breakdowns[i] })),
  };
}

/** `id` when every record of each side has its own id, none is an RL step's, and most ids are on both sides. */
function chooseKeyMode(a: Side, b: Side): KeyMode {
  const ids = (s: Side) => new Set(s.entries.map((e) => e.r.id));
  const ia = ids(a);
  const ib = ids(b);
  if (ia.size !== a.entries.length || ib.size !== b.entries.length) return 'question';
  if ([...a.entries, ...b.entries].some((e) => typeof e.r.meta?.step === 'number')) return 'question';
  let shared = 0;
  for (const id of ia) if (ib.has(id)) shared++;
  return shared > 0 && shared * 2 >= Math.min(ia.size, ib.size) ? 'id' : 'question';
}

function keyOf(r: TrajectoryRecord, mode: KeyMode): string {
  if (mode === 'id') return r.id;
  const k = r.meta?.question_key;
  return typeof k === 'string' && k.trim() ? k : foldQuestion(r.question);
}

/** What the data says about a record's question: its source, and the kind / hops / level its meta names. */
export function attributesOf(r: TrajectoryRecord): Attributes {
  const out: Attributes = {};
  const src = sourceOf(r);
  if (src !== 'unknown source') out.source = src;
  const m = (r.meta ?? {}) as Record<string, unknown>;
  const text = (v: unknown) =>
    typeof v === 'string' && v.trim() ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
  for (const name of ['hops', 'kind', 'level']) {
    const v = text(m[name]);
    if (v !== undefined) out[name] = v;
  }
  // Evaluations written before meta.kind named the question's kind in meta.group (a GRPO rollout's group is a number).
  if (out.kind === undefined && typeof m.group === 'string' && m.group) out.group = m.group;
  return out;
}

/** The advantage the trainer stored: tokens.advantages at the first trained (loss-mask 1) token. */
export function storedAdvantage(r: TrajectoryRecord): number | null {
  const t = r.tokens;
  if (!t?.advantages?.length) return null;
  const i = t.loss_mask ? t.loss_mask.findIndex((m) => m > 0) : 0;
  const v = i >= 0 ? t.advantages[i] : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function sampleOf(e: Side['entries'][number]): DiffSample {
  const m = e.r.meta ?? {};
  return {
    id: e.r.id,
    line: e.line,
    step: typeof m.step === 'number' ? m.step : null,
    sample: typeof m.sample === 'number' ? m.sample : null,
    response: e.r.response,
    dialect: e.r.dialect ?? null,
    breakdown: e.b,
    advantage: storedAdvantage(e.r),
  };
}

export function readDiff(
  a: { text: string; label: string },
  b: { text: string; label: string },
  opts: DiffOptions = {},
): DiffData {
  const A = readSide(a.text, a.label, opts);
  const B = readSide(b.text, b.label, opts);
  const keyBy = opts.keyBy ?? chooseKeyMode(A, B);
  const byKey = new Map<string, DiffQuestion>();
  const add = (side: 'a' | 'b', s: Side) => {
    for (const e of s.entries) {
      const key = keyOf(e.r, keyBy);
      let q = byKey.get(key);
      if (!q)
        byKey.set(
          key,
          (q = {
            key,
            question: e.r.question,
            golden: e.r.golden_answers ?? [],
            attrs: attributesOf(e.r),
            a: [],
            b: [],
          }),
        );
      q[side].push(sampleOf(e));
    }
  };
  add('a', A);
  add('b', B);
  const questions = [...byKey.values()];
  const steps = stepTable(questions);
  return { a: A.info, b: B.info, keyBy, questions, steps, window: defaultWindow(steps) };
}

/** How a side's rewards were obtained, in words ("stored (otc-grpo)", "scored here with em"). */
export function describeReward(s: SideInfo): string {
  return s.reward.source === 'stored'
    ? `stored (${s.reward.schemes.join(', ')})`
    : `scored here with ${s.reward.scheme}`;
}
