// Exact top-k by block-max MaxScore, document-at-a-time over windows of passages (the scheme of
// Lucene's MaxScoreBulkScorer, apache/lucene lucene/core/src/java/org/apache/lucene/search/
// MaxScoreBulkScorer.java, 9.x; Turtle & Flood's MaxScore with Ding & Suel's block-max bounds):
//
// 1. A window of passages ends at the nearest block boundary of the "essential" terms, so per-block
//    maxima bound what each term can add inside it (no decoding needed: blockMax is stored per block).
// 2. Terms are ordered by that window bound; the longest prefix whose bounds sum to ≤ θ (the k-th best
//    score so far) is "non-essential": a passage containing only those terms cannot enter the top k.
//    If every term is non-essential, the whole window is skipped.
// 3. Essential terms are accumulated term-at-a-time into a small score array over the window; each
//    passage they hit, in increasing order, is then completed with the non-essential terms (largest bound
//    first), stopping as soon as its score plus what the remaining terms could add is ≤ θ.
//
// Before the scan, θ starts from a floor: the best k-th contribution of any single query term, taken from
// a few of its most promising blocks (by block-max). At least k passages score that
// much, so anything below it can be skipped from the first window on, instead of θ creeping up from
// the weak passages that happen to come first in the corpus.
//
// Passages are visited in increasing order and scores are exact sums of per-term contributions in units
// of 2^-24 (bm25.ts), so a candidate that can at most tie θ can never win (the heap's passages all come
// earlier and win ties): pruning on "≤ θ" is exact, and the result equals exhaustive scoring bit for bit.
import * as codec from './postings';
import type { PackedPostings } from './postings';
import { longPassageNorm, type NormCodes } from './norms';

// Local bindings of the codec: under a per-module CommonJS transform (tsx, used by tests and benches) every
// use of an imported name is a property read through a getter, which the hot loops below should not pay.
const { BLOCK, blockCount, packedWords, unpackDocs, unpackOne } = codec;

const NO_DOC = 0x7fffffff;
/** Passages per scoring sub-window (the score array and its bitset). */
const WIN = 4096;
/** Posting blocks decoded up front to find θ's floor. */
const SEED_BLOCKS = 16;

/** Fixed-size min-heap of (score, passage), worst at the root; better = higher score, then lower passage. */
export class TopK {
  private readonly scores: Float64Array;
  private readonly docs: Int32Array;
  len = 0;
  constructor(readonly k: number) {
    this.scores = new Float64Array(k);
    this.docs = new Int32Array(k);
  }

  /** Scores must beat this to enter (−1 while the heap is not full; real scores are ≥ 1 unit). */
  threshold(): number {
    return this.len < this.k ? -1 : this.scores[0];
  }

  offer(s: number, d: number): void {
    const { scores, docs } = this;
    if (this.len < this.k) {
      let j = this.len++;
      while (j > 0) {
        const p = (j - 1) >> 1;
        if (!worse(s, d, scores[p], docs[p])) break;
        scores[j] = scores[p];
        docs[j] = docs[p];
        j = p;
      }
      scores[j] = s;
      docs[j] = d;
      return;
    }
    if (!worse(scores[0], docs[0], s, d)) return;
    // Replace the root and sift down.
    let i = 0;
    const len = this.len;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= len) break;
      const r = l + 1;
      let c = l;
      if (r < len && worse(scores[r], docs[r], scores[l], docs[l])) c = r;
      if (!worse(scores[c], docs[c], s, d)) break;
      scores[i] = scores[c];
      docs[i] = docs[c];
      i = c;
    }
    scores[i] = s;
    docs[i] = d;
  }

  /** Best first, scores converted from units. */
  sorted(unit = 2 ** -24): { doc: number; score: number }[] {
    const out: { doc: number; score: number; s: number }[] = [];
    for (let i = 0; i < this.len; i++) out.push({ doc: this.docs[i], score: this.scores[i] * unit, s: this.scores[i] });
    out.sort((a, b) => b.s - a.s || a.doc - b.doc);
    return out.map(({ doc, score }) => ({ doc, score }));
  }
}

