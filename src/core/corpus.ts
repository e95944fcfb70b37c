// FlashRAG corpus files: one JSON object per line, `{"id": "0", "contents": "\"Title\"\nText…"}` — the format, read
// by `coa data check` (core) and the environment server (src/env builds its index from it). Read as a stream of byte
// chunks so memory stays constant whatever the corpus size; each passage keeps its byte offset so the index can point
// back into the file instead of copying the text.
import { createReadStream } from 'node:fs';

export interface Passage {
  id: string;
  /** The corpus's `contents`, unchanged: the title line (FlashRAG quotes it) then the text. */
  contents: string;
}

export interface CorpusLine {
  passage: Passage;
  /** 1-based line number in the file. */
  line: number;
  /** Byte offset of the line's first byte and its length without the newline. */
  offset: number;
  length: number;
}

export interface BadLine {
  file: string;
  line: number;
  message: string;
}

/** Parse one corpus line; a string is the reason it is not a passage. */
export function parsePassage(text: string): Passage | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return `invalid JSON: ${(e as Error).message}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'expected a JSON object';
  const obj = value as Record<string, unknown>;
  const id = typeof obj.id === 'number' ? String(obj.id) : obj.id;
  if (typeof id !== 'string' || id === '') return 'field "id" must be a non-empty string';
  if (typeof obj.contents !== 'string') return 'field "contents" must be a string';
  return { id, contents: obj.contents };
}

/** FlashRAG's title is the first line of `contents`, wrapped in double quotes; the text is the rest. */
export function splitContents(contents: string): { rawTitle: string; title: string; text: string } {
  const nl = contents.indexOf('\n');
  const rawTitle = nl < 0 ? contents : contents.slice(0, nl);
  const text = nl < 0 ? '' : contents.slice(nl + 1);
  const title =
    rawTitle.length >= 2 && rawTitle.startsWith('"') && rawTitle.endsWith('"') ? rawTitle.slice(1, -1) : rawTitle;
  return { rawTitle, title, text };
}

const CHUNK = 1 << 20;

/**
 * Every passage of `file`, in order. Blank lines are skipped silently; malformed lines are passed to
 * `onBad` (file, line number, reason) and skipped.
 */
export async function* readCorpus(file: string, onBad: (bad: BadLine) => void): AsyncGenerator<CorpusLine> {
  let carry: Buffer | null = null; // bytes of an unfinished line from the previous chunk
  let carryOffset = 0;
  let offset = 0; // file offset of the current chunk's first byte
  let line = 0;
  const emit = (bytes: Buffer, start: number): CorpusLine | null => {
    line++;
    let len = bytes.length;
    if (len > 0 && bytes[len - 1] === 13) len--; // CRLF files
    if (len === 0) return null;
    let text = bytes.toString('utf8', 0, len);
    if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1); // BOM
    if (text.trim() === '') return null;
    const parsed = parsePassage(text);
    if (typeof parsed === 'string') {
      onBad({ file, line, message: parsed });
      return null;
    }
    return { passage: parsed, line, offset: start, length: len };
  };
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK }) as AsyncIterable<Buffer>) {
    let pos = 0;
    for (;;) {
      const nl = chunk.indexOf(10, pos);
      if (nl < 0) break;
      let bytes: Buffer;
      let start: number;
      if (carry) {
        bytes = Buffer.concat([carry, chunk.subarray(0, nl)]);
        start = carryOffset;
        carry = null;
      } else {
        bytes = chunk.subarray(pos, nl);
        start = offset + pos;
      }
      const out = emit(bytes, start);
      if (out) yield out;
      pos = nl + 1;
    }
    if (pos < chunk.length) {
      const rest = chunk.subarray(pos);
      if (carry) carry = Buffer.concat([carry, rest]);
      else {
        carry = Buffer.from(rest); // copy: the stream may reuse its buffer
        carryOffset = offset + pos;
      }
    }
    offset += chunk.length;
  }
  if (carry && carry.length > 0) {
    const out = emit(carry, carryOffset);
    if (out) yield out;
  }
}

/** Number of lines (a last line without newline counts), for progress totals: one fast byte scan. */
export async function countLines(file: string): Promise<number> {
  let n = 0;
  let last = 10;
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK }) as AsyncIterable<Buffer>) {
    let pos = -1;
    while ((pos = chunk.indexOf(10, pos + 1)) >= 0) n++;
    if (chunk.length > 0) last = chunk[chunk.length - 1];
  }
  return last === 10 ? n : n + 1;
}
