// Other engines' files → trajectory records: the one conversion behind `coa convert` and the editor's
// "CoA: Convert to Trajectories…" (a .vsix user has no `coa` command). Each source has its importer in
// ./importers; this file reads the input, runs the importer, reports bad lines as FILE:LINE:COL and says what it
// made. Node only (reads files), no VS Code.
import { describeFsError } from './fsErrors';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { DataError } from './data/errors';
import { emptyIdReport, idSummary } from './data/ids';
import { importVerlParquet } from './importers/verl-parquet';
import { importSearchR1Transcripts } from './importers/search-r1';
import { conversationToRecord } from './importers/openai';
import { dumpFiles, importVerlRollouts, looksLikeVerlDump, verlRunDialect } from './importers/verl-rollouts';
import { formatOf } from './rewards';
import type { TrajectoryRecord } from './record';

export const CONVERT_SOURCES = ['verl-parquet', 'verl-rollouts', 'search-r1', 'openai'] as const;
export type ConvertSource = (typeof CONVERT_SOURCES)[number];

/** What each source is, in the words the editor's picker shows. */
export const SOURCE_INFO: Record<ConvertSource, { label: string; detail: string }> = {
  'verl-parquet': {
    label: 'verl / AutoCoA / Search-R1 parquet',
    detail: 'a prompt-only RL dataset: each row becomes a question (prompt, golden answers, source)',
  },
  'verl-rollouts': {
    label: 'verl rollout dump',
    detail: 'trainer.rollout_data_dir/<step>.jsonl (a file or the folder): each row a scored trajectory',
  },
  'search-r1': {
    label: 'Search-R1 transcripts',
    detail: '<|im_start|>role … <|im_end|> chat transcripts, several per file',
  },
  openai: {
    label: 'OpenAI chats with tool calls',
    detail: 'JSONL, one {"messages": [...]} conversation per line (Hermes dialect)',
  },
};

/** Bad input the conversion cannot read at all (the message names the file). */
export class ConvertError extends Error {}

export interface ConvertResult {
  records: TrajectoryRecord[];
  /** Lines that were reported and skipped. */
  skipped: number;
}

/**
 * A whole input file as text, without the UTF-8 byte order mark an editor may have written first: a BOM before
 * line 1's JSON makes that line invalid JSON, and importers would silently skip the first record.
 */
export function readTextInput(path: string): string {
  const text = readFileSync(path, 'utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Convert one input. `log` receives the FILE:LINE:COL lines of skipped input and the summary lines. */
export async function convertInput(
  from: ConvertSource,
  input: string,
  opts: { strictIds?: boolean; log?: (line: string) => void } = {},
): Promise<ConvertResult> {
  const log = opts.log ?? (() => undefined);
  if (from === 'verl-rollouts') {
    const { records, skipped } = convertVerlRollouts(input, log);
    return { records, skipped };
  }
  requireFile(input);
  if (from === 'verl-parquet') {
    const ids = emptyIdReport();
    let records: TrajectoryRecord[];
    try {
      records = await importVerlParquet(input, { strictIds: opts.strictIds === true, ids });
    } catch (e) {
      if (e instanceof DataError) throw new ConvertError(e.message);
      throw new ConvertError(`${input}: not a readable parquet file (${(e as Error).message})`);
    }
    const line = idSummary(ids);
    if (line) log(`${input}: ${line}`);
    return { records, skipped: 0 };
  }
  const text = readTextInput(input);
  if (text.includes('\u0000')) throw new ConvertError(`${input}: binary data, not a text file`);
  if (from === 'search-r1') return { records: importSearchR1Transcripts(text), skipped: 0 };
  const records: TrajectoryRecord[] = [];
  let skipped = 0;
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      records.push(conversationToRecord(JSON.parse(line), i));
    } catch (e) {
      skipped++;
      log(`${input}:${i + 1}:1: error ${(e as Error).message} (line skipped)`);
    }
  });
  return { records, skipped };
}

function requireFile(path: string): void {
  let info;
  try {
    info = statSync(path);
  } catch (e) {
    throw new ConvertError(
      `${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : describeFsError(e)}`,
    );
  }
  if (info.isDirectory()) throw new ConvertError(`${path}: is a directory, expected a file`);
}

