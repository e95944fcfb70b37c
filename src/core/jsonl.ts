// JSONL reading: streaming, constant memory, byte offsets kept, bad lines reported with line and column and
// skipped (never fatal). The same per-line parser serves the CLI, the language server and the notebook.
// Hostile input stays an error, never a crash: a UTF-8 BOM at the start of the file is skipped (offsets still count
// its 3 bytes), invalid UTF-8 is COA105 at the first bad byte (never replaced silently), and a value nested deeper
// than MAX_NESTING is COA101 at the bracket that goes too deep (jsonc-parser and JSON.stringify recurse, so a
// 5,000-level line would overflow the stack in every later step).
import { createReadStream } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import { RecordSchema, SCHEMES, TrajectoryRecord } from './record';
import type { RecordCode } from './codes';
import { DIALECT_NAMES } from './dialects';

export interface LineProblem {
  code: RecordCode;
  message: string;
  /** 1-based column (UTF-16 units) in the line, and the length of the offending span. */
  column: number;
  length: number;
  /** Path of a schema violation, e.g. `golden_answers.0`. */
  path?: string;
}

/** Deepest nesting of arrays and objects a record may have (the trainer's Python json reader allows ~1,000). */
export const MAX_NESTING = 512;

export interface JsonlEntry {
  /** 1-based line number. */
  line: number;
  /** Byte offset of the line's first byte in the file, and its length in bytes (without the newline). */
  offset: number;
  byteLength: number;
  raw: string;
  /** The line's bytes, only when they are not valid UTF-8 (raw is then lossy): copy these, not raw. */
  bytes?: Buffer;
  record?: TrajectoryRecord;
  problem?: LineProblem;
}

/** Parse one line as a trajectory record. Never throws. */
export function parseRecordLine(
  raw: string,
  line: number,
  offset = 0,
  byteLength = Buffer.byteLength(raw),
): JsonlEntry {
  const entry: JsonlEntry = { line, offset, byteLength, raw };
  // A BOM left at the start of a line (an editor's first line, files concatenated with cat) is not JSON text.
  const bom = raw.charCodeAt(0) === 0xfeff ? 1 : 0;
  let value: unknown;
  try {
    value = JSON.parse(bom ? raw.slice(1) : raw);
  } catch (e) {
    const message = (e as Error).message;
    const pos = Number(/at position (\d+)/.exec(message)?.[1] ?? NaN);
    const column = Number.isFinite(pos) ? pos + 1 + bom : Math.max(1, raw.length);
    entry.problem = {
      code: 'COA101',
      message: `invalid JSON: ${message.replace(/ in JSON at position \d+.*$/, '')}`,
      column,
      length: 1,
    };
    return entry;
  }
  const deep = nestingProblem(raw, value);
  if (deep) {
    entry.problem = { code: 'COA101', message: `invalid JSON: ${deep.message}`, column: deep.column, length: 1 };
    return entry;
  }
  const fast = plainRecord(value);
  if (fast) {
    entry.record = fast;
    return entry;
  }
  const result = RecordSchema.safeParse(value);
  if (result.success) {
    entry.record = result.data;
    return entry;
  }
  const issue = result.error.issues[0];
  const path = issue.path.map(String);
  const where = locate(bom ? raw.slice(1) : raw, issue.path as (string | number)[]);
  entry.problem = {
    code: 'COA102',
    message: `${path.length ? path.join('.') : 'record'}: ${issue.message}`,
    column: where.start + 1 + bom,
    length: Math.max(1, where.length),
    path: path.join('.'),
  };
  return entry;
}

const RECORD_KEYS = ['id', 'question', 'golden_answers', 'response', 'dialect', 'tokens', 'reward', 'meta'];
const META_KEYS = ['run', 'stage', 'step', 'sample', 'group'];
const DIALECT_SET: ReadonlySet<unknown> = new Set(DIALECT_NAMES);

/**
 * The common record, validated without zod: exactly what RecordSchema.safeParse(value).data would be, or null
 * to let zod decide (and word the error). Only JSON.parse output comes here. Covers records with well-typed optional
 * fields, `tokens` and `reward` included (zod took two thirds of the time of reading an evaluation file); returns `value` itself when its keys are already in the order zod
 * writes them (schema keys first, then unknown keys as read), otherwise a reordered copy as zod would make.
 */
