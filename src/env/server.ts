// The environment server: the search tool and the graders of src/core as JSON endpoints on loopback,
// behind a per-run bearer token, with a body limit, a per-request timeout and optional fault injection.
// The contract is documented in docs/env-server.md; `coa env serve` (src/cli/env.ts) wraps startEnvServer.
// startEnvServer checks the options and opens what the endpoints answer from (the index, its worker threads, the OTC
// states, tool health); the endpoints are the route table (routes.ts); EnvHttpServer is the server object that
// takes each request through authentication, its route, its body, faults and timeout to its answer.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import type { DialectName } from '../core/dialects';
import { OtcStates } from './otcStates';
import { Retriever, type OpenInfo, type OpenOptions } from './retriever';
import {
  BodyBudget,
  type BodyLease,
  HttpError,
  parseJson,
  readBody,
  RequestBody,
  sendError,
  sendJson,
  sendJsonParts,
} from './http';
import { DEFAULT_OTC_MAX_BYTES } from './otcStore';
import { SearchPool } from './search-pool';
import { makeRandom } from './random';
import { authenticate, routePath } from './retrieve';
import { ToolHealth } from './toolHealth';
import { envRoutes, findRoute, type HandlerContext, type Reply, type Route, type RouteDeps } from './routes';
import { CorpusError } from './corpus';

export interface EnvServerOptions extends OpenOptions {
  corpus: string;
  /** 0 (default) picks a free port. The host is always 127.0.0.1. */
  port?: number;
  dialect?: DialectName;
  /** Bearer token; default: 32 random bytes, base64url. */
  token?: string;
  /** Probability that a tool or grade call fails with 503 `injected_fault`. */
  faultRate?: number;
  /** Delay added to every tool and grade call before it runs. */
  latencyMs?: number;
  /** Per-request limit; past it the request is answered 504 `timeout`. Default 30 s. */
  timeoutMs?: number;
  /** Request body limit; larger bodies get 413. Default 32 MiB. */
  maxBodyBytes?: number;
  /**
   * Bytes of large bodies (over 64 KiB) held at once across requests; past it a large body waits unread for its turn.
   * Default 64 MiB; never less than maxBodyBytes.
   */
  maxBodyBytesInFlight?: number;
  /** Seed for fault injection (reproducible drills); default: unseeded. */
  faultSeed?: number;
  /** OTC-GRPO states kept at once (least recently used evicted past it); default 256. */
  otcMaxRuns?: number;
  /** Estimated memory of all OTC-GRPO states together (least recently used evicted past it); default 256 MiB. */
  otcMaxBytes?: number;
  /** Largest answer; a request whose answer would be larger gets 400 `reply_too_large`. Default 64 MiB. */
  maxReplyBytes?: number;
  /** An OTC-GRPO state unused this long is dropped; default 6 h. */
  otcIdleMs?: number;
  /** Worker threads for search and grade work (they share the index); default: one per CPU core. */
  workers?: number;
}

export interface EnvServer {
  url: string;
  port: number;
  token: string;
  index: OpenInfo;
  /** Counters since start (also in /v1/health). */
  stats(): Record<string, number>;
  /** Requests being answered, client connections open, and when the last request started or ended (ms epoch). */
  activity(): { inFlight: number; connections: number; lastRequestAt: number };
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
/** On a stop, how long a connection with no request being worked on may stay (a keep-alive, an upload) before it is closed. */
const STOP_GRACE_MS = 2_000;
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_BODY_BYTES_IN_FLIGHT = 64 * 1024 * 1024;
export async function startEnvServer(opts: EnvServerOptions): Promise<EnvServer> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const bodyBudget = new BodyBudget(Math.max(opts.maxBodyBytesInFlight ?? DEFAULT_MAX_BODY_BYTES_IN_FLIGHT, maxBody));
  const maxReply = opts.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
  const faultRate = opts.faultRate ?? 0;
  const latencyMs = opts.latencyMs ?? 0;
  const defaultDialect: DialectName = opts.dialect ?? 'coa';
  if (!(faultRate >= 0 && faultRate <= 1)) throw new Error(`fault rate must be in [0, 1], got ${faultRate}`);
  if (!(latencyMs >= 0)) throw new Error(`latency must be >= 0 ms, got ${latencyMs}`);
  if (!(timeoutMs > 0)) throw new Error(`timeout must be > 0 ms, got ${timeoutMs}`);
  if (!(maxBody > 0)) throw new Error(`max body bytes must be > 0, got ${maxBody}`);
  if (!(maxReply > 0)) throw new Error(`max reply bytes must be > 0, got ${maxReply}`);
  const token = opts.token ?? randomBytes(32).toString('hex');
  if (!/^[\x21-\x7e]+$/.test(token)) throw new Error('token must be printable ASCII without spaces');

