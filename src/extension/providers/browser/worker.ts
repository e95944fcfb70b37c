// Worker thread: builds the browser index off the extension host's main thread and posts it in batches.
import { parentPort, workerData } from 'node:worker_threads';
import { buildIndex } from './indexer';
import type { ScoreOptions } from './summary';

export interface WorkerInput extends ScoreOptions {
  path: string;
}
export type WorkerMessage = { type: 'batch'; rows: unknown[]; bytes: number } | { type: 'done'; count: number } | { type: 'error'; message: string };

const input = workerData as WorkerInput;
buildIndex(input.path, (rows, bytes) => parentPort!.postMessage({ type: 'batch', rows, bytes } satisfies WorkerMessage), input)
  .then((count) => parentPort!.postMessage({ type: 'done', count } satisfies WorkerMessage))
  .catch((e: Error) => parentPort!.postMessage({ type: 'error', message: e.message } satisfies WorkerMessage));
