// What the compare page is given (no `vscode` import, so it is unit-tested).
import type { CompareModel } from './model';

/** What the page gets: long responses cut and very long files capped, so the embedded state stays small. */
export const MAX_ROWS = 2000;
export const MAX_RESPONSE_CHARS = 6000;

/**
 * Every question with all its samples (`all`), the per-step table and the default window: the page computes the
 * rows and the summary of whichever window is chosen (./aggregate.ts), so the rows are not embedded twice.
 */
export type PageState = Omit<CompareModel, 'rows' | 'summary'> & { truncatedRows: number };

export function pageState(model: CompareModel): PageState {
  const cut = (s: string) => (s.length > MAX_RESPONSE_CHARS ? `${s.slice(0, MAX_RESPONSE_CHARS)}… (${s.length - MAX_RESPONSE_CHARS} more characters)` : s);
  const all = model.all.slice(0, MAX_ROWS).map((r) => ({
    ...r,
    a: r.a && { ...r.a, samples: r.a.samples.map((s) => ({ ...s, response: cut(s.response) })) },
    b: r.b && { ...r.b, samples: r.b.samples.map((s) => ({ ...s, response: cut(s.response) })) },
  }));
  const { rows: _rows, summary: _summary, ...rest } = model;
  return { ...rest, all, truncatedRows: model.all.length - all.length };
}