  const retriever = await Retriever.open(opts.corpus, opts);
  if (retriever.passages === 0) {
    // Every search would answer nothing and RL would train on empty observations: refuse to start instead.
    retriever.close();
    throw new CorpusError(
      `${opts.corpus}: no valid passages (each line must be {"id": …, "contents": "…"}; malformed lines are reported as bad_line events)`,
    );
  }
  // Search and grade work runs in worker threads sharing the index, never on this event loop (health stays prompt).
  const pool = new SearchPool(retriever, opts.workers);
  // Per-run OTC-GRPO states, in their own thread, bounded by runs, bytes and idleness (otcStates.ts, otc-worker.ts).
  const otcMaxBytes = opts.otcMaxBytes ?? DEFAULT_OTC_MAX_BYTES;
  const otc = new OtcStates({ maxRuns: opts.otcMaxRuns, maxBytes: otcMaxBytes, idleMs: opts.otcIdleMs });
  const toolHealth = new ToolHealth(); // per-caller calls, failures, empty results, latency; bounded (src/env/toolHealth.ts)
  const stats: Record<string, number> = {
    requests: 0,
    ok: 0,
    client_errors: 0,
    server_errors: 0,
    injected_faults: 0,
    timeouts: 0,
    queries: 0,
    graded_records: 0,
  };
  const routes = envRoutes({
    retriever,
    pool,
    otc,
    toolHealth,
    bodyBudget,
    stats,
    started: Date.now(),
    defaultDialect,
    maxReply,
    otcMaxBytes,
  });
  const server = new EnvHttpServer(
    routes,
    { token, timeoutMs, maxBody, faultRate, latencyMs, random: makeRandom(opts.faultSeed) },
    { retriever, pool, otc, toolHealth, bodyBudget, stats },
  );
  await server.listen(opts.port ?? 0);
  return server.api();
}

/** What a request is checked against on its way to its route. */
interface RequestRules {
  token: string;
  timeoutMs: number;
  maxBody: number;
  faultRate: number;
  latencyMs: number;
  /** Draws for fault injection (seeded: a drill can be replayed). */
  random: () => number;
}

/** What the server owns and closes, and counts into. */
type ServerParts = Pick<RouteDeps, 'retriever' | 'pool' | 'otc' | 'toolHealth' | 'bodyBudget' | 'stats'>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * The server object: the HTTP server on 127.0.0.1, each request taken through authentication, its route, its body
 * (within the size limit and the budget of large bodies held at once), injected latency and faults, and a timeout, to
 * its answer or error; the counters of requests, connections and outcomes; listening and closing.
 */
class EnvHttpServer {
  private readonly server: Server;
  private inFlight = 0;
  /** Requests not yet answered: a stop finishes those received whole (close()). */
  private readonly unanswered = new Set<IncomingMessage>();
  private readonly sockets = new Set<Socket>();
  private connections = 0;
  private lastRequestAt = Date.now();
  private closing: Promise<void> | null = null;
  private port = 0;

  constructor(
    private readonly routes: readonly Route[],
    private readonly rules: RequestRules,
    private readonly parts: ServerParts,
  ) {
    this.server = createServer((req, res) => this.respond(req, res));
    this.server.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.server.keepAliveTimeout = 5_000;
    this.server.on('connection', (socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.once('close', () => (this.connections--, this.sockets.delete(socket)));
    });
  }

