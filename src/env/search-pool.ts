// A pool of search worker threads sharing one loaded index (SharedArrayBuffer): the environment
// server's searches and grades run here, never on its event loop, so /v1/health answers at once
// whatever else is running. A task cancelled through its AbortSignal (the server's --timeout-ms) is
// dropped from the queue, or, when already running, abandoned by terminating its thread; a fresh
// thread takes its place (cheap: the index is shared, not reloaded).
import type { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { startWorker } from './workerThread';
import { HttpError, LARGE_BODY_BYTES } from './http';
import type { Retriever } from './retriever';
import type { StateRequest } from './env-work';
import type { Task, TaskMessage, WorkerInit, WorkerReply } from './search-worker';
import type { ErrorCode } from './protocol';

interface Job {
  id: number;
  task: Task;
  transfer: ArrayBuffer[];
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  onState?: (req: StateRequest) => Promise<unknown>;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** The size of the task's body, taken before it is moved to the thread (its arrays are empty here after). */
  bodyBytes: number;
  /** Called once no thread works on the job any more: it answered, or its abandoned thread has exited. */
  onDone?: () => void;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  /** The thread has loaded its index views and takes tasks (until then tasks wait in the queue, cancellable for free). */
  ready: boolean;
}

/** Starts a search worker (src/env/search-worker.ts, bundled as dist/env-worker.js). */
function spawn(init: WorkerInit): Worker {
  return startWorker('env-worker.js', 'search-worker.ts', { workerData: init });
}

/**
 * Cut a batch into contiguous slices for the pool: about four per worker, so a worker that finishes early
 * (or one the OS deschedules) does not leave the others waiting on one big slice; answers are joined in order.
 */
export function sliceBatch<T>(items: readonly T[], workers: number): T[][] {
  const per = Math.max(1, Math.ceil(items.length / (workers * 4)));
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += per) out.push(items.slice(i, i + per));
  return out;
}

/**
 * A thread that parsed a large body (http.ts LARGE_BODY_BYTES) is replaced once it answers. V8 keeps a heap at the size
 * it grew to: a thread that parsed a 30 MB body held a few hundred MB until the process ended, and every thread of the
 * pool could. A fresh thread costs tens of milliseconds (the index is shared, not reloaded).
 */
function bodyBytes(task: Task): number {
  return 'body' in task ? task.body.reduce((n, p) => n + p.byteLength, 0) : 0;
}

/** The longest close() waits for its threads to exit. */
const CLOSE_WAIT_MS = 5_000;

export class SearchPool {
  readonly size: number;
  private readonly init: WorkerInit;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Threads terminated because their task was cancelled (for /v1/health stats). */
  recycled = 0;
  /** Threads replaced after a task that parsed a large body, to give its heap back (for /v1/health stats). */
  renewed = 0;
  private readonly readyWaiters: (() => void)[] = [];

  constructor(retriever: Retriever, size = availableParallelism()) {
    if (!(Number.isInteger(size) && size >= 1)) throw new Error(`search workers must be an integer >= 1, got ${size}`);
    this.size = size;
    this.init = { corpus: retriever.corpus, shared: retriever.shared, info: retriever.info };
    for (let i = 0; i < size; i++) this.slots.push(this.start());
  }

  private start(): Slot {
    const slot: Slot = { worker: spawn(this.init), job: null, ready: false };
    slot.worker.on('message', (m: WorkerReply) => this.onMessage(slot, m));
    slot.worker.on('error', (e) => this.onDeath(slot, e));
    slot.worker.on('exit', (code) => this.onDeath(slot, new Error(`search worker exited with code ${code}`)));
    return slot; // referenced while starting (someone may be waiting for it), unreferenced when idle
  }

  /** Resolves once every thread is up (tasks can be queued before; this is for benchmarks and tests). */
  ready(): Promise<void> {
    if (this.slots.every((s) => s.ready)) return Promise.resolve();
    return new Promise((r) => this.readyWaiters.push(r));
  }

