// The trajectory notebook's vocabulary, shared by the serializer, the renderer, the filter commands and the
// replay controller: notebook type id, cell kinds, the metadata every cell carries and the reward output's MIME.
// No `vscode` import: everything here is plain data so the serializer and its tests run outside the editor.
import type { SegmentKind } from '../../../core/scanner';
// The reward output is the host↔renderer protocol; it lives with the other page protocols.
export { RENDERER_ID, REWARD_MIME, type RewardOutput } from '../../../protocols/rewardOutput';

/** `contributes.notebooks[].type` (package.json): the default editor of `*.coa.jsonl`, and of filtered views. */
export const NOTEBOOK_TYPE = 'coa-trajectories';
/**
 * The same notebook offered as an option for any `*.jsonl` ("Open as Trajectory Notebook"). VS Code gives one
 * priority per notebook type, hence two types sharing one serializer; a controller should register for both.
 */
export const NOTEBOOK_TYPE_ANY_JSONL = 'coa-trajectories-jsonl';
export const NOTEBOOK_TYPES = [NOTEBOOK_TYPE, NOTEBOOK_TYPE_ANY_JSONL] as const;
export function isTrajectoryNotebook(notebookType: string): boolean {
  return (NOTEBOOK_TYPES as readonly string[]).includes(notebookType);
}
/** Language of step cells: the `coa` grammar highlights them. */
export const STEP_LANGUAGE = 'coa';
/** Language of error cells (a bad line shown verbatim): ours, not `json`, so the built-in JSON language client never activates for, nor validates, notebook cells. */
export const ERROR_LANGUAGE = 'coa-jsonl';
/** Key under which our data sits in `NotebookCellData.metadata` and `NotebookData.metadata`. */
export const META_KEY = 'coa';

/**
 * What a cell is:
 * - `header`: Markdown cell, one per record (id, question, golden answers, meta). Generated; not written back.
 * - `step`: code cell holding one piece of the record's `response` (a scanner segment, tags included). The step
 *   cells of a record, concatenated in order, ARE its response; whitespace between steps rides on the step before.
 * - `error`: a line that is not a valid record (COA101–104), shown and written back verbatim.
 * - `summary`: Markdown cell first in a file holding questions (records with no response yet, core isQuestion):
 *   how many, golden-answer coverage, sources. Generated; not written back. A question has a header cell only.
 */
export type CellKind = 'header' | 'step' | 'error' | 'summary';

/** Step kinds are the scanner's segment kinds ('text': prose outside any tag, e.g. a prompt echo). */
export type StepKind = SegmentKind;

export interface CellMetaBase {
  kind: CellKind;
  /** 0-based index of the record (non-blank line) in the file; cells of one record share it. */
  record: number;
  /** 1-based line number of the record in the file as it was read. */
  line: number;
}

export interface HeaderCellMeta extends CellMetaBase {
  kind: 'header';
  /**
   * The line exactly as read (without its line terminator). Unchanged records are written back from it, so they
   * stay byte-identical; edited ones are re-serialised from it with a new `response`.
   */
  raw: string;
  /** The line terminator that followed the line ('\n', '\r\n', or '' at end of file). */
  eol: string;
  /** Blank lines before this line, verbatim (terminators included), so they survive a save. */
  gap: string;
  /** Record id (for jumping and for the replay controller). */
  id: string;
}

export interface StepCellMeta extends CellMetaBase {
  kind: 'step';
  step: StepKind;
  /** Position of the cell in its record: 0, 1, 2, … */
  index: number;
  /** Character offsets of the cell's text in the response as read: [start, end). */
  start: number;
  end: number;
  /** The scanner segment's own span (without the whitespace carried after it) and its tool, for actions. */
  segmentEnd: number;
  tool?: string;
  /** Think pieces of one AutoCoA `<think>` block share a block number. */
  block?: number;
}

export interface ErrorCellMeta extends CellMetaBase {
  kind: 'error';
  eol: string;
  gap: string;
  code: string;
  message: string;
  column: number;
}

/** The generated questions view at the top of a file with questions (records without responses); never saved. */
export interface SummaryCellMeta {
  kind: 'summary';
  record: -1;
  line: 0;
}

export type CellMeta = HeaderCellMeta | StepCellMeta | ErrorCellMeta | SummaryCellMeta;

/** Notebook-level metadata: what follows the last line (blank lines) so the file tail survives a save. */
export interface NotebookMeta {
  trailer: string;
  /** Why saving is refused (not UTF-8, binary, the large-file stub); absent when saving is allowed. */
  readonly?: string;
  /** A filtered/sorted subset of another file (opened untitled; "Save As" writes the subset). */
  view?: { source: string; description: string };
  /** A record view (recordView.ts): one record of a bigger file, at this line of it (shown by its file name). */
  record?: { line: number; file: string };
}

/** Read our metadata from a cell's metadata bag (undefined for cells the user added). */
export function cellMeta(metadata: { [key: string]: unknown } | undefined): CellMeta | undefined {
  const m = metadata?.[META_KEY];
  if (!m || typeof m !== 'object') return undefined;
  const kind = (m as { kind?: unknown }).kind;
  return kind === 'header' || kind === 'step' || kind === 'error' || kind === 'summary' ? (m as CellMeta) : undefined;
}
