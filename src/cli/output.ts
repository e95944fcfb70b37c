// Output files written safely. A regular file (or a new one) is written to a temporary name first and renamed into
// place when complete, so a failed run never leaves half a file. What is not a regular file is never replaced by
// one (a rename would turn a FIFO or a symbolic link into a plain file — the FIFO's reader would get 0 bytes while
// the command says it succeeded; as root `-o /dev/full` would replace the device node):
// - a symbolic link is followed: its target is written (temp file beside the target, renamed onto it), the link stays;
// - a FIFO or a character device (`/dev/stdout`, `/dev/null`, a named pipe) is written through, as `> path` would;
// - anything else (a directory, a block device, a socket, a dangling link) is refused.
// The target is checked and opened synchronously, before any work: a missing directory, a directory given as the
// output or a read-only place is one `coa: …` line and exit 2 (usage/IO), never a stack and never exit 1 (which
// means "problems found in the input"). Write errors (a full disk, /dev/full) are the same kind of line.
import {
  createWriteStream,
  lstatSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  type WriteStream,
} from 'node:fs';
import { once } from 'node:events';
import { CliError } from './args';
import { describeFsError } from '../core/fsErrors';

/** How an output path is written: `atomic` via a temporary file renamed onto `target`, `through` straight into it. */
export interface OutputTarget {
  mode: 'atomic' | 'through';
  /** The file actually written (a symbolic link's final target). */
  target: string;
}

/** Where and how `path` is written; throws CliError for targets that must not be written or replaced. */
export function outputTarget(path: string): OutputTarget {
  try {
    return targetOf(path);
  } catch (e) {
    // A loop of links (ELOOP), a path through a file (ENOTDIR), a directory we may not search (EACCES): one line.
    if (e instanceof CliError) throw e;
    throw new CliError(`${path}: ${describeFsError(e)}`);
  }
}

function targetOf(path: string): OutputTarget {
  const link = lstatSync(path, { throwIfNoEntry: false });
  if (!link) return { mode: 'atomic', target: path };
  const st = link.isSymbolicLink() ? statSync(path, { throwIfNoEntry: false }) : link;
  if (!st) throw new CliError(`${path}: is a symbolic link to a missing file; give the file itself as the output`);
  // Opened by its own name, so /dev/stdout (a link to /proc/self/fd/1, a pipe or a terminal) works too.
  if (st.isFIFO() || st.isCharacterDevice()) return { mode: 'through', target: path };
  if (st.isFile()) return { mode: 'atomic', target: link.isSymbolicLink() ? realpathSync(path) : path };
  const what = st.isDirectory()
    ? 'a directory'
    : st.isBlockDevice()
      ? 'a block device'
      : st.isSocket()
        ? 'a socket'
        : 'not a regular file';
  throw new CliError(`${path}: is ${what}, expected an output file`);
}

function describeWriteError(e: unknown): string {
  return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'its directory does not exist' : describeFsError(e);
}

export class LineWriter {
  private readonly stream: WriteStream | NodeJS.WriteStream;
  private readonly tmp: string | null = null;
  private readonly target: string | null = null;
  /** The first write error; later writes and close() report it instead of crashing on an unhandled 'error'. */
  private failed: unknown = null;

  constructor(private readonly path: string | undefined) {
    if (!path) {
      this.stream = process.stdout;
      return;
    }
    const { mode, target } = outputTarget(path);
    this.target = target;
    if (mode === 'atomic') this.tmp = `${target}.tmp-${process.pid}`;
    let fd: number;
    try {
      // A FIFO blocks here until a reader opens it, as a shell redirection does.
      fd = openSync(this.tmp ?? target, 'w');
    } catch (e) {
      throw new CliError(`cannot write ${path}: ${describeWriteError(e)}`);
    }
    this.stream = createWriteStream(this.tmp ?? target, { fd });
    this.stream.on('error', (e) => (this.failed ??= e));
  }

  private check(): void {
    if (this.failed) throw new CliError(`cannot write ${this.path}: ${describeWriteError(this.failed)}`);
  }

  async write(line: string | Uint8Array): Promise<void> {
    this.check();
    const ok =
      typeof line === 'string' ? this.stream.write(line + '\n') : this.stream.write(line) && this.stream.write('\n');
    // A write error ends the wait too (as 'close'); check() then reports it.
    if (!ok) await this.drained();
    this.check();
  }

  /** Waits for 'drain' or 'close', then removes the listener of the event that did not come: without that, every
   *  full buffer left a 'close' and an 'error' listener on the stream (MaxListenersExceededWarning on big outputs). */
  private async drained(): Promise<void> {
    const stop = new AbortController();
    const { signal } = stop;
    try {
      await Promise.race([once(this.stream, 'drain', { signal }), once(this.stream, 'close', { signal })]);
    } catch {
      // the stream's error: check() reports it
    } finally {
      stop.abort();
    }
  }

  async close(): Promise<void> {
    if (!this.target) return;
    const s = this.stream as WriteStream;
    if (!this.failed) {
      s.end();
      await new Promise<void>((resolve) => s.once('close', resolve));
    }
    if (this.failed) {
      this.abort();
      this.check();
    }
    if (!this.tmp) return;
    try {
      renameSync(this.tmp, this.target);
    } catch (e) {
      rmSync(this.tmp, { force: true });
      throw new CliError(`cannot write ${this.path}: ${describeFsError(e)}`);
    }
  }

  /** Stops writing; a temporary file is removed (what went through to a FIFO or device cannot be taken back). */
  abort(): void {
    if (!this.target) return;
    (this.stream as WriteStream).destroy();
    if (this.tmp) rmSync(this.tmp, { force: true });
  }
}
