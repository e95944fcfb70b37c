// Decoded `response` offsets ↔ raw columns of a JSON line, on top of the core's string map (one parse of the
// line serves the response and the id).
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import { mapLiteral } from '../core/jsonstring';

/** Above this many characters a line gets diagnostics only (no hover tables, tokens or step symbols). */
export const HUGE_LINE = 1_000_000;

export interface LineGeometry {
  /** Raw column of a decoded offset (0 ≤ i ≤ length). */
  toRaw(i: number): number;
  /** Decoded offset at a raw column (the unit whose raw span contains it), or -1 outside the literal. */
  fromRaw(col: number, length: number): number;
  literalStart: number;
  /** Raw span of the `id` string value (quotes included), if any. */
  id: { start: number; end: number } | null;
}

/** Geometry of a record line; null when there is no `response` string. */
export function lineGeometry(raw: string): LineGeometry | null {
  let found = topLevelValues(raw);
  if (!found) {
    // Not a plain JSON object line (or a key written with escapes): the jsonc tree decides.
    const root = parseTree(raw);
    const node = root && findNodeAtLocation(root, ['response']);
    const idNode = root && findNodeAtLocation(root, ['id']);
    found = {
      response: node ? (node.type === 'string' ? node.offset : -1) : -1,
      id: idNode ? { start: idNode.offset, end: idNode.offset + idNode.length } : null,
    };
  }
  if (found.response < 0) return null;
  const map = mapLiteral(raw, found.response);
  const id = found.id;
  const toRaw = map.toRaw;
  return {
    toRaw,
    literalStart: map.literalStart,
    id,
    fromRaw(col, length) {
      if (col <= map.literalStart || col >= toRaw(length)) return -1;
      // toRaw is increasing: the last decoded unit starting at or before col.
      let lo = 0;
      let hi = length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (toRaw(mid) <= col) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    },
  };
}

// ---- the first `id` and `response` of a JSON object line, without building a tree ----

/**
 * Raw offsets of the first `id` value (its span) and the first `response` value (its opening quote; -1 when absent
 * or not a string) of the line's top-level object — what jsonc's findNodeAtLocation gives, by skipping values
 * instead of building nodes. null when the line is not a plain JSON object or a key has escapes.
 */
function topLevelValues(raw: string): { response: number; id: { start: number; end: number } | null } | null {
  let p = skipWs(raw, raw.charCodeAt(0) === 0xfeff ? 1 : 0); // a BOM before the object (parseRecordLine skips it too)
  if (raw.charCodeAt(p) !== 123 /* { */) return null;
  p = skipWs(raw, p + 1);
  let response = -2; // -2: not met yet
  let id: { start: number; end: number } | null = null;
  if (raw.charCodeAt(p) === 125 /* } */) return { response: -1, id: null };
  for (;;) {
    if (raw.charCodeAt(p) !== 34 /* " */) return null;
    const keyEnd = stringEnd(raw, p);
    if (keyEnd < 0) return null;
    for (let k = p + 1; k < keyEnd - 1; k++) if (raw.charCodeAt(k) === 92 /* \ */) return null;
    const keyLength = keyEnd - p - 2;
    const isId = keyLength === 2 && raw.startsWith('id', p + 1);
    const isResponse = keyLength === 8 && raw.startsWith('response', p + 1);
    p = skipWs(raw, keyEnd);
    if (raw.charCodeAt(p) !== 58 /* : */) return null;
    p = skipWs(raw, p + 1);
    const end = valueEnd(raw, p);
    if (end < 0) return null;
    if (isId && !id) id = { start: p, end };
    if (isResponse && response === -2) response = raw.charCodeAt(p) === 34 ? p : -1;
    if (id && response !== -2) return { response, id };
    p = skipWs(raw, end);
    const c = raw.charCodeAt(p);
    if (c === 125) return { response: response === -2 ? -1 : response, id };
    if (c !== 44 /* , */) return null;
    p = skipWs(raw, p + 1);
  }
}

function skipWs(raw: string, p: number): number {
  for (;;) {
    const c = raw.charCodeAt(p);
    if (c === 32 || c === 9 || c === 10 || c === 13) p++;
    else return p;
  }
}

/** Offset after the closing quote of the string literal opening at p, or -1. */
function stringEnd(raw: string, p: number): number {
  let from = p + 1;
  for (;;) {
    const q = raw.indexOf('"', from);
    if (q < 0) return -1;
    let b = q - 1;
    while (b > p && raw.charCodeAt(b) === 92) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1; // an even run of backslashes escapes only itself
    from = q + 1;
  }
}

/** Offset after the JSON value starting at p, or -1. */
function valueEnd(raw: string, p: number): number {
  const c = raw.charCodeAt(p);
  if (c === 34) return stringEnd(raw, p);
  if (c === 123 || c === 91) {
    let depth = 0;
    for (let q = p; q < raw.length; ) {
      const ch = raw.charCodeAt(q);
      if (ch === 34) {
        q = stringEnd(raw, q);
        if (q < 0) return -1;
        continue;
      }
      if (ch === 123 || ch === 91) depth++;
      else if ((ch === 125 || ch === 93) && --depth === 0) return q + 1;
      q++;
    }
    return -1;
  }
  let q = p;
  for (; q < raw.length; q++) {
    const ch = raw.charCodeAt(q);
    if (ch === 44 || ch === 125 || ch === 93 || ch === 32 || ch === 9 || ch === 10 || ch === 13) break;
  }
  return q > p ? q : -1;
}
