// A search worker thread (started by search-pool.ts): holds views of the shared index buffer (no copy),
// its own corpus file handle and scratch space, and runs the tasks of env-work.ts. One task at a time;
// a task that runs past its deadline is abandoned by terminating the thread (the pool starts another).
import { parentPort, workerData } from 'node:worker_threads';
import { Bm25Index } from './bm25';
import { indexData, type SharedIndex } from './index-file';
import { Retriever, type OpenInfo } from './retriever';
import { HttpError } from './http';
import { gradeRequest, parseSearchRequest, searchFragments, type StateRequest } from './env-work';
import type { DialectName } from '../core/dialects';

export interface WorkerInit {
  corpus: string;
  shared: SharedIndex;
  info: OpenInfo;
}

export type Task =
  | { kind: 'search'; queries: string[]; topK: number; dialect: DialectName }
  | { kind: 'search-raw'; body: Uint8Array; dialect: DialectName }
  | { kind: 'search-docs'; queries: string[]; topK: number }
  | { kind: 'search-hits'; queries: string[]; topK: number }
  | { kind: 'grade'; body: Uint8Array };

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
  switch (task.kind) {
    case 'search':
      return searchFragments(retriever, task.queries, task.topK, task.dialect);
    case 'search-raw': {
      const q = parseSearchRequest(task.body);
      return { ...searchFragments(retriever, q.queries, q.top_k, q.dialect ?? task.dialect), queries: q.queries.length };
    }
    case 'search-hits':
      // The retrieve protocol (retrieve.ts) shapes its own answer from the hits.
      return task.queries.map((q) => retriever.search(q, task.topK));
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
    case 'grade':
      return gradeRequest(task.body, (req) => {
        port!.postMessage({ id, needState: req } satisfies WorkerReply);
        return new Promise((resolve) => waiting.set(id, resolve));
      });
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
    (value) => port.postMessage({ id: msg.id, ok: true, value } satisfies WorkerReply),
    (e: unknown) => {
      const error =
        e instanceof HttpError
          ? { code: e.code, message: e.message, path: e.path, headers: e.headers }
          : { code: 'internal', message: `internal error: ${(e as Error)?.message ?? String(e)}` };
      port.postMessage({ id: msg.id, ok: false, error } satisfies WorkerReply);
    },
  );
});
