// Length norms of BM25, k1·(1 − b + b·dl/avgdl) per passage, computed one way for the index build, the
// pruned search and exhaustive scoring alike (float32 values), so block-max bounds and scores agree exactly.

function averageLength(docTokens: Uint32Array): number {
  let total = 0;
  for (let i = 0; i < docTokens.length; i++) total += docTokens[i];
  return docTokens.length > 0 ? total / docTokens.length : 0;
}

/** k1·(1 − b + b·dl/avgdl) as float32: the build's block-maxes and every query use exactly these values. */
const normOf = (dl: number, k1: number, b: number, avgdl: number): number =>
  Math.fround(k1 * (1 - b + (avgdl > 0 ? (b * dl) / avgdl : 0)));

/** The norm of every passage (4 bytes each; for building and exhaustive scoring). */
export function passageNorms(docTokens: Uint32Array, k1: number, b: number): Float32Array {
  const avgdl = averageLength(docTokens);
  const norm = new Float32Array(docTokens.length);
  for (let i = 0; i < norm.length; i++) norm[i] = normOf(docTokens[i], k1, b, avgdl);
  return norm;
}

/**
 * Norms for queries, cache-friendly: one byte per passage holding its exact length when under 255 (a
 * 255-entry table gives the norm), 255 meaning "look the length up in docTokens". Same values as
 * passageNorms, in a quarter of the memory a query touches at random (like Lucene's one-byte norms,
 * but lossless).
 */
export interface NormCodes {
  code: Uint8Array;
  table: Float64Array;
  docTokens: Uint32Array;
  k1: number;
  b: number;
  avgdl: number;
  /** The smallest norm of any passage (the shortest one's): tf/(tf + min) bounds a contribution without reading its norm. */
  min: number;
}

export function passageNormCodes(docTokens: Uint32Array, k1: number, b: number): NormCodes {
  const avgdl = averageLength(docTokens);
  const code = new Uint8Array(docTokens.length);
  let minDl = Infinity;
  for (let i = 0; i < code.length; i++) {
    code[i] = Math.min(255, docTokens[i]);
    if (docTokens[i] < minDl) minDl = docTokens[i];
  }
  const table = new Float64Array(255);
  for (let l = 0; l < 255; l++) table[l] = normOf(l, k1, b, avgdl);
  return { code, table, docTokens, k1, b, avgdl, min: code.length > 0 ? normOf(minDl, k1, b, avgdl) : 0 };
}

export const longPassageNorm = (n: NormCodes, d: number): number => normOf(n.docTokens[d], n.k1, n.b, n.avgdl);
