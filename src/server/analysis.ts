// Analysis of one trajectory: a JSONL line (record) or a whole `.coa` document. Everything rule-related comes from
// the core (parseRecordLine, checkFormat); this file only places the core's findings in editor coordinates.
import type { Diagnostic } from 'vscode-languageserver';
import { parseRecordLine } from '../core/jsonl';
import { RECORD_RULES } from '../core/codes';
import { DIALECTS, DialectName } from '../core/dialects';
import { checkFormat, FormatOptions, FormatReport } from '../core/rules';
import type { Segment } from '../core/scanner';
import { isQuestion, type TrajectoryRecord } from '../core/record';
import { formatOptions, Settings } from './settings';
import { HUGE_LINE, LineGeometry, lineGeometry } from './positions';

/** A text edit inside the response, in decoded offsets (placed by whoever knows the geometry). */
export interface Fix {
  title: string;
  start: number;
  end: number;
  newText: string;
}

/** A diagnostic with columns in one line (JSONL) or offsets in the document (`.coa`). */
export interface LocalDiagnostic {
  start: number;
  end: number;
  code: string;
  severity: 'error' | 'warning';
  message: string;
  fix?: { title: string; start: number; end: number; newText: string };
}

export interface LineResult {
  kind: 'blank' | 'problem' | 'record';
  /** Records: id and question (duplicate ids, OTC-GRPO groups). The parsed record itself is not kept. */
  id?: string;
  question?: string;
  /** Columns in the raw line. */
  diagnostics: LocalDiagnostic[];
  /** The line is a JSON object with a `response` key (tells trajectory files from other JSONL). */
  looksLikeTrajectory: boolean;
  /** Record, report and geometry, recomputed on first use by hover, symbols or tokens (keeping them for every
   * line of a 100 MB file would cost memory and garbage-collection time for nothing). */
  detail?: LineDetail | null;
  /** The LSP diagnostics last built for this result, and the line they were built for (lines shift on edits). */
  published?: { line: number; list: Diagnostic[] };
}

export interface LineDetail {
  record: TrajectoryRecord;
  report: FormatReport;
  /** null on huge lines. */
  geometry: LineGeometry | null;
}

/** Counts every line analysis, so tests can prove that an edit re-checks one line only. */
export const counters = { lineChecks: 0, documentChecks: 0, detailChecks: 0 };

/** Every result has every field from the start: one object shape for all lines keeps the loops over a
 * 100 MB file's results monomorphic (shapes changing midway cost deoptimisations). */
function result(
  kind: LineResult['kind'],
  id: string | undefined,
  question: string | undefined,
  diagnostics: LocalDiagnostic[],
  looksLikeTrajectory: boolean,
): LineResult {
  return { kind, id, question, diagnostics, looksLikeTrajectory, detail: undefined, published: undefined };
}

const BLANK: LineResult = result('blank', undefined, undefined, [], false);

export function analyzeLine(line: string, settings: Settings): LineResult {
  const raw = line.endsWith('\r') ? line.slice(0, -1) : line;
  if (raw.trim() === '') return BLANK;
  counters.lineChecks++;
  // Byte offsets are not used here (the editor works in columns): 0 spares a UTF-8 length pass over the line.
  const entry = parseRecordLine(raw, 1, 0, 0);
  if (entry.problem) {
    const p = entry.problem;
    const start = Math.min(p.column - 1, raw.length);
    const diagnostic: LocalDiagnostic = {
      start,
      end: Math.max(start + 1, Math.min(raw.length, start + p.length)),
      code: p.code,
      severity: RECORD_RULES[p.code].severity,
      message: p.message,
    };
    // A schema violation in an object that has a response is a broken trajectory, not some other JSONL.
    return result('problem', undefined, undefined, [diagnostic], p.code === 'COA102' && raw.includes('"response"'));
  }
  const record = entry.record!;
  // A question (no response generated yet) is data, not a failed trajectory: no format rules (record.ts).
  if (isQuestion(record)) return result('record', record.id, record.question, [], true);
  const report = checkFormat(record.response, optionsFor(settings, record.dialect));
  const out = result('record', record.id, record.question, [], true);
  if (report.diagnostics.length === 0) return out;
  const local = formatDiagnostics(report);
  // Decoded offsets → raw columns (the core's map is compact, so huge lines are fine too).
  const offsets = local.flatMap((d) => (d.fix ? [d.start, d.end, d.fix.start, d.fix.end] : [d.start, d.end]));
  const g = lineGeometry(raw);
  const cols = g ? offsets.map((o) => g.toRaw(o)) : offsets.map(() => 0);
  let k = 0;
  for (const d of local) {
    d.start = cols[k++];
    d.end = Math.max(d.start + 1, cols[k++]);
    if (d.fix) {
      d.fix.start = cols[k++];
      d.fix.end = cols[k++];
    }
  }
  out.diagnostics = local;
  return out;
}

