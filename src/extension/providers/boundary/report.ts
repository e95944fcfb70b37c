// The search boundary meter's report file (`<run>/eval/boundary-<stage>-<split>.json`, written by
// `python -m coa_trainer boundary` and checked there against the same schema), read and checked here, and the page
// state made from it. No `vscode` import.
import { BoundaryReportSchema, type BoundaryReport } from '../../../core/boundary';
import type { BoundaryPageState } from '../../../protocols/boundary';

/** Rows and response lengths the page is given, so a report of a large question set embeds in a few megabytes. */
export const MAX_ROWS = 3000;
export const MAX_RESPONSE_CHARS = 2000;

/** The report named `file`, or an error saying which field of which file is wrong (never a stack trace). */
export function parseReport(text: string, file: string): BoundaryReport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(
      `${file}: not JSON (${(e as Error).message}) — a search boundary report is written whole by python -m coa_trainer boundary`,
      { cause: e },
    );
  }
  const parsed = BoundaryReportSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length ? issue.path.join('.') : '(root)';
    throw new Error(`${file}: ${where}: ${issue.message} — not a search boundary report of this version`);
  }
  return parsed.data;
}

/** The page's state: rows beyond MAX_ROWS left out (counted), responses cut to MAX_RESPONSE_CHARS. */
export function pageState(report: BoundaryReport, file: string): BoundaryPageState {
  const cut = (s: string) =>
    s.length > MAX_RESPONSE_CHARS
      ? `${s.slice(0, MAX_RESPONSE_CHARS)}… (${s.length - MAX_RESPONSE_CHARS} more characters)`
      : s;
  const rows = report.rows.slice(0, MAX_ROWS).map((r) => ({
    ...r,
    responses: Object.fromEntries(
      Object.entries(r.responses).map(([k, v]) => [k, cut(v as string)]),
    ) as typeof r.responses,
  }));
  return {
    file,
    report: { ...report, rows },
    cutRows: report.rows.length - rows.length,
    responseChars: MAX_RESPONSE_CHARS,
  };
}

/** A report file's name says what it measured: `boundary-<stage>-<split>.json`. */
export function isReportName(name: string): boolean {
  return /^boundary-.+\.json$/.test(name);
}
