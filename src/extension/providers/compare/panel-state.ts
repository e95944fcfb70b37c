// What the compare page is given (no `vscode` import, so it is unit-tested).
import type { CompareModel } from './model';
import type { ComparePageState } from '../../../protocols/compare';

/** What the page gets: long responses cut and very long files capped, so the embedded state stays small. */
export const MAX_ROWS = 2000;
export const MAX_RESPONSE_CHARS = 6000;

/** The page's state (the protocol: src/protocols/compare.ts) from the comparison. */
export function pageState(model: CompareModel): ComparePageState {
  const cut = (s: string) => (s.length > MAX_RESPONSE_CHARS ? `${s.slice(0, MAX_RESPONSE_CHARS)}… (${s.length - MAX_RESPONSE_CHARS} more characters)` : s);
  const all = model.all.slice(0, MAX_ROWS).map((r) => ({
    ...r,
    a: r.a && { ...r.a, samples: r.a.samples.map((s) => ({ ...s, response: cut(s.response) })) },
    b: r.b && { ...r.b, samples: r.b.samples.map((s) => ({ ...s, response: cut(s.response) })) },
  }));
  const { rows: _rows, summary: _summary, ...rest } = model;
  return { ...rest, all, truncatedRows: model.all.length - all.length };
}
