// Okapi BM25 over an inverted index held in typed arrays. Scores follow Lucene's BM25Similarity
// (what Pyserini uses): idf = ln(1 + (N − df + 0.5)/(df + 0.5)), term score = idf·tf/(tf + k1·(1 − b + b·dl/avgdl)),
// summed over query terms (a term repeated in the query counts once per occurrence, as in Pyserini's
// bag-of-words query). Unlike Lucene, document lengths are exact (Lucene rounds them to one byte).
import { forEachToken } from './tokenize';

export const DEFAULT_K1 = 0.9;
export const DEFAULT_B = 0.4;

export interface Bm25Data {
  k1: number;
  b: number;
  /** Terms sorted by JS string order, as one UTF-8 blob with `termStarts[i]..termStarts[i+1]` byte ranges. */
  termBlob: Uint8Array;
  termStarts: Uint32Array;
  /** sorted position → term id (postings are stored in term-id order). */
  termIds: Uint32Array;
  /** term id → its postings `postingStarts[t]..postingStarts[t+1]` in `postingDocs` / `postingTfs`. */
  postingStarts: Uint32Array;
  postingDocs: Uint32Array;
  postingTfs: Uint16Array;
  /** Per passage: byte offset and length of its corpus line, and its token count. */
  docOffsets: Float64Array;
  docBytes: Uint32Array;
  docTokens: Uint32Array;
  /**
   * Per term id: an upper bound of tf/(tf + k1·(1 − b + b·dl/avgdl)) over its postings (for early
   * termination). Saved with the index; computed lazily per term when absent.
   */
  termMaxFactors?: Float32Array;
}

export interface Hit {
  doc: number;
  score: number;
}

export class Bm25Index {
  readonly passages: number;
  readonly avgdl: number;
  readonly terms: number;
  private readonly norm: Float32Array;
  private readonly acc: Float64Array;
  private readonly touched: Uint32Array;
  private readonly blob: Buffer;
  private readonly maxFactors: Float64Array;

  constructor(readonly data: Bm25Data) {
    this.passages = data.docTokens.length;
    this.terms = data.termIds.length;
    let total = 0;
    for (let i = 0; i < this.passages; i++) total += data.docTokens[i];
    this.avgdl = this.passages > 0 ? total / this.passages : 0;
    // k1·(1 − b + b·dl/avgdl) per passage, precomputed so a posting costs one lookup and one division.
    this.norm = new Float32Array(this.passages);
    const { k1, b } = data;
    for (let i = 0; i < this.passages; i++) {
      this.norm[i] = k1 * (1 - b + (this.avgdl > 0 ? (b * data.docTokens[i]) / this.avgdl : 0));
    }
    // Scratch space reused by every query (search is synchronous, so one query runs at a time).
    this.acc = new Float64Array(this.passages);
    this.touched = new Uint32Array(this.passages);
    this.maxFactors = new Float64Array(this.terms).fill(-1);
    if (data.termMaxFactors?.length === this.terms) this.maxFactors.set(data.termMaxFactors);
    this.blob = Buffer.from(data.termBlob.buffer, data.termBlob.byteOffset, data.termBlob.byteLength);
  }

