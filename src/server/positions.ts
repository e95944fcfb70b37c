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
  const root = parseTree(raw);
  const node = root && findNodeAtLocation(root, ['response']);
  if (!root || !node || node.type !== 'string') return null;
  // One parse serves both the id and the response (mapStringAt would parse the line again).
  const map = mapLiteral(raw, node.offset);
  const idNode = findNodeAtLocation(root, ['id']);
  const toRaw = map.toRaw;
  return {
    toRaw,
    literalStart: map.literalStart,
    id: idNode ? { start: idNode.offset, end: idNode.offset + idNode.length } : null,
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
