// Messages between the extension host (src/extension/providers/browser/provider.ts) and the trajectory browser page
// (webview/browser), and the state embedded in the page. The page draws the first page from the embedded state;
// every query, jump, search and open goes to the host, which answers from its index of the file.
import type { BrowserQuery, QueryResult, TableKind } from '../extension/providers/browser/query';
import type { SearchField } from '../extension/providers/browser/search';
import type { RecordSummary } from '../extension/providers/browser/summary';

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
  | { type: 'page'; result: QueryResult; indexed: number; done: boolean; bytes: number; size: number; stages: string[]; questions: string }
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
