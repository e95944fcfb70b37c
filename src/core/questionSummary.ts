// What a prompt-only dataset holds (records that are questions, see isQuestion in record.ts): how many, how many
// carry golden answers (a question without them cannot be scored), and where they come from. The notebook's
// questions view and `coa validate` print it, so a dataset is described as a dataset, not as failures.
import { isQuestion, type TrajectoryRecord } from './record';
import { rowSource } from './data/ids';

export interface QuestionSummary {
  /** Records that are questions (no response yet). */
  questions: number;
  /** Of those, the ones with at least one golden answer. */
  withGolden: number;
  /** Questions per source (sourceOf; "unknown source" otherwise), most first. */
  sources: [string, number][];
}

/**
 * Where a question comes from: its row's source as the importers name it (data/ids.ts rowSource: AutoCoA's merged
 * test set's `source_file` stem — its data_source is "HotpotQA" on every row — else verl's data_source), else
 * meta.source or meta.dataset (FlashRAG).
 */
export function sourceOf(r: TrajectoryRecord): string {
  const m = (r.meta ?? {}) as Record<string, unknown>;
  const row = rowSource(m);
  if (row) return row;
  for (const key of ['source', 'dataset']) if (typeof m[key] === 'string' && m[key]) return m[key] as string;
  return 'unknown source';
}

export function hasGolden(r: TrajectoryRecord): boolean {
  return r.golden_answers?.some((g) => g.trim() !== '') ?? false;
}

/** Counts questions one record at a time (a 300k-line file is never held). */
export class QuestionTally {
  private questions = 0;
  private withGolden = 0;
  private readonly sources = new Map<string, number>();

  add(r: TrajectoryRecord): void {
    if (isQuestion(r)) this.addQuestion(hasGolden(r), sourceOf(r));
  }

  /** One question already reduced to what is counted (the browser's index keeps only this). */
  addQuestion(golden: boolean, source: string): void {
    this.questions++;
    if (golden) this.withGolden++;
    this.sources.set(source, (this.sources.get(source) ?? 0) + 1);
  }

  summary(): QuestionSummary {
    return {
      questions: this.questions,
      withGolden: this.withGolden,
      sources: [...this.sources].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
    };
  }
}

export function summarizeQuestions(records: Iterable<TrajectoryRecord>): QuestionSummary {
  const tally = new QuestionTally();
  for (const r of records) tally.add(r);
  return tally.summary();
}

/** One line: "2,936 questions (no responses yet) · golden answers on 2,936 (100 %) · sources: HotpotQA 2,936". */
export function describeQuestions(s: QuestionSummary): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const pct = s.questions ? Math.round((100 * s.withGolden) / s.questions) : 0;
  const sources =
    s.sources
      .slice(0, 5)
      .map(([k, v]) => `${k} ${n(v)}`)
      .join(', ') + (s.sources.length > 5 ? `, ${s.sources.length - 5} more` : '');
  return `${n(s.questions)} question${s.questions === 1 ? '' : 's'} (no responses yet) · golden answers on ${n(s.withGolden)} (${pct} %) · sources: ${sources}`;
}