/** (sa, da) ranks below (sb, db). */
function worse(sa: number, da: number, sb: number, db: number): boolean {
  return sa < sb || (sa === sb && da > db);
}

export class MaxScoreSearcher {
  // Per query term slot (grown as needed): block cursor, decoded block, position, current passage.
  private cap = 0;
  private blk = new Int32Array(0);
  private first = new Int32Array(0);
  private end = new Int32Array(0);
  private dec = new Int32Array(0);
  private pos = new Int32Array(0);
  private cnt = new Int32Array(0);
  private doc = new Int32Array(0);
  private df = new Int32Array(0);
  private tfWord = new Int32Array(0);
  private tfBits = new Int32Array(0);
  private wq = new Float64Array(0);
  private wm = new Float64Array(0);
  private prefix = new Float64Array(0);
  private order = new Int32Array(0);
  private buf = new Int32Array(0);
  private readonly acc = new Float64Array(WIN);
  private readonly seedBuf = new Int32Array(BLOCK);
  /** Lower bound of the final k-th best score, minus one unit (pruning is "bound ≤ θ"). */
  private floor = -1;
  private readonly seen = new Int32Array(WIN / 32);
  private readonly hit = new Int32Array(WIN);

  constructor(
    private readonly p: PackedPostings & { postingStarts: Uint32Array },
    private readonly norms: NormCodes,
  ) {
    this.passages = norms.code.length;
  }

  private readonly passages: number;

  /** The norm of passage d (see NormCodes: one byte read for all but very long passages). */
  private norm(d: number): number {
    const c = this.norms.code[d];
    return c < 255 ? this.norms.table[c] : longPassageNorm(this.norms, d);
  }

  private grow(n: number): void {
    if (n <= this.cap) return;
    const cap = Math.max(n, this.cap * 2, 16);
    this.blk = new Int32Array(cap);
    this.first = new Int32Array(cap);
    this.end = new Int32Array(cap);
    this.dec = new Int32Array(cap);
    this.pos = new Int32Array(cap);
    this.cnt = new Int32Array(cap);
    this.doc = new Int32Array(cap);
    this.df = new Int32Array(cap);
    this.tfWord = new Int32Array(cap);
    this.tfBits = new Int32Array(cap);
    this.wq = new Float64Array(cap);
    this.wm = new Float64Array(cap);
    this.prefix = new Float64Array(cap);
    this.order = new Int32Array(cap);
    this.buf = new Int32Array(cap * BLOCK);
    this.cap = cap;
  }

