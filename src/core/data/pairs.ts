// SFT-1 pairs. From trajectories: per question, chosen = a correct trajectory, rejected = an incorrect one; among
// correct ones the fewest tool calls wins, so a correct tool-free answer beats a correct search (AutoCoA: "mostly
// with action, a few without action but correct" follows from the data). The rejected side prefers the other
// side of the act / don't-act decision, the contrast SFT-1 teaches. Pairs written by users (TRL-style
// prompt/chosen/rejected or our own output) pass through with the same segmentation.
import type { TrajectoryRecord } from '../record';
import { promptText } from '../importers/verl-parquet';
import { DataError, Origin, typeName } from './errors';
import { fieldError, JsonLine, readJsonObjects } from './lines';
import { DialectChoice, isDialectChoice, prepareTrajectory, SftRecord, SftSegment, toRecord } from './sft';

export interface PairSide {
  id: string;
  dialect: string;
  response: string;
  segments: SftSegment[];
  tool_calls: number;
  correct: boolean | null;
  origin: Origin;
}

export const PAIR_KINDS = ['tool-vs-notool', 'tool-vs-tool', 'notool-vs-tool', 'notool-vs-notool'] as const;
export type PairKind = (typeof PAIR_KINDS)[number];

export interface PairRecord {
  id: string;
  question: string;
  golden_answers: string[];
  prompt: string | null;
  /** chosen-vs-rejected, each `tool` (at least one tool call) or `notool`. */
  kind: PairKind;
  /** The chosen side calls a tool. */
  act: boolean;
  chosen: PairSide;
  rejected: PairSide;
}

export interface PairReport {
  trajectories: number;
  questions: number;
  pairs: number;
  by_kind: Record<PairKind, number>;
  /** Pairs read as pairs (not built). */
  given: number;
  skipped_questions: { no_golden: number; no_correct: number; no_incorrect: number };
}

export function emptyPairReport(): PairReport {
  return {
    trajectories: 0,
    questions: 0,
    pairs: 0,
    by_kind: Object.fromEntries(PAIR_KINDS.map((k) => [k, 0])) as Record<PairKind, number>,
    given: 0,
    skipped_questions: { no_golden: 0, no_correct: 0, no_incorrect: 0 },
  };
}

function kindOf(chosen: PairSide, rejected: PairSide): PairKind {
  return `${chosen.tool_calls > 0 ? 'tool' : 'notool'}-vs-${rejected.tool_calls > 0 ? 'tool' : 'notool'}` as PairKind;
}

function side(r: SftRecord): PairSide {
  return {
    id: r.id,
    dialect: r.dialect,
    response: r.response,
    segments: r.segments,
    tool_calls: r.tool_calls,
    correct: r.correct,
    origin: r.origin,
  };
}

