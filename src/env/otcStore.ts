// The environment server's per-run OTC-GRPO states (docs/env-server.md, "OTC-GRPO state"), bounded: at most
// `maxRuns` runs (the least recently used one is evicted past the cap) and none idle longer than `idleMs`. A trainer
// saves its run's state in every checkpoint and PUTs it back on resume, so an evicted run loses nothing it needs;
// without a bound a long-lived server grew by every run it ever graded (issue 18: 54 → 375 MB over 2,000 runs).
import { OtcState } from '../core/rewards';

export const DEFAULT_OTC_MAX_RUNS = 256;
export const DEFAULT_OTC_IDLE_MS = 6 * 60 * 60 * 1000;

export interface OtcStoreOptions {
  maxRuns?: number;
  idleMs?: number;
  /** Clock (ms); tests pass their own to step over the idle limit without waiting. */
  now?: () => number;
}

export class OtcStore {
  /** Map order is recency order: every use moves a run to the end, so expiry and eviction take from the front. */
  private readonly runs = new Map<string, { state: OtcState; used: number }>();
  private readonly maxRuns: number;
  private readonly idleMs: number;
  private readonly now: () => number;
  evictions = 0;

  constructor(opts: OtcStoreOptions = {}) {
    this.maxRuns = opts.maxRuns ?? DEFAULT_OTC_MAX_RUNS;
    this.idleMs = opts.idleMs ?? DEFAULT_OTC_IDLE_MS;
    this.now = opts.now ?? Date.now;
    if (!(Number.isInteger(this.maxRuns) && this.maxRuns > 0)) throw new Error(`OTC max runs must be a positive integer, got ${this.maxRuns}`);
    if (!(this.idleMs > 0)) throw new Error(`OTC idle limit must be > 0 ms, got ${this.idleMs}`);
  }

  get size(): number {
    this.expire();
    return this.runs.size;
  }

  /** The run's state, marked as used; undefined when unknown, deleted, evicted or expired. */
  get(run: string): OtcState | undefined {
    this.expire();
    const entry = this.runs.get(run);
    if (!entry) return undefined;
    this.touch(run, entry.state);
    return entry.state;
  }

  /** The run's state, created empty when missing. */
  getOrCreate(run: string): OtcState {
    const state = this.get(run) ?? new OtcState();
    this.set(run, state);
    return state;
  }

  set(run: string, state: OtcState): void {
    this.expire();
    this.touch(run, state);
    while (this.runs.size > this.maxRuns) {
      this.runs.delete(this.runs.keys().next().value as string);
      this.evictions++;
    }
  }

  delete(run: string): boolean {
    this.expire();
    return this.runs.delete(run);
  }

  private touch(run: string, state: OtcState): void {
    this.runs.delete(run);
    this.runs.set(run, { state, used: this.now() });
  }

  private expire(): void {
    const limit = this.now() - this.idleMs;
    for (const [run, entry] of this.runs) {
      if (entry.used > limit) break; // recency order: the rest are newer
      this.runs.delete(run);
      this.evictions++;
    }
  }
}