  /** Term id of `term`, or −1: binary search in the sorted vocabulary. */
  termId(term: string): number {
    const { termStarts, termIds } = this.data;
    let lo = 0;
    let hi = this.terms - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const t = this.blob.toString('utf8', termStarts[mid], termStarts[mid + 1]);
      if (t === term) return termIds[mid];
      if (t < term) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  docFreq(termId: number): number {
    return this.data.postingStarts[termId + 1] - this.data.postingStarts[termId];
  }

  idf(termId: number): number {
    const df = this.docFreq(termId);
    return Math.log(1 + (this.passages - df + 0.5) / (df + 0.5));
  }

  /** Upper bound of tf/(tf + norm) over a term's postings; computed on first use and cached. */
  private maxFactor(termId: number): number {
    let m = this.maxFactors[termId];
    if (m >= 0) return m;
    const { postingStarts, postingDocs, postingTfs } = this.data;
    m = 0;
    for (let p = postingStarts[termId], end = postingStarts[termId + 1]; p < end; p++) {
      const tf = postingTfs[p];
      const v = tf / (tf + this.norm[postingDocs[p]]);
      if (v > m) m = v;
    }
    this.maxFactors[termId] = m;
    return m;
  }

  /** All per-term bounds, for saving: float32, rounded up so they stay upper bounds. */
  allMaxFactors(): Float32Array {
    const out = new Float32Array(this.terms);
    for (let t = 0; t < this.terms; t++) out[t] = this.maxFactor(t) * (1 + 1e-6);
    return out;
  }

  /**
   * The `k` best passages for `query`, best first; ties go to the passage earlier in the corpus.
   *
   * Term-at-a-time with exact early termination (Moffat & Zobel's "continue" strategy, bounded as in
   * MaxScore): terms are taken rarest-impact-first; once the k-th best partial score θ exceeds what all
   * remaining terms could add (their per-term maximum contributions summed), no passage not yet seen
   * can enter the top k, so the remaining — usually very common — terms only update the surviving
   * candidates (binary search in their postings) instead of scanning millions of postings.
   * Results and scores are identical to exhaustive evaluation.
   */
  search(query: string, k: number): Hit[] {
    const counts = new Map<number, number>();
    forEachToken(query, (tok) => {
      const id = this.termId(tok);
      if (id >= 0) counts.set(id, (counts.get(id) ?? 0) + 1);
    });
    if (counts.size === 0 || k <= 0) return [];
    const terms = [...counts].map(([id, qtf]) => {
      const w = qtf * this.idf(id);
      return { id, w, bound: w * this.maxFactor(id) };
    });
    terms.sort((a, b) => b.bound - a.bound || a.id - b.id);
    // rest[i] = most that terms i.. can still add to any passage (slightly inflated against rounding).
    const rest = new Float64Array(terms.length + 1);
    for (let i = terms.length - 1; i >= 0; i--) rest[i] = rest[i + 1] + terms[i].bound;
    for (let i = 0; i < terms.length; i++) rest[i] *= 1 + 1e-9;

    const { postingStarts, postingDocs, postingTfs } = this.data;
    const { acc, touched, norm } = this;
    let nTouched = 0;
    let cand: Uint32Array | null = null; // sorted surviving candidates once no new passage can win
    let nCand = 0;
    let theta = 0;
    for (let i = 0; i < terms.length; i++) {
      const { id, w } = terms[i];
      const start = postingStarts[id];
      const end = postingStarts[id + 1];
      if (cand === null && nTouched >= k) {
        theta = kthBest(acc, touched, nTouched, k);
        if (rest[i] < theta) {
          cand = new Uint32Array(nTouched);
          for (let j = 0; j < nTouched; j++) if (acc[touched[j]] + rest[i] >= theta) cand[nCand++] = touched[j];
          cand = cand.subarray(0, nCand).sort();
        }
      }
      if (cand === null) {
        for (let p = start; p < end; p++) {
          const d = postingDocs[p];
          const tf = postingTfs[p];
          if (acc[d] === 0) touched[nTouched++] = d; // every contribution is > 0, so 0 means "not yet seen"
          acc[d] += (w * tf) / (tf + norm[d]);
        }
        continue;
      }
      // Candidate mode: find each candidate in this term's postings (galloping, both lists sorted).
      let p = start;
      for (let j = 0; j < nCand && p < end; j++) {
        const d = cand[j];
        if (postingDocs[p] < d) {
          let step = 1;
          let hi = p + 1;
          while (hi < end && postingDocs[hi] < d) {
            p = hi;
            step *= 2;
            hi = p + step;
          }
          if (hi > end) hi = end;
          let lo = p + 1;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if (postingDocs[mid] < d) lo = mid + 1;
            else hi = mid;
          }
          p = lo;
        }
        if (p < end && postingDocs[p] === d) {
          const tf = postingTfs[p];
          acc[d] += (w * tf) / (tf + norm[d]);
          p++;
        }
      }
      // Drop candidates that can no longer reach the k-th best.
      theta = kthBest(acc, cand, nCand, k);
      let kept = 0;
      for (let j = 0; j < nCand; j++) if (acc[cand[j]] + rest[i + 1] >= theta) cand[kept++] = cand[j];
      nCand = kept;
    }
    const hits = cand === null ? topK(acc, touched, nTouched, k) : topK(acc, cand, nCand, k);
    for (let i = 0; i < nTouched; i++) acc[touched[i]] = 0;
    return hits;
  }
}

/** The k-th best score among `docs` (0 if fewer than k). */
function kthBest(acc: Float64Array, docs: Uint32Array, n: number, k: number): number {
  if (n < k) return 0;
  const top = topK(acc, docs, n, k);
  return top[top.length - 1].score;
}

/** Better = higher score, then lower passage number. */
function better(sa: number, da: number, sb: number, db: number): boolean {
  return sa > sb || (sa === sb && da < db);
}

/** Top k of `acc` over the touched passages with a size-k min-heap (worst at the root). */
export function topK(acc: Float64Array, touched: Uint32Array, n: number, k: number): Hit[] {
  const size = Math.min(k, n);
  const hd = new Uint32Array(size);
  const hs = new Float64Array(size);
  let len = 0;
  const siftDown = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let w = i;
      if (l < len && better(hs[w], hd[w], hs[l], hd[l])) w = l;
      if (r < len && better(hs[w], hd[w], hs[r], hd[r])) w = r;
      if (w === i) return;
      [hs[i], hs[w]] = [hs[w], hs[i]];
      [hd[i], hd[w]] = [hd[w], hd[i]];
      i = w;
    }
  };
  for (let i = 0; i < n; i++) {
    const d = touched[i];
    const s = acc[d];
    if (len < size) {
      // sift up
      let j = len++;
      hs[j] = s;
      hd[j] = d;
      while (j > 0) {
        const p = (j - 1) >> 1;
        if (!better(hs[p], hd[p], hs[j], hd[j])) break;
        [hs[p], hs[j]] = [hs[j], hs[p]];
        [hd[p], hd[j]] = [hd[j], hd[p]];
        j = p;
      }
    } else if (better(s, d, hs[0], hd[0])) {
      hs[0] = s;
      hd[0] = d;
      siftDown(0);
    }
  }
  const out: Hit[] = [];
  for (let i = 0; i < len; i++) out.push({ doc: hd[i], score: hs[i] });
  return out.sort((a, b) => (better(a.score, a.doc, b.score, b.doc) ? -1 : 1));
}
