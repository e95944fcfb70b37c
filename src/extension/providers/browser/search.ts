// Text search over a trajectory file for the browser: which records (by index among the file's non-blank lines, the
// browser index's `i`) hold a text in their question, response or golden answers, case-insensitively. Streams the
// file (core/jsonl readJsonl, constant memory) and reports hits in batches so the page can count them as they come;
// runs in the browser's worker thread (worker.ts) and is stopped by terminating it. No `vscode` import.
import { parseRecordLine, readJsonl, type JsonlEntry } from '../../../core/jsonl';
import type { TrajectoryRecord } from '../../../core/record';
import { readOptions } from './indexer';
import type { SearchField } from '../../../protocols/browser';

export const SEARCH_FIELDS: readonly SearchField[] = ['all', 'question', 'response', 'answers'];

export interface SearchOptions {
  field?: SearchField;
  /** Report hits at most this often (ms); the last batch always comes. */
  everyMs?: number;
  signal?: AbortSignal;
}

/** Does the record hold `needle` (already lower-cased) in `field`? */
export function recordMatches(
  r: Pick<TrajectoryRecord, 'question' | 'response' | 'golden_answers'>,
  needle: string,
  field: SearchField = 'all',
): boolean {
  const has = (s: string | undefined) => !!s && s.toLowerCase().includes(needle);
  if ((field === 'all' || field === 'question') && has(r.question)) return true;
  if ((field === 'all' || field === 'response') && has(r.response)) return true;
  if (field === 'all' || field === 'answers') return (r.golden_answers ?? []).some(has);
  return false;
}

/**
 * Whether a raw line can be skipped without parsing: the needle written in JSON is itself, unless it holds what JSON
 * escapes or a writer may escape (quotes, backslashes, control and non-ASCII characters: Python's json.dumps writes
 * \uXXXX by default). Such needles parse every line.
 */
function rawPrefilter(needle: string): ((raw: string) => boolean) | null {
  return /^[\x20-\x7e]*$/.test(needle) && !/["\\]/.test(needle) ? (raw) => raw.toLowerCase().includes(needle) : null;
}

/** Index `i` of every record holding `text`, reported in batches through `onHits`; returns the number of hits. */
export async function searchFile(
  path: string,
  text: string,
  onHits: (hits: number[], bytesRead: number) => void,
  options: SearchOptions = {},
): Promise<number> {
  const needle = text.toLowerCase();
  if (!needle) {
    onHits([], 0);
    return 0;
  }
  const field = options.field ?? 'all';
  const everyMs = options.everyMs ?? 200;
  const base = await readOptions(path);
  const parse = base.parse ?? parseRecordLine;
  const skip = rawPrefilter(needle);
  // Lines the prefilter rules out are not parsed: an entry with neither record nor problem.
  const cheap = (raw: string, line: number, offset?: number, byteLength?: number): JsonlEntry =>
    skip && !skip(raw)
      ? { line, offset: offset ?? 0, byteLength: byteLength ?? 0, raw: '' }
      : parse(raw, line, offset, byteLength);
  let i = 0;
  let total = 0;
  let batch: number[] = [];
  let bytes = 0;
  let last = Date.now();
  for await (const entry of readJsonl(path, { ...base, parse: cheap })) {
    if (options.signal?.aborted) break;
    if (entry.record && recordMatches(entry.record, needle, field)) {
      batch.push(i);
      total++;
    }
    i++;
    bytes = entry.offset + entry.byteLength;
    if (batch.length && Date.now() - last >= everyMs) {
      onHits(batch, bytes);
      batch = [];
      last = Date.now();
    }
  }
  onHits(batch, bytes);
  return total;
}
