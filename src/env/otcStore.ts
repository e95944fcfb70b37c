// The environment server's per-run OTC-GRPO states (docs/env-server.md, "OTC-GRPO state"), bounded by count, by
// bytes and by idleness: at most `maxRuns` runs and `maxBytes` of estimated memory (the least recently used runs are
// evicted past either), and none idle longer than `idleMs`. A trainer saves its run's state in every checkpoint and
// PUTs it back on resume, so an evicted run loses nothing it needs. Without a bound a long-lived server grows by
// every run it ever graded (54 → 375 MB over 2,000 runs); with a count alone, 1.2M-question states (~50 MB each)
// exhaust the heap after a few dozen runs. The store lives in its own worker thread
// (otc-worker.ts), so building, sizing and serialising big states never stalls the server's event loop.
import { OtcState } from '../core/rewards';

export const DEFAULT_OTC_MAX_RUNS = 256;
export const DEFAULT_OTC_IDLE_MS = 6 * 60 * 60 * 1000;
export const DEFAULT_OTC_MAX_BYTES = 256 * 1024 * 1024;
/** What a run costs before its first question (its entry, its state object, an empty map). */
export const RUN_BYTES = 512;

/**
 * Estimated memory of one question's minimum in a state: the map entry plus the key string. Measured on Node 20:
 * 1.2M entries with 36-character ASCII keys take 61 bytes each; this says 84 (one-byte strings) and counts two
 * bytes per character for keys with characters past U+00FF, as V8 stores them.
 */
export function entryBytes(question: string): number {
  return 48 + question.length * (/[^\x00-\xff]/.test(question) ? 2 : 1);
}

/** Estimated memory of a run's state holding these questions (what `set` is given). */
export function stateBytes(questions: Iterable<string>): number {
  let bytes = RUN_BYTES;
  for (const q of questions) bytes += entryBytes(q);
  return bytes;
}

export interface OtcStoreOptions {
  maxRuns?: number;
  maxBytes?: number;
  idleMs?: number;
  /** Clock (ms); tests pass their own to step over the idle limit without waiting. */
  now?: () => number;
}

/** A state too large for the whole budget (refused, never stored). */
export class StateTooLarge extends Error {
  constructor(
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `the state takes about ${bytes} bytes, more than the server's whole OTC budget of ${maxBytes} bytes (--otc-max-mb)`,
    );
  }
}

interface Entry {
  state: OtcState;
  used: number;
  bytes: number;
}

export class OtcStore {
  /** Map order is recency order: every use moves a run to the end, so expiry and eviction take from the front. */
  private readonly runs = new Map<string, Entry>();
  private readonly maxRuns: number;
  readonly maxBytes: number;
  private readonly idleMs: number;
  private readonly now: () => number;
  evictions = 0;
  /** Estimated memory of every state kept. */
  bytes = 0;

  constructor(opts: OtcStoreOptions = {}) {
    this.maxRuns = opts.maxRuns ?? DEFAULT_OTC_MAX_RUNS;
    this.maxBytes = opts.maxBytes ?? DEFAULT_OTC_MAX_BYTES;
    this.idleMs = opts.idleMs ?? DEFAULT_OTC_IDLE_MS;
    this.now = opts.now ?? Date.now;
    if (!(Number.isInteger(this.maxRuns) && this.maxRuns > 0))
      throw new Error(`OTC max runs must be a positive integer, got ${this.maxRuns}`);
    if (!(this.maxBytes > 0)) throw new Error(`OTC memory budget must be > 0 bytes, got ${this.maxBytes}`);
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
    this.touch(run, entry);
    return entry.state;
  }

  /**
   * Replaces the run's state (a resume's PUT); `bytes` is its stateBytes. Throws StateTooLarge, keeping the old
   * state, past the whole budget.
   */
  set(run: string, state: OtcState, bytes: number): void {
    if (bytes > this.maxBytes) throw new StateTooLarge(bytes, this.maxBytes);
    this.expire();
    this.drop(run);
    const entry = { state, used: 0, bytes };
    this.bytes += bytes;
    this.touch(run, entry);
    this.evict(run);
  }

  /**
   * Lowers the run's minima (a grade's updates), creating the run when missing. The run itself is evicted too
   * when it alone has grown past the whole budget: it starts again from no minimum, as any evicted run does.
   */
  observe(run: string, minima: Record<string, number>): void {
    this.expire();
    let entry = this.runs.get(run);
    if (!entry) {
      entry = { state: new OtcState(), used: 0, bytes: RUN_BYTES };
      this.bytes += RUN_BYTES;
    }
    for (const [q, n] of Object.entries(minima)) {
      if (entry.state.get(q) === undefined) {
        const b = entryBytes(q.trim());
        entry.bytes += b;
        this.bytes += b;
      }
      entry.state.observe(q, n);
    }
    this.touch(run, entry);
    this.evict(entry.bytes > this.maxBytes ? undefined : run);
  }

  delete(run: string): boolean {
    this.expire();
    return this.drop(run);
  }

  private drop(run: string): boolean {
    const entry = this.runs.get(run);
    if (!entry) return false;
    this.runs.delete(run);
    this.bytes -= entry.bytes;
    return true;
  }

  private touch(run: string, entry: Entry): void {
    this.runs.delete(run);
    entry.used = this.now();
    this.runs.set(run, entry);
  }

  /** Least recently used runs out until both bounds hold; `keep` (the run just written) goes last of all. */
  private evict(keep?: string): void {
    for (const run of this.runs.keys()) {
      if (this.runs.size <= this.maxRuns && this.bytes <= this.maxBytes) return;
      if (run === keep) continue;
      this.drop(run);
      this.evictions++;
    }
  }

  private expire(): void {
    const limit = this.now() - this.idleMs;
    for (const [run, entry] of this.runs) {
      if (entry.used > limit) break; // recency order: the rest are newer
      this.drop(run);
      this.evictions++;
    }
  }
}