  /** Top k for term ids with weights (qtf·idf in score units). */
  search(ids: readonly number[], weights: readonly number[], k: number): TopK {
    const n = ids.length;
    this.grow(n);
    const { termBlocks, postingStarts, blockLast } = this.p;
    const { blk, first, end, dec, doc, df, wq, wm, prefix, order } = this;
    for (let t = 0; t < n; t++) {
      const id = ids[t];
      blk[t] = first[t] = termBlocks[id];
      end[t] = termBlocks[id + 1];
      df[t] = postingStarts[id + 1] - postingStarts[id];
      dec[t] = -1;
      doc[t] = -1;
      wq[t] = weights[t];
      order[t] = t;
    }
    const top = new TopK(k);
    const passages = this.passages;
    this.floor = this.seedFloor(n, k) - 1;
    let nNE = 0; // order[0..nNE) are non-essential (after a partition)
    let windowMin = 0;
    while (windowMin < passages) {
      // Window end: nearest block end among live essential terms (all live terms when none is left).
      let windowMax = NO_DOC;
      let live = 0;
      let liveEss = 0;
      for (let i = 0; i < n; i++) {
        const t = order[i];
        if (doc[t] === NO_DOC) continue;
        this.shallow(t, windowMin);
        if (doc[t] === NO_DOC) continue;
        live++;
        if (i >= nNE) {
          liveEss++;
          if (blockLast[blk[t]] < windowMax) windowMax = blockLast[blk[t]];
        }
      }
      if (live === 0) break;
      if (liveEss === 0) {
        for (let t = 0; t < n; t++)
          if (doc[t] !== NO_DOC && blockLast[blk[t]] < windowMax) windowMax = blockLast[blk[t]];
        liveEss = live;
      }
      // At least ~32 passages per essential term, so windows do not shrink to a handful of passages.
      windowMax = Math.max(windowMax, windowMin + 32 * liveEss - 1);
      if (windowMax >= passages) windowMax = passages - 1;

      for (let t = 0; t < n; t++) wm[t] = this.windowBound(t, windowMin, windowMax);
      // Order by window bound ascending (insertion sort: n is small and the order changes little).
      for (let i = 1; i < n; i++) {
        const t = order[i];
        const v = wm[t];
        let j = i - 1;
        while (j >= 0 && (wm[order[j]] > v || (wm[order[j]] === v && order[j] > t))) {
          order[j + 1] = order[j];
          j--;
        }
        order[j + 1] = t;
      }
      const theta = this.theta(top);
      let sum = 0;
      nNE = 0;
      while (nNE < n && sum + wm[order[nNE]] <= theta) {
        sum += wm[order[nNE]];
        prefix[nNE++] = sum;
      }
      if (nNE < n - 1) {
        // When all terms but the strongest together cannot beat θ, the strongest is required: its postings
        // alone are the candidates and every other term is only looked up (Lucene's MaxScoreBulkScorer does
        // the same with a "required" clause).
        let rest = sum;
        for (let i = nNE; i < n - 1; i++) rest += wm[order[i]];
        if (rest <= theta) {
          for (let i = nNE; i < n - 1; i++) prefix[i] = sum += wm[order[i]];
          nNE = n - 1;
        }
      }
      windowMin = nNE < n ? this.scoreWindow(windowMin, windowMax, nNE, n, top, sum + wm[order[nNE]]) : windowMax + 1;
    }
    return top;
  }

  /**
   * A candidate must score above this: the heap's k-th best (whose passages all come earlier, so an equal
   * score loses), and at least the floor.
   */
  private theta(top: TopK): number {
    const h = top.threshold();
    return h > this.floor ? h : this.floor;
  }

  /**
   * A lower bound of the final k-th best score: for each query term, the k-th best contribution among the
   * postings of its most promising blocks (those whose block-max could still beat what is already known),
   * at most SEED_BLOCKS decoded in all, rarest terms first. k passages score at least that much.
   */
  private seedFloor(n: number, k: number): number {
    const { df, wq, first, end } = this;
    const { blockLast, blockWord, blockBits, blockMax, postingWords } = this.p;
    const terms: number[] = [];
    for (let t = 0; t < n; t++) terms.push(t);
    terms.sort((a, b) => df[a] - df[b] || a - b);
    const buf = this.seedBuf;
    let floor = 0;
    let budget = SEED_BLOCKS;
    for (const t of terms) {
      if (budget <= 0) break;
      const top = new TopK(k);
      for (let b = first[t]; b < end[t] && budget > 0; b++) {
        const bound = Math.ceil(wq[t] * blockMax[b]);
        if (bound <= floor || (top.len === k && bound <= top.threshold())) continue;
        budget--;
        const cnt = blockCount(b, first[t], df[t]);
        const bits = blockBits[b];
        const db = bits & 0xff;
        unpackDocs(postingWords, blockWord[b], db, cnt, b === first[t] ? -1 : blockLast[b - 1], buf, 0);
        const tfw = blockWord[b] + packedWords(cnt, db);
        for (let j = 0; j < cnt; j++) {
          const tf = unpackOne(postingWords, tfw, bits >>> 8, j);
          top.offer(Math.ceil((wq[t] * tf) / (tf + this.norm(buf[j]))), buf[j]);
        }
      }
      if (top.len === k && top.threshold() > floor) floor = top.threshold();
    }
    return floor;
  }

