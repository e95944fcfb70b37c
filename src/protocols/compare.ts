// What the "Compare runs" page (webview/compare) and its host (src/extension/providers/compare) say to each other.
// The page is given every question with each side's samples as reward breakdowns (no responses: a file of thousands
// of trajectories stays a small page) and computes the flip table of whichever step window is chosen with the core
// (src/core/diff/flips.ts). A row opened asks the host for the two trajectories, aligned by step by the core.
import type { Alignment } from '../core/diff/align';
import type { DiffData, DiffSample } from '../core/diff/types';

/** A sample as embedded: everything but its response. */
export type PageSample = Omit<DiffSample, 'response'>;

export type ComparePageState = Omit<DiffData, 'questions'> & {
  questions: (Omit<DiffData['questions'][number], 'a' | 'b'> & { a: PageSample[]; b: PageSample[] })[];
  /** Questions left out of a very large comparison (the first MAX_QUESTIONS are embedded). */
  truncated: number;
  /** The reward formula of the scheme used where rewards were scored here. */
  formula: string;
};

/** One side's trajectory of an opened row. */
export interface PairSide {
  id: string;
  line: number;
  step: number | null;
  response: string;
}

export type PageToHost =
  /** The two trajectories of a question: `a` / `b` index its samples on each side (null: that side has none). */
  | { type: 'pair'; key: string; a: number | null; b: number | null }
  /** Open one side's record (its line in its file) in the record view. */
  | { type: 'openRecord'; side: 'a' | 'b'; line: number };

export type HostToPage = {
  type: 'pair';
  key: string;
  a: PairSide | null;
  b: PairSide | null;
  alignment: Alignment | null;
  error?: string;
};
