// Tool health per caller: how often each client of the search tool called, failed, got nothing back, and how long
// it waited (p50/p99 over its last LATENCY_WINDOW calls). verl's ToolAgentLoop discards the metrics its tools return
// and Search-R1's client keeps none, so a tool that silently fails or finds nothing is invisible in their logs; the
// server that answers sees every call. Exposed at GET /v1/tool-health (docs/env-server.md) and drawn by the live
// panel. A caller is named by the URL it posts to: /t/<token>/<caller>/retrieve, or "retrieve" / "search".
import { RUN_ID } from './protocol';

export const LATENCY_WINDOW = 2048;

export interface CallerHealth {
  calls: number;
  failures: number;
  queries: number;
  /** Queries that came back with no passage. */
  empty_results: number;
  latency_ms: { p50: number | null; p99: number | null };
  last_error: string | null;
  /** Seconds since the Unix epoch of the last call. */
  last_call: number | null;
}

export interface ToolHealthSnapshot {
  uptime_s: number;
  callers: Record<string, CallerHealth>;
}

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
  const lists = body && typeof body === 'object' ? ((body as { result?: unknown }).result ?? (body as { results?: unknown }).results) : undefined;
  if (!Array.isArray(lists)) return { queries: 0, empty: 0 };
  return { queries: lists.length, empty: lists.filter((l) => Array.isArray(l) && l.length === 0).length };
}

export class ToolHealth {
  private readonly callers = new Map<string, CallerState>();
  private readonly started = Date.now();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Starts timing a request; returns its completion callback, or undefined when the path is not a tool call. */
  start(path: string): ((ok: boolean, body: unknown, error?: string, counts?: { queries: number; empty: number }) => void) | undefined {
    const caller = toolCaller(path);
    if (caller === null) return undefined;
    const t0 = this.now();
    return (ok, body, error, counts) => this.record(caller, this.now() - t0, ok, body, error, counts);
  }

  /** `counts`: queries and empty results when the answer was serialised elsewhere (a worker); else read off `body`. */
  record(caller: string, ms: number, ok: boolean, body: unknown, error?: string, counts?: { queries: number; empty: number }): void {
    let s = this.callers.get(caller);
    if (!s) this.callers.set(caller, (s = { calls: 0, failures: 0, queries: 0, empty: 0, latencies: new Float64Array(LATENCY_WINDOW), recorded: 0, lastError: null, lastCall: null }));
    s.calls++;
    s.lastCall = Date.now() / 1000;
    s.latencies[s.recorded++ % LATENCY_WINDOW] = ms;
    if (!ok) {
      s.failures++;
      s.lastError = error ?? 'failed';
      return;
    }
    const { queries, empty } = counts ?? emptyResults(body);
    s.queries += queries;
    s.empty += empty;
  }

  snapshot(): ToolHealthSnapshot {
    const callers: Record<string, CallerHealth> = {};
    for (const [name, s] of [...this.callers].sort(([a], [b]) => a.localeCompare(b))) {
      const lat = Array.from(s.latencies.subarray(0, Math.min(s.recorded, LATENCY_WINDOW))).sort((a, b) => a - b);
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
    return { uptime_s: (Date.now() - this.started) / 1000, callers };
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
