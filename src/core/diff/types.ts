// The checkpoint diff's data: two files (evaluations or rollouts) read into one list of questions, each with the
// samples each side has of it. Plain data, no Node or DOM: the CLI (`coa diff`), the extension's Compare Runs and
// its page all hold these.
import type { RewardBreakdown, Scheme } from '../record';

export interface DiffSample {
  id: string;
  /** 1-based line in its file. */
  line: number;
  /** meta.step of an RL rollout; null for records without one (an evaluation, a collection). */
  step: number | null;
  /** meta.sample / meta.group of a GRPO rollout, when the record says. */
  sample: number | null;
  response: string;
  dialect: string | null;
  breakdown: RewardBreakdown;
  /** The GRPO advantage the trainer stored (tokens.advantages at the first trained token); null when absent. */
  advantage: number | null;
}

/** What the data says about a question, by dimension (`source`, `kind`, `hops`, `level`): grouping keys. */
export type Attributes = Record<string, string>;

export interface DiffQuestion {
  /** What the two sides are matched on (see `KeyMode`). */
  key: string;
  question: string;
  golden: string[];
  attrs: Attributes;
  a: DiffSample[];
  b: DiffSample[];
}

/**
 * How records of the two files are paired: `id` when both are one record per id and share most ids (two
 * evaluations of one question set: the record-level EM of each file is then exactly what the table compares);
 * `question` otherwise (rollouts: `meta.question_key`, else the question text with case and spaces folded).
 */
export type KeyMode = 'id' | 'question';

export interface SideInfo {
  label: string;
  records: number;
  /** Lines that are not records, as `file:line:col: CODE message`. */
  invalid: { line: number; message: string }[];
  /** Where the rewards come from: the records' stored `reward` (the trainer's), or scored here with `scheme`. */
  reward: { source: 'stored'; schemes: Scheme[] } | { source: 'scored'; scheme: Scheme };
}

/** Which steps a comparison covers: every record pooled, or one step of RL rollouts. */
export type StepWindow = { kind: 'all' } | { kind: 'step'; step: number };

export interface DiffData {
  a: SideInfo;
  b: SideInfo;
  keyBy: KeyMode;
  /** Every question with every sample of each side, all steps (windows select from these). */
  questions: DiffQuestion[];
  /** Mean reward per step of each side (empty when the records carry no meta.step). */
  steps: StepRow[];
  /** The default window: the last step both sides sampled, or every record. */
  window: StepWindow;
}

/** Per-question (or per-step) means of one side. */
export interface Means {
  n: number;
  total: number;
  em: number;
  f1: number;
  tool_calls: number;
  r_tool: number;
  r_correct: number;
  format_ok: number;
}
export type Delta = Omit<Means, 'n'>;
export const MEAN_KEYS = ['total', 'em', 'f1', 'tool_calls', 'r_tool', 'r_correct', 'format_ok'] as const;

export interface StepRow {
  step: number;
  a: Means | null;
  b: Means | null;
  delta: Delta | null;
}
