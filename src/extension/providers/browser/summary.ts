// A parsed line as a row of the trajectory browser's index (RecordSummary, src/protocols/browser.ts: where the
// record's line is and the few fields it is filtered and sorted by, never the record itself).
import type { JsonlEntry } from '../../../core/jsonl';
import { RewardParams, scoreRecords } from '../../../core/rewards';
import { isQuestion, type RewardBreakdown, type Scheme } from '../../../core/record';
import { hasGolden, sourceOf } from '../../../core/questionSummary';
import type { RecordSummary } from '../../../protocols/browser';

export const QUESTION_CHARS = 100;

/** `contributes.customEditors[].viewType` of the browser (package.json). */
export const BROWSER_VIEW_TYPE = 'coaStudio.trajectoryBrowser';

export interface ScoreOptions {
  scheme?: Scheme;
  params?: RewardParams;
}

/**
 * Summarise one parsed line. Rewards are per record: OTC-GRPO's n (the best answer to a question across the file)
 * is not known while streaming, so it shows the n-unknown branch, as the core does for a lone record.
 */
export function summarize(entry: JsonlEntry, i: number, options: ScoreOptions = {}): RecordSummary {
  return summarizeBatch([entry], i, options)[0];
}

/**
 * Summarise consecutive entries (the first has index `first`). A record that stores its reward is shown with it —
 * the reward its run trained on, under its run's scheme (an OTC-GRPO 0.866 stays 0.866; recomputing it with the
 * editor's `em` said 1): sorting and the `reward ≥` filter then read what the run saw. Only records without one are
 * scored, under the configured scheme, and the row says which (`stored`). One scoring call per batch saves the
 * per-call parameter validation; for OTC-GRPO each record is scored alone, so a row never depends on its batch.
 */
export function summarizeBatch(
  entries: readonly JsonlEntry[],
  first: number,
  options: ScoreOptions = {},
): RecordSummary[] {
  const scheme = options.scheme ?? 'em';
  const unscored = entries.flatMap((e) => (e.record && !e.record.reward ? [e.record] : []));
  const scores =
    scheme === 'otc-grpo'
      ? unscored.flatMap((r) => scoreRecords([r], scheme, options.params ?? {}))
      : scoreRecords(unscored, scheme, options.params ?? {});
  let k = 0;
  return entries.map((e, j) =>
    row(e, first + j, e.record ? (e.record.reward ?? scores[k++]) : undefined, !!e.record?.reward),
  );
}

function row(entry: JsonlEntry, i: number, b: RewardBreakdown | undefined, stored = false): RecordSummary {
  const base = { i, line: entry.line, offset: entry.offset, length: entry.byteLength };
  const r = entry.record;
  if (!r || !b) {
    const p = entry.problem!;
    return {
      ...base,
      id: '',
      reward: null,
      em: null,
      toolCalls: null,
      formatOk: null,
      stage: null,
      step: null,
      question: entry.raw.slice(0, QUESTION_CHARS),
      error: `${entry.line}:${p.column}: ${p.code} ${p.message}`,
    };
  }
  // A question (no response yet, core isQuestion) has no reward to show and is not a failure.
  if (isQuestion(r))
    return {
      ...base,
      id: r.id,
      reward: null,
      em: null,
      toolCalls: null,
      formatOk: null,
      stage: r.meta?.stage ?? null,
      step: r.meta?.step ?? null,
      question: r.question.slice(0, QUESTION_CHARS),
      isQuestion: true,
      hasGolden: hasGolden(r),
      source: sourceOf(r),
      golden: (r.golden_answers ?? []).join(' · ').slice(0, QUESTION_CHARS),
    };
  return {
    ...base,
    id: r.id,
    reward: b.total,
    scheme: b.scheme,
    stored,
    em: b.em,
    toolCalls: b.tool_calls,
    formatOk: b.format_ok,
    stage: r.meta?.stage ?? null,
    step: r.meta?.step ?? null,
    question: r.question.slice(0, QUESTION_CHARS),
  };
}
