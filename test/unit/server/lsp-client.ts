// A minimal LSP client over stdio for the tests: spawns `node dist/server.js --stdio`, frames JSON-RPC messages,
// answers the server's own requests (workspace/configuration, client/registerCapability) and records notifications.
import { ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '../../..');
export const SERVER = join(ROOT, 'dist/server.js');

/** Build dist/server.js if it is missing or older than a server source file. */
export function ensureBuilt(): void {
  const src = join(ROOT, 'src/server');
  const newest = Math.max(
    ...require('node:fs')
      .readdirSync(src)
      .map((f: string) => statSync(join(src, f)).mtimeMs),
  );
  if (existsSync(SERVER) && statSync(SERVER).mtimeMs >= newest) return;
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
}

interface Message {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  params?: any;
  result?: any;
  error?: { code: number; message: string };
}

export class LspClient {
  readonly proc: ChildProcessWithoutNullStreams;
  readonly notifications: Message[] = [];
  /** Requests the server sent us, by method. */
  readonly serverRequests: Message[] = [];
  stderr = '';
  private buf = Buffer.alloc(0);
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private waiters: (() => void)[] = [];
  exited: number | null | undefined = undefined;

  /** `server`: another build's dist/server.js (the reliability bench runs an older checkout's too). */
  constructor(
    public settings: unknown = {},
    server = SERVER,
  ) {
    this.proc = spawn(process.execPath, [server, '--stdio'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    this.proc.stderr.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.proc.on('exit', (code) => {
      this.exited = code;
      for (const p of this.pending.values()) p.reject(new Error(`server exited (${code}): ${this.stderr}`));
      this.wake();
    });
    this.proc.stdin.on('error', () => {});
  }

  private onData(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    for (;;) {
      const headerEnd = this.buf.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(this.buf.subarray(0, headerEnd).toString())![1]);
      if (this.buf.length < headerEnd + 4 + length) return;
      const body = this.buf.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8');
      this.buf = this.buf.subarray(headerEnd + 4 + length);
      this.dispatch(JSON.parse(body) as Message);
    }
  }

  private dispatch(m: Message): void {
    if (m.method && m.id !== undefined) {
      this.serverRequests.push(m);
      let result: unknown = null;
      if (m.method === 'workspace/configuration')
        result = m.params.items.map((it: { section?: string }) => (it.section === 'coaStudio' ? this.settings : null));
      this.write({ jsonrpc: '2.0', id: m.id, result });
    } else if (m.method) {
      this.notifications.push(m);
    } else if (typeof m.id === 'number') {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error) p?.reject(new Error(`${m.error.code}: ${m.error.message}`));
      else p?.resolve(m.result);
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  write(m: Message): void {
    const body = Buffer.from(JSON.stringify(m), 'utf8');
    this.proc.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    this.proc.stdin.write(body);
  }

  request<T = any>(method: string, params: unknown, timeoutMs = 20_000): Promise<T> {
    const id = this.nextId++;
    this.write({ jsonrpc: '2.0', id, method, params });
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method}: no answer in ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
    });
  }

  notify(method: string, params: unknown): void {
    this.write({ jsonrpc: '2.0', method, params });
  }

  /** Wait until a notification satisfies `pred` (checking those already received from index `from`). */
  async waitFor(pred: (m: Message) => boolean, timeoutMs = 20_000, from = 0): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.notifications.slice(from).find(pred);
      if (hit) return hit;
      if (this.exited !== undefined) throw new Error(`server exited (${this.exited}): ${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for a notification; got ${this.notifications.map((n) => n.method).join(', ')}`,
        );
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  /** The next publishDiagnostics for `uri` received after notification index `from`. */
  diagnostics(uri: string, from: number): Promise<Message> {
    return this.waitFor((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === uri, 20_000, from);
  }

  async initialize(
    capabilities: unknown = {
      workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
    },
  ): Promise<any> {
    const result = await this.request('initialize', { processId: process.pid, rootUri: null, capabilities });
    this.notify('initialized', {});
    return result;
  }

  async shutdown(): Promise<void> {
    if (this.exited === undefined) {
      await this.request('shutdown', null, 5000).catch(() => {});
      this.notify('exit', null);
      await new Promise((r) => (this.exited !== undefined ? r(null) : this.proc.once('exit', r)));
    }
  }
}
