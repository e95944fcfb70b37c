// The environment server's endpoints, as one table: a path pattern and its methods, each handler answering from
// the request's body and context. The server object (server.ts) authenticates a request, finds its route here, reads
// its body within the budgets, injects the configured latency and faults, and times it out around the handler.
// The contract is documented in docs/env-server.md.
import type { IncomingMessage } from 'node:http';
import type { DialectName } from '../core/dialects';
import type { OtcStates } from './otcStates';
import type { Retriever } from './retriever';
import { type BodyBudget, HttpError, type RequestBody } from './http';
import type { CheckedState } from './otcBody';
import type { Task } from './search-worker';
import type { StateRequest } from './env-work';
import { type SearchPool, sliceBatch } from './search-pool';
import {
  parseRetrieveRequest,
  replyTooLarge,
  retrieveResponseParts,
  searchResponseParts,
  validateRequest,
} from './env-work';
import { RUN_ID, SearchRequestSchema, toolSpecs } from './protocol';
import { RETRIEVE_PATH } from './retrieve';
import type { ToolHealth } from './toolHealth';
import { alertsStep } from './alertsRoute';

/** How long /v1/health waits for the OTC state thread's answers still pending, so its counts are current. */
const HEALTH_STATE_WAIT_MS = 25;

/** Work for a search worker thread, on behalf of one request (its body budget is held while the work runs). */
export type RunWork = <T>(
  task: Task,
  opts?: { signal?: AbortSignal; transfer?: ArrayBuffer[]; onState?: (req: StateRequest) => Promise<unknown> },
) => Promise<T>;
/** `raw`: the request body bytes; `signal`: aborted when the request times out (work still running is then abandoned). */
export type HandlerContext = { raw: RequestBody; signal: AbortSignal; run: RunWork };
/**
 * A reply is `body` (small, serialised here) or `parts`, JSON already serialised by a worker thread (http.ts
 * sendJsonParts); `toolCounts`: queries and empty results of a tool answer, for tool health.
 */
export type Reply = {
  status?: number;
  body: unknown;
  parts?: (string | Uint8Array)[];
  toolCounts?: { queries: number; empty: number };
};
export type Handler = (
  req: IncomingMessage,
  body: () => Promise<unknown>,
  params: Record<string, string>,
  ctx: HandlerContext,
) => Promise<Reply>;
/**
 * Bodies up to this size are parsed on the event loop (under a millisecond; a search's queries are then spread over
 * the workers); larger ones go whole to a worker thread, which parses, validates, answers and serialises.
 */
export const INLINE_PARSE_BYTES = 64 * 1024;
export interface Route {
  pattern: RegExp;
  methods: Record<string, Handler>;
  /** Tool and grade calls get the injected latency and faults; health, tool listing and state do not. */
  faulty?: boolean;
}

/** What the endpoints answer from: the server's index, worker pool, OTC states, tool health, counters and limits. */
export interface RouteDeps {
  retriever: Retriever;
  pool: SearchPool;
  otc: OtcStates;
  toolHealth: ToolHealth;
  bodyBudget: BodyBudget;
  /** Counters since start (the server counts requests and outcomes; search and grade count queries and records). */
  stats: Record<string, number>;
  /** When the server started (ms epoch). */
  started: number;
  defaultDialect: DialectName;
  maxReply: number;
  otcMaxBytes: number;
}

