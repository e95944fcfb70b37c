// The line index beside a rollouts file: which lines (and bytes) hold each step's records, so the editor reads a
// step's rows at their offsets instead of reading the file. One JSON line per write of one step's records:
//   {"step": 12, "line": 96, "offsets": [20480, 21011, …], "end": 24577}
// `line`: the 0-based line of the first record; `offsets`: where each record's line starts (the records are lines
// line, line+1, …); `end`: the byte just past the last one's newline, where the next entry starts. The trainer
// appends an entry after the step's records (coa_trainer/base/line_index.py, which reads this format from
// schemas/line-index.json): rollouts.coa.jsonl → rollouts.index.jsonl, flagged.coa.jsonl → flagged.index.jsonl.
// A file with no index (an older run, verl's or TRL's dumps), or one whose index does not describe it (written after
// its index, cut short, edited in the record view), is indexed here by parsing each line's `meta.step` — never by
// searching its text, which would tie the editor to how a writer spaces its JSON.
import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { parsePythonJson } from './pythonJson';

/** The name of a file's index: its `.coa.jsonl` (or `.jsonl`) replaced by this. */
export const LINE_INDEX_SUFFIX = '.index.jsonl';
/** The endings an indexed file's name loses for its index's (the first that matches). */
export const LINE_INDEX_REPLACES = ['.coa.jsonl', '.jsonl'] as const;

const count = () => z.number().int().nonnegative();
export const LineIndexEntrySchema = z
  .object({
    step: count().describe('meta.step of the records of this write.'),
    line: count().describe('0-based line of the first record in the indexed file.'),
    offsets: z.array(count()).min(1).describe("Byte offset of each record's line, in order (lines line, line+1, …)."),
    end: count().describe("Byte offset just past the last record's newline: where the next entry starts."),
  })
  .strict();
export type LineIndexEntry = z.infer<typeof LineIndexEntrySchema>;

/** `runs/r/stages/rl2/rollouts.coa.jsonl` → `runs/r/stages/rl2/rollouts.index.jsonl`. */
export function lineIndexPath(file: string): string {
  const ending = LINE_INDEX_REPLACES.find((e) => file.endsWith(e));
  return `${ending ? file.slice(0, -ending.length) : file}${LINE_INDEX_SUFFIX}`;
}

/** Where a row is: its 0-based line, byte offset and length without the terminator. */
export interface RowAt {
  line: number;
  offset: number;
  length: number;
}

/** A row read back: where it is, its text and its parsed value. */
export interface StepRow extends RowAt {
  text: string;
  value: unknown;
}

/** meta.step of a parsed record, when it is an integer. */
export function stepOf(value: unknown): number | undefined {
  const step = (value as { meta?: { step?: unknown } } | null)?.meta?.step;
  return typeof step === 'number' && Number.isInteger(step) ? step : undefined;
}