  /** Move term t's block cursor to the first block that can hold a passage ≥ target (no decoding). */
  private shallow(t: number, target: number): void {
    if (this.doc[t] >= target) return;
    const { blockLast } = this.p;
    let b = this.blk[t];
    const e = this.end[t];
    while (b < e && blockLast[b] < target) b++;
    this.blk[t] = b;
    if (b === e) this.doc[t] = NO_DOC;
  }

  /** Upper bound (score units) of what term t adds to any passage in [lo, hi]; 0 if it has none there. */
  private windowBound(t: number, lo: number, hi: number): number {
    const d = this.doc[t];
    if (d === NO_DOC) return 0;
    let b = this.blk[t];
    const { blockLast, blockMax } = this.p;
    if (this.dec[t] === b && d >= lo) {
      if (d > hi) return 0;
    } else if (b > this.first[t] && blockLast[b - 1] >= hi) return 0;
    const e = this.end[t];
    let m = blockMax[b];
    while (blockLast[b] < hi && ++b < e) if (blockMax[b] > m) m = blockMax[b];
    return Math.ceil(this.wq[t] * m);
  }

  private decode(t: number, b: number): void {
    const { blockLast, blockWord, blockBits, postingWords } = this.p;
    const first = this.first[t];
    const n = blockCount(b, first, this.df[t]);
    const bits = blockBits[b];
    const db = bits & 0xff;
    unpackDocs(postingWords, blockWord[b], db, n, b === first ? -1 : blockLast[b - 1], this.buf, t * BLOCK);
    this.tfWord[t] = blockWord[b] + packedWords(n, db);
    this.tfBits[t] = bits >>> 8;
    this.cnt[t] = n;
    this.dec[t] = b;
    this.blk[t] = b;
    this.pos[t] = 0;
  }

  /** First passage ≥ target in term t's postings (decoding its block), or NO_DOC. */
  private advance(t: number, target: number): number {
    const cur = this.doc[t];
    if (cur >= target) return cur;
    const { blockLast } = this.p;
    let b = this.blk[t];
    const e = this.end[t];
    while (b < e && blockLast[b] < target) b++;
    if (b === e) {
      this.blk[t] = b;
      return (this.doc[t] = NO_DOC);
    }
    if (this.dec[t] !== b) this.decode(t, b);
    const buf = this.buf;
    const base = t * BLOCK;
    let p = this.pos[t];
    const cnt = this.cnt[t];
    while (p + 16 < cnt && buf[base + p + 16] < target) p += 16;
    while (buf[base + p] < target) p++;
    this.pos[t] = p;
    return (this.doc[t] = buf[base + p]);
  }

  /** The passage after the current one (the current block must be decoded). */
  private next(t: number): number {
    const p = this.pos[t] + 1;
    if (p < this.cnt[t]) {
      this.pos[t] = p;
      return (this.doc[t] = this.buf[t * BLOCK + p]);
    }
    const b = this.blk[t] + 1;
    if (b >= this.end[t]) {
      this.blk[t] = b;
      return (this.doc[t] = NO_DOC);
    }
    this.decode(t, b);
    return (this.doc[t] = this.buf[t * BLOCK]);
  }

  /** Term frequency of term t at its current position. */
  private tf(t: number): number {
    return unpackOne(this.p.postingWords, this.tfWord[t], this.tfBits[t], this.pos[t]);
  }

  /** Contribution (score units) of term t at its current position, passage d. */
  private contrib(t: number, d: number): number {
    const tf = this.tf(t);
    return Math.ceil((this.wq[t] * tf) / (tf + this.norm(d)));
  }

