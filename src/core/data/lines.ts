// JSON lines for the data importers: every line numbered (blank ones too, so numbers match an editor), parsed,
// and a line that is not a JSON object reported as a DataError. Lines come from the core's byte-level reader
// (`readJsonl`), so invalid UTF-8 is an error at its column, never replaced silently by U+FFFD, and a BOM or CRLF is
// handled as everywhere else. Streams, so large files stay in constant memory.
import { JsonlEntry, locate, nestingProblem, readJsonl } from '../jsonl';
import { DataError, typeName } from './errors';

export interface JsonLine {
  line: number;
  raw: string;
  value: Record<string, unknown>;
}

/** The reader's line, unparsed: this module parses it itself (a data row is not a trajectory record). */
const keepLine = (raw: string, line: number, offset = 0, byteLength = 0): JsonlEntry => ({
  line,
  offset,
  byteLength,
  raw,
});

export async function* readJsonObjects(file: string): AsyncGenerator<JsonLine> {
  for await (const entry of readJsonl(file, { parse: keepLine })) {
    const { line, problem } = entry;
    if (problem)
      throw new DataError(
        file,
        line,
        problem.column,
        'record',
        problem.code === 'COA104' ? 'binary data, not a JSONL text file' : problem.message,
      );
    let raw = entry.raw;
    if (raw.charCodeAt(0) === 0xfeff) raw = raw.slice(1); // a BOM left inside the file (files joined with cat)
    if (raw.includes('\u0000'))
      throw new DataError(file, line, raw.indexOf('\u0000') + 1, 'record', 'binary data, not a JSONL text file');
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      const message = (e as Error).message;
      const pos = Number(/at position (\d+)/.exec(message)?.[1] ?? NaN);
      const col = Number.isFinite(pos) ? pos + 1 : Math.max(1, raw.length);
      throw new DataError(
        file,
        line,
        col,
        'record',
        `not valid JSON (${message.replace(/ in JSON at position \d+.*$/, '')})`,
      );
    }
    const deep = nestingProblem(raw, value); // before anything walks it recursively (locate, zod, JSON.stringify)
    if (deep) throw new DataError(file, line, deep.column, 'record', `not valid JSON here: ${deep.message}`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new DataError(file, line, 1, 'record', `expected a JSON object, got ${typeName(value)}`);
    }
    yield { line, raw, value: value as Record<string, unknown> };
  }
}

/** A DataError pointing at `path` inside the line (the value when present, else the enclosing object). */
export function fieldError(file: string, l: JsonLine, path: (string | number)[], message: string): DataError {
  const at = locate(l.raw, path);
  return new DataError(file, l.line, at.start + 1, path.join('.') || 'record', message);
}