/** Pairs from trajectories, grouped by question text, in order of first appearance; `perQuestion` pairs at most. */
export function buildPairs(records: readonly SftRecord[], perQuestion = 1, report = emptyPairReport()): PairRecord[] {
  const groups = new Map<string, SftRecord[]>();
  for (const r of records) {
    report.trajectories++;
    const key = r.question.trim();
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  const out: PairRecord[] = [];
  for (const group of groups.values()) {
    report.questions++;
    // Stable sort: equal tool counts keep file order, so the result does not depend on the sort algorithm.
    const correct = group.filter((r) => r.correct === true).sort((a, b) => a.tool_calls - b.tool_calls);
    const incorrect = group.filter((r) => r.correct === false);
    if (group.every((r) => r.correct === null)) {
      report.skipped_questions.no_golden++;
      continue;
    }
    if (!correct.length) {
      report.skipped_questions.no_correct++;
      continue;
    }
    if (!incorrect.length) {
      report.skipped_questions.no_incorrect++;
      continue;
    }
    const used = new Set<SftRecord>();
    const n = Math.min(perQuestion, correct.length, incorrect.length);
    for (let k = 0; k < n; k++) {
      const chosen = correct[k];
      const acts = chosen.tool_calls > 0;
      const rejected =
        incorrect.find((r) => !used.has(r) && r.tool_calls > 0 !== acts) ?? incorrect.find((r) => !used.has(r))!;
      used.add(rejected);
      out.push(
        makePair(
          `${chosen.id}|${rejected.id}`,
          chosen.question,
          chosen.golden_answers,
          chosen.prompt,
          side(chosen),
          side(rejected),
          report,
        ),
      );
    }
  }
  return out;
}

function makePair(
  id: string,
  question: string,
  golden: string[],
  prompt: string | null,
  chosen: PairSide,
  rejected: PairSide,
  report: PairReport,
): PairRecord {
  const kind = kindOf(chosen, rejected);
  report.pairs++;
  report.by_kind[kind]++;
  return { id, question, golden_answers: golden, prompt, kind, act: chosen.tool_calls > 0, chosen, rejected };
}

/** What a pairs input line is: a ready pair, a prepared SFT record, or a trajectory. */
export type PairInput = { pair: PairRecord } | { trajectory: SftRecord };

/**
 * Lines of a pairs input: pair lines (`chosen` + `rejected`: strings, `{response}` objects, or chat messages as in
 * TRL's preference datasets), records written by `coa data prepare sft`, or trajectories in any SFT format.
 */
export async function* readPairInputs(
  file: string,
  dialect: DialectChoice = 'auto',
  report = emptyPairReport(),
): AsyncGenerator<PairInput> {
  for await (const l of readJsonObjects(file)) {
    const o = l.value;
    if ('chosen' in o || 'rejected' in o) {
      report.given++;
      yield { pair: givenPair(file, l, dialect, report) };
    } else if (Array.isArray(o.segments) && o.origin && typeof o.origin === 'object')
      yield { trajectory: preparedSft(file, l) };
    else yield { trajectory: prepareTrajectory(toRecord(file, l), dialect, { file, line: l.line }).sft };
  }
}

function givenPair(file: string, l: JsonLine, dialect: DialectChoice, report: PairReport): PairRecord {
  const o = l.value;
  // TRL's preference data: `prompt` is a string, or chat messages (conversational) whose last user turn counts.
  const prompt =
    typeof o.prompt === 'string' ? o.prompt : Array.isArray(o.prompt) ? promptText(o.prompt) || null : null;
  const question = typeof o.question === 'string' ? o.question.trim() : (prompt ?? '').trim();
  if (!question)
    throw fieldError(
      file,
      l,
      [typeof o.question === 'string' || !prompt ? 'question' : 'prompt'],
      'missing or empty question (a pair needs "question" or "prompt")',
    );
  let golden: string[] = [];
  if (o.golden_answers !== undefined) {
    if (!Array.isArray(o.golden_answers) || o.golden_answers.some((g) => typeof g !== 'string'))
      throw fieldError(file, l, ['golden_answers'], `expected a list of strings, got ${typeName(o.golden_answers)}`);
    golden = o.golden_answers as string[];
  }
  const sides = (['chosen', 'rejected'] as const).map((key) => {
    const response = responseOf(o[key]);
    if (response === null)
      throw fieldError(
        file,
        l,
        [key],
        `expected a string, {"response": …} or assistant messages, got ${typeName(o[key])}`,
      );
    if (!response.trim()) throw fieldError(file, l, [key], 'empty response');
    const value = o[key] as Record<string, unknown>;
    const ownDialect =
      value && typeof value === 'object' && !Array.isArray(value) && value.dialect !== undefined
        ? value.dialect
        : undefined;
    if (ownDialect !== undefined && (typeof ownDialect !== 'string' || !isDialectChoice(ownDialect)))
      throw fieldError(file, l, [key, 'dialect'], `unknown dialect ${JSON.stringify(ownDialect)}`);
    const rec = {
      id: `${idOf(o, l)}-${key}`,
      question,
      golden_answers: golden,
      response,
      ...(ownDialect && ownDialect !== 'auto' ? { dialect: ownDialect } : {}),
    } as TrajectoryRecord;
    return side(prepareTrajectory(rec, dialect, { file, line: l.line }).sft);
  });
  return makePair(idOf(o, l), question, golden, prompt, sides[0], sides[1], report);
}

function idOf(o: Record<string, unknown>, l: JsonLine): string {
  return typeof o.id === 'string' && o.id ? o.id : typeof o.id === 'number' ? String(o.id) : `pair-${l.line}`;
}

function responseOf(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const parts = v
      .filter((m) => m && typeof m === 'object' && (m as { role?: unknown }).role === 'assistant')
      .map((m) => (m as { content?: unknown }).content);
    return parts.length && parts.every((c) => typeof c === 'string') ? parts.join('') : null;
  }
  if (v && typeof v === 'object' && typeof (v as { response?: unknown }).response === 'string')
    return (v as { response: string }).response;
  return null;
}

/** A line written by `coa data prepare sft`, read back as it was written (field types checked). */
function preparedSft(file: string, l: JsonLine): SftRecord {
  const o = l.value;
  for (const [key, type] of [
    ['id', 'string'],
    ['question', 'string'],
    ['response', 'string'],
    ['dialect', 'string'],
    ['tool_calls', 'number'],
  ] as const) {
    if (typeof o[key] !== type) throw fieldError(file, l, [key], `expected a ${type}, got ${typeName(o[key])}`);
  }
  if (!Array.isArray(o.golden_answers) || o.golden_answers.some((g) => typeof g !== 'string'))
    throw fieldError(file, l, ['golden_answers'], 'expected a list of strings');
  if (!isDialectChoice(o.dialect as string) || o.dialect === 'auto')
    throw fieldError(file, l, ['dialect'], `unknown dialect ${JSON.stringify(o.dialect)}`);
  if (
    !Array.isArray(o.segments) ||
    o.segments.some(
      (g) =>
        !g ||
        typeof g !== 'object' ||
        typeof g.start !== 'number' ||
        typeof g.end !== 'number' ||
        typeof g.kind !== 'string',
    )
  ) {
    throw fieldError(file, l, ['segments'], 'expected a list of {"kind", "start", "end"}');
  }
  if (o.correct !== null && typeof o.correct !== 'boolean')
    throw fieldError(file, l, ['correct'], `expected true, false or null, got ${typeName(o.correct)}`);
  const origin = o.origin as Record<string, unknown>;
  if (typeof origin.file !== 'string' || typeof origin.line !== 'number')
    throw new DataError(file, l.line, 1, 'origin', 'expected {"file": str, "line": int}');
  return o as unknown as SftRecord;
}