/** One options object per settings and record dialect (not one per line). */
const optionCache = new WeakMap<Settings, Map<DialectName | undefined, FormatOptions>>();
function optionsFor(settings: Settings, dialect: DialectName | undefined): FormatOptions {
  let byDialect = optionCache.get(settings);
  if (!byDialect) optionCache.set(settings, (byDialect = new Map()));
  let options = byDialect.get(dialect);
  if (!options) byDialect.set(dialect, (options = formatOptions(settings, dialect)));
  return options;
}

/** Record, report and geometry of a record line, computed on first use (same core calls as analyzeLine). */
export function detailOf(result: LineResult, line: string, settings: Settings): LineDetail | null {
  if (result.detail !== undefined) return result.detail;
  if (result.kind !== 'record') return (result.detail = null);
  counters.detailChecks++;
  const raw = line.endsWith('\r') ? line.slice(0, -1) : line;
  const record = parseRecordLine(raw, 1, 0, 0).record!;
  const report = checkFormat(record.response, formatOptions(settings, record.dialect));
  return (result.detail = { record, report, geometry: raw.length <= HUGE_LINE ? lineGeometry(raw) : null });
}

/** A `.coa` document is one response. Offsets stay document offsets. */
export function analyzeCoa(
  text: string,
  settings: Settings,
): { report: FormatReport | null; diagnostics: LocalDiagnostic[] } {
  counters.documentChecks++;
  if (text.slice(0, 8192).includes('\0')) {
    return {
      report: null,
      diagnostics: [{ start: 0, end: 1, code: 'COA104', severity: 'error', message: 'binary data, not a text file' }],
    };
  }
  const report = checkFormat(text, formatOptions(settings));
  return { report, diagnostics: formatDiagnostics(report) };
}

/** The core's diagnostics, with quick fixes for the two structural mistakes that have an obvious repair. */
function formatDiagnostics(report: FormatReport): LocalDiagnostic[] {
  // Unclosed segments by where their opening tag starts, built once: a search of all segments per COA001 is
  // quadratic in the number of unclosed tags (a `.coa` with 40k unclosed <think> takes 5.7 s).
  let unclosed: Map<number, Segment> | undefined;
  return report.diagnostics.map((d) => {
    const out: LocalDiagnostic = { start: d.start, end: d.end, code: d.code, severity: d.severity, message: d.message };
    if (d.code === 'COA002')
      out.fix = { title: `Remove stray ${report.text.slice(d.start, d.end)}`, start: d.start, end: d.end, newText: '' };
    // An unclosed tag, or one opened again before its close (COA017: the scanner ends it where the next step starts).
    if (d.code === 'COA001' || d.code === 'COA017') {
      unclosed ??= unclosedByStart(report.segments);
      const seg = unclosed.get(d.start);
      const close = seg && closingTag(seg, report.text, report.dialect);
      if (seg && close) {
        // Close right after the content, before the whitespace that separates it from the next step.
        let at = seg.end;
        while (at > seg.contentStart && /\s/.test(report.text[at - 1])) at--;
        out.fix = { title: `Close with ${close}`, start: at, end: at, newText: close };
      }
    }
    return out;
  });
}

/** The first unclosed segment opened at each offset (what a search of the segments for each diagnostic found). */
function unclosedByStart(segments: readonly Segment[]): Map<number, Segment> {
  const m = new Map<number, Segment>();
  for (const s of segments) if (s.open && s.close === null && !m.has(s.open.start)) m.set(s.open.start, s);
  return m;
}

/** The tag that closes a segment's opening tag in its dialect. */
export function closingTag(seg: Segment, text: string, dialect: DialectName): string | null {
  if (!seg.open) return null;
  const d = DIALECTS[dialect];
  const open = text.slice(seg.open.start, seg.open.end);
  if (open === '\\boxed{') return '}';
  if (seg.kind === 'action' && d.action.style === 'fixed') return d.action.tags.close;
  const m = /^<([A-Za-z_][A-Za-z0-9_.:-]*)>$/.exec(open);
  return m ? `</${m[1]}>` : null;
}
