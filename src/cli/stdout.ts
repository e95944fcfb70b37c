// Standard output and error as the CLI writes them. Whatever a command prints goes through process.stdout (console.log
// included), so the rules are set once, on the streams, for every command:
// - a reader that stops reading (`coa validate … | head`) closes the pipe: the command stops at once and quietly, with
//   the status a process killed by SIGPIPE has (141), as `cat`, `grep` and `git log` do under `| head`;
// - any other write error (a full disk, `> /dev/full`, an I/O error) is one `coa: cannot write standard output: …`
//   line on stderr and exit 2 ("unwritable output") — the output is lost, so the command must not say it succeeded.
// - standard error that cannot be written (its reader gone) loses the messages, not the work: `coa env serve` keeps
//   serving when its supervisor closed the pipe it logged to.
// Node's console swallows a failed write, and an 'error' a stream emits with no listener is an unhandled exception
// (the EPIPE stack trace), so both streams get a listener here; `flushed()` waits for what is still buffered, so an
// error of the last write is seen before the exit status is decided.
import { describeFsError } from '../core/fsErrors';

/** The exit status of a command whose standard output or error was closed by its reader (128 + SIGPIPE). */
export const EXIT_PIPE_CLOSED = 141;
/** Unreadable input or unwritable output (documented in the usage text). */
export const EXIT_IO = 2;

let guarded = false;

/** Sets the rules above on process.stdout and process.stderr (once). `exit` is process.exit, or a test's. */
export function guardStdio(exit: (code: number) => void = (code) => process.exit(code)): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') return exit(EXIT_PIPE_CLOSED);
    try {
      process.stderr.write(`coa: cannot write standard output: ${describeFsError(e)}\n`);
    } catch {
      // stderr is gone too: the exit status still says it
    }
    exit(EXIT_IO);
  });
  process.stderr.on('error', () => undefined);
}

/** Resolves once everything written to stdout so far has been handed to the system (or failed: the rules then act). */
export function flushed(): Promise<void> {
  return new Promise((resolve) => {
    if (process.stdout.destroyed || !process.stdout.writable) return resolve();
    process.stdout.write('', () => resolve());
  });
}
