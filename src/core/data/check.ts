// `coa data check`: every file a run config's data section names (and model.path, stages.*.init_from), read through
// the same importers training uses, before training starts. Paths are relative to the config file's directory, as
// for the trainer and the extension (CONFIG_PATH_FIELDS in paths.ts).
import { readFileSync, statSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { parse, type ParseError } from 'jsonc-parser';
import { dirname, isAbsolute, resolve } from 'node:path';
import { CONFIG_MAX_NESTING, RunConfigSchema, type RunConfig } from '../config';
import { applyOverrides, Override, OverrideError, parseOverride } from '../overrides';
import { firstInvalidUtf8, tooDeepAt } from '../jsonl';
import { readCorpus } from '../corpus';
import { DataError } from './errors';
import { configError, lineColumn, mostSpecificIssue } from './configErrors';
import { describeFsError } from '../fsErrors';
import { emptyIdReport, IdReport, idSummary } from './ids';
import { modelDirProblem } from './model';
import { buildPairs, emptyPairReport, PairReport, readPairInputs } from './pairs';
import { readQuestions } from './questions';
import { emptySftSummary, readSft, SftRecord, SftSummary } from './sft';

export interface DataFileCheck {
  /** Where in the config, e.g. `data.questions.train`, `data.sft.0`. */
  key: string;
  path: string;
  kind: 'questions' | 'sft' | 'pairs' | 'corpus' | 'model';
  count: number;
  summary?: SftSummary | PairReport;
  /** Questions: what happened to repeated ids (absent when none repeat). */
  ids?: IdReport;
}

export interface CheckResult {
  config: string;
  /** false: no data section, the embedded benchmark. */
  data: boolean;
  files: DataFileCheck[];
  /** Pairs built from data.sft when data.sft1_pairs is not given. */
  built_pairs?: PairReport;
  /** What the data leaves some stage without (no SFT data, no SFT-1 pair): not errors, a run may not need it. */
  warnings: string[];
}

/**
 * Parse and validate the config file with the command line's `key=value` overrides; errors point into the file or
 * name the override (`command line:N:1`, N the override's position). The file is read as the trainer reads it
 * (coa_trainer/base/config.py; both run test/conformance/run-configs.json): UTF-8, a byte order mark at its start
 * skipped, invalid UTF-8 an error at the first bad byte, JSON nested deeper than CONFIG_MAX_NESTING an error at the bracket
 * that goes too deep (found before anything parses or walks it), then the schema.
 */
export function loadRunConfig(
  configPath: string,
  overrideArgs: string[] = [],
): { config: RunConfig; raw: string; overrides: Override[] } {
  const overrides = overrideArgs.map((text, i) => {
    try {
      return parseOverride(text);
    } catch (e) {
      if (e instanceof OverrideError)
        throw new DataError('command line', i + 1, 1, e.key || text, `${e.detail} (override ${text})`);
      throw e;
    }
  });
  const raw = readConfigText(configPath);
  const deep = tooDeepAt(raw, CONFIG_MAX_NESTING);
  if (deep >= 0) {
    const at = lineColumn(raw, deep);
    throw new DataError(configPath, at.line, at.column, 'config', `nested deeper than ${CONFIG_MAX_NESTING} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    const message = (e as Error).message;
    let pos = jsonErrorOffset(raw, message);
    if (raw[pos - 1] === '-' && raw.startsWith('Infinity', pos)) pos--; // the parser stops after the sign
    const { line, column } = lineColumn(raw, pos);
    const constant = /^-?(NaN|Infinity)/.exec(raw.slice(pos))?.[0];
    // Python's json reads these (the trainer refuses them with the same words); JSON has no such numbers.
    if (constant)
      throw new DataError(
        configPath,
        line,
        column,
        'config',
        `${constant} is not a number JSON allows: give a finite number`,
      );
    throw new DataError(
      configPath,
      line,
      column,
      'config',
      `not valid JSON (${message.replace(/ in JSON at position \d+.*$/, '').replace(/, ".*" is not valid JSON$/s, '')})`,
    );
  }
  try {
    // Without overrides the file is checked as it is (applyOverrides reads a null file as {}, which the trainer refuses).
    if (overrides.length) value = applyOverrides(value, overrides);
  } catch (e) {
    if (e instanceof OverrideError)
      throw new DataError(
        'command line',
        overrides.findIndex((o) => o.text === e.text) + 1,
        1,
        e.key,
        `${e.detail} (override ${e.text})`,
      );
    throw e;
  }
  const parsed = RunConfigSchema.safeParse(value);
  if (!parsed.success) {
    const issue = mostSpecificIssue(parsed.error.issues);
    throw configError(configPath, raw, issue.path as (string | number)[], issue.message, overrides);
  }
  return { config: parsed.data, raw, overrides };
}

/** The config file as text: UTF-8 without its byte order mark. Unreadable or not UTF-8 → a DataError. */
function readConfigText(configPath: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(configPath);
  } catch (e) {
    throw new DataError(
      configPath,
      1,
      1,
      'config',
      (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : describeFsError(e),
    );
  }
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const body = bytes.subarray(bom);
  if (!isUtf8(body)) {
    const bad = firstInvalidUtf8(body);
    const lineStart = body.lastIndexOf(10, bad - 1) + 1;
    const line = countNewlines(body, bad) + 1;
    const column = body.toString('utf8', lineStart, bad).length + 1;
    throw new DataError(
      configPath,
      line,
      column,
      'config',
      `not UTF-8 (byte 0x${body[bad].toString(16).padStart(2, '0')}): save the file as UTF-8`,
    );
  }
  return body.toString('utf8');
}

function countNewlines(b: Buffer, end: number): number {
  let n = 0;
  for (let i = b.indexOf(10); i >= 0 && i < end; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/** Where JSON.parse failed: its "at position N" when it says one, else where a JSON parser finds the first error. */
function jsonErrorOffset(text: string, message: string): number {
  const said = /at position (\d+)/.exec(message);
  if (said) return Number(said[1]);
  const errors: ParseError[] = [];
  parse(text, errors, { allowTrailingComma: false, disallowComments: true });
  return errors.length ? errors[0].offset : text.length;
}

/** Resolve a config path against the config file's directory. */
export function resolveDataPath(configPath: string, p: string): string {
  return isAbsolute(p) ? p : resolve(dirname(configPath), p);
}

/** Check every file; throws the first DataError. */
export async function checkRunConfig(configPath: string, overrideArgs: string[] = []): Promise<CheckResult> {
  const { config, raw, overrides } = loadRunConfig(configPath, overrideArgs);
  const result: CheckResult = { config: configPath, data: config.data !== null, files: [], warnings: [] };
  const file = (key: string, p: string): string => {
    const full = resolveDataPath(configPath, p);
    const path = key.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k));
    let st;
    try {
      st = statSync(full);
    } catch (e) {
      throw configError(configPath, raw, path, `${describeFsError(e)}: ${full}`, overrides);
    }
    if (st.isDirectory())
      throw configError(configPath, raw, path, `is a directory, expected a file: ${full}`, overrides);
    return full;
  };
  if (config.model.path) {
    const dir = resolveDataPath(configPath, config.model.path);
    const problem = modelDirProblem(dir);
    if (problem) throw configError(configPath, raw, ['model', 'path'], problem, overrides);
    result.files.push({ key: 'model.path', path: dir, kind: 'model', count: 1 });
  }
  for (const [stage, section] of Object.entries(config.stages)) {
    const from = (section as { init_from?: string | null }).init_from;
    if (!from) continue;
    const dir = resolveDataPath(configPath, from);
    const problem = modelDirProblem(dir);
    if (problem) throw configError(configPath, raw, ['stages', stage, 'init_from'], problem, overrides);
    result.files.push({ key: `stages.${stage}.init_from`, path: dir, kind: 'model', count: 1 });
  }
  const data = config.data;
  if (!data) return result;
  for (const split of ['train', 'dev', 'test'] as const) {
    const p = data.questions[split];
    if (!p) continue;
    const full = file(`data.questions.${split}`, p);
    let count = 0;
    const ids = emptyIdReport();
    for await (const _ of readQuestions(full, { strictIds: data.strict_ids, ids })) count++;
    if (count === 0) throw new DataError(full, 1, 1, 'record', 'no questions in this file');
    result.files.push({
      key: `data.questions.${split}`,
      path: full,
      kind: 'questions',
      count,
      ...(idSummary(ids) ? { ids } : {}),
    });
  }
  const trajectories: SftRecord[] = [];
  for (const [i, entry] of data.sft.entries()) {
    const spec = typeof entry === 'string' ? { path: entry, dialect: 'auto' as const } : entry;
    const full = file(`data.sft.${i}${typeof entry === 'string' ? '' : '.path'}`, spec.path);
    const summary = emptySftSummary();
    for await (const r of readSft(full, spec.dialect, summary)) if (!data.sft1_pairs) trajectories.push(r);
    if (summary.records === 0) throw new DataError(full, 1, 1, 'record', 'no trajectories in this file');
    result.files.push({ key: `data.sft.${i}`, path: full, kind: 'sft', count: summary.records, summary });
  }
  if (data.sft1_pairs) {
    const full = file('data.sft1_pairs', data.sft1_pairs);
    const report = emptyPairReport();
    const built = [];
    for await (const input of readPairInputs(full, 'auto', report))
      if ('trajectory' in input) built.push(input.trajectory);
    buildPairs(built, 1, report);
    if (report.pairs === 0)
      throw new DataError(
        full,
        1,
        1,
        'record',
        'no pairs in this file (and none could be built from its trajectories)',
      );
    result.files.push({ key: 'data.sft1_pairs', path: full, kind: 'pairs', count: report.pairs, summary: report });
  } else if (trajectories.length) {
    result.built_pairs = emptyPairReport();
    buildPairs(trajectories, 1, result.built_pairs);
    if (result.built_pairs.pairs === 0) {
      result.warnings.push(
        `SFT-1 pairs built from data.sft: 0 — no question has both a correct and a wrong trajectory (skipped: ${JSON.stringify(result.built_pairs.skipped_questions)}), so SFT-1 has nothing to train on; give data.sft1_pairs or collect first`,
      );
    }
  }
  if (!data.sft.length && !data.sft1_pairs) {
    result.warnings.push(
      'no SFT data (data.sft and data.sft1_pairs are empty): SFT-1/2/3 have nothing to train on unless this run collects first (coa_trainer collect); RL and eval need only data.questions',
    );
  }
  if (data.corpus) {
    const full = file('data.corpus', data.corpus);
    let count = 0;
    for await (const _ of readCorpus(full, (bad) => {
      throw new DataError(full, bad.line, 1, corpusField(bad.message), bad.message.replace(/^field "\w+" /, ''));
    }))
      count++;
    if (count === 0) throw new DataError(full, 1, 1, 'record', 'no passages in this corpus');
    result.files.push({ key: 'data.corpus', path: full, kind: 'corpus', count });
  }
  return result;
}

function corpusField(message: string): string {
  const m = /^field "(\w+)"/.exec(message);
  return m ? m[1] : 'record';
}
