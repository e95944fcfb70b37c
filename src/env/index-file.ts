// The on-disk index: one file `bm25.idx` = magic, a JSON header (corpus fingerprint, parameters,
// section table), then the typed arrays of Bm25Data as raw little-endian sections, 8-byte aligned.
// Loading is a few large reads straight into typed arrays: no parsing, no per-term objects.
import { openSync, readSync, writeSync, closeSync, renameSync, mkdirSync, unlinkSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import type { Bm25Data } from './bm25';
import type { CorpusFingerprint } from './corpus';
import { TOKENIZER_VERSION } from './tokenize';

export const INDEX_FILE = 'bm25.idx';
const MAGIC = Buffer.from('COABM25\n', 'latin1');
const FORMAT_VERSION = 2;

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
const SECTIONS: { name: SectionName; ctor: { new (buf: ArrayBuffer): ArrayBufferView; BYTES_PER_ELEMENT: number } }[] = [
  { name: 'termBlob', ctor: Uint8Array },
  { name: 'termStarts', ctor: Uint32Array },
  { name: 'termIds', ctor: Uint32Array },
  { name: 'postingStarts', ctor: Uint32Array },
  { name: 'postingDocs', ctor: Uint32Array },
  { name: 'postingTfs', ctor: Uint16Array },
  { name: 'docOffsets', ctor: Float64Array },
  { name: 'docBytes', ctor: Uint32Array },
  { name: 'docTokens', ctor: Uint32Array },
  { name: 'termMaxFactors', ctor: Float32Array },
];

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('the BM25 index format assumes a little-endian machine');

const align8 = (n: number): number => (n + 7) & ~7;

export type HeaderInfo = Omit<IndexHeader, 'format' | 'tokenizer' | 'k1' | 'b' | 'passages' | 'terms' | 'postings' | 'sections'>;

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
    postings: data.postingDocs.length,
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

export function readIndex(dir: string): { header: IndexHeader; data: Bm25Data } {
  const fd = openSync(join(dir, INDEX_FILE), 'r');
  try {
    const { header, dataStart } = readHeader(fd);
    if (header.format !== FORMAT_VERSION) throw new Error(`index format ${header.format}, expected ${FORMAT_VERSION}`);
    const size = fstatSync(fd).size;
    const out: Partial<Record<SectionName, ArrayBufferView>> = {};
    for (const s of SECTIONS) {
      const entry = header.sections[s.name];
      if (!entry) throw new Error(`index file lacks section ${s.name}`);
      const [off, len] = entry;
      if (dataStart + off + len > size || len % s.ctor.BYTES_PER_ELEMENT !== 0) throw new Error(`index section ${s.name} is damaged`);
      const buf = new ArrayBuffer(len);
      readAll(fd, new Uint8Array(buf), dataStart + off);
      out[s.name] = new s.ctor(buf);
    }
    const data = { ...(out as Omit<Bm25Data, 'k1' | 'b'>), k1: header.k1, b: header.b } as Bm25Data;
    if (data.docTokens.length !== header.passages || data.termIds.length !== header.terms) throw new Error('index counts do not match its header');
    return { header, data };
  } finally {
    closeSync(fd);
  }
}