  /**
   * Run a task on the next free thread. `onState` answers a grade's request for OTC state; `signal`
   * cancels (the promise then rejects with the signal's reason). `onDone` is called once no thread works on the task
   * any more — later than the promise settles when the task was abandoned: a thread stuck in a long native call (a
   * JSON.parse of 30 MB) exits only when that call returns, and its memory is held until then (the server keeps the
   * request's body budget until this, so abandoned work is bounded as running work is).
   */
  run<T>(
    task: Task,
    opts: {
      signal?: AbortSignal;
      transfer?: ArrayBuffer[];
      onState?: (req: StateRequest) => Promise<unknown>;
      onDone?: () => void;
    } = {},
  ): Promise<T> {
    if (this.closed) {
      opts.onDone?.();
      return Promise.reject(new HttpError('shutting_down', 'the environment server is shutting down'));
    }
    if (opts.signal?.aborted) {
      opts.onDone?.();
      return Promise.reject(opts.signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        task,
        transfer: opts.transfer ?? [],
        resolve: resolve as (v: unknown) => void,
        reject,
        onState: opts.onState,
        signal: opts.signal,
        bodyBytes: bodyBytes(task),
        onDone: opts.onDone,
      };
      if (opts.signal) {
        job.onAbort = () => this.cancel(job);
        opts.signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.pump();
    });
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (slot.job || !slot.ready) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      slot.worker.ref(); // keep the process alive while work is in flight
      slot.worker.postMessage({ id: job.id, task: job.task } satisfies TaskMessage, job.transfer);
    }
  }

  private settle(job: Job): void {
    if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
  }

  /** Calls the job's onDone once `exited` (a thread's exit, or nothing) has come. */
  private done(job: Job, exited: Promise<unknown> = Promise.resolve()): void {
    const onDone = job.onDone;
    job.onDone = undefined;
    if (onDone) void exited.then(onDone, onDone);
  }

  private free(slot: Slot): void {
    slot.job = null;
    slot.worker.unref();
    this.pump();
  }

  private onMessage(slot: Slot, m: WorkerReply): void {
    if ('ready' in m) {
      slot.ready = true;
      if (!slot.job) slot.worker.unref();
      if (this.slots.every((x) => x.ready)) for (const w of this.readyWaiters.splice(0)) w();
      this.pump();
      return;
    }
    const job = slot.job;
    if (!job || job.id !== m.id) return;
    if ('needState' in m) {
      const ask = job.onState ?? (() => Promise.reject(new Error('this task cannot ask for state')));
      ask(m.needState).then(
        (state) => {
          if (slot.job === job) slot.worker.postMessage({ id: job.id, state } satisfies TaskMessage);
        },
        (e) => this.fail(slot, job, e),
      );
      return;
    }
    this.settle(job);
    if (job.bodyBytes >= LARGE_BODY_BYTES) {
      this.renewed++;
      this.done(job, this.replace(slot));
    } else {
      this.free(slot);
      this.done(job);
    }
    if (m.ok) job.resolve(m.value);
    else {
      const { code, message, path, headers } = m.error;
      job.reject(new HttpError(code as ErrorCode, message, path, headers));
    }
  }

  /** A job failed on the main side (e.g. its state request): abandon the thread that runs it. */
  private fail(slot: Slot, job: Job, e: unknown): void {
    if (slot.job !== job) return;
    this.settle(job);
    this.done(job, this.replace(slot));
    job.reject(e);
  }

  private onDeath(slot: Slot, e: Error): void {
    const i = this.slots.indexOf(slot);
    if (i < 0 || this.closed) return; // already replaced, or shutting down
    const job = slot.job;
    this.slots[i] = this.start();
    if (job) {
      this.settle(job);
      this.done(job);
      job.reject(new HttpError('internal', `search worker failed: ${e.message}`));
    }
    this.pump();
  }

  private cancel(job: Job): void {
    const q = this.queue.indexOf(job);
    if (q >= 0) {
      this.queue.splice(q, 1);
      this.done(job);
      job.reject(job.signal?.reason);
      return;
    }
    const slot = this.slots.find((s) => s.job === job);
    if (!slot) return;
    this.recycled++;
    this.done(job, this.replace(slot));
    job.reject(job.signal?.reason);
  }

  /** Terminate a slot's thread (its task is abandoned) and start a fresh one in its place; resolves once it has exited. */
  private replace(slot: Slot): Promise<unknown> {
    const i = this.slots.indexOf(slot);
    if (i < 0) return Promise.resolve();
    this.slots[i] = this.start();
    const exited = slot.worker.terminate();
    this.pump();
    return exited;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) {
      this.done(job);
      job.reject(new HttpError('shutting_down', 'the environment server is shutting down'));
    }
    // A referenced timer keeps the process alive until every thread has reported its exit: terminate()'s promise
    // alone did not always (about 1 server close in 80, with a thread still starting, the process exited with
    // close() pending, so an awaiting test teardown never resumed). It also bounds the wait, should a thread's
    // exit never be reported.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)));
    try {
      await Promise.race([Promise.all(this.slots.map((s) => s.worker.terminate())), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
