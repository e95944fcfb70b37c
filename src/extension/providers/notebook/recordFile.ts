// One line of a JSONL file, read and rewritten in place without loading the file: what the record view
// (recordView.ts) is made of. A record is addressed by its 1-based line and the id it holds there; a byte offset,
// when the caller knows one (the browser's index, the live panel's scan), saves the scan and is checked before use.
// No `vscode` import: unit-tested directly.
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Where a line is: byte offset, length without its terminator, and the terminator ('\n', '\r\n' or '' at EOF). */
export interface LineAt {
  line: number;
  offset: number;
  length: number;
  eol: string;
}

export interface LineRead extends LineAt {
  bytes: Buffer;
}

const CHUNK = 1 << 20;

/** How a scan for a line goes: from a known point (a byte of line `from.line` at `from.offset`; the file's start by
 *  default), stopped by `signal` (it throws), reporting the bytes read at most every `everyMs`. */
export interface ScanOptions {
  from?: { offset: number; line: number };
  signal?: AbortSignal;
  onProgress?: (bytes: number) => void;
  everyMs?: number;
}

/** The line `line` (1-based) of `path`, at `hint` when that still is a whole line there, else found by a scan. */
export async function readLineAt(
  path: string,
  line: number,
  hint?: Pick<LineAt, 'offset' | 'length'>,
  scan: ScanOptions = {},
): Promise<LineRead> {
  const fh = await open(path, 'r');
  try {
    if (hint) {
      const at = await checkHint(fh, hint.offset, hint.length);
      if (at) return { line, ...at };
    }
    return { line, ...(await scanTo(fh, line, path, scan)) };
  } finally {
    await fh.close();
  }
}

type Handle = Awaited<ReturnType<typeof open>>;

/** The bytes at offset..offset+length, when they are one whole line (a newline or the file's start before, a
 *  terminator or the end after, none inside). */
async function checkHint(fh: Handle, offset: number, length: number): Promise<Omit<LineRead, 'line'> | null> {
  if (offset < 0 || length < 0) return null;
  const from = Math.max(0, offset - 1);
  const buf = Buffer.alloc(offset - from + length + 2);
  const { bytesRead } = await fh.read(buf, 0, buf.length, from);
  if (bytesRead < offset - from + length) return null;
  if (offset > 0 && buf[0] !== 10) return null;
  const bytes = Buffer.from(buf.subarray(offset - from, offset - from + length));
  if (bytes.includes(10)) return null;
  const after = buf.subarray(offset - from + length, bytesRead);
  const eol = after.length === 0 ? '' : after[0] === 10 ? '\n' : null;
  if (eol === null) return null;
  return trimCr({ offset, length, eol, bytes });
}

/** A line read up to its '\n' keeps a '\r' before it as part of the terminator. */
function trimCr(r: Omit<LineRead, 'line'>): Omit<LineRead, 'line'> {
  if (r.eol === '\n' && r.bytes.length && r.bytes[r.bytes.length - 1] === 13)
    return { offset: r.offset, length: r.length - 1, eol: '\r\n', bytes: r.bytes.subarray(0, -1) };
  return r;
}

