// Runs one child process for the extension (trainer, environment server, ONNX export): spawned from an argument
// array with no shell, stdout read as JSON lines (events) and stderr streamed to the log, cancel = SIGTERM then
// SIGKILL after a grace period, and the end turned into a status and an actionable message (diagnose.ts).
// No vscode import: the unit tests drive it with real child processes.
import { spawn, type ChildProcess } from 'node:child_process';
import { diagnoseExit, type Diagnosis } from './diagnose';

/** The subset of vscode.LogOutputChannel the manager writes to. */
export interface LogSink {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface SpawnSpec {
  /** Human name used in messages ("trainer"). */
  what: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  log: LogSink;
  /** Each stdout line that parses as a JSON object. */
  onJson?: (value: Record<string, unknown>, line: string) => void;
  /** Stdout lines that are not JSON objects (logged as info too). */
  onText?: (line: string) => void;
  /** Milliseconds between SIGTERM and SIGKILL on cancel (default 10 s: the trainer saves a checkpoint). */
  graceMs?: number;
  /** Argument values never written to the log (tokens). */
  secrets?: string[];
  /** stderr lines kept for the failure message (default 40). */
  keepStderr?: number;
}

export interface ProcessResult extends Diagnosis {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderrTail: string[];
}

/** Calls `onLine` with each complete line of a byte stream (the last partial line at end). */
function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      onLine(line);
    }
  });
  stream.on('end', () => {
    if (buf) onLine(buf);
    buf = '';
  });
}

export class ManagedProcess {
  readonly child: ChildProcess;
  /** Settles once the process has exited and its output is drained. Never rejects. */
  readonly done: Promise<ProcessResult>;
  private cancelled = false;
  private killTimer: NodeJS.Timeout | undefined;
  private readonly stderrTail: string[] = [];

  constructor(readonly spec: SpawnSpec) {
    const keep = spec.keepStderr ?? 40;
    const log = spec.log;
    const shown = [spec.command, ...spec.args].map((a) => (spec.secrets?.includes(a) ? '<redacted>' : quoteForLog(a)));
    log.info(`starting ${spec.what}: ${shown.join(' ')}${spec.cwd ? ` (in ${spec.cwd})` : ''}`);
    this.child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      shell: false,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    lines(this.child.stdout!, (line) => {
      if (!line.trim()) return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        value = undefined;
      }
      if (value && typeof value === 'object' && !Array.isArray(value))
        spec.onJson?.(value as Record<string, unknown>, line);
      else {
        log.info(`[${spec.what}] ${line}`);
        spec.onText?.(line);
      }
    });
    lines(this.child.stderr!, (line) => {
      if (!line.trim()) return;
      this.stderrTail.push(line);
      if (this.stderrTail.length > keep) this.stderrTail.splice(0, this.stderrTail.length - keep);
      log.warn(`[${spec.what}] ${line}`);
    });
    this.done = new Promise<ProcessResult>((resolve) => {
      let spawnError: NodeJS.ErrnoException | undefined;
      this.child.once('error', (e: NodeJS.ErrnoException) => {
        spawnError = e;
        // 'close' does not always follow a failed spawn.
        if (this.child.pid === undefined) finish(null, null);
      });
      let settled = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (settled) return;
        settled = true;
        if (this.killTimer) clearTimeout(this.killTimer);
        const d = diagnoseExit({
          what: spec.what,
          command: spec.command,
          spawnError,
          code,
          signal,
          cancelled: this.cancelled,
          stderrTail: this.stderrTail,
        });
        const end = signal ? `signal ${signal}` : `code ${code}`;
        if (d.status === 'failed') log.error(`${spec.what} failed (${end}): ${d.message}`);
        else log.info(`${spec.what} ended: ${d.status} (${end})`);
        resolve({ ...d, code, signal, stderrTail: [...this.stderrTail] });
      };
      // 'close' (not 'exit'): fires after stdout/stderr are drained, so no event is lost.
      this.child.once('close', (code, signal) => finish(code, signal));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** cancel() was called (the process may still be saving its checkpoint). */
  get cancelling(): boolean {
    return this.cancelled;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null && this.child.pid !== undefined;
  }

  /** SIGTERM now, SIGKILL after the grace period if still alive. Resolves with the result. */
  cancel(): Promise<ProcessResult> {
    if (this.running && !this.cancelled) {
      this.cancelled = true;
      this.spec.log.info(
        `${this.spec.what}: cancel requested (SIGTERM; SIGKILL after ${this.spec.graceMs ?? 10_000} ms)`,
      );
      this.child.kill('SIGTERM');
      this.killTimer = setTimeout(() => {
        if (this.running) {
          this.spec.log.warn(`${this.spec.what} did not stop within the grace period: SIGKILL`);
          this.child.kill('SIGKILL');
        }
      }, this.spec.graceMs ?? 10_000);
      this.killTimer.unref?.();
    }
    return this.done;
  }
}

function quoteForLog(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
