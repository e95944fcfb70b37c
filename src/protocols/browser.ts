// Messages between the extension host (src/extension/providers/browser/provider.ts) and the trajectory browser page
// (webview/browser), and the state embedded in the page. The page draws the first page from the embedded state;
// every query, jump, search and open goes to the host, which answers from its index of the file.
import type { Scheme } from '../core/record';

/**
 * One row of the trajectory browser's index: where the record's line is (byte offset and length, to read it back
 * on demand) and the few fields it is filtered and sorted by. Never the record itself: the index of a 500 MB
 * file has to fit in the extension host next to everything else.
 */
export interface RecordSummary {
  /** 0-based position among the file's non-blank lines. */
  i: number;
  line: number;
  offset: number;
  length: number;
  id: string;
  /** null for a bad line (then `error` says why). The record's stored reward when it has one, else recomputed. */
  reward: number | null;
  /** The scheme `reward` is under: the stored reward's own, else the configured one it was recomputed with. */
  scheme?: Scheme;
  /** `reward` is the record's stored one (what its run trained on), not recomputed here. */
  stored?: boolean;
  em: number | null;
  toolCalls: number | null;
  formatOk: boolean | null;
  stage: string | null;
  step: number | null;
  /** The question, cut to QUESTION_CHARS (providers/browser/summary.ts) for the table. */
  question: string;
  /** A question: no response generated yet (shown without a reward, never a failure), with what the questions
   *  line counts: whether it has golden answers and its source. */
  isQuestion?: boolean;
  hasGolden?: boolean;
  source?: string;
  /** A question's golden answers, joined with ' · ' and cut to QUESTION_CHARS (the questions table's column). */
  golden?: string;
  error?: string;
}

export type SortKey = 'file' | 'reward' | 'em' | 'tool-calls' | 'step';

export interface BrowserQuery {
  failuresOnly?: boolean;
  /** Keep records whose exact match is this (0 or 1). */
  em?: 0 | 1 | null;
  /** Keep records whose reward is at least this. */
  minReward?: number | null;
  /** Keep records with more than this many tool calls. */
  moreToolCalls?: number | null;
  stage?: string | null;
  step?: number | null;
  /** Only bad lines. */
  errorsOnly?: boolean;
  sort?: SortKey;
  order?: 'asc' | 'desc';
  page?: number;
  pageSize?: number;
}

export interface QueryResult {
  /** Matching records in the index so far. */
  total: number;
  page: number;
  pageSize: number;
  rows: RecordSummary[];
}

/** How the table is laid out: a prompt-only dataset (question, golden answers, source) or trajectories (rewards). */
export type TableKind = 'questions' | 'trajectories';

/** Where a text search looks (src/extension/providers/browser/search.ts). */
export type SearchField = 'all' | 'question' | 'response' | 'answers';

/** Embedded in the page (`#initial-state`): the first page of records, read before the index is built. */
export interface BrowserInitialState {
  /** The file, workspace-relative. */
  file: string;
  size: number;
  pageSize: number;
  first: RecordSummary[];
  /** The questions line (records without responses yet), '' when there are none. */
  questions: string;
  kind: TableKind;
}

/** What the page shows of a text search: its text, hits so far, whether it still runs, how far into the file. */
export interface BrowserSearchState {
  text: string;
  count: number;
  running: boolean;
  bytes: number;
  error?: string;
}

export type BrowserToHost =
  /** The page's listener is attached (the host re-renders the page until it hears this). */
  | { type: 'ready' }
  | { type: 'query'; query: BrowserQuery }
  /** Go to the record with this id (or line): its page, selected, opened beside. */
  | { type: 'jump'; query: BrowserQuery; target: string }
  /** Open row `i` of the index in its record view (`focus`: the record view takes the focus). */
  | { type: 'open'; i: number; focus?: boolean }
  | { type: 'search'; text: string; field?: SearchField }
  | { type: 'cancelSearch' };

export type HostToBrowser =
  /** Indexing progress (at most ~5×/s). */
  | { type: 'progress'; indexed: number; bytes: number; size: number }
  /** The answer to the last query, on the index so far. */
  | {
      type: 'page';
      result: QueryResult;
      indexed: number;
      done: boolean;
      bytes: number;
      size: number;
      stages: string[];
      questions: string;
    }
  | ({ type: 'search' } & BrowserSearchState)
  /** The row a jump landed on. */
  | { type: 'selected'; i: number }
  /**
   * How a jump went: found in the index (`done`); indexed but hidden by the filter or search, opened beside
   * (`filtered`, at `line`); past the part indexed so far, being looked for in the file (`searching`, bytes read of
   * size) and then opened beside (`ahead`, at `line`: the table shows it once the index gets there); or in neither
   * (`missing`). `unindexed`: an id of a verl dump not in the part indexed so far (its ids are made while indexing,
   * so the file cannot be searched for one).
   */
  | { type: 'jump'; target: string; state: 'done' | 'missing' | 'unindexed' }
  | { type: 'jump'; target: string; state: 'searching'; bytes: number; size: number }
  | { type: 'jump'; target: string; state: 'ahead' | 'filtered'; line: number }
  | { type: 'error'; message: string };