async function scanTo(fh: Handle, line: number, path: string, scan: ScanOptions): Promise<Omit<LineRead, 'line'>> {
  if (!Number.isInteger(line) || line < 1) throw new Error(`${path}: no line ${line}`);
  // A starting point at or past the line wanted cannot find it: start from the file's start then.
  const origin = scan.from && scan.from.line < line ? scan.from : { offset: 0, line: 1 };
  const buf = Buffer.alloc(CHUNK);
  let pos = origin.offset;
  let seen = origin.line; // the line the next byte belongs to
  let start = line === 1 ? 0 : -1;
  const parts: Buffer[] = [];
  const everyMs = scan.everyMs ?? 200;
  let reported = Date.now();
  for (;;) {
    scan.signal?.throwIfAborted();
    if (scan.onProgress && Date.now() - reported >= everyMs) {
      reported = Date.now();
      scan.onProgress(pos);
    }
    const { bytesRead } = await fh.read(buf, 0, CHUNK, pos);
    if (bytesRead === 0) break;
    let i = 0;
    while (start < 0) {
      const nl = buf.indexOf(10, i);
      if (nl < 0 || nl >= bytesRead) break;
      seen++;
      i = nl + 1;
      if (seen === line) start = pos + i;
    }
    if (start >= 0) {
      const from = Math.max(i, start - pos);
      const nl = buf.indexOf(10, from);
      if (nl >= 0 && nl < bytesRead) {
        parts.push(Buffer.from(buf.subarray(from, nl)));
        const bytes = Buffer.concat(parts);
        return trimCr({ offset: start, length: bytes.length, eol: '\n', bytes });
      }
      parts.push(Buffer.from(buf.subarray(from, bytesRead)));
    }
    pos += bytesRead;
  }
  // Past the end, or the empty "line" after a final newline.
  if (start < 0 || (start === pos && line > 1)) throw new Error(`${path}: no line ${line} (the file has fewer lines)`);
  const bytes = Buffer.concat(parts);
  return { offset: start, length: bytes.length, eol: '', bytes };
}

/** The bytes at `offset` when they still equal `expected` and start a line; null when the file changed there. */
export async function readSpan(path: string, offset: number, expected: Uint8Array): Promise<Buffer | null> {
  const fh = await open(path, 'r');
  try {
    const from = Math.max(0, offset - 1);
    const buf = Buffer.alloc(offset - from + expected.byteLength);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    if (bytesRead < buf.length || (offset > 0 && buf[0] !== 10)) return null;
    const bytes = buf.subarray(offset - from);
    return bytes.equals(expected) ? Buffer.from(bytes) : null;
  } finally {
    await fh.close();
  }
}

/**
 * Replace the bytes `old` at `offset` (which must still be there, starting a line) with `content`, through a temp
 * file renamed over the original, so a failure leaves the file as it was.
 */
export async function replaceSpan(path: string, offset: number, old: Uint8Array, content: Uint8Array): Promise<void> {
  if (!(await readSpan(path, offset, old).catch(() => null))) {
    throw new Error(`${path}: the record changed on disk since it was opened; reopen it to edit it`);
  }
  const tmp = join(dirname(path), `.${basename(path)}.coa-save-${process.pid}`);
  const src = await open(path, 'r');
  let dst: Handle | undefined;
  try {
    dst = await open(tmp, 'w', (await src.stat()).mode);
    const out = dst;
    const copy = async (from: number, to: number) => {
      const buf = Buffer.alloc(CHUNK);
      for (let p = from; p < to; ) {
        const { bytesRead } = await src.read(buf, 0, Math.min(CHUNK, to - p), p);
        if (bytesRead === 0) break;
        await out.write(buf, 0, bytesRead);
        p += bytesRead;
      }
    };
    const size = (await src.stat()).size;
    await copy(0, offset);
    await out.write(content);
    await copy(offset + old.byteLength, size);
    await out.sync();
    await out.close();
    dst = undefined;
    await rename(tmp, path);
  } catch (e) {
    await dst?.close();
    await unlink(tmp).catch(() => undefined);
    throw e;
  } finally {
    await src.close();
  }
}

/** A record id as a file name: the tab title of its record view. */
export function safeName(id: string): string {
  const s = id.replace(/[^A-Za-z0-9._#@+=-]/g, '_').slice(0, 80);
  return s === '' || /^\.+$/.test(s) ? '_' : s;
}

/** The record view's path for a record: `<file>/<line>/<id>.coa.jsonl` (its title is the id). */
export function recordViewPath(file: string, line: number, id: string): string {
  return `${file}/${line}/${safeName(id)}.coa.jsonl`;
}

export function parseRecordViewPath(path: string): { file: string; line: number; name: string } | null {
  const m = /^(.+)\/(\d+)\/([^/]+)\.coa\.jsonl$/.exec(path);
  return m ? { file: m[1], line: Number(m[2]), name: m[3] } : null;
}
