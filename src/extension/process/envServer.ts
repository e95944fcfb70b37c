// The environment server for one run: `node dist/cli.js env serve` on 127.0.0.1 (port 0 = a free port) with a
// per-run random token (in the child's environment, COA_ENV_TOKEN: never on its command line, which every local
// user can read with ps), ready once it printed its `listening` line and answered GET /v1/health; stopped with the
// run. No vscode import (unit-tested with the real server).
import { randomBytes } from 'node:crypto';
import { ManagedProcess, type LogSink, type ProcessResult } from './manager';

export interface EnvServerOptions {
  /** Node executable (in VS Code: process.execPath with ELECTRON_RUN_AS_NODE=1). */
  node: string;
  /** The CoA Studio CLI (dist/cli.js). */
  cli: string;
  corpus: string;
  dialect?: string;
  /** 0 (default): any free port. */
  port?: number;
  log: LogSink;
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the index and the health check (default 60 s). */
  startupTimeoutMs?: number;
}

export interface RunningEnvServer {
  url: string;
  token: string;
  process: ManagedProcess;
  /** SIGTERM (the server closes its connections), SIGKILL after 5 s. */
  stop(): Promise<ProcessResult>;
}

export class EnvServerError extends Error {}

export async function startEnvServer(opts: EnvServerOptions): Promise<RunningEnvServer> {
  const token = randomBytes(24).toString('hex');
  const args = [opts.cli, 'env', 'serve', '--corpus', opts.corpus, '--port', String(opts.port ?? 0)];
  if (opts.dialect) args.push('--dialect', opts.dialect);
  args.push('--parent-pid', String(process.pid)); // a crashed extension host leaves no server behind
  let listening: { url: string; token: string } | undefined;
  let onListening: (() => void) | undefined;
  const proc = new ManagedProcess({
    what: 'environment server',
    command: opts.node,
    args,
    // glibc gives each of the server's worker threads a malloc arena of its own and, once a large block has been
    // freed, serves the next ones from its heaps, which it seldom gives back: a few failed 22 MB PUTs left hundreds of
    // MB resident for good. Two arenas and large blocks always mapped apart return it (a user's own values are kept;
    // the trainer starts the server alike, coa_trainer/env/client.py).
    env: {
      MALLOC_ARENA_MAX: '2',
      MALLOC_MMAP_THRESHOLD_: '131072',
      ...(opts.env ?? process.env),
      COA_ENV_TOKEN: token,
    },
    log: opts.log,
    secrets: [token],
    graceMs: 5_000,
    onJson: (value, line) => {
      if (value.event === 'listening' && typeof value.url === 'string') {
        listening = { url: value.url, token: String(value.token) };
        // The token is a secret: log the URL only.
        opts.log.info(`environment server listening on ${value.url}`);
        onListening?.();
      } else opts.log.info(`[environment server] ${line}`);
    },
  });
  const timeoutMs = opts.startupTimeoutMs ?? 60_000;
  const outcome = await new Promise<'listening' | 'exited' | 'timeout'>((resolve) => {
    if (listening) return resolve('listening');
    onListening = () => resolve('listening');
    void proc.done.then(() => resolve('exited'));
    setTimeout(() => resolve('timeout'), timeoutMs).unref();
  });
  if (outcome !== 'listening' || !listening) {
    const result = outcome === 'timeout' ? await proc.cancel() : await proc.done;
    throw new EnvServerError(
      outcome === 'timeout'
        ? `The environment server did not start within ${timeoutMs / 1000} s (indexing ${opts.corpus}).`
        : result.message || `The environment server exited before listening (code ${result.code}).`,
    );
  }
  const { url } = listening;
  try {
    await waitHealthy(url, token, timeoutMs);
  } catch (e) {
    await proc.cancel();
    throw new EnvServerError(
      `The environment server at ${url} did not answer its health check: ${(e as Error).message}`,
    );
  }
  return { url, token, process: proc, stop: () => proc.cancel() };
}

/** GET /v1/health with the bearer token until it says ok. */
export async function waitHealthy(url: string, token: string, timeoutMs: number): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(new URL('/v1/health', url), {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(5_000),
      });
      const body = (await res.json()) as { status?: string };
      if (res.ok && body.status === 'ok') return body;
      last = new Error(`HTTP ${res.status}`);
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw last instanceof Error ? last : new Error('timeout');
}
