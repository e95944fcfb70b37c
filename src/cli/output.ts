// Output files written safely: to a temporary name first, renamed into place when complete.
import { createWriteStream, renameSync, rmSync, WriteStream } from 'node:fs';
import { once } from 'node:events';

export class LineWriter {
  private readonly stream: WriteStream | NodeJS.WriteStream;
  private readonly tmp: string | null;

  constructor(private readonly path: string | undefined) {
    this.tmp = path ? `${path}.tmp-${process.pid}` : null;
    this.stream = this.tmp ? createWriteStream(this.tmp) : process.stdout;
  }

  async write(line: string): Promise<void> {
    if (!this.stream.write(line + '\n')) await once(this.stream, 'drain');
  }

  async close(): Promise<void> {
    if (!this.tmp || !this.path) return;
    const s = this.stream as WriteStream;
    s.end();
    await once(s, 'finish');
    renameSync(this.tmp, this.path);
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