function plainRecord(value: unknown): TrajectoryRecord | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const o = value as Record<string, unknown>;
  if (typeof o.id !== 'string' || o.id.length === 0 || typeof o.question !== 'string' || typeof o.response !== 'string')
    return null;
  let tokens = o.tokens;
  if (tokens !== undefined && (tokens = plainTokens(tokens)) === null) return null;
  let reward = o.reward;
  if (reward !== undefined && (reward = plainReward(reward)) === null) return null;
  const ga = o.golden_answers;
  if (ga !== undefined) {
    if (!Array.isArray(ga)) return null;
    for (let k = 0; k < ga.length; k++) if (typeof ga[k] !== 'string') return null;
  }
  if (o.dialect !== undefined && !DIALECT_SET.has(o.dialect)) return null;
  let meta = o.meta;
  if (meta !== undefined) {
    if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return null;
    const m = meta as Record<string, unknown>;
    if ((m.run !== undefined && typeof m.run !== 'string') || (m.stage !== undefined && typeof m.stage !== 'string'))
      return null;
    if (
      (m.step !== undefined && !Number.isSafeInteger(m.step)) ||
      (m.sample !== undefined && !Number.isSafeInteger(m.sample))
    )
      return null;
    if (
      m.group !== undefined &&
      typeof m.group !== 'string' &&
      !(typeof m.group === 'number' && Number.isFinite(m.group))
    )
      return null;
    const ordered = inSchemaOrder(m, META_KEYS);
    if (ordered === null) return null;
    if (ordered !== m) meta = ordered;
  }
  const ordered = inSchemaOrder(o, RECORD_KEYS);
  if (ordered === null) return null;
  if (ordered === o && meta === o.meta && tokens === o.tokens && reward === o.reward) {
    // zod would return an equal copy; nobody else holds this freshly parsed value.
    return o as TrajectoryRecord;
  }
  if ('meta' in ordered) ordered.meta = meta;
  if ('tokens' in ordered) ordered.tokens = tokens;
  if ('reward' in ordered) ordered.reward = reward;
  return ordered as TrajectoryRecord;
}

const TOKEN_KEYS = ['ids', 'loss_mask', 'logprobs', 'advantages', 'offsets'];
const REWARD_KEYS = [
  'scheme',
  'em',
  'f1',
  'format_ok',
  'violations',
  'tool_calls',
  'optimal_tool_calls',
  'r_tool',
  'r_correct',
  'total',
];
const SCHEME_SET: ReadonlySet<unknown> = new Set(SCHEMES);

/** Every element passes `ok` (checked in a plain loop: per-token arrays run to thousands of entries). */
function allOf(a: unknown, ok: (x: unknown) => boolean, length?: number): boolean {
  if (!Array.isArray(a) || (length !== undefined && a.length !== length)) return false;
  for (let i = 0; i < a.length; i++) if (!ok(a[i])) return false;
  return true;
}
const isNumber = (x: unknown) => typeof x === 'number' && Number.isFinite(x);
const isInt = (x: unknown) => Number.isSafeInteger(x);
const isNumberOrNull = (x: unknown) => x === null || isNumber(x);

/** `tokens` as TokensSchema would give it (RL rollouts and evaluations all carry one), or null to let zod decide. */
function plainTokens(v: unknown): Record<string, unknown> | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const t = v as Record<string, unknown>;
  if (!allOf(t.ids, isInt)) return null;
  const n = (t.ids as unknown[]).length;
  if (t.loss_mask !== undefined && !allOf(t.loss_mask, isNumber, n)) return null;
  if (t.logprobs !== undefined && !allOf(t.logprobs, isNumberOrNull, n)) return null;
  if (t.advantages !== undefined && !allOf(t.advantages, isNumber, n)) return null;
  if (t.offsets !== undefined && !allOf(t.offsets, isInt, n)) return null;
  return inSchemaOrder(t, TOKEN_KEYS);
}

