// A search worker thread (started by search-pool.ts): holds views of the shared index buffer (no copy),
// its own corpus file handle and scratch space, and runs the tasks of env-work.ts. One task at a time;
// a task that runs past its deadline is abandoned by terminating the thread (the pool starts another).
import { parentPort, workerData } from 'node:worker_threads';
import { Bm25Index } from './bm25';
import { indexData, type SharedIndex } from './index-file';
import { Retriever, type OpenInfo } from './retriever';
import { HttpError } from './http';
import {
  alertsRequest,
  gradeRequest,
  scanRequest,
  parseRetrieveRequest,
  parseSearchRequest,
  retrieveFragments,
  searchFragments,
  type StateRequest,
} from './env-work';
import { joinParts, LARGE_BODY_BYTES, parseJson } from './http';
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { checkStateBody } from './otcBody';
import type { DialectName } from '../core/dialects';

export interface WorkerInit {
  corpus: string;
  shared: SharedIndex;
  info: OpenInfo;
}

/**
 * `maxBytes`: the server's reply limit (an answer past it is refused while it is being built). `body`: a request body
 * as the chunks it arrived in (http.ts RequestBody.movable), joined here.
 */
export type Task =
  | { kind: 'search'; queries: string[]; topK: number; dialect: DialectName; maxBytes?: number }
  | { kind: 'search-raw'; body: Uint8Array[]; dialect: DialectName; maxBytes?: number }
  | { kind: 'search-docs'; queries: string[]; topK: number }
  | { kind: 'retrieve'; queries: string[]; topK: number; returnScores: boolean; maxBytes?: number }
  | { kind: 'retrieve-raw'; body: Uint8Array[]; maxBytes?: number }
  | { kind: 'alerts'; body: Uint8Array[]; maxBytes?: number }
  | { kind: 'scan'; body: Uint8Array[]; maxBytes?: number }
  | { kind: 'grade'; body: Uint8Array[] }
  /** A PUT otc-state body, checked and packed (otcBody.ts); `maxBytes`: the OTC state budget. */
  | { kind: 'otc-state'; body: Uint8Array[]; maxBytes: number };

export type TaskMessage = { id: number; task: Task } | { id: number; state: unknown };

export type WorkerReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { code: string; message: string; path?: string; headers?: Record<string, string> } }
  | { id: number; needState: StateRequest }
  | { ready: true };

const port = parentPort;
if (!port) throw new Error('search-worker.ts must run in a worker thread');
const init = workerData as WorkerInit;
const retriever = new Retriever(init.corpus, new Bm25Index(indexData(init.shared)), init.info, init.shared);
const waiting = new Map<number, (state: unknown) => void>();

async function run(id: number, task: Task): Promise<unknown> {
  if ('body' in task && task.body.reduce((n, p) => n + p.byteLength, 0) >= LARGE_BODY_BYTES) lowerPriority();
  switch (task.kind) {
    case 'search':
      return searchFragments(retriever, task.queries, task.topK, task.dialect, task.maxBytes);
    case 'search-raw': {
      const q = parseSearchRequest(joinParts(task.body));
      return {
        ...searchFragments(retriever, q.queries, q.top_k, q.dialect ?? task.dialect, task.maxBytes),
        queries: q.queries.length,
      };
    }
    case 'retrieve':
      return retrieveFragments(retriever, task.queries, task.topK, task.returnScores, task.maxBytes);
    case 'retrieve-raw': {
      const r = parseRetrieveRequest(parseJson(joinParts(task.body)));
      return {
        ...retrieveFragments(retriever, r.queries, r.k, r.returnScores, task.maxBytes),
        queries: r.queries.length,
      };
    }
    case 'alerts':
      return alertsRequest(joinParts(task.body), task.maxBytes);
    case 'scan':
      return scanRequest(joinParts(task.body), task.maxBytes);
    case 'search-docs': {
      // Engine only (the benchmark's batch figures): passage numbers and scores, k per query.
      const docs = new Int32Array(task.queries.length * task.topK).fill(-1);
      const scores = new Float64Array(docs.length);
      task.queries.forEach((q, i) =>
        retriever.index.search(q, task.topK).forEach((h, j) => {
          docs[i * task.topK + j] = h.doc;
          scores[i * task.topK + j] = h.score;
        }),
      );
      return { docs, scores };
    }
    case 'otc-state':
      return checkStateBody(joinParts(task.body), task.maxBytes);
    case 'grade':
      return gradeRequest(joinParts(task.body), (req) => {
        port!.postMessage({ id, needState: req } satisfies WorkerReply);
        return new Promise((resolve) => waiting.set(id, resolve));
      });
  }
}

/**
 * Runs this thread (only) at a lower CPU priority, for a large body's parse: twelve 30 MB bodies parsed at full priority
 * on a 2-core machine took the cores from the event loop (/v1/health p99 0.1–0.3 s). Never undone — a thread that had
 * a large body is replaced once it answers (search-pool.ts) — so ordinary searches keep full priority. Linux names a
 * thread's id in /proc/thread-self; elsewhere this does nothing.
 */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + 10));
  } catch {
    // no /proc, or not allowed: full priority
  }
}

port.postMessage({ ready: true } satisfies WorkerReply);

port.on('message', (msg: TaskMessage) => {
  if ('state' in msg) {
    const resume = waiting.get(msg.id);
    waiting.delete(msg.id);
    resume?.(msg.state);
    return;
  }
  run(msg.id, msg.task).then(
    (value) => port.postMessage({ id: msg.id, ok: true, value } satisfies WorkerReply, transferables(value)),
    (e: unknown) => {
      const error =
        e instanceof HttpError
          ? { code: e.code, message: e.message, path: e.path, headers: e.headers }
          : { code: 'internal', message: `internal error: ${(e as Error)?.message ?? String(e)}` };
      port.postMessage({ id: msg.id, ok: false, error } satisfies WorkerReply);
    },
  );
});

/**
 * The memory of the answer's byte arrays, moved to the server's thread instead of copied — only arrays that own
 * their whole buffer (env-work.ts's ownedUtf8): moving a view of a shared pool would take the pool away.
 */
function transferables(value: unknown): ArrayBuffer[] {
  const owned = (v: unknown): v is Uint8Array =>
    v instanceof Uint8Array &&
    v.byteOffset === 0 &&
    v.byteLength === v.buffer.byteLength &&
    v.buffer instanceof ArrayBuffer;
  if (owned(value)) return [value.buffer as ArrayBuffer];
  if (!value || typeof value !== 'object') return [];
  const out: ArrayBuffer[] = [];
  for (const v of Object.values(value))
    if (owned(v) && !out.includes(v.buffer as ArrayBuffer)) out.push(v.buffer as ArrayBuffer);
  return out;
}
