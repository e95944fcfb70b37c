// verl rollout dumps (`trainer.rollout_data_dir` / `trainer.validation_data_dir`) → records. verl writes one file per
// step, `<dir>/<global_step>.jsonl`, one JSON object per sample with `input` (the prompt, decoded with special tokens
// skipped), `output` (the response, decoded the same way), `gts` (`reward_model.ground_truth`), `score` (the sequence
// reward), `step`, and every extra key the reward function returned with as many values as samples (and `request_id`
// when present) — verl/trainer/ppo/ray_trainer.py `_dump_generations` / `_log_rollout_data` (volcengine/verl
// b178a3cd56f58b2d502255daba591e92833930a7). No token ids or masks are dumped (they never leave the agent loop).
//
// A record per sample: id `verl-<step>-<i>`, the question taken out of the prompt, the golden answers out of `gts`,
// the response as written (in the run's dialect: verlRunDialect), `meta` {engine, stage, step, sample, group} where
// samples of the same prompt in one file share a group (GRPO's group), and verl's own numbers under `verl`
// {score, ...extra keys} so nothing is lost.
import { detectDialect, type DialectName } from '../dialects';
import type { TrajectoryRecord } from '../record';
import { extractQuestion, goldenAnswers } from './verl-parquet';
import { parseRecordLine, type JsonlEntry } from '../jsonl';
import { parsePythonJson } from '../pythonJson';

type Row = Record<string, unknown>;

export interface VerlRolloutIssue {
  line: number;
  column: number;
  message: string;
}

/** Is this parsed line a verl dump row? (input and output strings and a numeric step; the notebook sniffs with it.) */
export function isVerlRolloutRow(value: unknown): value is Row {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const o = value as Row;
  return (
    typeof o.input === 'string' &&
    typeof o.output === 'string' &&
    'gts' in o &&
    'score' in o &&
    typeof o.step === 'number' &&
    !('response' in o)
  );
}

/** Checks one row's fields; the message names the first bad field. */
export function checkVerlRow(o: Row): string | null {
  for (const key of ['input', 'output'] as const)
    if (typeof o[key] !== 'string') return `${key}: expected a string, got ${describe(o[key])}`;
  if (!('gts' in o)) return 'gts: missing (verl writes reward_model.ground_truth here)';
  if (typeof o.score !== 'number' && o.score !== null) return `score: expected a number, got ${describe(o.score)}`;
  if (typeof o.step !== 'number' || !Number.isInteger(o.step))
    return `step: expected an integer, got ${describe(o.step)}`;
  return null;
}

const describe = (v: unknown) =>
  v === undefined ? 'nothing' : v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v;

/** The question in a decoded verl prompt: after the dataset's marker, or the last user turn, without the assistant cue. */
export function questionOfPrompt(input: string): string {
  // Chat templates decoded with special tokens skipped leave the role names on their own lines ("user\n…\nassistant\n").
  const text = input.replace(/\n?assistant\s*(<think>\s*)?$/, '');
  const marked = extractQuestion(text);
  if (marked !== text.trim()) return marked;
  const at = text.lastIndexOf('\nuser\n');
  return (at >= 0 ? text.slice(at + 6) : text).trim();
}

const RESERVED = new Set(['input', 'output', 'gts', 'score', 'step']);

/**
 * The dialect of a verl run, from all of its rows rather than each answer alone: an answer that did not search has
 * none of its dialect's tool tags, and on its own reads as `coa` (a Search-R1 run split into "search-r1" and "coa" in
 * `coa stats`). The dialect most answers show by a tag of their own; else the one the prompts teach (Search-R1's and
 * AutoCoA's instructions name their tags); else `coa`.
 */
export function verlRunDialect(rows: readonly { input?: unknown; output?: unknown }[]): DialectName {
  const vote = (texts: unknown[]): DialectName | null => {
    const counts = new Map<DialectName, number>();
    for (const t of texts) {
      if (typeof t !== 'string') continue;
      const d = detectDialect(t);
      if (d !== 'coa') counts.set(d, (counts.get(d) ?? 0) + 1);
    }
    let best: DialectName | null = null;
    for (const [d, n] of counts) if (best === null || n > counts.get(best)!) best = d;
    return best;
  };
  return vote(rows.map((r) => r.output)) ?? vote(rows.map((r) => r.input)) ?? 'coa';
}

/** One dump row → a record. `group` numbers the distinct prompts of the file in order of first appearance; `dialect`
 * is the run's (verlRunDialect), else the row's own answer decides. */
export function verlRowToRecord(o: Row, index: number, group: number, dialect?: DialectName): TrajectoryRecord {
  const step = o.step as number;
  const verl: Row = { score: o.score };
  for (const [k, v] of Object.entries(o)) if (!RESERVED.has(k)) verl[k] = v;
  const response = o.output as string;
  return {
    id: `verl-${step}-${index}`,
    question: questionOfPrompt(o.input as string),
    golden_answers: goldenAnswers(o.gts),
    response,
    dialect: dialect ?? detectDialect(response),
    meta: { engine: 'verl', stage: 'verl', step, sample: index, group: `${step}-g${group}` },
    prompt: o.input,
    verl,
  } as TrajectoryRecord;
}

/**
 * Every record of one dump file's text, and the lines that are not dump rows (file:line:column with the field).
 * Groups: rows with the same `uid` key when the reward returned one, else the same prompt text.
 */
