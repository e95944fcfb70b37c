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

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** A reply whose JSON text is already serialised (by a worker thread). */
export function sendJsonText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
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
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': length,
    'cache-control': 'no-store',
  });
  for (const p of parts) res.write(p);
  res.end();
}

/**
 * A request body as the chunks it arrived in. Small bodies are joined here (`bytes`) and parsed on the event loop; a
 * large one goes to a worker thread as its chunks (`movable`), whose memory is moved, not copied, and which the worker
 * joins — the server's event loop never copies or joins a large body (twelve 30 MB bodies copied into buffers of their
 * own cost it 0.75 s of copying and 1.2 s of garbage collection).
 */
export class RequestBody {
  private joined: Buffer | null = null;

  constructor(
    private readonly chunks: Buffer[],
    readonly length: number,
  ) {}

  static readonly EMPTY = new RequestBody([], 0);

  /** The bytes in one buffer, joined on this thread (for small bodies). */
  get bytes(): Buffer {
    return (this.joined ??= this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.length));
  }

  /** The chunks for a worker thread: each chunk's memory moved with it (a chunk that is a view of shared memory is
   *  copied first), so this body must not be used here afterwards. */
  movable(): { parts: Uint8Array[]; transfer: ArrayBuffer[] } {
    const parts: Uint8Array[] = [];
    const transfer = new Set<ArrayBuffer>();
    for (const c of this.chunks) {
      const owned =
        c.byteOffset === 0 &&
        c.byteLength === c.buffer.byteLength &&
        c.buffer instanceof ArrayBuffer &&
        !transfer.has(c.buffer);
      const part = owned ? c : new Uint8Array(c);
      parts.push(part);
      transfer.add(part.buffer as ArrayBuffer);
    }
    return { parts, transfer: [...transfer] };
  }
}

/** A body's chunks as one buffer (in a worker thread, after `movable`). */
export function joinParts(parts: readonly Uint8Array[]): Buffer {
  if (parts.length === 1) return Buffer.from(parts[0].buffer, parts[0].byteOffset, parts[0].byteLength);
  return Buffer.concat(parts);
}

export function sendError(res: ServerResponse, err: HttpError): void {
  const body: ErrorBody = { error: { code: err.code, message: err.message } };
  if (err.path !== undefined) body.error.path = err.path;
  sendJson(res, err.status, body, err.headers);
}

/** Bodies up to this size never wait for the budget: a trainer's searches and grades are small and must not queue
 *  behind someone's large uploads. */
export const SMALL_BODY_BYTES = 64 * 1024;
/**
 * A body this large is parsed in a worker thread at a lower CPU priority, and the thread is replaced once it answers
 * (search-pool.ts): such bodies are rare in real use (a resume's OTC state) and cost seconds of CPU and hundreds of MB of
 * heap each, which must not come out of the event loop's or ordinary searches' share.
 */
export const LARGE_BODY_BYTES = 4 * 1024 * 1024;
/** A body of unknown length (chunked) takes the budget in steps of this many bytes as it arrives. */
const BUDGET_STEP_BYTES = 1024 * 1024;

/**
 * The bytes of large request bodies the server holds at once, across requests: a request takes its body's size before
 * reading it and gives it back when it is answered. While the budget is spent, a large body waits unread (TCP holds it
 * back at the client, so it costs neither memory nor event-loop time), in arrival order, under the request's timeout.
 * Twelve 30 MB bodies at once used to be read and copied together (/v1/health p99 0.3–0.8 s, a 360 MB peak) and then
 * queued for the workers until most timed out.
 */
export class BodyBudget {
  private used = 0;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {}

  /** Bytes held now (for /v1/health). */
  get held(): number {
    return this.used;
  }

  /** A lease for one request: `take` more bytes (waits while the budget is spent), `release` all of them once. */
  lease(signal?: AbortSignal): BodyLease {
    let mine = 0;
    let released = false;
    return {
      take: async (bytes: number) => {
        const want = Math.min(bytes, this.capacity - mine); // a lease never waits for more than the whole budget
        if (want <= 0) return;
        if (this.used + want <= this.capacity && this.waiting.length === 0) {
          this.used += want;
          mine += want;
          return;
        }
        await new Promise<void>((resolve, reject) => {
          const entry = { bytes: want, grant: () => resolve() };
          this.waiting.push(entry);
          signal?.addEventListener(
            'abort',
            () => {
              const i = this.waiting.indexOf(entry);
              if (i >= 0) this.waiting.splice(i, 1);
              reject(signal.reason);
              this.pump(); // a large waiter leaving may let smaller ones behind it in
            },
            { once: true },
          );
        });
        if (released) return this.give(want); // answered (timed out) while waiting
        mine += want;
      },
      release: () => {
        if (released) return;
        released = true;
        this.give(mine);
        mine = 0;
      },
    };
  }

  private give(bytes: number): void {
    this.used -= bytes;
    this.pump();
  }

  private pump(): void {
    while (this.waiting.length && this.used + this.waiting[0].bytes <= this.capacity) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      next.grant();
    }
  }
}

export interface BodyLease {
  take(bytes: number): Promise<void>;
  release(): void;
}

/**
 * The request body, at most `max` bytes, as its chunks (RequestBody). Larger bodies are refused with 413 as soon as
 * the declared length or the bytes received pass the limit (the connection is then closed instead of draining it).
 * With a lease, a body over SMALL_BODY_BYTES first takes its bytes from the server's BodyBudget (a body of unknown
 * length, step by step as it arrives), waiting unread while the budget is spent.
 */
export async function readBody(req: IncomingMessage, max: number, lease?: BodyLease): Promise<RequestBody> {
  const declared = Number(req.headers['content-length']);
  const tooLarge = () =>
    new HttpError('body_too_large', `request body exceeds ${max} bytes`, undefined, { connection: 'close' });
  if (Number.isFinite(declared) && declared > max) throw tooLarge();
  const known = Number.isInteger(declared) && declared >= 0;
  // A large body of known length takes its bytes from the budget before one of them is read.
  if (lease && known && declared > SMALL_BODY_BYTES) await lease.take(declared);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    // A body of unknown length takes the budget step by step past SMALL_BODY_BYTES, pausing while it waits.
    let taken = known || !lease ? Infinity : SMALL_BODY_BYTES;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      if (size + chunk.length > max || (known && size + chunk.length > declared)) {
        failed = true;
        req.pause();
        reject(tooLarge());
        return;
      }
      if (size + chunk.length > taken) {
        const step = Math.max(BUDGET_STEP_BYTES, size + chunk.length - taken);
        taken += step;
        req.pause();
        lease!.take(step).then(
          () => req.resume(),
          (e: unknown) => {
            failed = true;
            reject(e);
          },
        );
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    req.on('end', () => {
      if (!failed) resolve(new RequestBody(chunks, size));
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
