// Builds the browser's index by streaming the file (core/jsonl readJsonl: constant memory, byte offsets), in
// batches so the caller can show progress and answer queries on a partial index. Runs in a worker thread in the
// editor (worker.ts); the same function runs in-process in tests and the benchmark.
import { open } from 'node:fs/promises';
import { JsonlEntry, readJsonl, type ReadOptions } from '../../../core/jsonl';
import { dumpRow, looksLikeVerlDump, verlLineParser, verlRunDialect } from '../../../core/importers/verl-rollouts';
import { ScoreOptions, summarize, summarizeBatch } from './summary';
import type { RecordSummary } from '../../../protocols/browser';

export interface IndexOptions extends ScoreOptions {
  /** Rows per batch handed to onBatch. */
  batchSize?: number;
  /** Stop early (the editor closed). */
  signal?: AbortSignal;
}

export async function buildIndex(
  path: string,
  onBatch: (rows: RecordSummary[], bytesRead: number) => void,
  options: IndexOptions = {},
): Promise<number> {
  const size = options.batchSize ?? 2000;
  let batch: JsonlEntry[] = [];
  let i = 0;
  let bytes = 0;
  const flush = () => {
    onBatch(summarizeBatch(batch, i - batch.length, options), bytes);
    batch = [];
  };
  for await (const entry of readJsonl(path, await readOptions(path))) {
    if (options.signal?.aborted) break;
    batch.push(entry);
    i++;
    bytes = entry.offset + entry.byteLength;
    if (batch.length >= size) flush();
  }
  flush();
  return i;
}

/** verl rollout dumps are read as records (src/core/importers/verl-rollouts.ts), decided on the file's first line. */
export async function readOptions(path: string): Promise<ReadOptions> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(256 * 1024);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    const text = head.toString('utf8', 0, bytesRead);
    const nl = text.indexOf('\n');
    if (!looksLikeVerlDump(nl < 0 ? text : text.slice(0, nl))) return {};
    // one dialect for the dump (its run's), read off the whole lines of the head: an answer that did not search has
    // no tag of its dialect
    const lines = (bytesRead < head.length ? text : text.slice(0, text.lastIndexOf('\n'))).split('\n');
    return { parse: verlLineParser(verlRunDialect(lines.map(dumpRow))) };
  } finally {
    await fh.close();
  }
}

/** The first n records, read without indexing the rest: the browser's first page. */
export async function firstRecords(path: string, n: number, options: ScoreOptions = {}): Promise<RecordSummary[]> {
  const rows: RecordSummary[] = [];
  // Small chunks: the first page must not wait for a megabyte read when lines are short.
  for await (const entry of readJsonl(path, { chunkSize: 64 * 1024, ...(await readOptions(path)) })) {
    rows.push(summarize(entry, rows.length, options));
    if (rows.length >= n) break;
  }
  return rows;
}

/** Read the lines at the given offsets (positioned reads; the file is never loaded whole). */
export async function readLines(
  path: string,
  rows: readonly Pick<RecordSummary, 'offset' | 'length'>[],
): Promise<string[]> {
  const fh = await open(path, 'r');
  try {
    const out: string[] = [];
    for (const r of rows) {
      const buf = Buffer.alloc(r.length);
      await fh.read(buf, 0, r.length, r.offset);
      out.push(buf.toString('utf8'));
    }
    return out;
  } finally {
    await fh.close();
  }
}
