// What the compare page is given (no `vscode` import, so it is unit-tested).
import type { CompareModel } from './model';

/** What the page gets: long responses cut and very long files capped, so the embedded state stays small. */
export const MAX_ROWS = 2000;
export const MAX_RESPONSE_CHARS = 6000;

export function pageState(model: CompareModel): CompareModel & { truncatedRows: number } {
  const cut = (s: string) => (s.length > MAX_RESPONSE_CHARS ? `${s.slice(0, MAX_RESPONSE_CHARS)}… (${s.length - MAX_RESPONSE_CHARS} more characters)` : s);
  const rows = model.rows.slice(0, MAX_ROWS).map((r) => ({
    ...r,
    a: r.a && { ...r.a, samples: r.a.samples.map((s) => ({ ...s, response: cut(s.response) })) },
    b: r.b && { ...r.b, samples: r.b.samples.map((s) => ({ ...s, response: cut(s.response) })) },
  }));
  return { ...model, rows, truncatedRows: model.rows.length - rows.length };
}
