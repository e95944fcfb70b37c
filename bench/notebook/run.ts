// bench/notebook: opening large trajectory files. For each size: time to the browser's first page (read from
// the head of the file while the worker indexes), time to the full index (worker thread, bundled as the
// extension ships it), the main thread's longest event-loop stall meanwhile (does the window freeze?), and, below
// the notebook's large-file threshold, the notebook deserialize and unchanged-save times.
// Usage: node --import tsx bench/notebook/run.ts [--sizes 10,100,500] [--no-write]
// Files are generated in a temp directory, which is deleted afterwards.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { build } from 'esbuild';
import { firstRecords } from '../../src/extension/providers/browser/indexer';
import type { WorkerMessage } from '../../src/extension/providers/browser/worker';
import { decodeNotebook, encodeNotebook } from '../../src/extension/providers/notebook/codec';
import { writeResults } from '../results';
import { generate } from './generate';

const arg = (k: string, d: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : d);
const sizes = arg('--sizes', '10,100,500').split(',').map(Number);
const THRESHOLD_MB = 50; // coaStudio.notebook.largeFileMB default
const PAGE = 50;

/** Longest gap between 5 ms ticks of the main thread while `work` runs: how long the window would freeze. */
async function withStallMonitor<T>(work: () => Promise<T>): Promise<{ value: T; maxStallMs: number }> {
  let last = performance.now();
  let max = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 5);
    last = now;
  }, 5);
  try {
    const value = await work();
    return { value, maxStallMs: Math.max(0, max) };
  } finally {
    clearInterval(timer);
  }
}

const s = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coa-bench-notebook-'));
  const rows: string[] = [];
  try {
    const worker = join(dir, 'browser-worker.js');
    await build({
      entryPoints: [join(__dirname, '../../src/extension/providers/browser/worker.ts')],
      outfile: worker,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      mainFields: ['module', 'main'],
      logLevel: 'warning',
    });
    for (const mb of sizes) {
      const path = join(dir, `t${mb}.coa.jsonl`);
      const records = await generate(path, mb);
      const size = statSync(path).size;
      console.error(`${mb} MB: ${records} records generated`);

      // The editor's flow: the worker starts indexing and the first page is read at once, concurrently.
      const t0 = performance.now();
      let firstPageMs = 0;
      const index: unknown[] = []; // kept, as the editor keeps it, so the memory figure is honest
      const { maxStallMs } = await withStallMonitor(async () => {
        const done = new Promise<void>((resolve, reject) => {
          const w = new Worker(worker, { workerData: { path, scheme: 'em' } });
          w.on('message', (m: WorkerMessage) => {
            if (m.type === 'batch')
              for (const r of m.rows) index.push(r); // structured-cloned into this thread, as in the editor
            else if (m.type === 'done') void w.terminate().then(() => resolve());
            else if (m.type === 'error') reject(new Error(m.message));
          });
          w.on('error', reject);
        });
        const page = await firstRecords(path, PAGE, { scheme: 'em' });
        firstPageMs = performance.now() - t0;
        if (page.length !== PAGE) throw new Error('first page short');
        await done;
      });
      const indexMs = performance.now() - t0;
      const heapMb = process.memoryUsage().heapUsed / 1e6;
      if (index.length !== records) throw new Error(`indexed ${index.length} of ${records}`);
      index.length = 0;

      let nb = '— (browser above the threshold)';
      if (mb <= THRESHOLD_MB) {
        const t1 = performance.now();
        const bytes = readFileSync(path);
        const content = decodeNotebook(bytes, { scheme: 'em' });
        const t2 = performance.now();
        const saved = encodeNotebook(content);
        const t3 = performance.now();
        if (Buffer.compare(Buffer.from(saved), bytes) !== 0) throw new Error('unchanged save is not byte-identical');
        nb = `${s(t2 - t1)} (${content.cells.length.toLocaleString('en')} cells) / save ${s(t3 - t2)}, byte-identical`;
      }
      const row = `| ${(size / 1e6).toFixed(1)} MB | ${records.toLocaleString('en')} | ${s(firstPageMs)} | ${s(indexMs)} (${(size / 1e6 / (indexMs / 1000)).toFixed(1)} MB/s) | ${maxStallMs.toFixed(0)} ms | ${heapMb.toFixed(0)} MB | ${nb} |`;
      console.error(row);
      rows.push(row);
      rmSync(path, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const body = `Command: \`node --import tsx bench/notebook/run.ts --sizes ${sizes.join(',')}\`
Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores (shared with other work).

Generated rollout-like files (0–3 searches per record, 10% format errors). First page = the browser's first ${PAGE} records
read from the head of the file while the worker thread indexes the whole file (both started at t = 0, as in the
editor). Full index = the worker's streamed index (offsets + reward/EM/tool calls/stage/step per record, scored by
the core). Max main-thread stall = longest event-loop gap on the extension-host side meanwhile. Heap = the
main thread's V8 heap in use right after indexing, the whole index held there as the editor holds it. Notebook = decode
into cells and unchanged save, only at or below the ${THRESHOLD_MB} MB large-file threshold.

| file | records | first page | full index | max main-thread stall | main-thread heap, index held | notebook open / save |
| --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}`;
  console.log(body);
  if (!process.argv.includes('--no-write')) writeResults('bench/notebook', body);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
