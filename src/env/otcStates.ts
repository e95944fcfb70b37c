// The server's side of the OTC-GRPO state thread (otc-worker.ts): requests in order, answers by id. Updates that
// must never be undone by a timeout (a grade's new minima, a PUT's commit) are posted at the moment the server
// decides them, synchronously after checking the request's deadline, and not waited for: the thread applies its
// messages in order, so every later read sees them. The thread's heap is capped (resourceLimits): a state set that
// outgrew the byte estimate ends that thread, not the server; its states are then lost (counted as evictions)
// and a fresh thread takes over.
import type { Worker } from 'node:worker_threads';
import { HttpError } from './http';
import { packedTransfer, type CheckedState } from './otcBody';
import type { ErrorCode } from './protocol';
import { startWorker } from './workerThread';
import { DEFAULT_OTC_MAX_BYTES } from './otcStore';
import type { OtcInit, OtcReply, OtcRequest, OtcStats } from './otc-worker';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (e: unknown) => void;
}

/** The heap the state thread may use: twice the budget (the estimate is an upper bound) plus a PUT being parsed. */
export function otcHeapMb(maxBytes = DEFAULT_OTC_MAX_BYTES): number {
  return Math.ceil((2 * maxBytes) / 2 ** 20) + 768;
}

export class OtcStates {
  private worker!: Worker;
  private readonly pending = new Map<number, Pending & { heavy: boolean }>();
  private nextId = 1;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  /** As of the thread's last answer. */
  stats: OtcStats = { runs: 0, evictions: 0, bytes: 0 };
  /** Evictions before the current thread (states lost with a thread that died). */
  private lostEvictions = 0;

  constructor(private readonly init: OtcInit) {
    this.start();
  }

  private start(): void {
    const w = startWorker('otc-worker.js', 'otc-worker.ts', {
      workerData: this.init,
      resourceLimits: { maxOldGenerationSizeMb: otcHeapMb(this.init.maxBytes) },
    });
    this.worker = w;
    w.unref(); // referenced only while requests are in flight
    w.on('message', (m: OtcReply) => {
      if (w !== this.worker) return;
      this.stats = { ...m.stats, evictions: m.stats.evictions + this.lostEvictions };
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) {
        w.unref();
        for (const f of this.idleWaiters.splice(0)) f();
      }
      if (m.ok) p.resolve(m.value);
      else p.reject(new HttpError(m.error.code as ErrorCode, m.error.message, m.error.path));
    });
    const died = (why: string) => {
      if (w !== this.worker || this.closed) return;
      const lost = this.stats.runs;
      process.stderr.write(`${JSON.stringify({ event: 'otc_state_lost', runs: lost, message: why })}\n`);
      this.lostEvictions = this.stats.evictions + lost;
      this.stats = { runs: 0, evictions: this.lostEvictions, bytes: 0 };
      for (const p of this.pending.values()) p.reject(new HttpError('internal', `OTC state thread failed: ${why}`));
      this.pending.clear();
      for (const f of this.idleWaiters.splice(0)) f();
      this.start();
    };
    w.on('error', (e) => died(e.message));
    w.on('exit', (code) => died(`exited with code ${code}`));
  }

  /** Posts a request now; its answer comes later (in order with every other request). */
  private post(req: OtcRequest, transfer: ArrayBuffer[] = []): { id: number; answer: Promise<unknown> } {
    if (this.closed)
      return {
        id: 0,
        answer: Promise.reject(new HttpError('shutting_down', 'the environment server is shutting down')),
      };
    const id = this.nextId++;
    // Serialising a GET or unpacking a big PUT takes the thread a while (100k questions: tens of ms); the rest take
    // microseconds.
    const heavy = (req.op === 'set' && req.packed.lengths.length > 100_000) || req.op === 'get';
    const answer = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject, heavy }));
    this.worker.ref();
    this.worker.postMessage({ id, req }, transfer);
    return { id, answer };
  }

  /** The run's minima of these questions (a grade asks before scoring). */
  subset(run: string, questions: string[]): Promise<Record<string, number>> {
    return this.post({ op: 'subset', run, questions }).answer as Promise<Record<string, number>>;
  }

  /** Lowers the run's minima, creating it (a grade with `run` set). Applied in order; not waited for. */
  observe(run: string, minima: Record<string, number>): void {
    this.post({ op: 'observe', run, minima }).answer.catch(() => undefined);
  }

  /** The run's state as JSON bytes, or null when there is none. */
  async get(run: string): Promise<Uint8Array | null> {
    return (await this.post({ op: 'get', run }).answer) as Uint8Array | null;
  }

  /**
   * Replaces the run's state with a PUT's, checked and packed in a search worker (otcBody.ts). Posted the moment the
   * server decides to keep it (after the request's deadline was checked, in the same tick as its answer), not waited
   * for: the thread applies its messages in order, so every later request sees it. A PUT that timed out is never set.
   */
  set(run: string, checked: CheckedState): void {
    this.post(
      { op: 'set', run, packed: checked.packed, bytes: checked.bytes },
      packedTransfer(checked.packed),
    ).answer.catch(() => undefined);
  }

  async delete(run: string): Promise<boolean> {
    return (await this.post({ op: 'delete', run }).answer) as boolean;
  }

  /**
   * Resolves once every request posted so far is answered, or after `maxMs` (so counts read then are current) — at
   * once while a big state is being parsed or serialised: the counts then are those from before it.
   */
  settled(maxMs: number): Promise<void> {
    if (this.pending.size === 0 || [...this.pending.values()].some((p) => p.heavy)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      timer.unref();
      this.idleWaiters.push(() => (clearTimeout(timer), resolve()));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.pending.values())
      p.reject(new HttpError('shutting_down', 'the environment server is shutting down'));
    this.pending.clear();
    // A referenced timer keeps the process up until the thread has gone (as SearchPool.close does, for the same
    // reason: terminate()'s promise alone did not always), and bounds the wait.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.worker.terminate(), new Promise((r) => (timer = setTimeout(r, 5_000)))]);
    clearTimeout(timer);
  }
}
