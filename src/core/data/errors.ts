// One error for bad data: which file, line, column and field, and what is wrong. Printed as
// `FILE:LINE:COL: error: FIELD: message` by the CLI and shown as-is by the editor.
export class DataError extends Error {
  constructor(
    readonly file: string,
    /** 1-based line (JSONL) or row number + 1 (parquet). */
    readonly line: number,
    /** 1-based column in the line (UTF-16 units); 1 when the format has no columns. */
    readonly column: number,
    /** The field at fault, e.g. `golden_answers`, `reward_model.ground_truth`, `record`. */
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${file}:${line}:${column}: error: ${field}: ${detail}`);
    this.name = 'DataError';
  }
}

export interface DataErrorLocation {
  file: string;
  line: number;
  column: number;
  field: string;
  message: string;
}

/** `FILE:LINE:COL: error: FIELD: message` (a DataError as the data commands print it) → its parts; null for anything else. */
export function parseDataErrorLine(text: string): DataErrorLocation | null {
  const m = /^(.+?):(\d+):(\d+): error: ([^:]+): (.*)$/m.exec(text.trim());
  if (!m) return null;
  return { file: m[1], line: Number(m[2]), column: Number(m[3]), field: m[4], message: m[5] };
}

/** Where a file's line came from, as the prepared records carry it. */
export interface Origin {
  file: string;
  line: number;
}

/** A short name for a JSON value's type, for messages. */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : typeof value;
}
