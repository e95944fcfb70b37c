// Trajectories for SFT → records with the core's segmentation, ready for loss masks. Formats: `*.coa.jsonl` in
// any dialect (the record schema of src/core/record.ts) and OpenAI tool-call chats (one conversation per line,
// through the openai importer). Segment offsets are in Unicode code points (Python string indices).
import { DialectName, DIALECT_NAMES } from '../dialects';
import { parseRecordLine } from '../jsonl';
import { conversationToRecord } from '../importers/openai';
import type { TrajectoryRecord } from '../record';
import { scoreRecords } from '../rewards';
import { checkFormat } from '../rules';
import type { SegmentKind } from '../scanner';
import { codePointIndexer } from './codepoints';
import { DataError, Origin } from './errors';
import { fieldError, JsonLine, readJsonObjects } from './lines';

export interface SftSegment {
  kind: SegmentKind;
  start: number;
  end: number;
}

export interface SftRecord {
  id: string;
  question: string;
  golden_answers: string[];
  dialect: DialectName;
  prompt: string | null;
  response: string;
  segments: SftSegment[];
  tool_calls: number;
  reward: number | null;
  correct: boolean | null;
  /** No format-rule error (what data.sft_filter.format_ok keeps). */
  format_ok: boolean;
  origin: Origin;
}

export interface SftSummary {
  records: number;
  /** With at least one tool call (the CoA part of the mix) and without (the CoT part). */
  with_tools: number;
  tool_free: number;
  format_errors: number;
  correct: number;
  incorrect: number;
  ungraded: number;
}

export type DialectChoice = DialectName | 'auto';

export function isDialectChoice(d: string): d is DialectChoice {
  return d === 'auto' || (DIALECT_NAMES as readonly string[]).includes(d);
}

/**
 * Every trajectory of `file`; `dialect` applies to records that do not name one. Throws DataError. `summary`,
 * when given, is updated with each record.
 */
export async function* readSft(
  file: string,
  dialect: DialectChoice = 'auto',
  summary?: SftSummary,
): AsyncGenerator<SftRecord> {
  const seen = new Map<string, number>();
  for await (const l of readJsonObjects(file)) {
    const record = toRecord(file, l);
    const first = seen.get(record.id);
    if (first !== undefined) throw fieldError(file, l, ['id'], `duplicate id "${record.id}" (first on line ${first})`);
    seen.set(record.id, l.line);
    const { sft, formatOk } = prepareTrajectory(record, dialect, { file, line: l.line });
    if (summary) count(summary, sft, formatOk);
    yield sft;
  }
}

export async function loadSft(
  file: string,
  dialect: DialectChoice = 'auto',
  summary?: SftSummary,
): Promise<SftRecord[]> {
  const out: SftRecord[] = [];
  for await (const r of readSft(file, dialect, summary)) out.push(r);
  return out;
}

/** A trajectory line: an OpenAI chat or a `*.coa.jsonl` record with a non-empty question and response. */
export function toRecord(file: string, l: JsonLine): TrajectoryRecord {
  if (Array.isArray(l.value.messages)) {
    try {
      return conversationToRecord(l.value, l.line - 1);
    } catch (e) {
      throw fieldError(file, l, ['messages'], (e as Error).message);
    }
  }
  const entry = parseRecordLine(l.raw, l.line);
  if (entry.problem) {
    const field = entry.problem.path || 'record';
    throw new DataError(file, l.line, entry.problem.column, field, entry.problem.message.replace(/^[^:]*: /, ''));
  }
  const r = entry.record!;
  if (!r.question.trim()) throw fieldError(file, l, ['question'], 'empty question');
  if (!r.response.trim()) throw fieldError(file, l, ['response'], 'empty response');
  return r;
}

/** One trajectory with its segments (code points), tool calls and correctness (EM · format ok, the core's reward). */
export function prepareTrajectory(
  record: TrajectoryRecord,
  dialect: DialectChoice,
  origin: Origin,
): { sft: SftRecord; formatOk: boolean } {
  const report = checkFormat(record.response, { dialect: record.dialect ?? dialect });
  const cp = codePointIndexer(record.response);
  const golden = record.golden_answers ?? [];
  let correct: boolean | null = null;
  if (golden.length) {
    const [score] = scoreRecords([{ ...record, dialect: report.dialect }], 'em');
    correct = score.r_correct === 1;
  }
  const extra = record as Record<string, unknown>;
  const sft: SftRecord = {
    id: record.id,
    question: record.question.trim(),
    golden_answers: golden,
    dialect: report.dialect,
    prompt: typeof extra.prompt === 'string' ? extra.prompt : null,
    response: record.response,
    segments: report.segments.map((s) => ({ kind: s.kind, start: cp(s.start), end: cp(s.end) })),
    tool_calls: report.toolCalls,
    reward: record.reward ? record.reward.total : null,
    correct,
    format_ok: report.formatOk,
    origin,
  };
  return { sft, formatOk: report.formatOk };
}

export function emptySftSummary(): SftSummary {
  return { records: 0, with_tools: 0, tool_free: 0, format_errors: 0, correct: 0, incorrect: 0, ungraded: 0 };
}

function count(s: SftSummary, r: SftRecord, formatOk: boolean): void {
  s.records++;
  if (r.tool_calls > 0) s.with_tools++;
  else s.tool_free++;
  if (!formatOk) s.format_errors++;
  if (r.correct === null) s.ungraded++;
  else if (r.correct) s.correct++;
  else s.incorrect++;
}
