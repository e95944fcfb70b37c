// Small HTTP plumbing for the environment server: JSON replies, the error envelope, a bounded body
// reader, and bearer-token checking. Every failure becomes an HttpError with a status and a code.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { ERROR_CODES, type ErrorBody, type ErrorCode } from './protocol';

export class HttpError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly path?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERROR_CODES[code];
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** A reply whose JSON text is already serialised (by a worker thread). */
export function sendJsonText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/**
 * A reply whose JSON is a sequence of parts: short framing strings and UTF-8 byte arrays made by worker threads.
 * The parts are written as they are — nothing is joined, flattened or re-encoded on the event loop (a 244 MB search
 * answer built as one string stalls /v1/health for seconds).
 */
export function sendJsonParts(res: ServerResponse, status: number, parts: readonly (string | Uint8Array)[]): void {
  if (res.headersSent || res.destroyed) return;
  let length = 0;
  for (const p of parts) length += typeof p === 'string' ? Buffer.byteLength(p) : p.byteLength;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': length, 'cache-control': 'no-store' });
  for (const p of parts) res.write(p);
  res.end();
}

/** A request body as bytes a worker thread can take over without a copy (a body that is a view of a pool is copied). */
export function movableBody(body: Buffer): { bytes: Uint8Array; transfer: ArrayBuffer[] } {
  const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
  const bytes = whole ? body : new Uint8Array(body);
  return { bytes, transfer: [bytes.buffer as ArrayBuffer] };
}

export function sendError(res: ServerResponse, err: HttpError): void {
  const body: ErrorBody = { error: { code: err.code, message: err.message } };
  if (err.path !== undefined) body.error.path = err.path;
  sendJson(res, err.status, body, err.headers);
}

/** Bodies are collected as received chunks up to this size; past it, into one buffer of the declared length. */
const GATHER_BYTES = 1024 * 1024;

/**
 * The request body, at most `max` bytes. Larger bodies are refused with 413 as soon as the declared
 * length or the bytes received pass the limit (the connection is then closed instead of draining it).
 * A large body with a declared length is copied into one buffer of that length as it arrives — never joined in
 * one go at the end (five 31.5 MB bodies at once cost the event loop 26 ms each, and their memory twice) — and
 * that buffer owns its memory, so a worker thread can take it over without a copy (movableBody).
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new HttpError('body_too_large', `request body exceeds ${max} bytes`, undefined, { connection: 'close' });
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) {
      reject(tooLarge());
      return;
    }
    const known = Number.isInteger(declared) && declared > 0 ? declared : -1;
    let chunks: Buffer[] = [];
    let whole: Buffer | null = null;
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      if (size + chunk.length > max || (whole && size + chunk.length > whole.length)) {
        failed = true;
        req.pause();
        reject(tooLarge());
        return;
      }
      if (whole) chunk.copy(whole, size);
      else chunks.push(chunk);
      size += chunk.length;
      if (!whole && known > 0 && (size >= GATHER_BYTES || known <= GATHER_BYTES) && known >= size) {
        whole = Buffer.allocUnsafeSlow(known);
        let at = 0;
        for (const c of chunks) at += c.copy(whole, at);
        chunks = [];
      }
    });
    req.on('end', () => {
      if (failed) return;
      if (whole) resolve(size === whole.length ? whole : whole.subarray(0, size));
      else resolve(Buffer.concat(chunks, size));
    });
    req.on('error', (e) => {
      if (!failed) reject(new HttpError('invalid_request', `request body could not be read: ${e.message}`));
      failed = true;
    });
  });
}

export function parseJson(body: Buffer): unknown {
  const text = body.toString('utf8');
  if (text.trim() === '') throw new HttpError('bad_json', 'request body is empty; expected a JSON object');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpError('bad_json', `request body is not valid JSON: ${(e as Error).message}`);
  }
}

/** Constant-time check of `Authorization: Bearer <token>`. */
export function checkBearer(req: IncomingMessage, token: string): void {
  const header = req.headers.authorization ?? '';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const unauthorized = (msg: string) => new HttpError('unauthorized', msg, undefined, { 'www-authenticate': 'Bearer' });
  if (!m) throw unauthorized('missing "Authorization: Bearer <token>" header');
  const given = Buffer.from(m[1]);
  const want = Buffer.from(token);
  if (given.length !== want.length || !timingSafeEqual(given, want)) throw unauthorized('wrong token');
}