/** `reward` as RewardBreakdownSchema would give it, or null to let zod decide. */
function plainReward(v: unknown): Record<string, unknown> | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const r = v as Record<string, unknown>;
  if (!SCHEME_SET.has(r.scheme) || !isNumber(r.em) || !isNumber(r.f1) || typeof r.format_ok !== 'boolean') return null;
  if (
    !allOf(r.violations, (x) => typeof x === 'string') ||
    !isInt(r.tool_calls) ||
    !(r.optimal_tool_calls === null || isInt(r.optimal_tool_calls))
  )
    return null;
  if (!isNumber(r.r_tool) || !isNumber(r.r_correct) || !isNumber(r.total)) return null;
  return inSchemaOrder(r, REWARD_KEYS);
}

/**
 * `o` itself when its keys come schema keys first (in schema order) then unknown keys, else a copy in that order;
 * null for a `__proto__` key (zod drops it: leave that to zod).
 */
function inSchemaOrder(o: Record<string, unknown>, schema: readonly string[]): Record<string, unknown> | null {
  let rank = 0;
  let sorted = true;
  for (const key in o) {
    if (key === '__proto__') return null;
    const r = schema.indexOf(key);
    const keyRank = r < 0 ? schema.length : r;
    if (keyRank < rank) sorted = false;
    else rank = keyRank;
  }
  if (sorted) return o;
  const copy: Record<string, unknown> = {};
  for (const key of schema) if (key in o) copy[key] = o[key];
  for (const key in o) if (!schema.includes(key)) copy[key] = o[key];
  return copy;
}

/** For a line and its JSON.parse value: nested deeper than MAX_NESTING → the 1-based column of the bracket that goes too
 * deep and a message; else null. Every reader that later walks the value recursively (jsonc-parser, JSON.stringify,
 * zod) asks first. */
export function nestingProblem(raw: string, value: unknown): { column: number; message: string } | null {
  if (
    raw.length <= 2 * MAX_NESTING ||
    countUpTo(raw, '[', MAX_NESTING + 1) + countUpTo(raw, '{', MAX_NESTING + 1) <= MAX_NESTING
  )
    return null;
  if (!nestedDeeperThan(value, MAX_NESTING)) return null;
  return { column: Math.max(0, tooDeepAt(raw, MAX_NESTING)) + 1, message: `nested deeper than ${MAX_NESTING} levels` };
}

/** Occurrences of `ch` in `text`, counting stops at `limit` (indexOf jumps: cheap for the few brackets a record has). */
function countUpTo(text: string, ch: string, limit: number): number {
  let n = 0;
  for (let i = text.indexOf(ch); i >= 0 && n < limit; i = text.indexOf(ch, i + 1)) n++;
  return n;
}

/** Whether arrays/objects nest more than `max` levels in a parsed value: iterative, stops at the first too-deep one. */
function nestedDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length) {
    const v = stack.pop() as Record<string, unknown> | unknown[];
    const d = depths.pop()!;
    if (d > max) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (typeof x === 'object' && x !== null) {
          stack.push(x);
          depths.push(d + 1);
        }
      }
    } else {
      for (const k in v) {
        const x = v[k];
        if (typeof x === 'object' && x !== null) {
          stack.push(x);
          depths.push(d + 1);
        }
      }
    }
  }
  return false;
}

/** Offset of the first `[` or `{` (outside strings) that opens level max + 1 of raw JSON text; -1 when none does. */
export function tooDeepAt(raw: string, max: number): number {
  let depth = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 34 /* " */) {
      for (i++; i < raw.length && raw.charCodeAt(i) !== 34; i++) if (raw.charCodeAt(i) === 92) i++;
    } else if (c === 91 || c === 123) {
      if (++depth > max) return i;
    } else if (c === 93 || c === 125) depth--;
  }
  return -1;
}

/** Where a JSON path sits in a line: the value if present, else the enclosing object. */
export function locate(raw: string, path: (string | number)[]): { start: number; length: number } {
  const root = parseTree(raw);
  if (!root) return { start: 0, length: raw.length };
  for (let n = path.length; n >= 0; n--) {
    const node = findNodeAtLocation(root, path.slice(0, n));
    if (node) {
      // For a missing key, point at the object's opening brace rather than the whole object.
      return n === path.length ? { start: node.offset, length: node.length } : { start: node.offset, length: 1 };
    }
  }
  return { start: root.offset, length: 1 };
}