  /** Listens on 127.0.0.1 (`port` 0: a free one); a port in use closes everything it holds and throws. */
  async listen(port: number): Promise<void> {
    const { pool, otc, retriever } = this.parts;
    try {
      await new Promise<void>((resolve, reject) => {
        this.server.once('error', reject);
        // A deep backlog: trainers open hundreds of connections at once.
        this.server.listen({ host: '127.0.0.1', port, backlog: 4096 }, () => {
          this.server.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      // A port in use: nothing may keep the process up (the CLI reports the error and exits).
      await Promise.allSettled([pool.close(), otc.close()]);
      retriever.close();
      throw e;
    }
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** The running server as its users see it. */
  api(): EnvServer {
    const { port, rules, parts } = this;
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      token: rules.token,
      index: parts.retriever.info,
      stats: () => ({ ...parts.stats }),
      activity: () => ({ inFlight: this.inFlight, connections: this.connections, lastRequestAt: this.lastRequestAt }),
      close: () => this.close(),
    };
  }

  close(): Promise<void> {
    const { server } = this;
    const { pool, otc, retriever } = this.parts;
    this.closing ??= new Promise<void>((resolve) => {
      // Requests received whole are finished, however long the work takes on a loaded machine (each is answered by
      // the timeout at the latest): a fixed grace for them dropped searches in flight when a stop signal came under
      // load. Idle keep-alive sockets go now; after a short grace, so do sockets with nothing being worked on (idle
      // again after an answer, or a body still arriving: an upload that trickles cannot hold the stop); past the
      // timeout and that grace, everything.
      const sweep = () => {
        const working = new Set([...this.unanswered].filter((r) => r.complete).map((r) => r.socket));
        for (const socket of this.sockets) if (!working.has(socket)) socket.destroy();
      };
      let sweeper: NodeJS.Timeout | undefined;
      const grace = setTimeout(() => {
        sweep();
        sweeper = setInterval(sweep, 50);
      }, STOP_GRACE_MS);
      const force = setTimeout(() => server.closeAllConnections(), this.rules.timeoutMs + STOP_GRACE_MS);
      grace.unref();
      force.unref();
      server.close(() => {
        clearTimeout(grace);
        clearInterval(sweeper);
        clearTimeout(force);
        void Promise.allSettled([pool.close(), otc.close()]).finally(() => {
          retriever.close();
          resolve();
        });
      });
      server.closeIdleConnections();
    });
    return this.closing;
  }

  /** A request from its start to its answer: counted, timed out, its body's budget held while it or its work runs. */
  private respond(req: IncomingMessage, res: ServerResponse): void {
    const { stats, toolHealth, bodyBudget, pool } = this.parts;
    const { timeoutMs } = this.rules;
    stats.requests++;
    this.inFlight++;
    this.unanswered.add(req);
    this.lastRequestAt = Date.now();
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.inFlight--;
      this.unanswered.delete(req);
      this.lastRequestAt = Date.now();
    };
    res.once('finish', end);
    res.once('close', end);
    const toolDone = toolHealth.start(routePath(req.url));
    let timer: NodeJS.Timeout | undefined;
    const abort = new AbortController();
    // The large body's bytes are held until the request is answered and no worker thread works on it any more: a
    // timed-out parse goes on until its thread can exit (a native JSON.parse is not interrupted), holding its memory,
    // so abandoned work counts against the budget as running work does.
    const lease = bodyBudget.lease(abort.signal);
    let answered = false;
    let working = 0;
    const releaseIfIdle = () => answered && working === 0 && lease.release();
    res.once('close', () => ((answered = true), releaseIfIdle()));
    const run: HandlerContext['run'] = (task, opts = {}) => {
      working++;
      return pool.run(task, { signal: abort.signal, ...opts, onDone: () => (working--, releaseIfIdle()) });
    };
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        stats.timeouts++;
        const err = new HttpError('timeout', `request took longer than ${timeoutMs} ms`, undefined, {
          connection: 'close',
        });
        reject(err);
        abort.abort(err); // abandons its worker-thread work (the thread is replaced)
      }, timeoutMs);
      timer.unref();
    });
    Promise.race([this.handle(req, res, abort.signal, lease, run), timeout])
      .then(({ status, body, parts, toolCounts }) => {
        stats.ok++;
        toolDone?.(true, body, undefined, toolCounts);
        if (parts !== undefined) sendJsonParts(res, status ?? 200, parts);
        else sendJson(res, status ?? 200, body);
      })
      .catch((e: unknown) => {
        const err =
          e instanceof HttpError
            ? e
            : new HttpError('internal', `internal error: ${(e as Error)?.message ?? String(e)}`);
        if (err.code !== 'unauthorized') toolDone?.(false, null, `${err.code}: ${err.message}`);
        if (err.status >= 500) stats.server_errors++;
        else stats.client_errors++;
        if (err.status === 500)
          process.stderr.write(
            `${JSON.stringify({ event: 'internal_error', message: err.message, stack: (e as Error)?.stack })}\n`,
          );
        // Answered before its body was read (401 before anything else, 404, 405, 413, a timeout): the body is never
        // read — the connection closes after the answer. Keeping it open would make Node read and discard the rest
        // (30 MB each for anyone without the token, /v1/health stalling meanwhile).
        const unread = !req.complete;
        sendError(
          res,
          unread && err.headers.connection !== 'close'
            ? new HttpError(err.code, err.message, err.path, { ...err.headers, connection: 'close' })
            : err,
        );
        if (unread || err.headers.connection === 'close') res.on('finish', () => req.socket.destroySoon?.());
      })
      .finally(() => clearTimeout(timer));
  }

  /** Authentication, the route, the body, then injected latency and faults, and the route's handler. */
  private async handle(
    req: IncomingMessage,
    res: ServerResponse,
    signal: AbortSignal,
    lease: BodyLease,
    run: HandlerContext['run'],
  ): Promise<Reply> {
    const { token, maxBody, latencyMs, faultRate, random } = this.rules;
    const path = authenticate(req, token); // Authorization: Bearer, or /t/<token>/… for clients that only take a URL
    const method = req.method ?? 'GET';
    const { route, handler, params } = findRoute(this.routes, path, method);
    const raw = method === 'GET' ? RequestBody.EMPTY : await readBody(req, maxBody, lease);
    if (route.faulty) {
      if (latencyMs > 0) await sleep(latencyMs);
      if (faultRate > 0 && random() < faultRate) {
        this.parts.stats.injected_faults++;
        throw new HttpError('injected_fault', `injected fault (fault rate ${faultRate})`);
      }
    }
    if (res.headersSent) return { body: null }; // timed out meanwhile: do no work for nobody
    return handler(req, async () => parseJson(raw.bytes), params, { raw, signal, run });
  }
}
