// Okapi BM25 over a block-compressed inverted index (src/env/postings.ts). Scores follow Lucene's
// BM25Similarity (what Pyserini uses): idf = ln(1 + (N − df + 0.5)/(df + 0.5)), term score =
// idf·tf/(tf + k1·(1 − b + b·dl/avgdl)), summed over query terms (a term repeated in the query counts once
// per occurrence, as in Pyserini's bag-of-words query). Unlike Lucene, document lengths are exact (Lucene
// rounds them to one byte).
//
// Every per-term contribution is rounded up to a multiple of 2^-24 (SCORE_UNIT) before summing: sums of
// such numbers are exact in float64, so a passage's score is the same whatever order its terms are added
// in. That is what lets the pruned search (maxscore.ts) return bit-identical scores to exhaustive
// scoring (`searchExhaustive`), and makes ties real ties, broken by the lower passage number.
import { forEachToken } from './tokenize';
import { BLOCK, blockCount, packedWords, unpackDocs, unpackOne, type PackedPostings } from './postings';
import { MaxScoreSearcher, TopK } from './maxscore';
import { passageNormCodes, passageNorms } from './norms';

export const DEFAULT_K1 = 0.9;
export const DEFAULT_B = 0.4;
/** Contributions are counted in units of 2^-24 (integers in a float64: exact sums up to 2^53 units). */
export const SCORE_UNIT = 2 ** -24;

export interface Bm25Data extends PackedPostings {
  k1: number;
  b: number;
  /** Terms sorted by JS string order, as one UTF-8 blob with `termStarts[i]..termStarts[i+1]` byte ranges. */
  termBlob: Uint8Array;
  termStarts: Uint32Array;
  /** sorted position → term id. */
  termIds: Uint32Array;
  /** term id → postings count prefix sums (df(t) = postingStarts[t+1] − postingStarts[t]). */
  postingStarts: Uint32Array;
  /** Per passage: byte offset and length of its corpus line, and its token count. */
  docOffsets: Float64Array;
  docBytes: Uint32Array;
  docTokens: Uint32Array;
}

export interface Hit {
  doc: number;
  score: number;
}

export class Bm25Index {
  readonly passages: number;
  readonly terms: number;
  readonly postings: number;
  private normArray: Float32Array | null = null;
  private readonly blob: Buffer;
  private searcher: MaxScoreSearcher | null = null;

  constructor(readonly data: Bm25Data) {
    this.passages = data.docTokens.length;
    this.terms = data.termIds.length;
    this.postings = data.postingStarts[this.terms] ?? 0;
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

  /** Query terms with their weights in score units (qtf·idf / SCORE_UNIT), in order of first occurrence. */
  queryTerms(query: string): { ids: number[]; weights: number[] } {
    const counts = new Map<number, number>();
    forEachToken(query, (tok) => {
      const id = this.termId(tok);
      if (id >= 0) counts.set(id, (counts.get(id) ?? 0) + 1);
    });
    const ids = [...counts.keys()];
    return { ids, weights: ids.map((id) => (counts.get(id)! * this.idf(id)) / SCORE_UNIT) };
  }

  /**
   * The `k` best passages for `query`, best first; ties go to the passage earlier in the corpus.
   * Exact top-k by block-max MaxScore (maxscore.ts): same passages and bit-identical scores as
   * `searchExhaustive`, without decoding most blocks of common terms.
   */
  search(query: string, k: number): Hit[] {
    const { ids, weights } = this.queryTerms(query);
    if (ids.length === 0 || k <= 0) return [];
    this.searcher ??= new MaxScoreSearcher(this.data, passageNormCodes(this.data.docTokens, this.data.k1, this.data.b));
    return this.searcher.search(ids, weights, k).sorted();
  }

  /** Every posting of every query term scored (the reference the pruned search must equal). */
  searchExhaustive(query: string, k: number): Hit[] {
    const { ids, weights } = this.queryTerms(query);
    if (ids.length === 0 || k <= 0) return [];
    const acc = new Float64Array(this.passages);
    const norm = (this.normArray ??= passageNorms(this.data.docTokens, this.data.k1, this.data.b));
    const { termBlocks, blockLast, blockWord, blockBits, postingWords, postingStarts } = this.data;
    const docs = new Int32Array(BLOCK);
    ids.forEach((id, i) => {
      const wq = weights[i];
      const df = postingStarts[id + 1] - postingStarts[id];
      const first = termBlocks[id];
      for (let b = first; b < termBlocks[id + 1]; b++) {
        const n = blockCount(b, first, df);
        const db = blockBits[b] & 0xff;
        const tb = blockBits[b] >>> 8;
        unpackDocs(postingWords, blockWord[b], db, n, b === first ? -1 : blockLast[b - 1], docs, 0);
        const tfWord = blockWord[b] + packedWords(n, db);
        for (let j = 0; j < n; j++) {
          const d = docs[j];
          const tf = unpackOne(postingWords, tfWord, tb, j);
          acc[d] += Math.ceil((wq * tf) / (tf + norm[d]));
        }
      }
    });
    const top = new TopK(k);
    for (let d = 0; d < this.passages; d++) if (acc[d] > 0) top.offer(acc[d], d);
    return top.sorted();
  }
}
