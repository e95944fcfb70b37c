// Output files written safely: to a temporary name first, renamed into place when complete. The output path is
// checked and the temporary file opened synchronously, before any work: a missing directory, a directory given as
// the output or a read-only place is one `coa: …` line and exit 2 (usage/IO), never a stack and never exit 1
// (which means "problems found in the input").
import { createWriteStream, openSync, renameSync, rmSync, statSync, WriteStream } from 'node:fs';
import { once } from 'node:events';
import { CliError } from './args';

export class LineWriter {
  private readonly stream: WriteStream | NodeJS.WriteStream;
  private readonly tmp: string | null;

  constructor(private readonly path: string | undefined) {
    this.tmp = path ? `${path}.tmp-${process.pid}` : null;
    if (!this.tmp || !path) {
      this.stream = process.stdout;
      return;
    }
    if (statSync(path, { throwIfNoEntry: false })?.isDirectory()) throw new CliError(`${path}: is a directory, expected an output file`);
    let fd: number;
    try {
      fd = openSync(this.tmp, 'w');
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why = err.code === 'ENOENT' ? 'its directory does not exist' : err.code === 'EACCES' || err.code === 'EPERM' ? 'permission denied' : err.message;
      throw new CliError(`cannot write ${path}: ${why}`);
    }
    this.stream = createWriteStream(this.tmp, { fd });
  }

  async write(line: string | Uint8Array): Promise<void> {
    const ok = typeof line === 'string' ? this.stream.write(line + '\n') : this.stream.write(line) && this.stream.write('\n');
    if (!ok) await once(this.stream, 'drain');
  }

  async close(): Promise<void> {
    if (!this.tmp || !this.path) return;
    const s = this.stream as WriteStream;
    s.end();
    await once(s, 'finish');
    try {
      renameSync(this.tmp, this.path);
    } catch (e) {
      rmSync(this.tmp, { force: true });
      throw new CliError(`cannot write ${this.path}: ${(e as Error).message}`);
    }
  }

  abort(): void {
    if (this.tmp) {
      // Writes still queued fail once the stream is destroyed; nothing is kept, so their errors are expected.
      (this.stream as WriteStream).on('error', () => {});
      (this.stream as WriteStream).destroy();
      rmSync(this.tmp, { force: true });
    }
  }
}
