// The on-disk index: one file `bm25.idx` = magic, a JSON header (corpus fingerprint, parameters,
// section table), then the typed arrays of Bm25Data as raw little-endian sections, 8-byte aligned.
// Loading is one read of the data area into a SharedArrayBuffer with typed-array views on it: no parsing,
// no per-term objects, and search worker threads (search-pool.ts) share the same memory instead of copies.
// Format 3: block-compressed postings (postings.ts); an index of another format is rebuilt.
import { openSync, readSync, writeSync, closeSync, renameSync, mkdirSync, unlinkSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import type { Bm25Data } from './bm25';
import type { CorpusFingerprint } from './corpus';
import { TOKENIZER_VERSION } from './tokenize';

export const INDEX_FILE = 'bm25.idx';
const MAGIC = Buffer.from('COABM25\n', 'latin1');
export const FORMAT_VERSION = 3;

export interface IndexHeader {
  format: number;
  tokenizer: number;
  corpus: string;
  fingerprint: CorpusFingerprint;
  k1: number;
  b: number;
  passages: number;
  terms: number;
  postings: number;
  bad_lines: number;
  build_ms: number;
  /** name → [byte offset from the start of the data area, byte length] */
  sections: Record<string, [number, number]>;
}

type SectionName = Exclude<keyof Bm25Data, 'k1' | 'b'>;
type ViewCtor = {
  new (buf: ArrayBufferLike, byteOffset: number, length: number): ArrayBufferView;
  BYTES_PER_ELEMENT: number;
};
const SECTIONS: { name: SectionName; ctor: ViewCtor }[] = [
  { name: 'termBlob', ctor: Uint8Array },
  { name: 'termStarts', ctor: Uint32Array },
  { name: 'termIds', ctor: Uint32Array },
  { name: 'postingStarts', ctor: Uint32Array },
  { name: 'termBlocks', ctor: Uint32Array },
  { name: 'blockLast', ctor: Uint32Array },
  { name: 'blockWord', ctor: Uint32Array },
  { name: 'blockBits', ctor: Uint16Array },
  { name: 'blockMax', ctor: Float32Array },
  { name: 'postingWords', ctor: Uint32Array },
  { name: 'docOffsets', ctor: Float64Array },
  { name: 'docBytes', ctor: Uint32Array },
  { name: 'docTokens', ctor: Uint32Array },
];

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1)
  throw new Error('the BM25 index format assumes a little-endian machine');

const align8 = (n: number): number => (n + 7) & ~7;

export type HeaderInfo = Omit<
  IndexHeader,
  'format' | 'tokenizer' | 'k1' | 'b' | 'passages' | 'terms' | 'postings' | 'sections'
>;

/** Write atomically (temp file + rename), so a crash mid-write never leaves a half index behind. */
export function writeIndex(dir: string, data: Bm25Data, info: HeaderInfo): { path: string; bytes: number } {
  mkdirSync(dir, { recursive: true });
  const sections: Record<string, [number, number]> = {};
  let off = 0;
  for (const s of SECTIONS) {
    const v = data[s.name] as ArrayBufferView | undefined;
    if (!v) throw new Error(`writeIndex: section ${s.name} is missing`);
    const len = v.byteLength;
    sections[s.name] = [off, len];
    off = align8(off + len);
  }
  const header: IndexHeader = {
    format: FORMAT_VERSION,
    tokenizer: TOKENIZER_VERSION,
    ...info,
    k1: data.k1,
    b: data.b,
    passages: data.docTokens.length,
    terms: data.termIds.length,
    postings: data.postingStarts[data.termIds.length] ?? 0,
    sections,
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(align8(MAGIC.length + 4 + json.length));
  MAGIC.copy(prefix, 0);
  prefix.writeUInt32LE(json.length, MAGIC.length);
  json.copy(prefix, MAGIC.length + 4);
  const path = join(dir, INDEX_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, prefix);
    let pos = prefix.length;
    for (const s of SECTIONS) {
      const v = data[s.name] as ArrayBufferView;
      const [secOff] = sections[s.name];
      writeAll(fd, Buffer.from(v.buffer, v.byteOffset, v.byteLength), prefix.length + secOff);
      pos = prefix.length + secOff + v.byteLength;
    }
    const pad = align8(pos) - pos;
    if (pad > 0) writeSync(fd, Buffer.alloc(pad), 0, pad, pos);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
  return { path, bytes: prefix.length + off };
}

function writeAll(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, Math.min(buf.length - done, 1 << 30), position + done);
}

