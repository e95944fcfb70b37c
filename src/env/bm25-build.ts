// Builds BM25 data from a corpus in one streaming pass: passages → (term id, tf) rows of a forward
// index in typed arrays → inverted with a counting sort. No per-term JS arrays, so 1M passages fit.
import { readCorpus, countLines, type BadLine } from '../core/corpus';
import { forEachToken } from './tokenize';
import { Grow } from './grow';
import { DEFAULT_B, DEFAULT_K1, type Bm25Data } from './bm25';
import { passageNorms } from './norms';
import { BLOCK, bitsFor, packBits, type PackedPostings } from './postings';

export interface BuildOptions {
  k1?: number;
  b?: number;
  /** Called now and then while building and once at the end (done === total). */
  onProgress?: (done: number, total: number) => void;
  onBadLine?: (bad: BadLine) => void;
}

export interface BuildResult {
  data: Bm25Data;
  badLines: number;
}

const MAX_TF = 0xffff;

export async function buildBm25(corpusFile: string, opts: BuildOptions = {}): Promise<BuildResult> {
  const total = await countLines(corpusFile);
  const progressEvery = Math.max(1000, Math.ceil(total / 100));
  const vocab = new Map<string, number>();
  const termNames: string[] = [];
  const df = new Grow(Uint32Array, 1 << 16);
  // Per term: the last passage (+1) that used it and where its row is in the current passage.
  const lastDoc = new Grow(Uint32Array, 1 << 16);
  const slot = new Grow(Uint32Array, 1 << 16);
  const fwdTerm = new Grow(Uint32Array, 1 << 20);
  const fwdTf = new Grow(Uint16Array, 1 << 20);
  const docRows = new Grow(Uint32Array, 1 << 16); // rows per passage in the forward index
  const docOffsets = new Grow(Float64Array, 1 << 16);
  const docBytes = new Grow(Uint32Array, 1 << 16);
  const docTokens = new Grow(Uint32Array, 1 << 16);
  let badLines = 0;
  let doc = 0;
  let rowStart = 0;
  let tokens = 0;

  const onToken = (tok: string): void => {
    tokens++;
    let id = vocab.get(tok);
    if (id === undefined) {
      id = termNames.length;
      vocab.set(tok, id);
      termNames.push(tok);
      df.push(0);
      lastDoc.push(0);
      slot.push(0);
    }
    if (lastDoc.array[id] === doc + 1) {
      const row = slot.array[id];
      if (fwdTf.array[row] < MAX_TF) fwdTf.array[row]++;
    } else {
      lastDoc.array[id] = doc + 1;
      slot.array[id] = fwdTerm.length;
      df.array[id]++;
      fwdTerm.push(id);
      fwdTf.push(1);
    }
  };

  let lines = 0;
  for await (const row of readCorpus(corpusFile, (bad) => {
    badLines++;
    opts.onBadLine?.(bad);
  })) {
    tokens = 0;
    rowStart = fwdTerm.length;
    forEachToken(row.passage.contents, onToken);
    docRows.push(fwdTerm.length - rowStart);
    docOffsets.push(row.offset);
    docBytes.push(row.length);
    docTokens.push(tokens);
    doc++;
    lines = row.line;
    if (doc % progressEvery === 0) opts.onProgress?.(Math.min(lines, total), total);
  }
  opts.onProgress?.(total, total);

  // Invert: counting sort of forward rows by term id; passages are visited in order, so every
  // postings list comes out sorted by passage number.
  const nTerms = termNames.length;
  const nPostings = fwdTerm.length;
  if (nPostings > 0xffffffff) throw new Error(`corpus too large: ${nPostings} postings exceed the 2^32 index limit`);
  const postingStarts = new Uint32Array(nTerms + 1);
  for (let t = 0; t < nTerms; t++) postingStarts[t + 1] = postingStarts[t] + df.array[t];
  const cursor = postingStarts.slice(0, nTerms);
  const postingDocs = new Uint32Array(nPostings);
  const postingTfs = new Uint16Array(nPostings);
  const terms = fwdTerm.array;
  const tfs = fwdTf.array;
  let r = 0;
  for (let d = 0; d < doc; d++) {
    const end = r + docRows.array[d];
    for (; r < end; r++) {
      const p = cursor[terms[r]]++;
      postingDocs[p] = d;
      postingTfs[p] = tfs[r];
    }
  }

  const k1 = opts.k1 ?? DEFAULT_K1;
  const b = opts.b ?? DEFAULT_B;
  const docTokensArr = docTokens.trimmed();
  const packed = packPostings(postingStarts, postingDocs, postingTfs, passageNorms(docTokensArr, k1, b));

  // Vocabulary sorted by JS string order (the order Bm25Index.termId's binary search compares in).
  const order = Array.from({ length: nTerms }, (_, i) => i);
  order.sort((a, b) => (termNames[a] < termNames[b] ? -1 : termNames[a] > termNames[b] ? 1 : 0));
  const encoded = order.map((i) => Buffer.from(termNames[i], 'utf8'));
  const termStarts = new Uint32Array(nTerms + 1);
  for (let i = 0; i < nTerms; i++) termStarts[i + 1] = termStarts[i] + encoded[i].length;
  const termBlob = new Uint8Array(termStarts[nTerms]);
  for (let i = 0; i < nTerms; i++) termBlob.set(encoded[i], termStarts[i]);

  return {
    badLines,
    data: {
      k1,
      b,
      termBlob,
      termStarts,
      termIds: Uint32Array.from(order),
      postingStarts,
      ...packed,
      docOffsets: docOffsets.trimmed(),
      docBytes: docBytes.trimmed(),
      docTokens: docTokensArr,
    },
  };
}

