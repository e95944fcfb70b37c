// The environment server: the search tool and the graders of src/core as JSON endpoints on loopback,
// behind a per-run bearer token, with a body limit, a per-request timeout and optional fault injection.
// The contract is documented in docs/env-server.md; `coa env serve` (src/cli/env.ts) wraps startEnvServer.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { DialectName } from '../core/dialects';
import { OtcState } from '../core/rewards';
import { OtcStore } from './otcStore';
import { Retriever, type OpenInfo, type OpenOptions, type SearchHit } from './retriever';
import { HttpError, parseJson, readBody, sendError, sendJson, sendJsonText } from './http';
import { SearchPool, sliceBatch } from './search-pool';
import { joinSearchResponse } from './env-work';
import { describeIssues, RUN_ID, SearchRequestSchema, toolSpecs } from './protocol';
import { makeRandom } from './random';
import { authenticate, retrieve, RETRIEVE_PATH, routePath } from './retrieve';
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
  /** Seed for fault injection (reproducible drills); default: unseeded. */
  faultSeed?: number;
  /** OTC-GRPO states kept at once (least recently used evicted past it); default 256. */
  otcMaxRuns?: number;
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
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

/** `raw`: the request body bytes; `signal`: aborted when the request times out (work still running is then abandoned). */
type HandlerContext = { raw: Buffer; signal: AbortSignal };
/** A reply is `body` (serialised here) or `raw`, JSON text already serialised by a worker thread. */
/** `raw`: the answer already serialised (by a worker); `toolCounts`: queries and empty results of a tool answer, for tool health. */
type Reply = { status?: number; body: unknown; raw?: string; toolCounts?: { queries: number; empty: number } };
type Handler = (req: IncomingMessage, body: () => Promise<unknown>, params: Record<string, string>, ctx: HandlerContext) => Promise<Reply>;
/** Search bodies up to this size are parsed on the event loop (and their queries spread over the workers); larger ones are parsed by a worker. */
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
  const faultRate = opts.faultRate ?? 0;
  const latencyMs = opts.latencyMs ?? 0;
  const defaultDialect: DialectName = opts.dialect ?? 'coa';
  if (!(faultRate >= 0 && faultRate <= 1)) throw new Error(`fault rate must be in [0, 1], got ${faultRate}`);
  if (!(latencyMs >= 0)) throw new Error(`latency must be >= 0 ms, got ${latencyMs}`);
  if (!(timeoutMs > 0)) throw new Error(`timeout must be > 0 ms, got ${timeoutMs}`);
  if (!(maxBody > 0)) throw new Error(`max body bytes must be > 0, got ${maxBody}`);
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
  const runs = new OtcStore({ maxRuns: opts.otcMaxRuns, idleMs: opts.otcIdleMs });
  const toolHealth = new ToolHealth(); // per-caller calls, failures, empty results, latency (src/env/toolHealth.ts)
  const stats: Record<string, number> = {
    requests: 0, ok: 0, client_errors: 0, server_errors: 0, injected_faults: 0, timeouts: 0, queries: 0, graded_records: 0,
  };

  const validate = <T>(schema: z.ZodType<T>, value: unknown): T => {
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    const { message, path } = describeIssues(r.error);
    throw new HttpError('invalid_request', message, path);
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
        GET: async () => ({ body: { status: 'ok', passages: retriever.passages, uptime_s: (Date.now() - started) / 1000, stats: { ...stats, otc_runs: runs.size, otc_evictions: runs.evictions, workers: pool.size, workers_recycled: pool.recycled } } }),
      },
    },
    { pattern: /^\/v1\/tools$/, methods: { GET: async () => ({ body: { tools: toolSpecs(retriever.passages) } }) } },
    {
      pattern: /^\/v1\/tools\/search$/,
      faulty: true,
      methods: {
        POST: async (_req, body, _params, { raw, signal }) => {
          if (raw.length > INLINE_PARSE_BYTES) {
            const r = await pool.run<{ results: string; observations: string; queries: number; empty: number }>({ kind: 'search-raw', body: raw, dialect: defaultDialect }, { signal });
            stats.queries += r.queries;
            return { body: null, raw: joinSearchResponse([r]), toolCounts: { queries: r.queries, empty: r.empty } };
          }
          const q = validate(SearchRequestSchema, await body());
          const dialect = q.dialect ?? defaultDialect;
          // A batch is cut into contiguous slices spread over the workers; the answers are joined in order.
          const parts = await Promise.all(sliceBatch(q.queries, pool.size).map((queries) => pool.run<{ results: string; observations: string; empty: number }>({ kind: 'search', queries, topK: q.top_k, dialect }, { signal })));
          stats.queries += q.queries.length;
          const empty = parts.reduce((n, p) => n + p.empty, 0);
          return { body: null, raw: joinSearchResponse(parts), toolCounts: { queries: q.queries.length, empty } };
        },
      },
    },
    {
      pattern: /^\/v1\/grade$/,
      faulty: true,
      methods: {
        POST: async (_req, _body, _params, { raw, signal }) => {
          // Parsing, validation and scoring run in a worker; it asks for the run's OTC minima of its questions.
          let release: (() => void) | undefined;
          try {
            const g = await pool.run<{ json: string; records: number; run?: string; updates?: unknown }>(
              { kind: 'grade', body: raw },
              {
                signal,
                onState: async ({ run, questions }) => {
                  const unlock = await lockRun(run);
                  if (signal.aborted) {
                    unlock(); // timed out while waiting for the run's previous grade: never hold its lock
                    throw signal.reason;
                  }
                  release = unlock;
                  const state = runs.get(run);
                  const subset = new OtcState();
                  for (const q of questions) {
                    const n = state?.get(q);
                    if (n !== undefined) subset.observe(q, n);
                  }
                  return subset.toJSON();
                },
              },
            );
            if (g.run !== undefined) {
              const state = runs.get(g.run) ?? new OtcState();
              runs.set(g.run, state);
              if (g.updates) for (const [q, n] of Object.entries(OtcState.fromJSON(g.updates).toJSON().min_tool_calls)) state.observe(q, n);
            }
            stats.graded_records += g.records;
            return { body: null, raw: g.json };
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
        POST: async (_req, body, _params, { signal }) => {
          const searchBatch = async (queries: string[], topK: number) =>
            (await Promise.all(sliceBatch(queries, pool.size).map((part) => pool.run<SearchHit[][]>({ kind: 'search-hits', queries: part, topK }, { signal })))).flat();
          const { response, counts } = await retrieve(await body(), searchBatch);
          stats.queries += counts.queries;
          return { body: response, toolCounts: counts };
        },
      },
    },
    { pattern: /^\/v1\/tool-health$/, methods: { GET: async () => ({ body: toolHealth.snapshot() }) } },
    { pattern: /^\/v1\/alerts$/, methods: { POST: async (_req, body) => ({ body: alertsStep(await body()) }) } },
    {
      pattern: /^\/v1\/runs\/(?<run>[^/]+)\/otc-state$/,
      methods: {
        GET: async (_req, _body, params) => {
          const run = runParam(params);
          const state = runs.get(run);
          if (!state) throw new HttpError('unknown_run', `no OTC state for run ${JSON.stringify(run)}: it has not graded with "run" set nor been imported`);
          return { body: state.toJSON() };
        },
        PUT: async (_req, body, params) => {
          const run = runParam(params);
          const value = await body();
          let state: OtcState;
          try {
            state = OtcState.fromJSON(value);
          } catch (e) {
            if (e instanceof z.ZodError) {
              const { message, path } = describeIssues(e);
              throw new HttpError('invalid_request', message, path);
            }
            throw e;
          }
          runs.set(run, state);
          return { body: { run, questions: state.size } };
        },
        DELETE: async (_req, _body, params) => {
          const run = runParam(params);
          if (!runs.delete(run)) throw new HttpError('unknown_run', `no OTC state for run ${JSON.stringify(run)}`);
          return { body: { run, deleted: true } };
        },
      },
    },
  ];

  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

  async function handle(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<Reply> {
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
    const raw = method === 'GET' ? Buffer.alloc(0) : await readBody(req, maxBody);
    if (route.faulty) {
      if (latencyMs > 0) await sleep(latencyMs);
      if (faultRate > 0 && random() < faultRate) {
        stats.injected_faults++;
        throw new HttpError('injected_fault', `injected fault (fault rate ${faultRate})`);
      }
    }
    if (res.headersSent) return { body: null }; // timed out meanwhile: do no work for nobody
    return handler(req, async () => parseJson(raw), params, { raw, signal });
  }

  const server = createServer((req, res) => {
    stats.requests++;
    const toolDone = toolHealth.start(routePath(req.url));
    let timer: NodeJS.Timeout | undefined;
    const abort = new AbortController();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        stats.timeouts++;
        const err = new HttpError('timeout', `request took longer than ${timeoutMs} ms`, undefined, { connection: 'close' });
        reject(err);
        abort.abort(err); // abandons its worker-thread work (the thread is replaced)
      }, timeoutMs);
      timer.unref();
    });
    Promise.race([handle(req, res, abort.signal), timeout])
      .then(({ status, body, raw, toolCounts }) => {
        stats.ok++;
        toolDone?.(true, body, undefined, toolCounts);
        if (raw !== undefined) sendJsonText(res, status ?? 200, raw);
        else sendJson(res, status ?? 200, body);
      })
      .catch((e: unknown) => {
        const err = e instanceof HttpError ? e : new HttpError('internal', `internal error: ${(e as Error)?.message ?? String(e)}`);
        if (err.code !== 'unauthorized') toolDone?.(false, null, `${err.code}: ${err.message}`);
        if (err.status >= 500) stats.server_errors++;
        else stats.client_errors++;
        if (err.status === 500) process.stderr.write(`${JSON.stringify({ event: 'internal_error', message: err.message, stack: (e as Error)?.stack })}\n`);
        sendError(res, err);
        // A refused body may still be arriving: close instead of draining it.
        if (err.headers.connection === 'close') res.on('finish', () => req.socket.destroySoon?.());
      })
      .finally(() => clearTimeout(timer));
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A deep backlog: trainers open hundreds of connections at once.
    server.listen({ host: '127.0.0.1', port: opts.port ?? 0, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    index: retriever.info,
    stats: () => ({ ...stats }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Finish requests in flight, drop idle keep-alive sockets now, force the rest after a grace period.
        const force = setTimeout(() => server.closeAllConnections(), 2_000);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          void pool.close().finally(() => {
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
