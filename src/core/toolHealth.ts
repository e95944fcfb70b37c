// The answer of the environment server's GET /v1/tool-health: per caller of the search tool, how often it called,
// failed, got nothing back and how long it waited. Written by src/env/toolHealth.ts, polled by the live panel's host
// and drawn by its page (src/protocols/livePanel.ts ToolHealthRow).

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
  /** Callers kept but not in `callers` (seen less recently than the REPORTED_CALLERS listed, src/env/toolHealth.ts). */
  callers_omitted: number;
  /** Callers dropped to stay within the memory budget since start. */
  callers_evicted: number;
}
