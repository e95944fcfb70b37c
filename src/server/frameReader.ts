// Reads the LSP base protocol from a byte stream — `Content-Length: N\r\n\r\n` then N bytes of UTF-8 JSON — and
// treats every malformed frame as an error. vscode-jsonrpc's stream reader reports a bad header and then keeps the
// same bytes in its buffer, failing again on each chunk, and reads `Content-Length: 12abc` as 12: a broken client
// leaves the server alive and silent. main.ts exits on the first error, so the client sees the process end.
// Frames are collected as a list of chunks and joined once complete (an 18 MB didOpen arrives in 64 KiB chunks).
import { isUtf8 } from 'node:buffer';
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-languageserver/node';

/** A body longer than this cannot be decoded anyway (V8's longest string is about 2^29 UTF-16 units). */
export const MAX_FRAME_BYTES = 512 * 1024 * 1024;
/** Headers are two short lines; a header section this long without its blank line is not LSP. */
export const MAX_HEADER_BYTES = 8192;

export class FrameError extends Error {}

/** The body length a header section declares; throws FrameError for anything but a well-formed one. */
export function contentLength(header: string, max = MAX_FRAME_BYTES): number {
  let length: number | undefined;
  for (const line of header.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0)
      throw new FrameError(`malformed LSP header line ${JSON.stringify(line.slice(0, 80))} (expected "Name: value")`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-length') {
      if (!/^\d{1,16}$/.test(value))
        throw new FrameError(
          `malformed LSP frame: Content-Length ${JSON.stringify(value.slice(0, 40))} is not a number of bytes`,
        );
      length = Number(value);
      if (length > max)
        throw new FrameError(`malformed LSP frame: Content-Length ${length} exceeds the ${max}-byte limit`);
    } else if (name === 'content-type' && /charset=/i.test(value) && !/charset=["']?utf-?8\b/i.test(value)) {
      throw new FrameError(`unsupported LSP Content-Type ${JSON.stringify(value.slice(0, 80))} (only utf-8 JSON)`);
    }
  }
  if (length === undefined) throw new FrameError('malformed LSP frame: no Content-Length header');
  return length;
}

export class StrictFrameReader extends AbstractMessageReader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** The body length of the frame being read, or -1 while reading its header. */
  private need = -1;
  private failed = false;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly maxBytes = MAX_FRAME_BYTES,
  ) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    const onData = (chunk: Buffer) => {
      if (this.failed) return;
      try {
        this.feed(chunk, callback);
      } catch (e) {
        this.failed = true;
        this.fireError(e instanceof Error ? e : new Error(String(e)));
      }
    };
    const onClose = () => {
      if (!this.failed && (this.size > 0 || this.need >= 0)) {
        this.failed = true;
        this.fireError(
          new FrameError(
            `input ended inside an LSP frame (${this.size} bytes of ${this.need >= 0 ? this.need : 'a header'} received)`,
          ),
        );
      }
      this.fireClose();
    };
    const onError = (e: Error) => this.fireError(e);
    this.input.on('data', onData);
    this.input.on('end', onClose);
    this.input.on('error', onError);
    return {
      dispose: () => {
        this.input.off('data', onData);
        this.input.off('end', onClose);
        this.input.off('error', onError);
      },
    };
  }

  private feed(chunk: Buffer, callback: DataCallback): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    for (;;) {
      if (this.need < 0) {
        const head = this.take(Math.min(this.size, MAX_HEADER_BYTES + 4), false);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (this.size > MAX_HEADER_BYTES)
            throw new FrameError(
              `malformed LSP frame: no end of header (a blank line) in the first ${MAX_HEADER_BYTES} bytes`,
            );
          return;
        }
        this.need = contentLength(head.subarray(0, end).toString('latin1'), this.maxBytes);
        this.take(end + 4, true);
      }
      if (this.size < this.need) return;
      const body = this.take(this.need, true);
      this.need = -1;
      callback(parseBody(body));
    }
  }

  /** The first n bytes buffered (n ≤ size), removed from the buffer when `consume`. */
  private take(n: number, consume: boolean): Buffer {
    const joined = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size);
    this.chunks = [joined];
    if (!consume) return joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.size = rest.length;
    return joined.subarray(0, n);
  }
}

function parseBody(body: Buffer): Message {
  if (!isUtf8(body)) throw new FrameError('malformed LSP frame: the message body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new FrameError(`malformed LSP frame: the message body is not JSON (${(e as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new FrameError('malformed LSP frame: the message body is not a JSON-RPC object');
  return value as Message;
}
