// Format diagnostics for step cells: a step alone is not a trajectory (a lone <think> has "no answer"), so the
// rules run on the whole record — its step cells joined, as saving would join them — and each finding is
// placed in the cell that holds its start, clipped to that cell. The options are the core's for that record
// (recordFormatOptions: its own `dialect` wins), so a record gets the codes `coa validate`, the language server and
// the reward give it. Pure; register.ts shows them.
import { checkFormat, FormatOptions } from '../../../core/rules';
import type { Severity } from '../../../core/codes';
import { parseRecordLine } from '../../../core/jsonl';
import { recordFormatOptions } from '../../../core/recordFormat';
import { cellMeta, type HeaderCellMeta } from './cells';

export interface CellDiagnostic {
  /** Index into the cells given. */
  cell: number;
  /** Offsets in that cell's text. */
  start: number;
  end: number;
  code: string;
  severity: Severity;
  message: string;
  /** The record it belongs to (Problems lists a cell as "Ln 1, Col 1" of a cell: the id and line say which). */
  record?: { id: string; line: number };
}

interface CellLike {
  kind: 'markup' | 'code';
  value: string;
  metadata?: { [key: string]: unknown };
}

/**
 * Reuse across calls: `key(i)` names cell i's identity and version (VS Code: cell URI + document version); a
 * record whose cells' keys are unchanged reuses its findings, so an edit re-checks one record, not the file.
 */
export interface DiagnosticCache {
  key(cell: number): string;
  records: Map<string, CellDiagnostic[]>;
}

/** Diagnostics of every record in a notebook, placed in its step cells. */
export function notebookDiagnostics(
  cells: readonly CellLike[],
  options: FormatOptions = {},
  cache?: DiagnosticCache,
): CellDiagnostic[] {
  const out: CellDiagnostic[] = [];
  const seen = new Map<string, CellDiagnostic[]>();
  let group: number[] | null = null;
  let header: HeaderCellMeta | null = null;
  const flush = () => {
    if (group?.length && header) {
      const g = group;
      const h = header;
      const k = cache ? g.map((i) => cache.key(i)).join('|') : '';
      const found =
        (cache && cache.records.get(k)) ??
        recordDiagnostics(
          g.map((i) => cells[i].value),
          recordFormatOptions({ dialect: dialectOf(h) }, options),
        );
      if (cache) seen.set(k, found);
      for (const d of found) out.push({ ...d, cell: g[d.cell], record: { id: h.id, line: h.line } });
    }
    group = null;
    header = null;
  };
  cells.forEach((cell, i) => {
    const meta = cellMeta(cell.metadata);
    if (meta?.kind === 'header') {
      flush();
      group = [];
      header = meta;
    } else if (meta?.kind === 'error') flush();
    else if (cell.kind === 'code' && group) group.push(i);
  });
  flush();
  // Keep only the records that still exist.
  if (cache) cache.records = seen;
  return out;
}

/** The `dialect` field of the record a header cell was made from (its line as read; undefined when it has none). */
function dialectOf(h: HeaderCellMeta) {
  return parseRecordLine(h.raw, h.line, 0, 0).record?.dialect;
}

/** The message Problems shows for a cell's finding: which record and line, since a cell has no line of the file. */
export function cellMessage(d: CellDiagnostic): string {
  return d.record ? `${d.record.id} (line ${d.record.line.toLocaleString('en-US')}): ${d.message}` : d.message;
}

/** Diagnostics of one record given its step cell texts (cell indices are positions in `texts`). */
export function recordDiagnostics(texts: readonly string[], options: FormatOptions = {}): CellDiagnostic[] {
  const starts: number[] = [];
  let offset = 0;
  for (const t of texts) {
    starts.push(offset);
    offset += t.length;
  }
  const response = texts.join('');
  return checkFormat(response, options).diagnostics.map((d) => {
    // Leading whitespace of a span is carried by the step before: start at the span's first visible character.
    let from = d.start;
    while (from < d.end - 1 && /\s/.test(response[from])) from++;
    // The cell holding the start; a finding at the very end (a missing answer) goes to the last cell.
    let c = texts.length - 1;
    while (c > 0 && starts[c] > from) c--;
    while (c < texts.length - 1 && from >= starts[c] + texts[c].length && texts[c + 1].length > 0) c++;
    const cellEnd = starts[c] + texts[c].length;
    const start = Math.min(from, cellEnd) - starts[c];
    const end = Math.max(start, Math.min(d.end, cellEnd) - starts[c]);
    return { cell: c, start, end, code: d.code, severity: d.severity, message: d.message };
  });
}
