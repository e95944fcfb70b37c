// Tails a run's `events.jsonl` from a byte offset. The trainer appends one JSON object per line, so a read can end
// in the middle of a line (kept until its newline arrives) or even in the middle of a UTF-8 character (bytes are
// kept, not decoded, until the line is whole). A file that shrinks or is replaced (new inode) is re-read from the
// start and the consumer is told to reset. Every line is validated with the protocol's zod schema; a malformed
// line is reported once, with file:line:column, and skipped. No vscode import: the panel, the CLI and tests use it.
import { open, stat } from 'node:fs/promises';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parseEvent, type TrainerEvent } from './events';

export interface TailIssue {
  file: string;
  line: number;
  column: number;
  message: string;
}

export interface TailBatch {
  /** True when the file was truncated or replaced: earlier events from this file no longer stand. */
  reset: boolean;
  events: TrainerEvent[];
  issues: TailIssue[];
}

export function formatIssue(i: TailIssue): string {
  return `${i.file}:${i.line}:${i.column}: ${i.message}`;
}

/** 1-based column of a JSON.parse error ("… at position N …"), else 1. */
function errorColumn(message: string): number {
  const m = /position (\d+)/.exec(message);
  return m ? Number(m[1]) + 1 : 1;
}

const CHUNK = 1 << 20;
const HEAD = 64;

/**
 * Turns the lines of a file that is not an events file into protocol events (e.g. verl's metrics file,
 * src/core/verl/runTail.ts). `reset` is called when the file was truncated or replaced.
 */
export interface LineParser {
  parse(text: string): TrainerEvent[] | { error: string; column: number };
  reset?(): void;
}

export class EventTail {
  /** Byte offset of the first byte not yet consumed (the start of the partial line, if any). */
  private offset = 0;
  /** Bytes of the last line seen without its newline yet. */
  private partial: Buffer = Buffer.alloc(0);
  /** 1-based number of the next complete line. */
  private lineNo = 1;
  private ino: number | undefined;
  /** The file's first bytes when we started reading it: a file rewritten in place to a larger size still differs. */
  private head: Buffer = Buffer.alloc(0);
  private reading: Promise<TailBatch> | undefined;

  constructor(
    readonly file: string,
    startOffset = 0,
    private readonly parser?: LineParser,
  ) {
    this.offset = startOffset;
  }

  /** Bytes consumed so far (complete lines only). */
  get position(): number {
    return this.offset;
  }

  /** Reads whatever was appended since the last call. Never throws for a missing file (a run not started yet). */
  read(): Promise<TailBatch> {
    // Serialise overlapping calls (watch events and the poll timer can coincide).
    const next = (this.reading ?? Promise.resolve(undefined)).then(() => this.readOnce());
    this.reading = next.catch(() => ({ reset: false, events: [], issues: [] }));
    return next;
  }

  private async readOnce(): Promise<TailBatch> {
    const batch: TailBatch = { reset: false, events: [], issues: [] };
    let info;
    try {
      info = await stat(this.file);
    } catch {
      return batch; // not there (yet): a run started but not yet writing, or a deleted run
    }
    const consumedEnd = this.offset + this.partial.length;
    const fh = await open(this.file, 'r');
    try {
      let replaced = this.ino !== undefined && info.ino !== this.ino;
      if (!replaced && this.head.length > 0 && info.size >= this.head.length) {
        const now = Buffer.alloc(this.head.length);
        await fh.read(now, 0, now.length, 0);
        replaced = !now.equals(this.head);
      }
      if (replaced || info.size < consumedEnd) {
        batch.reset = consumedEnd > 0;
        this.offset = 0;
        this.partial = Buffer.alloc(0);
        this.lineNo = 1;
        this.head = Buffer.alloc(0);
        this.parser?.reset?.();
      }
      this.ino = info.ino;
      let pos = this.offset + this.partial.length;
      if (info.size <= pos) return batch;
      if (pos === 0) {
        this.head = Buffer.alloc(Math.min(HEAD, info.size));
        await fh.read(this.head, 0, this.head.length, 0);
      }
      const buf = Buffer.allocUnsafe(CHUNK);
      while (pos < info.size) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, info.size - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        this.consume(buf.subarray(0, bytesRead), batch);
      }
    } finally {
      await fh.close();
    }
    return batch;
  }

  private consume(chunk: Buffer, batch: TailBatch): void {
    const data = this.partial.length ? Buffer.concat([this.partial, chunk]) : chunk;
    let start = 0;
    for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
      const end = nl > start && data[nl - 1] === 13 ? nl - 1 : nl; // tolerate CRLF
      this.handleLine(data.toString('utf8', start, end), batch);
      this.offset += nl + 1 - start;
      start = nl + 1;
    }
    // Copy: `chunk` is a reused read buffer.
    this.partial = Buffer.from(data.subarray(start));
  }

  private handleLine(text: string, batch: TailBatch): void {
    const line = this.lineNo++;
    if (text.trim() === '') return;
    if (this.parser) {
      const got = this.parser.parse(text);
      if (Array.isArray(got)) batch.events.push(...got);
      else batch.issues.push({ file: this.file, line, column: got.column, message: got.error });
      return;
    }
    const parsed = parseEvent(text);
    if (parsed.ok) batch.events.push(parsed.event);
    else batch.issues.push({ file: this.file, line, column: errorColumn(parsed.error), message: parsed.error });
  }
}

export interface FollowOptions {
  /** Called with each non-empty batch (events or issues or a reset). */
  onBatch: (batch: TailBatch) => void;
  /** Poll interval in ms: fs.watch misses events on some file systems, so polling backs it up. */
  intervalMs?: number;
}

/** What followEvents reads: an events tail, or another source read the same way (a TensorBoard run folder). */
export interface Tail {
  readonly file: string;
  read(): Promise<TailBatch>;
}

/** Follows a file (or an existing tail, from where it stands) until disposed: an fs.watch on its directory plus a poll timer. */
export function followEvents<T extends Tail = EventTail>(
  source: string | T,
  options: FollowOptions,
): { tail: T | EventTail; dispose: () => void; flush: () => Promise<void> } {
  const tail = typeof source === 'string' ? new EventTail(source) : source;
  const file = tail.file;
  let disposed = false;
  const flush = async () => {
    if (disposed) return;
    const batch = await tail.read();
    if (!disposed && (batch.reset || batch.events.length || batch.issues.length)) options.onBatch(batch);
  };
  // Coalesce wake-ups: a trainer writing 1,000 lines/s fires as many watch events; one read catches up on all.
  let running = false;
  let again = false;
  const kick = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await flush().catch(() => undefined);
      } while (again && !disposed);
    } finally {
      running = false;
    }
  };
  let watcher: FSWatcher | undefined;
  try {
    // Watch the directory: the file may not exist yet, or be replaced.
    watcher = watch(dirname(file), (_event, name) => {
      if (!name || name === basename(file)) void kick();
    });
    watcher.on('error', () => undefined);
  } catch {
    watcher = undefined; // directory missing: polling covers it
  }
  const timer = setInterval(() => void kick(), options.intervalMs ?? 500);
  void kick();
  return {
    tail,
    flush,
    dispose: () => {
      disposed = true;
      clearInterval(timer);
      watcher?.close();
    },
  };
}
