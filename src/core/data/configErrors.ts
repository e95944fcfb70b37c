// Where a run config is wrong, as a DataError naming the file, line, column and field (or the command line's
// override that set it): shared by `coa data check` (check.ts, which reads the file) and the editor, which checks a
// user's *.run.json before copying it into a run directory. Light on purpose: the extension bundles it without the
// data readers.
import { RunConfigSchema, type RunConfigInput } from '../config';
import { Override, overrideFor } from '../overrides';
import { locate } from '../jsonl';
import { DataError } from './errors';

/**
 * A config already parsed (`raw`: the text of `configPath` it was read from, JSON with comments allowed, to name the
 * line and column), checked by the schema and kept as written — the editor copies a user's *.run.json into a run
 * directory without filling in the defaults. Throws the DataError of its first problem, as `coa data check` does.
 */
export function checkedRunConfigInput(configPath: string, raw: string, value: unknown): RunConfigInput {
  const parsed = RunConfigSchema.safeParse(value);
  if (!parsed.success) {
    const issue = mostSpecificIssue(parsed.error.issues);
    throw configError(configPath, raw, issue.path as (string | number)[], issue.message);
  }
  // The schema accepted it: the value is what a config file may say (the schema's input type).
  return value as RunConfigInput;
}

/**
 * The issue to report: the first one's field, and of that field's issues the last — a setting's own range is
 * checked after the general number bound (configZod), and "at most 1" says more than "at most 2^53 − 1".
 */
export function mostSpecificIssue<T extends { path: PropertyKey[] }>(issues: readonly T[]): T {
  const key = issues[0].path.join('\u0000');
  return issues.filter((i) => i.path.join('\u0000') === key).at(-1)!;
}

export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}

export function configError(
  configPath: string,
  raw: string,
  path: (string | number)[],
  message: string,
  overrides: Override[] = [],
): DataError {
  const given = overrideFor(overrides, path);
  if (given)
    return new DataError(
      'command line',
      overrides.indexOf(given) + 1,
      1,
      path.join('.') || given.path.join('.'),
      `${message} (override ${given.text})`,
    );
  const at = lineColumn(raw, locate(raw, path).start);
  return new DataError(configPath, at.line, at.column, path.join('.') || 'config', message);
}
