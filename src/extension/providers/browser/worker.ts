// Worker thread: builds the browser index off the extension host's main thread and posts it in batches; or, started
// with `search`, streams the file for a text (search.ts) and posts the hits. A search is cancelled by terminating it.
import { parentPort, workerData } from 'node:worker_threads';
import { buildIndex } from './indexer';
import { searchFile } from './search';
import type { SearchField } from '../../../protocols/browser';
import type { ScoreOptions } from './summary';

export interface WorkerInput extends ScoreOptions {
  path: string;
  search?: { text: string; field: SearchField };
}
export type WorkerMessage =
  | { type: 'batch'; rows: unknown[]; bytes: number }
  | { type: 'hits'; hits: number[]; bytes: number }
  | { type: 'done'; count: number }
  | { type: 'error'; message: string };

const input = workerData as WorkerInput;
const post = (m: WorkerMessage) => parentPort!.postMessage(m);
const work = input.search
  ? searchFile(input.path, input.search.text, (hits, bytes) => post({ type: 'hits', hits, bytes }), {
      field: input.search.field,
    })
  : buildIndex(input.path, (rows, bytes) => post({ type: 'batch', rows, bytes }), input);
work.then((count) => post({ type: 'done', count })).catch((e: Error) => post({ type: 'error', message: e.message }));
