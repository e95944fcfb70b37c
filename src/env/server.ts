// The environment server: the search tool and the graders of src/core as JSON endpoints on loopback,
// behind a per-run bearer token, with a body limit, a per-request timeout and optional fault injection.
// The contract is documented in docs/env-server.md; `coa env serve` (src/cli/env.ts) wraps startEnvServer.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { DialectName } from '../core/dialects';
import { OtcStates } from './otcStates';
import { Retriever, type OpenInfo, type OpenOptions } from './retriever';
import { BodyBudget, type BodyLease, HttpError, parseJson, readBody, RequestBody, sendError, sendJson, sendJsonParts } from './http';
import type { CheckedState } from './otcBody';
import type { Task } from './search-worker';
import type { StateRequest } from './env-work';
import { DEFAULT_OTC_MAX_BYTES } from './otcStore';
import { SearchPool, sliceBatch } from './search-pool';
import { parseRetrieveRequest, replyTooLarge, retrieveResponseParts, searchResponseParts, validateRequest } from './env-work';
import { RUN_ID, SearchRequestSchema, toolSpecs } from './protocol';
import { makeRandom } from './random';
import { authenticate, RETRIEVE_PATH, routePath } from './retrieve';
import { ToolHealth } from './toolHealth';
import { alertsStep } from './alertsRoute';
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
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_BODY_BYTES_IN_FLIGHT = 64 * 1024 * 1024;
/** How long /v1/health waits for the OTC state thread's answers still pending, so its counts are current. */
const HEALTH_STATE_WAIT_MS = 25;

/** `raw`: the request body bytes; `signal`: aborted when the request times out (work still running is then abandoned). */
type HandlerContext = { raw: RequestBody; signal: AbortSignal; run: <T>(task: Task, opts?: { signal?: AbortSignal; transfer?: ArrayBuffer[]; onState?: (req: StateRequest) => Promise<unknown> }) => Promise<T> };
/**
 * A reply is `body` (small, serialised here) or `parts`, JSON already serialised by a worker thread (http.ts
 * sendJsonParts); `toolCounts`: queries and empty results of a tool answer, for tool health.
 */
type Reply = { status?: number; body: unknown; parts?: (string | Uint8Array)[]; toolCounts?: { queries: number; empty: number } };
type Handler = (req: IncomingMessage, body: () => Promise<unknown>, params: Record<string, string>, ctx: HandlerContext) => Promise<Reply>;
/**
 * Bodies up to this size are parsed on the event loop (under a millisecond; a search's queries are then spread over
 * the workers); larger ones go whole to a worker thread, which parses, validates, answers and serialises.
 */
