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

/** Build the map for the literal whose opening quote is at raw[quote]. */
export function mapLiteral(raw: string, quote: number): StringMap {
  // rawAt[k] = raw offset where decoded unit k starts; one extra entry for the end.
  const rawAt: number[] = [];
  let p = quote + 1;
  while (p < raw.length && raw.charCodeAt(p) !== 34 /* " */) {
    if (raw.charCodeAt(p) === 92 /* \ */) {
      rawAt.push(p);
      p += raw[p + 1] === 'u' ? 6 : 2;
    } else {
      rawAt.push(p);
      p += 1;
    }
  }
  rawAt.push(p);
  return {
    literalStart: quote,
    toRaw: (i: number) => rawAt[Math.max(0, Math.min(i, rawAt.length - 1))],
  };
}
