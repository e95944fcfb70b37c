// Positions inside JSON string literals: a format diagnostic has offsets into the decoded `response` string,
// while editors and `coa validate` need columns in the raw JSON line, where `\n`, `\"` and `\uXXXX` take more
// characters than they stand for.
import { findNodeAtLocation, parseTree } from 'jsonc-parser';

export interface StringMap {
  /** Offset of the literal's opening quote in the raw line. */
  literalStart: number;
  /** Raw offset (in the line) of decoded offset `i`; `i` may equal the decoded length. */
  toRaw(i: number): number;
}

/** Map for the string at `path` (e.g. ['response']) in a raw JSON line; null if there is no string there. */
export function mapStringAt(raw: string, path: (string | number)[]): StringMap | null {
  const root = parseTree(raw);
  const node = root && findNodeAtLocation(root, path);
  if (!node || node.type !== 'string') return null;
  return mapLiteral(raw, node.offset);
}

/**
 * Build the map for the literal whose opening quote is at raw[quote]. Memory is proportional to the number of
 * escapes, not the literal's length, so a 50 MB line costs what its `\n`s cost.
 */
export function mapLiteral(raw: string, quote: number): StringMap {
  // For the k-th escape: the decoded index it stands at, and the raw characters it takes beyond one.
  const at: number[] = [];
  const extraAfter: number[] = []; // cumulative extra raw characters up to and including escape k
  let p = quote + 1;
  let decoded = 0;
  let extra = 0;
  let close = raw.indexOf('"', p);
  for (let e = raw.indexOf('\\', p); ; e = raw.indexOf('\\', p)) {
    // Re-find the closing quote only when an escape (`\\"`) swallowed the one found before: linear overall.
    while (close >= 0 && close < p) close = raw.indexOf('"', p);
    if (close < 0 && e < 0) {
      p = raw.length;
      decoded = p - (quote + 1) - extra;
      break;
    }
    if (e < 0 || (close >= 0 && close < e)) {
      // The closing quote comes before the next escape (escaped quotes are consumed with their backslash).
      decoded += close - p;
      p = close;
      break;
    }
    decoded += e - p;
    const width = raw[e + 1] === 'u' ? 6 : 2;
    at.push(decoded);
    extra += width - 1;
    extraAfter.push(extra);
    decoded += 1;
    p = e + width;
  }
  const length = decoded;
  const end = p;
  return {
    literalStart: quote,
    toRaw(i: number): number {
      if (i >= length) return end;
      if (i <= 0) return quote + 1;
      // Escapes strictly before decoded index i shift it right by their extra characters.
      let lo = 0;
      let hi = at.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (at[mid] < i) lo = mid + 1;
        else hi = mid;
      }
      return quote + 1 + i + (lo > 0 ? extraAfter[lo - 1] : 0);
    },
  };
}
