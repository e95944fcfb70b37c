// Tool health per caller: how often each client of the search tool called, failed, got nothing back, and how long
// it waited (p50/p99 over its last LATENCY_WINDOW calls). verl's ToolAgentLoop discards the metrics its tools return
// and Search-R1's client keeps none, so a tool that silently fails or finds nothing is invisible in their logs; the
// server that answers sees every call. Exposed at GET /v1/tool-health (docs/env-server.md) and drawn by the live
// panel. A caller is named by the URL it posts to: /t/<token>/<caller>/retrieve, or "retrieve" / "search".
// Caller names come from URLs anyone with the token can invent, so the table is bounded by bytes (unbounded,
// 60k names cost 1,054 MB resident and a 12.7 MB reply): least recently seen callers go past TOOL_HEALTH_MAX_BYTES, each
// caller's latency ring grows only as it is used, and the reply lists the most recently seen REPORTED_CALLERS.
import { RUN_ID } from './protocol';
import type { CallerHealth, ToolHealthSnapshot } from '../core/toolHealth';

export const LATENCY_WINDOW = 2048;
/** Memory for the whole table (estimated: fixed fields, the name, the latency ring, the last error). */
export const TOOL_HEALTH_MAX_BYTES = 4 * 1024 * 1024;
/** Callers in one GET /v1/tool-health reply (the most recently seen; the rest are counted). */
export const REPORTED_CALLERS = 100;
const FIRST_RING = 16;
const CALLER_BYTES = 256;
const MAX_ERROR_CHARS = 300;

interface CallerState {
  calls: number;
  failures: number;
  queries: number;
  empty: number;
  latencies: Float64Array;
  /** Latencies recorded so far (the ring holds the last LATENCY_WINDOW). */
  recorded: number;
  lastError: string | null;
  lastCall: number | null;
}

/** The caller a tool path belongs to, or null for paths that are not tool calls (health, grading, state). */
export function toolCaller(path: string): string | null {
  if (path === '/v1/tools/search') return 'search';
  const m = /^\/(?:(?<caller>[^/]+)\/)?retrieve$/.exec(path);
  if (!m) return null;
  const caller = m.groups?.caller;
  return caller === undefined ? 'retrieve' : RUN_ID.test(caller) ? caller : null;
}

/** Queries without a passage in a search or retrieve answer body (both shapes of docs/env-server.md). */
export function emptyResults(body: unknown): { queries: number; empty: number } {
  const lists =
    body && typeof body === 'object'
      ? ((body as { result?: unknown }).result ?? (body as { results?: unknown }).results)
      : undefined;
  if (!Array.isArray(lists)) return { queries: 0, empty: 0 };
  return { queries: lists.length, empty: lists.filter((l) => Array.isArray(l) && l.length === 0).length };
}

function callerBytes(name: string, s: CallerState): number {
  return CALLER_BYTES + 2 * (name.length + (s.lastError?.length ?? 0)) + s.latencies.byteLength;
}

export class ToolHealth {
  /** Map order is recency order: a call moves its caller to the end, eviction takes from the front. */
  private readonly callers = new Map<string, CallerState>();
  private readonly started = Date.now();
  private bytes = 0;
  private evicted = 0;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly maxBytes = TOOL_HEALTH_MAX_BYTES,
  ) {}

  /** Estimated memory of the table (what the budget bounds). */
  get memoryBytes(): number {
    return this.bytes;
  }

  /** Starts timing a request; returns its completion callback, or undefined when the path is not a tool call. */
  start(
    path: string,
  ): ((ok: boolean, body: unknown, error?: string, counts?: { queries: number; empty: number }) => void) | undefined {
    const caller = toolCaller(path);
    if (caller === null) return undefined;
    const t0 = this.now();
    return (ok, body, error, counts) => this.record(caller, this.now() - t0, ok, body, error, counts);
  }

  /** `counts`: queries and empty results when the answer was serialised elsewhere (a worker); else read off `body`. */
  record(
    caller: string,
    ms: number,
    ok: boolean,
    body: unknown,
    error?: string,
    counts?: { queries: number; empty: number },
  ): void {
    let s = this.callers.get(caller);
    if (s) {
      this.callers.delete(caller);
      this.bytes -= callerBytes(caller, s);
    } else
      s = {
        calls: 0,
        failures: 0,
        queries: 0,
        empty: 0,
        latencies: new Float64Array(FIRST_RING),
        recorded: 0,
        lastError: null,
        lastCall: null,
      };
    this.callers.set(caller, s);
    s.calls++;
    s.lastCall = Date.now() / 1000;
    if (s.recorded === s.latencies.length && s.latencies.length < LATENCY_WINDOW) {
      const grown = new Float64Array(Math.min(LATENCY_WINDOW, 2 * s.latencies.length));
      grown.set(s.latencies);
      s.latencies = grown;
    }
    s.latencies[s.recorded++ % s.latencies.length] = ms;
    if (!ok) {
      s.failures++;
      s.lastError = (error ?? 'failed').slice(0, MAX_ERROR_CHARS);
    } else {
      const { queries, empty } = counts ?? emptyResults(body);
      s.queries += queries;
      s.empty += empty;
    }
    this.bytes += callerBytes(caller, s);
    for (const [name, old] of this.callers) {
      if (this.bytes <= this.maxBytes || name === caller) break;
      this.callers.delete(name);
      this.bytes -= callerBytes(name, old);
      this.evicted++;
    }
  }

  snapshot(): ToolHealthSnapshot {
    const callers: Record<string, CallerHealth> = {};
    const recent = [...this.callers].slice(-REPORTED_CALLERS);
    for (const [name, s] of recent.sort(([a], [b]) => a.localeCompare(b))) {
      const lat = Array.from(s.latencies.subarray(0, Math.min(s.recorded, s.latencies.length))).sort((a, b) => a - b);
      callers[name] = {
        calls: s.calls,
        failures: s.failures,
        queries: s.queries,
        empty_results: s.empty,
        latency_ms: { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) },
        last_error: s.lastError,
        last_call: s.lastCall,
      };
    }
    return {
      uptime_s: (Date.now() - this.started) / 1000,
      callers,
      callers_omitted: this.callers.size - recent.length,
      callers_evicted: this.evicted,
    };
  }
}

/** Nearest-rank quantile of sorted values (rounded to 0.01 ms), null when there are none. */
export function quantile(sorted: number[], q: number): number | null {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round(sorted[i] * 100) / 100;
}

/** GET /v1/tool-health of the server behind a retrieve URL users gave verl (`…/t/<token>/[caller/]retrieve`). */
export function toolHealthUrlOf(retrieveUrl: string): string | undefined {
  let u: URL;
  try {
    u = new URL(retrieveUrl.trim());
  } catch {
    return undefined;
  }
  if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost') return undefined; // the server binds loopback only
  const m = /^(\/t\/[^/]+)\//.exec(u.pathname);
  return m ? `${u.protocol}//${u.host}${m[1]}/v1/tool-health` : undefined;
}