  /**
   * Score passages lo..hi; returns where to continue: hi + 1, or earlier when θ has risen to `repartitionAt`
   * (then one more term is non-essential, and a new window with the new partition is cheaper).
   */
  private scoreWindow(lo: number, hi: number, nNE: number, n: number, top: TopK, repartitionAt: number): number {
    const { order, acc, seen, hit, prefix } = this;
    if (nNE === n - 1) {
      // One essential term: its postings are the candidates, already in order (no score array needed).
      const t = order[nNE];
      const rest = nNE > 0 ? prefix[nNE - 1] : 0;
      const wq = this.wq[t];
      const minNorm = this.norms.min;
      for (let d = this.advance(t, lo); d <= hi; d = this.next(t)) {
        // Bound with the smallest norm first: most candidates are dropped without reading their own norm.
        const tf = this.tf(t);
        if (Math.ceil((wq * tf) / (tf + minNorm)) + rest <= this.theta(top)) continue;
        this.complete(d, Math.ceil((wq * tf) / (tf + this.norm(d))), nNE, top, prefix);
        if (this.theta(top) >= repartitionAt) return d + 1;
      }
      return hi + 1;
    }
    let s0 = lo;
    while (s0 <= hi) {
      // Skip to the first passage any essential term has (no empty sub-windows).
      let next = NO_DOC;
      for (let i = nNE; i < n; i++) {
        const d = this.advance(order[i], s0);
        if (d < next) next = d;
      }
      if (next > hi) return hi + 1;
      s0 = next;
      const s1 = Math.min(hi, s0 + WIN - 1);
      let hits = 0;
      for (let i = nNE; i < n; i++) {
        const t = order[i];
        let d = this.doc[t];
        while (d <= s1) {
          const x = d - s0;
          if (acc[x] === 0) hit[hits++] = x;
          acc[x] += this.contrib(t, d);
          seen[x >>> 5] |= 1 << (x & 31);
          d = this.next(t);
        }
      }
      if (hits <= 64) {
        // Few candidates: sort them instead of scanning the whole bitset.
        for (let j = 1; j < hits; j++) {
          const x = hit[j];
          let i = j - 1;
          while (i >= 0 && hit[i] > x) {
            hit[i + 1] = hit[i];
            i--;
          }
          hit[i + 1] = x;
        }
        for (let j = 0; j < hits; j++) {
          const x = hit[j];
          seen[x >>> 5] = 0;
          const s = acc[x];
          acc[x] = 0;
          this.complete(s0 + x, s, nNE, top, prefix);
        }
        s0 = s1 + 1;
        if (this.theta(top) >= repartitionAt) return s0;
        continue;
      }
      const words = ((s1 - s0) >>> 5) + 1;
      for (let w = 0; w < words; w++) {
        let bits = seen[w];
        if (bits === 0) continue;
        seen[w] = 0;
        while (bits !== 0) {
          const low = bits & -bits;
          const x = (w << 5) + (31 - Math.clz32(low));
          bits ^= low;
          const s = acc[x];
          acc[x] = 0;
          this.complete(s0 + x, s, nNE, top, prefix);
        }
      }
      s0 = s1 + 1;
      if (this.theta(top) >= repartitionAt) return s0;
    }
    return hi + 1;
  }

  /** Add the non-essential terms to a candidate's essential score while it can still enter the top k. */
  private complete(d: number, s: number, nNE: number, top: TopK, prefix: Float64Array): void {
    let theta = this.theta(top);
    const { blockMax } = this.p;
    for (let j = nNE - 1; j >= 0; j--) {
      if (s + prefix[j] <= theta) return;
      const t = this.order[j];
      // Before decoding the block that may hold d, bound this term by that block's own maximum.
      this.shallow(t, d);
      if (this.doc[t] === NO_DOC) continue;
      const b = this.blk[t];
      if (this.dec[t] !== b && s + Math.ceil(this.wq[t] * blockMax[b]) + (j > 0 ? prefix[j - 1] : 0) <= theta) return;
      if (this.advance(t, d) === d) s += this.contrib(t, d);
    }
    theta = this.theta(top);
    if (s > theta) top.offer(s, d);
  }
}
