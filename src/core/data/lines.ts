// JSON lines for the data importers: every line numbered (blank ones too, so numbers match an editor), parsed,
// and a line that is not a JSON object reported as a DataError. Streams, so large files stay in constant memory.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { locate, nestingProblem } from '../jsonl';
import { DataError, typeName } from './errors';

export interface JsonLine {
  line: number;
  raw: string;
  value: Record<string, unknown>;
}

export async function* readJsonObjects(file: string): AsyncGenerator<JsonLine> {
  const rl = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let line = 0;
  for await (let raw of rl) {
    line++;
    if (line === 1 && raw.charCodeAt(0) === 0xfeff) raw = raw.slice(1); // BOM
    if (raw.includes('\u0000')) throw new DataError(file, line, raw.indexOf('\u0000') + 1, 'record', 'binary data, not a JSONL text file');
    if (raw.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      const message = (e as Error).message;
      const pos = Number(/at position (\d+)/.exec(message)?.[1] ?? NaN);
      const col = Number.isFinite(pos) ? pos + 1 : Math.max(1, raw.length);
      throw new DataError(file, line, col, 'record', `not valid JSON (${message.replace(/ in JSON at position \d+.*$/, '')})`);
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
