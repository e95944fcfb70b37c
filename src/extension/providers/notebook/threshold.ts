// Notebook or paged browser: the notebook is chosen while VS Code stays fluid with it, which depends on how many
// cells it has (each cell is an editor model, a text document in the extension host, a row of the list), not on
// bytes — a 0.9 MB question set is 2,936 cells, a 0.9 MB rollout file a few hundred. No `vscode` import.
// The default is measured (bench/notebook/editor.ts, bench/RESULTS.md): what grows with the square of the cells is
// VS Code's built-in JSON language client, active in most windows, whose vscode-languageclient walks every cell of
// every open notebook on each cell document it is told about (findNotebookDocumentAndCell) — 11 of 13 s of
// extension-host CPU when 3,001 cells opened. We cannot change that client; we keep notebooks small enough for it.
import { settingDefault } from '../../../core/settingDefaults';
// The number itself is the setting's default in package.json (coaStudio.notebook.maxCells), the one table of defaults.
export const DEFAULT_MAX_CELLS: number = settingDefault('notebook.maxCells');

export interface NotebookLimits {
  maxBytes: number;
  maxCells: number;
}

/** Why a file goes to the browser instead (null: the notebook takes it). */
export type TooLarge =
  | { why: 'bytes'; bytes: number; limit: number }
  | { why: 'cells'; cells: number; limit: number; records?: number };

/** Cheap test before any parsing: every non-blank line is at least one cell. */
export function tooLargeBeforeParsing(bytes: Uint8Array, limits: NotebookLimits): TooLarge | null {
  if (bytes.byteLength > limits.maxBytes) return { why: 'bytes', bytes: bytes.byteLength, limit: limits.maxBytes };
  let lines = 0;
  let from = 0;
  for (;;) {
    const nl = bytes.indexOf(10, from);
    const end = nl < 0 ? bytes.byteLength : nl;
    if (end > from + 1 || (end === from + 1 && bytes[from] !== 13)) lines++;
    if (nl < 0) break;
    from = nl + 1;
  }
  return lines > limits.maxCells ? { why: 'cells', cells: lines, limit: limits.maxCells } : null;
}

/** After decoding: the cells the notebook would have. */
export function tooManyCells(cells: number, limits: NotebookLimits): TooLarge | null {
  return cells > limits.maxCells ? { why: 'cells', cells, limit: limits.maxCells } : null;
}

const n = (x: number) => x.toLocaleString('en-US');

/** The sentence the stub cell and the "open as notebook" refusal show. */
export function describeTooLarge(t: TooLarge): string {
  return t.why === 'bytes'
    ? `${(t.bytes / 1024 / 1024).toFixed(0)} MB is above \`coaStudio.notebook.largeFileMB\` (${n(t.limit / 1024 / 1024)} MB)`
    : `${n(t.cells)} cells is above \`coaStudio.notebook.maxCells\` (${n(t.limit)}: where VS Code stays fluid)`;
}
