// Finding one record in a trajectory file without its index: what a jump does while the browser's index is still
// being built (a 300k-record file takes most of a minute to index; a jump must not wait for it). A line number is
// found by counting newlines (recordFile.readLineAt); an id by a byte search for its JSON key and value, each hit
// checked by parsing its line. No `vscode` import: unit-tested directly.
import { open } from 'node:fs/promises';
import { parseRecordLine } from '../../../core/jsonl';
import { readLineAt } from '../notebook/recordFile';
import { readOptions } from './indexer';

/** Where a record is: 1-based line, byte offset and length of the line (without its terminator). */
export interface Located {
  line: number;
  offset: number;
  length: number;
}

export interface LocateOptions {
  signal?: AbortSignal;
  /** Where to start: a line's start or any byte of it, and that line's number (the index's frontier: what it has
   *  read already need not be read again). The file's start by default. */
  from?: { offset: number; line: number };
  /** Whether the file is a verl dump (the browser knows from its indexer; read from the file's head otherwise). */
  verl?: boolean;
  /** Bytes read so far, at most every `everyMs` (the page shows how far the search is). */
  onProgress?: (bytes: number) => void;
  everyMs?: number;
}

const CHUNK = 1 << 20;

/**
 * The record a jump names: a line number (digits) or a record id. Null when the file has no such line or record,
 * or when the search was aborted. 'indexOnly' for an id in a verl dump: its ids are made while indexing, from the
 * rows' groups, so only the index knows them (a file search cannot say the record is not there).
 */
export async function locateRecord(
  path: string,
  target: string,
  options: LocateOptions = {},
): Promise<Located | 'indexOnly' | null> {
  const t = target.trim();
  if (/^\d+$/.test(t)) {
    const line = Number(t);
    if (line < 1) return null;
    try {
      const at = await readLineAt(path, line, undefined, {
        from: options.from,
        signal: options.signal,
        onProgress: options.onProgress,
        everyMs: options.everyMs,
      });
      return { line, offset: at.offset, length: at.length };
    } catch {
      return null;
    }
  }
  if (t === '') return null;
  if (options.verl ?? (await readOptions(path)).parse) return 'indexOnly';
  return locateId(path, t, options);
}

/** The line whose record has id `id`, found by a byte search for the id as JSON writes it; null when there is none
 *  (or the search was aborted). Lines end in '\n' or '\r\n'; `length` excludes the terminator. */
export async function locateId(path: string, id: string, options: LocateOptions = {}): Promise<Located | null> {
  // One pass for the value as JSON writes it (a search per key spelling would read the file twice); a hit counts
  // when the `"id":` key is right before it, and its line's record has that id.
  const needle = Buffer.from(JSON.stringify(id));
  const everyMs = options.everyMs ?? 200;
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(CHUNK);
    let carry = Buffer.alloc(0); // the unfinished last line of the previous chunk
    let carryAt = options.from?.offset ?? 0; // its byte offset in the file
    let carryLine = options.from?.line ?? 1; // its line number
    let readAt = carryAt;
    let reported = Date.now();
    for (;;) {
      if (options.signal?.aborted) return null;
      const { bytesRead } = await fh.read(buf, 0, CHUNK, readAt);
      readAt += bytesRead;
      const eof = bytesRead === 0;
      const data = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
      // Whole lines only: up to the last newline (everything at the end of the file).
      const whole = eof ? data.length : data.lastIndexOf(10) + 1;
      let counted = 0; // newlines counted in data[0, counted)
      let line = carryLine;
      let from = 0;
      for (;;) {
        const hit = data.indexOf(needle, from);
        if (hit < 0 || hit + needle.length > whole) break;
        if (!afterIdKey(data, hit)) {
          from = hit + 1;
          continue;
        }
        const start = data.lastIndexOf(10, hit) + 1;
        let end = data.indexOf(10, hit);
        if (end < 0 || end > whole) end = whole;
        line += countNewlines(data, counted, start);
        counted = start;
        let length = end - start;
        if (length > 0 && data[start + length - 1] === 13) length--;
        const raw = data.toString('utf8', start, start + length);
        if (parseRecordLine(raw, line).record?.id === id) return { line, offset: carryAt + start, length };
        from = end; // a decoy (an "id" key inside another object of this line): go on after the line
      }
      if (eof) return null;
      carryLine = line + countNewlines(data, counted, whole);
      carryAt += whole;
      carry = Buffer.from(data.subarray(whole));
      if (options.onProgress && Date.now() - reported >= everyMs) {
        reported = Date.now();
        options.onProgress(readAt);
      }
    }
  } finally {
    await fh.close();
  }
}

/** Whether `"id"`, a colon and spaces come right before `at`. */
function afterIdKey(data: Buffer, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && (data[i] === 32 || data[i] === 9)) i--;
  if (data[i] !== 58) return false; // ':'
  i--;
  while (i >= 0 && (data[i] === 32 || data[i] === 9)) i--;
  return i >= 3 && data.toString('latin1', i - 3, i + 1) === '"id"';
}

function countNewlines(data: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = data.indexOf(10, from); i >= 0 && i < to; i = data.indexOf(10, i + 1)) n++;
  return n;
}