/**
 * Cut each term's postings into blocks of BLOCK and bit-pack them (postings.ts): passage gaps − 1 and
 * tf − 1 at the block's widths, plus the block's last passage and its block-max tf/(tf + norm), rounded up
 * (as float32, times 1 + 1e-6) so it stays an upper bound of the float64 values queries compute.
 */
export function packPostings(
  postingStarts: Uint32Array,
  docs: Uint32Array,
  tfs: Uint16Array,
  norm: Float32Array,
): PackedPostings {
  const nTerms = postingStarts.length - 1;
  const termBlocks = new Uint32Array(nTerms + 1);
  for (let t = 0; t < nTerms; t++)
    termBlocks[t + 1] = termBlocks[t] + Math.ceil((postingStarts[t + 1] - postingStarts[t]) / BLOCK);
  const nBlocks = termBlocks[nTerms];
  const blockLast = new Uint32Array(nBlocks);
  const blockWord = new Uint32Array(nBlocks);
  const blockBits = new Uint16Array(nBlocks);
  const blockMax = new Float32Array(nBlocks);
  const words = new Grow(Uint32Array, 1 << 20);
  const gaps = new Uint32Array(BLOCK);
  const tfm1 = new Uint32Array(BLOCK);
  let blk = 0;
  for (let t = 0; t < nTerms; t++) {
    let prev = -1;
    for (let start = postingStarts[t], end = postingStarts[t + 1]; start < end; start += BLOCK) {
      const n = Math.min(BLOCK, end - start);
      let orGap = 0;
      let orTf = 0;
      let max = 0;
      for (let i = 0; i < n; i++) {
        const d = docs[start + i];
        const tf = tfs[start + i];
        gaps[i] = d - prev - 1;
        tfm1[i] = tf - 1;
        orGap |= gaps[i];
        orTf |= tfm1[i];
        prev = d;
        const f = tf / (tf + norm[d]);
        if (f > max) max = f;
      }
      const gb = bitsFor(orGap);
      const tb = bitsFor(orTf);
      if (words.length > 0xffffffff - 2 * BLOCK)
        throw new Error('corpus too large: postings exceed the 16 GiB index limit');
      blockWord[blk] = words.length;
      packBits(gaps, n, gb, words);
      packBits(tfm1, n, tb, words);
      blockLast[blk] = prev;
      blockBits[blk] = gb | (tb << 8);
      blockMax[blk] = Math.fround(max * (1 + 1e-6));
      blk++;
    }
  }
  return { termBlocks, blockLast, blockWord, blockBits, blockMax, postingWords: words.trimmed() };
}