/** The route table. */
export function envRoutes(d: RouteDeps): Route[] {
  const { retriever, pool, otc, toolHealth, bodyBudget, stats, started, defaultDialect, maxReply, otcMaxBytes } = d;
  const lockRun = runLocks();
  /** Answer parts' total size against --max-reply-bytes (each worker checked its own part already). */
  const checkReply = (parts: { byteLength: number }[]): void => {
    if (parts.reduce((n, p) => n + p.byteLength, 0) > maxReply) throw replyTooLarge(maxReply);
  };

  return [
    {
      pattern: /^\/v1\/health$/,
      methods: {
        GET: async () => {
          await otc.settled(HEALTH_STATE_WAIT_MS);
          const o = otc.stats;
          return {
            body: {
              status: 'ok',
              passages: retriever.passages,
              uptime_s: (Date.now() - started) / 1000,
              stats: {
                ...stats,
                otc_runs: o.runs,
                otc_evictions: o.evictions,
                otc_bytes: o.bytes,
                tool_health_bytes: toolHealth.memoryBytes,
                workers: pool.size,
                workers_recycled: pool.recycled,
                workers_renewed: pool.renewed,
                body_bytes_held: bodyBudget.held,
              },
            },
          };
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
            const r = await run<Part & { queries: number }>(
              { kind: 'search-raw', body: bytes, dialect: defaultDialect, maxBytes: maxReply },
              { signal, transfer },
            );
            checkReply([r.results, r.observations]);
            stats.queries += r.queries;
            return { body: null, parts: searchResponseParts([r]), toolCounts: { queries: r.queries, empty: r.empty } };
          }
          const q = validateRequest(SearchRequestSchema, await body());
          const dialect = q.dialect ?? defaultDialect;
          // A batch is cut into contiguous slices spread over the workers; the answers are joined in order.
          const parts = await Promise.all(
            sliceBatch(q.queries, pool.size).map((queries) =>
              run<Part>({ kind: 'search', queries, topK: q.top_k, dialect, maxBytes: maxReply }, { signal }),
            ),
          );
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
            const r = await run<Part & { queries: number }>(
              { kind: 'retrieve-raw', body: bytes, maxBytes: maxReply },
              { signal, transfer },
            );
            parts = [r];
            queries = r.queries;
          } else {
            const r = parseRetrieveRequest(await body());
            parts = await Promise.all(
              sliceBatch(r.queries, pool.size).map((part) =>
                run<Part>(
                  { kind: 'retrieve', queries: part, topK: r.k, returnScores: r.returnScores, maxBytes: maxReply },
                  { signal },
                ),
              ),
            );
            queries = r.queries.length;
          }
          checkReply(parts.map((p) => p.result));
          stats.queries += queries;
          return {
            body: null,
            parts: retrieveResponseParts(parts),
            toolCounts: { queries, empty: parts.reduce((n, p) => n + p.empty, 0) },
          };
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
          return {
            body: null,
            parts: [await run<Uint8Array>({ kind: 'alerts', body: bytes, maxBytes: maxReply }, { signal, transfer })],
          };
        },
      },
    },
    {
      // The core's reward-hacking scanners over one step's rollouts (format checks per record: a worker's job).
      pattern: /^\/v1\/scan$/,
      methods: {
        POST: async (_req, _body, _params, { raw, signal, run }) => {
          const { parts: bytes, transfer } = raw.movable();
          return {
            body: null,
            parts: [await run<Uint8Array>({ kind: 'scan', body: bytes, maxBytes: maxReply }, { signal, transfer })],
          };
        },
      },
    },
    {
      pattern: /^\/v1\/runs\/(?<run>[^/]+)\/otc-state$/,
      methods: {
        GET: async (_req, _body, params) => {
          const run = runParam(params);
          const state = await otc.get(run);
          if (!state)
            throw new HttpError(
              'unknown_run',
              `no OTC state for run ${JSON.stringify(run)}: it has not graded with "run" set nor been imported`,
            );
          return { body: null, parts: [state] };
        },
        // The body is parsed and checked in a search worker that is then replaced (otcBody.ts: its heap goes back to the
        // system), and kept only if the request has not timed out by then — decided here, synchronously, with the answer.
        PUT: async (_req, _body, params, { raw, signal, run: work }) => {
          const run = runParam(params);
          const { parts: bytes, transfer } = raw.movable();
          const checked = await work<CheckedState>(
            { kind: 'otc-state', body: bytes, maxBytes: otcMaxBytes },
            { signal, transfer },
          );
          if (signal.aborted) throw signal.reason;
          otc.set(run, checked);
          return { body: { run, questions: checked.questions } };
        },
        DELETE: async (_req, _body, params) => {
          const run = runParam(params);
          if (!(await otc.delete(run)))
            throw new HttpError('unknown_run', `no OTC state for run ${JSON.stringify(run)}`);
          return { body: { run, deleted: true } };
        },
      },
    },
  ];
}

/** The route and handler of a request: 404 for a path no route takes, 405 (with Allow) for a method it does not. */
export function findRoute(
  routes: readonly Route[],
  path: string,
  method: string,
): { route: Route; handler: Handler; params: Record<string, string> } {
  const route = routes.find((r) => r.pattern.test(path));
  if (!route) throw new HttpError('not_found', `no endpoint ${path}`);
  const handler = route.methods[method];
  if (!handler) {
    const allow = Object.keys(route.methods).join(', ');
    throw new HttpError('method_not_allowed', `${method} not allowed on ${path}; use ${allow}`, undefined, { allow });
  }
  return { route, handler, params: route.pattern.exec(path)?.groups ?? {} };
}

function runParam(params: Record<string, string>): string {
  let run: string;
  try {
    run = decodeURIComponent(params.run);
  } catch {
    throw new HttpError(
      'invalid_request',
      `invalid run id: ${JSON.stringify(params.run)} is not valid percent-encoding`,
      'run',
    );
  }
  if (!RUN_ID.test(run)) throw new HttpError('invalid_request', `invalid run id ${JSON.stringify(run)}`, 'run');
  return run;
}

/** Grades of one run are serialised from the moment they read its OTC state, so each sees the previous one's updates:
 * `lock(run)` resolves when the run's previous holder released it, to this holder's release. */
function runLocks(): (run: string) => Promise<() => void> {
  const locks = new Map<string, Promise<void>>();
  return async (run) => {
    const prev = locks.get(run) ?? Promise.resolve();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const mine = prev.then(() => gate);
    locks.set(run, mine);
    await prev;
    return () => {
      release();
      if (locks.get(run) === mine) locks.delete(run);
    };
  };
}
