// Starts one of the environment server's worker threads: its bundle beside this one (dist/env-worker.js,
// dist/otc-worker.js), or its TypeScript source under tsx when running from source (tests, benches).
import { createRequire } from 'node:module';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export function startWorker(bundle: string, source: string, options: WorkerOptions): Worker {
  const bundled = join(__dirname, bundle);
  if (existsSync(bundled)) return new Worker(bundled, options);
  const file = join(__dirname, source);
  // Worker threads do not inherit tsx's loader hooks: register tsx's CommonJS hook inside the thread first.
  // (createRequire: resolved at run time, so bundlers leave the dev-only dependency alone)
  const tsx = createRequire(__filename).resolve('tsx/cjs');
  return new Worker(`require(${JSON.stringify(tsx)}); require(${JSON.stringify(file)});`, { ...options, eval: true });
}