export interface ReadOptions {
  /** Bytes read per chunk (memory stays at about one chunk plus the longest line). */
  chunkSize?: number;
  /** Parses a line instead of parseRecordLine (a reader of another engine's rows, e.g. verl dumps). */
  parse?: typeof parseRecordLine;
}

/** Stream a JSONL file entry by entry. Blank lines are skipped. Throws only if the file cannot be opened. */
export async function* readJsonl(path: string, options: ReadOptions = {}): AsyncGenerator<JsonlEntry> {
  const stream = createReadStream(path, { highWaterMark: options.chunkSize ?? 1 << 20 });
  let carry: Buffer[] = [];
  let carryLength = 0;
  let lineNo = 0;
  let offset = 0; // byte offset of the start of the pending line
  let first = true;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    if (first) {
      first = false;
      if (looksBinary(chunk)) {
        yield {
          line: 1,
          offset: 0,
          byteLength: 0,
          raw: '',
          problem: { code: 'COA104', message: 'binary data, not a JSONL text file', column: 1, length: 1 },
        };
        stream.destroy();
        return;
      }
    }
    for (let nl = chunk.indexOf(10, start); nl >= 0; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      const buf = carryLength ? Buffer.concat([...carry, piece], carryLength + piece.length) : piece;
      carry = [];
      carryLength = 0;
      lineNo++;
      const entry = lineEntry(buf, lineNo, offset, options.parse);
      if (entry) yield entry;
      offset += buf.length + 1;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      carry.push(Buffer.from(rest)); // copy: the stream may reuse its chunk
      carryLength += rest.length;
    }
  }
  if (carryLength) {
    lineNo++;
    const entry = lineEntry(Buffer.concat(carry, carryLength), lineNo, offset, options.parse);
    if (entry) yield entry;
  }
}

/** Split in-memory text (an editor document) into entries. */
export function* iterateJsonlText(text: string): Generator<JsonlEntry> {
  let lineNo = 0;
  const bom = text.charCodeAt(0) === 0xfeff;
  let start = bom ? 1 : 0;
  let byteOffset = bom ? 3 : 0;
  while (start <= text.length) {
    let nl = text.indexOf('\n', start);
    if (nl < 0) nl = text.length;
    lineNo++;
    let raw = text.slice(start, nl);
    const bytes = Buffer.byteLength(raw);
    if (raw.endsWith('\r')) raw = raw.slice(0, -1);
    if (raw.trim() !== '') yield parseRecordLine(raw, lineNo, byteOffset, Buffer.byteLength(raw));
    byteOffset += bytes + 1;
    start = nl + 1;
    if (nl === text.length) break;
  }
}

function lineEntry(buf: Buffer, lineNo: number, offset: number, parse = parseRecordLine): JsonlEntry | null {
  // A UTF-8 BOM opening the file is not part of record 1 (its offset moves past the 3 bytes).
  const bom = lineNo === 1 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  let end = buf.length;
  if (end > bom && buf[end - 1] === 13) end--; // CRLF
  const bytes = buf.subarray(bom, end);
  offset += bom;
  end -= bom;
  const raw = bytes.toString('utf8');
  if (raw.trim() === '') return null;
  if (!isUtf8(bytes)) {
    const bad = firstInvalidUtf8(bytes);
    return {
      line: lineNo,
      offset,
      byteLength: end,
      raw,
      bytes: Buffer.from(bytes),
      problem: {
        code: 'COA105',
        message: `invalid UTF-8: byte 0x${bytes[bad].toString(16).padStart(2, '0')} at byte ${bad + 1} of the line`,
        column: bytes.toString('utf8', 0, bad).length + 1,
        length: 1,
      },
    };
  }
  return parse(raw, lineNo, offset, end);
}

/** Index of the first byte that does not begin or continue a well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates). */
export function firstInvalidUtf8(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i];
    let n: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c < 0x80) n = 0;
    else if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c === 0xe0) lo = 0xa0;
      else if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c === 0xf0) lo = 0x90;
      else if (c === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= n; k++) {
      const x = b[i + k];
      if (x === undefined || x < (k === 1 ? lo : 0x80) || x > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return b.length;
}

/** NUL bytes do not occur in UTF-8 JSON text. */
function looksBinary(chunk: Buffer): boolean {
  return chunk.subarray(0, 8192).includes(0);
}
