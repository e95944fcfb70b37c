// "Compare runs", the pure part (no `vscode` import): two trajectory files → the checkpoint diff's data
// (src/core/diff: paired questions, stored or scored rewards, the step window), the page's state without responses,
// and the answer to an opened row — the two trajectories aligned by step.
import { readDiff, type DiffOptions } from '../../../core/diff/read';
import { alignTrajectories } from '../../../core/diff/align';
import type { DiffData, DiffSample } from '../../../core/diff/types';
import { describeFormula, type RewardParams } from '../../../core/rewards';
import type { Scheme } from '../../../core/record';
import type { ComparePageState, HostToPage, PageSample } from '../../../protocols/compare';

/** Questions embedded in the page at most (each with its samples' breakdowns). */
export const MAX_QUESTIONS = 20_000;

export interface CompareOptions {
  /** The scheme rewards are scored with where a side has no stored rewards (the editor's configured scheme). */
  scheme: Scheme;
  params?: RewardParams;
  /** Rescore both sides with `scheme` even where the records carry the trainer's rewards. */
  rescore?: boolean;
}

export function compareFiles(
  a: { text: string; label: string },
  b: { text: string; label: string },
  o: CompareOptions,
): DiffData {
  const opts: DiffOptions = { params: o.params, ...(o.rescore ? { scheme: o.scheme } : { fallbackScheme: o.scheme }) };
  return readDiff(a, b, opts);
}

const strip = ({ response: _r, ...rest }: DiffSample): PageSample => rest;

export function pageState(data: DiffData, o: CompareOptions): ComparePageState {
  const questions = data.questions.slice(0, MAX_QUESTIONS).map((q) => ({ ...q, a: q.a.map(strip), b: q.b.map(strip) }));
  return {
    ...data,
    questions,
    truncated: data.questions.length - questions.length,
    formula: describeFormula(o.scheme, o.params),
  };
}

/** The two trajectories a row asks for, and their alignment when both exist. */
export function pairAnswer(
  data: DiffData,
  key: string,
  ia: number | null,
  ib: number | null,
): Extract<HostToPage, { type: 'pair' }> {
  const q = data.questions.find((x) => x.key === key);
  if (!q)
    return {
      type: 'pair',
      key,
      a: null,
      b: null,
      alignment: null,
      error: `no question ${JSON.stringify(key)} in this comparison`,
    };
  const pick = (ss: DiffSample[], i: number | null) => (i !== null && ss[i] ? ss[i] : null);
  const a = pick(q.a, ia);
  const b = pick(q.b, ib);
  const side = (s: DiffSample | null) => s && { id: s.id, line: s.line, step: s.step, response: s.response };
  return { type: 'pair', key, a: side(a), b: side(b), alignment: a && b ? alignTrajectories(a, b) : null };
}