function readAll(fd: number, target: Uint8Array, position: number): void {
  let done = 0;
  while (done < target.length) {
    const n = readSync(fd, target, done, Math.min(target.length - done, 1 << 30), position + done);
    if (n === 0) throw new Error('index file is truncated');
    done += n;
  }
}

/** The header only (cheap), or null if the file is missing or not an index. */
export function readIndexHeader(dir: string): IndexHeader | null {
  let fd: number;
  try {
    fd = openSync(join(dir, INDEX_FILE), 'r');
  } catch {
    return null;
  }
  try {
    return readHeader(fd).header;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

function readHeader(fd: number): { header: IndexHeader; dataStart: number } {
  const first = Buffer.alloc(MAGIC.length + 4);
  if (readSync(fd, first, 0, first.length, 0) !== first.length || !first.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new Error('not a CoA BM25 index file');
  }
  const jsonLen = first.readUInt32LE(MAGIC.length);
  const json = Buffer.alloc(jsonLen);
  readAll(fd, json, first.length);
  const header = JSON.parse(json.toString('utf8')) as IndexHeader;
  return { header, dataStart: align8(first.length + jsonLen) };
}

/** The index data area in one SharedArrayBuffer, plus the header that locates each section in it. */
export interface SharedIndex {
  header: IndexHeader;
  buffer: SharedArrayBuffer;
}

export function readIndex(dir: string): SharedIndex & { data: Bm25Data } {
  const fd = openSync(join(dir, INDEX_FILE), 'r');
  try {
    const { header, dataStart } = readHeader(fd);
    if (header.format !== FORMAT_VERSION) throw new Error(`index format ${header.format}, expected ${FORMAT_VERSION}`);
    const size = fstatSync(fd).size;
    let dataEnd = 0; // bytes to read: up to the end of the last non-empty section
    let extent = 0; // the buffer covers every section's offset, empty ones included
    for (const s of SECTIONS) {
      const entry = header.sections[s.name];
      if (!entry) throw new Error(`index file lacks section ${s.name}`);
      const [off, len] = entry;
      // An empty section (an empty corpus) has no bytes: its aligned offset may lie past the file's last byte.
      if ((len > 0 && dataStart + off + len > size) || len % s.ctor.BYTES_PER_ELEMENT !== 0 || off % 8 !== 0)
        throw new Error(`index section ${s.name} is damaged`);
      if (len > 0) dataEnd = Math.max(dataEnd, off + len);
      extent = Math.max(extent, off + len);
    }
    const buffer = new SharedArrayBuffer(align8(extent));
    readAll(fd, new Uint8Array(buffer, 0, dataEnd), dataStart);
    const shared = { header, buffer };
    return { ...shared, data: indexData(shared) };
  } finally {
    closeSync(fd);
  }
}

/** Typed-array views of a loaded index (cheap: no copy; what each worker thread does with the shared buffer). */
export function indexData({ header, buffer }: SharedIndex): Bm25Data {
  const out: Partial<Record<SectionName, ArrayBufferView>> = {};
  for (const s of SECTIONS) {
    const [off, len] = header.sections[s.name];
    out[s.name] = new s.ctor(buffer, off, len / s.ctor.BYTES_PER_ELEMENT);
  }
  const data = { ...(out as Omit<Bm25Data, 'k1' | 'b'>), k1: header.k1, b: header.b } as Bm25Data;
  if (data.docTokens.length !== header.passages || data.termIds.length !== header.terms)
    throw new Error('index counts do not match its header');
  return data;
}