/** A JSON line as Python writes it (NaN read as null), or undefined when it is not JSON. */
function parseLine(text: string): unknown {
  try {
    return parsePythonJson(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return undefined;
  }
}

/**
 * The entries of an index text that describe a file of `size` bytes, in order: each after the one before (lines and
 * bytes; a line between two entries holds no record with a step, as when the trainer indexed a file it found
 * without an index), its offsets increasing inside its span, none past `size`. The longest such run from the first
 * entry is kept: a torn last line or a stale entry (a file cut back on resume) ends it.
 */
export function chainedEntries(text: string, size: number): LineIndexEntry[] {
  const out: LineIndexEntry[] = [];
  let line = 0;
  let end = 0;
  for (const raw of text.split('\n')) {
    if (!raw.trim()) continue;
    const parsed = LineIndexEntrySchema.safeParse(parseLine(raw));
    if (!parsed.success) break;
    const e = parsed.data;
    const inside = e.offsets.every((o, i) => o < e.end && (i === 0 ? o >= end : o > e.offsets[i - 1]));
    if (e.line < line || !inside || e.end > size) break;
    out.push(e);
    line = e.line + e.offsets.length;
    end = e.end;
  }
  return out;
}

/**
 * One file's rows by step, kept up to date as the file grows: from its line index where the index is at least as new
 * as the file and describes it, the rest (or all) by parsing lines. A file that shrank or changed in place (the
 * bytes before the part already indexed differ) is indexed again. Rows whose parsed step is not the one the index
 * says make the index distrusted and the file parsed. Not thread-safe; one per file per reader.
 */
export class StepIndex {
  private steps = new Map<number, RowAt[]>();
  private byLine = new Map<number, RowAt>();
  /** Bytes and lines indexed so far (whole lines only), and the bytes just before `covered` as they were read. */
  private covered = 0;
  private lines = 0;
  private tail = Buffer.alloc(0);
  /** The file's mtime when it was last read up to `covered`: a same-size file with another mtime was edited in place. */
  private readMtime = -1;
  private useIndex = true;
  /** How the last refresh went: the entries taken from the index file and the bytes parsed (for tests and logs). */
  last = { fromIndex: 0, parsedBytes: 0 };

  constructor(
    readonly file: string,
    readonly indexFile = lineIndexPath(file),
  ) {}

  /** The rows of `step`, read back and parsed, in file order; rows that do not parse are left out. */
  async rowsOf(step: number): Promise<StepRow[]> {
    await this.refresh();
    let rows = await this.read(this.steps.get(step) ?? []);
    if (rows.some((r) => stepOf(r.value) !== step) && this.useIndex) {
      // The index said these lines were the step's and they are not: the file is not what it describes.
      this.useIndex = false;
      this.reset();
      await this.refresh();
      rows = await this.read(this.steps.get(step) ?? []);
    }
    return rows.filter((r) => r.value !== undefined && stepOf(r.value) === step);
  }

  /** Where 0-based line `line` is, when indexed (a line holding a record with a step). */
  async locate(line: number): Promise<RowAt | undefined> {
    await this.refresh();
    return this.byLine.get(line);
  }

  /** The steps indexed, ascending. */
  async stepList(): Promise<number[]> {
    await this.refresh();
    return [...this.steps.keys()].sort((a, b) => a - b);
  }

  private reset(): void {
    this.steps = new Map();
    this.byLine = new Map();
    this.covered = 0;
    this.lines = 0;
    this.tail = Buffer.alloc(0);
    this.readMtime = -1;
  }

  private add(step: number | undefined, row: RowAt): void {
    this.byLine.set(row.line, row);
    if (step === undefined) return;
    const list = this.steps.get(step);
    if (list) list.push(row);
    else this.steps.set(step, [row]);
  }

  /** Brings the rows up to the file as it is now. A missing file has no rows. */
  async refresh(): Promise<void> {
    this.last = { fromIndex: 0, parsedBytes: 0 };
    let size: number;
    let mtime: number;
    try {
      const st = await stat(this.file);
      size = st.size;
      mtime = st.mtimeMs;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return this.reset();
      throw e;
    }
    if (size < this.covered) {
      // Cut back (a resumed stage truncates what it is about to redo): a new history, whose index may hold again.
      this.useIndex = true;
      this.reset();
    } else if ((size === this.covered && mtime !== this.readMtime) || !(await this.sameTail())) this.reset();
    this.readMtime = mtime;
    if (size === this.covered) return;
    if (this.useIndex) await this.takeIndex(size, mtime);
    if (size > this.covered) await this.parse(size);
  }

  /** Whether the bytes before `covered` are still those read (an in-place edit changes them). */
  private async sameTail(): Promise<boolean> {
    if (!this.tail.length) return true;
    const fh = await open(this.file, 'r');
    try {
      const buf = Buffer.alloc(this.tail.length);
      const { bytesRead } = await fh.read(buf, 0, buf.length, this.covered - this.tail.length);
      return bytesRead === buf.length && buf.equals(this.tail);
    } finally {
      await fh.close();
    }
  }

  /** The index's entries that continue from `covered`, when the index is at least as new as the file. */
  private async takeIndex(size: number, mtime: number): Promise<void> {
    let text: string;
    try {
      // Written after the records it describes: an index older than the file does not describe what was written
      // since (the record view saved an edit, a writer without the index appended).
      if ((await stat(this.indexFile)).mtimeMs < mtime) return;
      text = await readFile(this.indexFile, 'utf8');
    } catch {
      return;
    }
    const chain = chainedEntries(text, size);
    // Part of an entry's step already parsed (read while the trainer was writing it): go on parsing from there.
    if (chain.some((e) => e.offsets[0] < this.covered && e.end > this.covered)) return;
    const entries = chain.filter((e) => e.offsets[0] >= this.covered);
    if (!entries.length || entries[0].line < this.lines) return;
    for (const e of entries) {
      e.offsets.forEach((offset, i) => {
        const next = i + 1 < e.offsets.length ? e.offsets[i + 1] : e.end;
        this.add(e.step, { line: e.line + i, offset, length: next - offset - 1 });
      });
      this.covered = e.end;
      this.lines = e.line + e.offsets.length;
    }
    this.last.fromIndex = entries.length;
    await this.keepTail();
  }

  /** Indexes the whole lines from `covered` to `size` by parsing each one's meta.step. */
  private async parse(size: number): Promise<void> {
    const start = this.covered;
    let offset = start;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const stream = createReadStream(this.file, { start, end: size - 1, highWaterMark: 1 << 20 });
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let from = 0;
      for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, from)) {
        const piece = chunk.subarray(from, nl);
        const bytes = pendingBytes ? Buffer.concat([...pending, piece]) : piece;
        pending = [];
        pendingBytes = 0;
        const length = bytes.length > 0 && bytes[bytes.length - 1] === 13 ? bytes.length - 1 : bytes.length;
        const text = bytes.toString('utf8', 0, length);
        this.add(text.trim() ? stepOf(parseLine(text)) : undefined, { line: this.lines, offset, length });
        this.lines++;
        offset += bytes.length + 1;
        from = nl + 1;
      }
      if (from < chunk.length) {
        pending.push(chunk.subarray(from));
        pendingBytes += chunk.length - from;
      }
    }
    // A last line without its newline may still be being written: it is indexed once it ends.
    this.covered = offset;
    this.last.parsedBytes = offset - start;
    await this.keepTail();
  }

  private async keepTail(): Promise<void> {
    const n = Math.min(256, this.covered);
    if (!n) return void (this.tail = Buffer.alloc(0));
    const fh = await open(this.file, 'r');
    try {
      const buf = Buffer.alloc(n);
      const { bytesRead } = await fh.read(buf, 0, n, this.covered - n);
      this.tail = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }

  /** The rows' bytes, read at their offsets (one read per run of adjacent rows), parsed. */
  private async read(rows: RowAt[]): Promise<StepRow[]> {
    if (!rows.length) return [];
    const fh = await open(this.file, 'r');
    try {
      const out: StepRow[] = [];
      for (let i = 0; i < rows.length; ) {
        let j = i;
        while (j + 1 < rows.length && rows[j + 1].line === rows[j].line + 1) j++;
        const from = rows[i].offset;
        const to = rows[j].offset + rows[j].length;
        const buf = Buffer.alloc(to - from);
        const { bytesRead } = await fh.read(buf, 0, buf.length, from);
        for (const r of rows.slice(i, j + 1)) {
          const text = buf.toString('utf8', r.offset - from, Math.min(bytesRead, r.offset - from + r.length));
          out.push({ ...r, text, value: parseLine(text) });
        }
        i = j + 1;
      }
      return out;
    } finally {
      await fh.close();
    }
  }
}