const INLINE_PARSE_BYTES = 64 * 1024;
interface Route {
  pattern: RegExp;
  methods: Record<string, Handler>;
  /** Tool and grade calls get the injected latency and faults; health, tool listing and state do not. */
  faulty?: boolean;
}

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
  const random = makeRandom(opts.faultSeed);

  const retriever = await Retriever.open(opts.corpus, opts);
  if (retriever.passages === 0) {
    // Every search would answer nothing and RL would train on empty observations: refuse to start instead.
    retriever.close();
    throw new CorpusError(`${opts.corpus}: no valid passages (each line must be {"id": …, "contents": "…"}; malformed lines are reported as bad_line events)`);
  }
  // Search and grade work runs in worker threads sharing the index, never on this event loop (health stays prompt).
  const pool = new SearchPool(retriever, opts.workers);
  // Grades of one run are serialised from the moment they read its OTC state, so each sees the previous one's updates.
  const runLocks = new Map<string, Promise<void>>();
  const lockRun = async (run: string): Promise<() => void> => {
    const prev = runLocks.get(run) ?? Promise.resolve();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const mine = prev.then(() => gate);
    runLocks.set(run, mine);
    await prev;
    return () => {
      release();
      if (runLocks.get(run) === mine) runLocks.delete(run);
    };
  };
  const started = Date.now();
  // Per-run OTC-GRPO states, in their own thread, bounded by runs, bytes and idleness (otcStates.ts, otc-worker.ts).
  const otcMaxBytes = opts.otcMaxBytes ?? DEFAULT_OTC_MAX_BYTES;
  const otc = new OtcStates({ maxRuns: opts.otcMaxRuns, maxBytes: otcMaxBytes, idleMs: opts.otcIdleMs });
  const toolHealth = new ToolHealth(); // per-caller calls, failures, empty results, latency; bounded (src/env/toolHealth.ts)
  const stats: Record<string, number> = {
    requests: 0, ok: 0, client_errors: 0, server_errors: 0, injected_faults: 0, timeouts: 0, queries: 0, graded_records: 0,
  };

  /** Answer parts' total size against --max-reply-bytes (each worker checked its own part already). */
  const checkReply = (parts: { byteLength: number }[]): void => {
    if (parts.reduce((n, p) => n + p.byteLength, 0) > maxReply) throw replyTooLarge(maxReply);
  };

  const runParam = (params: Record<string, string>): string => {
    let run: string;
    try {
      run = decodeURIComponent(params.run);
    } catch {
      throw new HttpError('invalid_request', `invalid run id: ${JSON.stringify(params.run)} is not valid percent-encoding`, 'run');
    }
    if (!RUN_ID.test(run)) throw new HttpError('invalid_request', `invalid run id ${JSON.stringify(run)}`, 'run');
    return run;
  };

  const routes: Route[] = [
    {
      pattern: /^\/v1\/health$/,
      methods: {
        GET: async () => {
          await otc.settled(HEALTH_STATE_WAIT_MS);
          const o = otc.stats;
          return { body: { status: 'ok', passages: retriever.passages, uptime_s: (Date.now() - started) / 1000, stats: { ...stats, otc_runs: o.runs, otc_evictions: o.evictions, otc_bytes: o.bytes, tool_health_bytes: toolHealth.memoryBytes, workers: pool.size, workers_recycled: pool.recycled, workers_renewed: pool.renewed, body_bytes_held: bodyBudget.held } } };
        },
      },
    },
    { pattern: /^\/v1\/tools$/, methods: { GET: async () => ({ body: { tools: toolSpecs(retriever.passages) } }) } },
    {
      pattern: /^\/v1\/tools\/search$/,
      faulty: true,
      methods: {
        POST: async (_req, body, _params, { raw, signal, run }) => {
          type Part = { results: Uint8Array; observations: Uint8Array; empty: number };
          if (raw.length > INLINE_PARSE_BYTES) {
            const { parts: bytes, transfer } = raw.movable();
            const r = await run<Part & { queries: number }>({ kind: 'search-raw', body: bytes, dialect: defaultDialect, maxBytes: maxReply }, { signal, transfer });
            checkReply([r.results, r.observations]);
            stats.queries += r.queries;
            return { body: null, parts: searchResponseParts([r]), toolCounts: { queries: r.queries, empty: r.empty } };
          }
          const q = validateRequest(SearchRequestSchema, await body());
          const dialect = q.dialect ?? defaultDialect;
          // A batch is cut into contiguous slices spread over the workers; the answers are joined in order.
          const parts = await Promise.all(sliceBatch(q.queries, pool.size).map((queries) => run<Part>({ kind: 'search', queries, topK: q.top_k, dialect, maxBytes: maxReply }, { signal })));
          checkReply(parts.flatMap((p) => [p.results, p.observations]));
          stats.queries += q.queries.length;
          const empty = parts.reduce((n, p) => n + p.empty, 0);
          return { body: null, parts: searchResponseParts(parts), toolCounts: { queries: q.queries.length, empty } };
        },
      },
    },
    {
      pattern: /^\/v1\/grade$/,
      faulty: true,
      methods: {
        POST: async (_req, _body, _params, { raw, signal, run }) => {
          // Parsing, validation and scoring run in a worker; it asks for the run's OTC minima of its questions.
          let release: (() => void) | undefined;
          try {
            const { parts: bytes, transfer } = raw.movable();
            const g = await run<{ json: Uint8Array; records: number; run?: string; updates?: Record<string, number> }>(
              { kind: 'grade', body: bytes },
              {
                signal,
                transfer,
                onState: async ({ run, questions }) => {
                  const unlock = await lockRun(run);
                  if (signal.aborted) {
                    unlock(); // timed out while waiting for the run's previous grade: never hold its lock
                    throw signal.reason;
                  }
                  release = unlock;
                  return { version: 1, min_tool_calls: await otc.subset(run, questions) };
                },
              },
            );
            // Decided here, synchronously: a grade that timed out never updates its run's state; one that did not
            // has its update posted before any later request of the run can read the state.
            if (signal.aborted) throw signal.reason;
            if (g.run !== undefined) otc.observe(g.run, g.updates ?? {});
            stats.graded_records += g.records;
            return { body: null, parts: [g.json] };
          } finally {
            release?.();
          }
        },
      },
    },
    // Search-R1's / verl's retrieval protocol (src/env/retrieve.ts), tool health, and the core's alerts.
    {
      pattern: RETRIEVE_PATH,
      faulty: true,
      methods: {
        POST: async (_req, body, _params, { raw, signal, run }) => {
          type Part = { result: Uint8Array; empty: number };
          let parts: Part[];
          let queries: number;
          if (raw.length > INLINE_PARSE_BYTES) {
            const { parts: bytes, transfer } = raw.movable();
            const r = await run<Part & { queries: number }>({ kind: 'retrieve-raw', body: bytes, maxBytes: maxReply }, { signal, transfer });
            parts = [r];
            queries = r.queries;
          } else {
            const r = parseRetrieveRequest(await body());
            parts = await Promise.all(sliceBatch(r.queries, pool.size).map((part) => run<Part>({ kind: 'retrieve', queries: part, topK: r.k, returnScores: r.returnScores, maxBytes: maxReply }, { signal })));
            queries = r.queries.length;
          }
          checkReply(parts.map((p) => p.result));
          stats.queries += queries;
          return { body: null, parts: retrieveResponseParts(parts), toolCounts: { queries, empty: parts.reduce((n, p) => n + p.empty, 0) } };
        },
      },
    },
    { pattern: /^\/v1\/tool-health$/, methods: { GET: async () => ({ body: toolHealth.snapshot() }) } },
    {
      pattern: /^\/v1\/alerts$/,
      methods: {
        POST: async (_req, body, _params, { raw, signal, run }) => {
          if (raw.length <= INLINE_PARSE_BYTES) return { body: alertsStep(await body()) };
          const { parts: bytes, transfer } = raw.movable();
          return { body: null, parts: [await run<Uint8Array>({ kind: 'alerts', body: bytes, maxBytes: maxReply }, { signal, transfer })] };
        },
      },
    },
    {
      // The core's reward-hacking scanners over one step's rollouts (format checks per record: a worker's job).
      pattern: /^\/v1\/scan$/,
      methods: {
        POST: async (_req, _body, _params, { raw, signal, run }) => {
          const { parts: bytes, transfer } = raw.movable();
          return { body: null, parts: [await run<Uint8Array>({ kind: 'scan', body: bytes, maxBytes: maxReply }, { signal, transfer })] };
        },
      },
    },
    {
      pattern: /^\/v1\/runs\/(?<run>[^/]+)\/otc-state$/,
      methods: {
        GET: async (_req, _body, params) => {
          const run = runParam(params);
          const state = await otc.get(run);
          if (!state) throw new HttpError('unknown_run', `no OTC state for run ${JSON.stringify(run)}: it has not graded with "run" set nor been imported`);
          return { body: null, parts: [state] };
        },
        // The body is parsed and checked in a search worker that is then replaced (otcBody.ts: its heap goes back to the
        // system), and kept only if the request has not timed out by then — decided here, synchronously, with the answer.
        PUT: async (_req, _body, params, { raw, signal, run: work }) => {
          const run = runParam(params);
          const { parts: bytes, transfer } = raw.movable();
          const checked = await work<CheckedState>({ kind: 'otc-state', body: bytes, maxBytes: otcMaxBytes }, { signal, transfer });
          if (signal.aborted) throw signal.reason;
          otc.set(run, checked);
          return { body: { run, questions: checked.questions } };
        },
        DELETE: async (_req, _body, params) => {
          const run = runParam(params);
          if (!(await otc.delete(run))) throw new HttpError('unknown_run', `no OTC state for run ${JSON.stringify(run)}`);
          return { body: { run, deleted: true } };
        },
      },
    },
  ];

  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

  async function handle(req: IncomingMessage, res: ServerResponse, signal: AbortSignal, lease: BodyLease, run: HandlerContext['run']): Promise<Reply> {
    const path = authenticate(req, token); // Authorization: Bearer, or /t/<token>/… for clients that only take a URL
    const route = routes.find((r) => r.pattern.test(path));
    if (!route) throw new HttpError('not_found', `no endpoint ${path}`);
    const method = req.method ?? 'GET';
    const handler = route.methods[method];
    if (!handler) {
      const allow = Object.keys(route.methods).join(', ');
      throw new HttpError('method_not_allowed', `${method} not allowed on ${path}; use ${allow}`, undefined, { allow });
    }
    const params = route.pattern.exec(path)?.groups ?? {};
    const raw = method === 'GET' ? RequestBody.EMPTY : await readBody(req, maxBody, lease);
    if (route.faulty) {
      if (latencyMs > 0) await sleep(latencyMs);
      if (faultRate > 0 && random() < faultRate) {
        stats.injected_faults++;
        throw new HttpError('injected_fault', `injected fault (fault rate ${faultRate})`);
      }
    }
    if (res.headersSent) return { body: null }; // timed out meanwhile: do no work for nobody
    return handler(req, async () => parseJson(raw.bytes), params, { raw, signal, run });
  }

  let inFlight = 0;
  let connections = 0;
  let lastRequestAt = Date.now();
  const server = createServer((req, res) => {
    stats.requests++;
    inFlight++;
    lastRequestAt = Date.now();
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      inFlight--;
      lastRequestAt = Date.now();
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
        const err = new HttpError('timeout', `request took longer than ${timeoutMs} ms`, undefined, { connection: 'close' });
        reject(err);
        abort.abort(err); // abandons its worker-thread work (the thread is replaced)
      }, timeoutMs);
      timer.unref();
    });
    Promise.race([handle(req, res, abort.signal, lease, run), timeout])
      .then(({ status, body, parts, toolCounts }) => {
        stats.ok++;
        toolDone?.(true, body, undefined, toolCounts);
        if (parts !== undefined) sendJsonParts(res, status ?? 200, parts);
        else sendJson(res, status ?? 200, body);
      })
      .catch((e: unknown) => {
        const err = e instanceof HttpError ? e : new HttpError('internal', `internal error: ${(e as Error)?.message ?? String(e)}`);
        if (err.code !== 'unauthorized') toolDone?.(false, null, `${err.code}: ${err.message}`);
        if (err.status >= 500) stats.server_errors++;
        else stats.client_errors++;
        if (err.status === 500) process.stderr.write(`${JSON.stringify({ event: 'internal_error', message: err.message, stack: (e as Error)?.stack })}\n`);
        // Answered before its body was read (401 before anything else, 404, 405, 413, a timeout): the body is never
        // read — the connection closes after the answer. Keeping it open would make Node read and discard the rest
        // (30 MB each for anyone without the token, /v1/health stalling meanwhile).
        const unread = !req.complete;
        sendError(res, unread && err.headers.connection !== 'close' ? new HttpError(err.code, err.message, err.path, { ...err.headers, connection: 'close' }) : err);
        if (unread || err.headers.connection === 'close') res.on('finish', () => req.socket.destroySoon?.());
      })
      .finally(() => clearTimeout(timer));
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  server.keepAliveTimeout = 5_000;
  server.on('connection', (socket) => {
    connections++;
    socket.once('close', () => connections--);
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // A deep backlog: trainers open hundreds of connections at once.
      server.listen({ host: '127.0.0.1', port: opts.port ?? 0, backlog: 4096 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    // A port in use: nothing may keep the process up (the CLI reports the error and exits).
    await Promise.allSettled([pool.close(), otc.close()]);
    retriever.close();
    throw e;
  }
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    index: retriever.info,
    stats: () => ({ ...stats }),
    activity: () => ({ inFlight, connections, lastRequestAt }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Finish requests in flight, drop idle keep-alive sockets now, force the rest after a grace period.
        const force = setTimeout(() => server.closeAllConnections(), 2_000);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          void Promise.allSettled([pool.close(), otc.close()]).finally(() => {
            retriever.close();
            resolve();
          });
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