export function importVerlRollouts(
  text: string,
  dialect?: DialectName,
): { records: TrajectoryRecord[]; issues: VerlRolloutIssue[] } {
  const rows: Row[] = [];
  const issues: VerlRolloutIssue[] = [];
  const groups = new Map<string, number>();
  let index = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.trim()) return;
    let value: unknown;
    try {
      value = parsePythonJson(line);
    } catch (e) {
      const m = /position (\d+)/.exec((e as Error).message);
      issues.push({ line: i + 1, column: m ? Number(m[1]) + 1 : 1, message: `invalid JSON: ${(e as Error).message}` });
      return;
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      issues.push({ line: i + 1, column: 1, message: 'expected a JSON object (a verl rollout row)' });
      return;
    }
    const problem = checkVerlRow(value as Row);
    if (problem) {
      const key = problem.split(':')[0];
      const at = line.indexOf(`"${key}"`);
      issues.push({ line: i + 1, column: at >= 0 ? at + 1 : 1, message: problem });
      return;
    }
    rows.push(value as Row);
  });
  const runDialect = dialect ?? verlRunDialect(rows);
  const records = rows.map((o) => {
    const key = typeof o.uid === 'string' ? `uid:${o.uid}` : `input:${o.input as string}`;
    if (!groups.has(key)) groups.set(key, groups.size);
    return verlRowToRecord(o, index++, groups.get(key)!, runDialect);
  });
  return { records, issues };
}

/** verl's own correctness of a sample: its `acc` / `em` key when the reward returned one, else score > 0. */
export function verlCorrect(record: TrajectoryRecord): boolean {
  const v = (record as { verl?: Row }).verl ?? {};
  for (const key of ['acc', 'em'])
    if (typeof v[key] === 'number' || typeof v[key] === 'boolean') return Number(v[key]) > 0;
  return typeof v.score === 'number' && v.score > 0;
}

/**
 * Per-step signals for the alerts from one step's dump: the fraction of groups with no correct sample, and the
 * format-error rate when the reward reported `format_ok` (CoA's reward module does).
 */
export function stepSignals(records: TrajectoryRecord[]): Record<string, number> {
  if (!records.length) return {};
  const byGroup = new Map<string, boolean>();
  let formatKnown = 0;
  let formatBad = 0;
  for (const r of records) {
    const g = String(r.meta?.group ?? r.id);
    byGroup.set(g, (byGroup.get(g) ?? false) || verlCorrect(r));
    const ok = ((r as { verl?: Row }).verl ?? {}).format_ok;
    if (typeof ok === 'number' || typeof ok === 'boolean') {
      formatKnown++;
      if (!ok) formatBad++;
    }
  }
  const out: Record<string, number> = {
    all_wrong_groups: [...byGroup.values()].filter((c) => !c).length / byGroup.size,
  };
  if (formatKnown) out.format_error_rate = formatBad / formatKnown;
  return out;
}

/** `<dir>/<step>.jsonl` names of a dump directory, in step order. */
export function dumpFiles(names: string[]): { step: number; name: string }[] {
  return names
    .flatMap((name) => (/^\d+\.jsonl$/.test(name) ? [{ step: Number(name.slice(0, -6)), name }] : []))
    .sort((a, b) => a.step - b.step);
}

export interface VerlStepItem {
  id: string;
  /** 0-based line in the dump file. */
  line: number;
  question: string;
  reward: number | null;
  toolCalls: number | null;
}

/** The rows of one step's dump as the live panel lists them (ids as importVerlRollouts numbers them). */
export function verlStepItems(text: string, limit = 500): { items: VerlStepItem[]; total: number } {
  const items: VerlStepItem[] = [];
  let total = 0;
  text.split('\n').forEach((raw, line) => {
    if (!raw.trim()) return;
    let o: unknown;
    try {
      o = parsePythonJson(raw);
    } catch {
      return;
    }
    if (!isVerlRolloutRow(o) || checkVerlRow(o)) return;
    const index = total++;
    if (items.length >= limit) return;
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    items.push({
      id: `verl-${o.step as number}-${index}`,
      line,
      question: questionOfPrompt(o.input as string),
      reward: num(o.score),
      toolCalls: num(o.tool_calls),
    });
  });
  return { items, total };
}

/**
 * A line parser for readers of a file known to be a verl dump: one JSON.parse per line and the row made a record
 * directly (the general parseRecordLine would first fail the record schema, the costly path, then be redone here).
 * A line that is not a dump row goes through parseRecordLine, so its error is reported as for any JSONL file.
 */
export function verlLineParser(
  dialect?: DialectName,
): (raw: string, line: number, offset?: number, byteLength?: number) => JsonlEntry {
  const groups = new Map<string, number>();
  return (raw, line, offset = 0, byteLength = Buffer.byteLength(raw)) => {
    let value: unknown;
    try {
      value = parsePythonJson(raw);
    } catch {
      return parseRecordLine(raw, line, offset, byteLength);
    }
    if (!isVerlRolloutRow(value) || checkVerlRow(value)) return parseRecordLine(raw, line, offset, byteLength);
    const key = typeof value.uid === 'string' ? `uid:${value.uid}` : `input:${value.input as string}`;
    if (!groups.has(key)) groups.set(key, groups.size);
    return { line, offset, byteLength, raw, record: verlRowToRecord(value, line - 1, groups.get(key)!, dialect) };
  };
}

/** A dump line's `input` and `output`, for verlRunDialect ({} for a line that is not a row). */
export function dumpRow(raw: string): { input?: unknown; output?: unknown } {
  try {
    const v = parsePythonJson(raw) as { input?: unknown; output?: unknown } | null;
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** Is this text (its first non-blank line) a verl rollout dump? */
export function looksLikeVerlDump(firstLine: string): boolean {
  try {
    return isVerlRolloutRow(parsePythonJson(firstLine));
  } catch {
    return false;
  }
}
