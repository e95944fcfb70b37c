// A corpus plus its BM25 index: load the saved index when it still matches the corpus, otherwise
// build and save it; answer queries with passages read back from the corpus file by byte offset.
import { accessSync, constants, closeSync, openSync, readSync, mkdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join, resolve, basename } from 'node:path';
import { homedir } from 'node:os';
import { Bm25Index, DEFAULT_B, DEFAULT_K1 } from './bm25';
import { buildBm25, type BuildOptions } from './bm25-build';
import { fingerprintCorpus, sameFingerprint } from './corpus';
import { parsePassage, splitContents } from '../core/corpus';
import {
  FORMAT_VERSION,
  readIndex,
  readIndexHeader,
  writeIndex,
  type IndexHeader,
  type SharedIndex,
} from './index-file';
import { TOKENIZER_VERSION } from './tokenize';

export interface SearchHit {
  id: string;
  title: string;
  /** The corpus's `contents` unchanged (quoted title line, newline, text), as FlashRAG/Search-R1 return it. */
  contents: string;
  /** `contents` without the title line. */
  text: string;
  score: number;
}

export interface OpenOptions extends BuildOptions {
  /** Index directory; default: `<corpus>.coa-index/` when that is writable, else a per-corpus cache dir. */
  indexDir?: string;
}

export interface OpenInfo {
  indexDir: string;
  /** `loaded`: the saved index matched the corpus; `built`: (re)built and saved. */
  source: 'loaded' | 'built';
  reason?: string;
  ms: number;
  header: Pick<IndexHeader, 'passages' | 'terms' | 'postings' | 'bad_lines'>;
}

export function defaultIndexDir(corpus: string): string {
  const abs = resolve(corpus);
  const beside = `${abs}.coa-index`;
  try {
    accessSync(dirname(abs), constants.W_OK);
    return beside;
  } catch {
    const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
    const key = createHash('sha256').update(abs).digest('hex').slice(0, 16);
    return join(cache, 'coa-studio', 'env-index', `${basename(abs)}-${key}`);
  }
}

/** Why the saved index cannot be used for this corpus, or null if it can. */
function staleReason(
  header: IndexHeader | null,
  fp: ReturnType<typeof fingerprintCorpus>,
  k1: number,
  b: number,
): string | null {
  if (!header) return 'no saved index';
  if (header.format !== FORMAT_VERSION) return `index format ${header.format} (current: ${FORMAT_VERSION})`;
  if (header.tokenizer !== TOKENIZER_VERSION) return 'tokenizer changed';
  if (header.k1 !== k1 || header.b !== b) return 'k1/b changed';
  if (!sameFingerprint(header.fingerprint, fp)) return 'corpus changed';
  return null;
}

export class Retriever {
  private fd: number;
  constructor(
    readonly corpus: string,
    readonly index: Bm25Index,
    readonly info: OpenInfo,
    /** The loaded index file (shared memory), for search worker threads. */
    readonly shared: SharedIndex,
  ) {
    this.fd = openSync(corpus, 'r');
  }

  static async open(corpusPath: string, opts: OpenOptions = {}): Promise<Retriever> {
    const started = Date.now();
    const corpus = resolve(corpusPath);
    const k1 = opts.k1 ?? DEFAULT_K1;
    const b = opts.b ?? DEFAULT_B;
    const indexDir = resolve(opts.indexDir ?? defaultIndexDir(corpus));
    const fp = fingerprintCorpus(corpus);
    let reason = staleReason(readIndexHeader(indexDir), fp, k1, b);
    if (reason === null) {
      try {
        const { header, buffer, data } = readIndex(indexDir);
        const info: OpenInfo = { indexDir, source: 'loaded', ms: Date.now() - started, header };
        return new Retriever(corpus, new Bm25Index(data), info, { header, buffer });
      } catch (e) {
        reason = `saved index unreadable: ${(e as Error).message}`;
      }
    }
    const buildStart = Date.now();
    const { data, badLines } = await buildBm25(corpus, {
      k1,
      b,
      onProgress: opts.onProgress,
      onBadLine: opts.onBadLine,
    });
    // The corpus may have changed while we read it; then the offsets are unreliable: refuse.
    if (!sameFingerprint(fingerprintCorpus(corpus), fp))
      throw new Error(`${corpus}: the corpus changed while the index was being built`);
    mkdirSync(indexDir, { recursive: true });
    const { path } = writeIndex(indexDir, data, {
      corpus,
      fingerprint: fp,
      bad_lines: badLines,
      build_ms: Date.now() - buildStart,
    });
    // Serve from the file just written (one shared buffer, and proof that it reads back).
    let loaded: ReturnType<typeof readIndex>;
    try {
      loaded = readIndex(indexDir);
    } catch (e) {
      throw new Error(`${path}: index was written but cannot be read back: ${(e as Error).message}`, { cause: e });
    }
    const info: OpenInfo = { indexDir, source: 'built', reason, ms: Date.now() - started, header: loaded.header };
    return new Retriever(corpus, new Bm25Index(loaded.data), info, { header: loaded.header, buffer: loaded.buffer });
  }

  get passages(): number {
    return this.index.passages;
  }

  passage(doc: number): { id: string; contents: string } {
    const { docOffsets, docBytes } = this.index.data;
    const buf = Buffer.alloc(docBytes[doc]);
    readSync(this.fd, buf, 0, buf.length, docOffsets[doc]);
    const p = parsePassage(buf.toString('utf8').replace(/^\ufeff/, ''));
    if (typeof p === 'string')
      throw new Error(`${this.corpus}: passage ${doc} no longer parses (${p}); was the corpus changed while serving?`);
    return p;
  }

  search(query: string, k: number): SearchHit[] {
    return this.index.search(query, k).map((h) => {
      const p = this.passage(h.doc);
      const { title, text } = splitContents(p.contents);
      return { id: p.id, title, contents: p.contents, text, score: h.score };
    });
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