/** The dump files of a directory (`<step>.jsonl`) or the one file given. */
export function verlDumpPaths(input: string): string[] {
  let info;
  try {
    info = statSync(input);
  } catch (e) {
    throw new ConvertError(`${input}: ${describeFsError(e)}`);
  }
  if (!info.isDirectory()) return [input];
  const files = dumpFiles(readdirSync(input)).map((f) => join(input, f.name));
  if (!files.length)
    throw new ConvertError(
      `${input}: no <step>.jsonl files (verl writes trainer.rollout_data_dir/<global_step>.jsonl)`,
    );
  return files;
}

export interface VerlConvertResult extends ConvertResult {
  files: number;
  formatErrors: number;
}

/**
 * verl's rollout dumps (./importers/verl-rollouts.ts) in step order, each record format-checked with the core's
 * rules in the run's dialect (verlRunDialect over every step); a line that is not a dump row is reported with its
 * field and skipped.
 */
export function convertVerlRollouts(input: string, log: (line: string) => void): VerlConvertResult {
  const out: VerlConvertResult = { records: [], skipped: 0, files: 0, formatErrors: 0 };
  const counts = new Map<string, number>();
  let shown = 0;
  const read: { file: string; records: TrajectoryRecord[] }[] = [];
  for (const file of verlDumpPaths(input)) {
    const text = readTextInput(file);
    if (text.includes('\u0000')) throw new ConvertError(`${file}: binary data, not a verl rollout dump`);
    const { records, issues } = importVerlRollouts(text);
    out.files++;
    out.skipped += issues.length;
    for (const i of issues) log(`${file}:${i.line}:${i.column}: error ${i.message} (line skipped)`);
    read.push({ file, records });
  }
  // one dialect for the run, from all its steps' rows: an answer without a search carries no tag of its dialect
  const dialect = verlRunDialect(
    read.flatMap(({ records }) =>
      records.map((r) => ({ input: (r as { prompt?: unknown }).prompt, output: r.response })),
    ),
  );
  for (const { file, records } of read) {
    for (const r of records) {
      r.dialect = dialect;
      const report = formatOf(r);
      if (!report.formatOk) {
        out.formatErrors++;
        const codes = [...new Set(report.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code))];
        for (const c of codes) counts.set(c, (counts.get(c) ?? 0) + 1);
        if (shown++ < 5) log(`${file}: ${r.id}: format errors ${codes.join(', ')} (${r.dialect})`);
      }
      out.records.push(r);
    }
  }
  const dialects = new Map<string, number>();
  for (const r of out.records) dialects.set(r.dialect ?? 'coa', (dialects.get(r.dialect ?? 'coa') ?? 0) + 1);
  log(
    `convert: ${out.files} dump file(s); dialects ${[...dialects].map(([d, n]) => `${d} ${n}`).join(', ') || 'none'}; ` +
      `${out.formatErrors} record(s) with format errors${counts.size ? ` (${[...counts].map(([c, n]) => `${c} ×${n}`).join(', ')})` : ''}`,
  );
  return out;
}

/**
 * Which source a file looks like, from its name and its first bytes — for offering the conversion when such a
 * file is opened. null: not one of ours to convert (a trajectory file already, or something else).
 */
export function guessSource(path: string, head: string): ConvertSource | null {
  const ext = extname(path).toLowerCase();
  if (ext === '.parquet') return 'verl-parquet';
  const text = head.charCodeAt(0) === 0xfeff ? head.slice(1) : head;
  if (/<\|im_start\|>(system|user)\b/.test(text) && /<\|im_start\|>assistant\b/.test(text)) return 'search-r1';
  if (ext !== '.jsonl' && ext !== '.json') return null;
  const first = text.split('\n').find((l) => l.trim() !== '');
  if (!first) return null;
  if (looksLikeVerlDump(first)) return 'verl-rollouts';
  try {
    const value = JSON.parse(first) as unknown;
    const messages = Array.isArray(value) ? value : (value as { messages?: unknown } | null)?.messages;
    // A trajectory record has a `response`: already ours, nothing to convert.
    if (Array.isArray(messages) && !(value as { response?: unknown }).response) return 'openai';
  } catch {
    /* a first line cut by the head limit, or not JSON: not offered */
  }
  return null;
}
