// verl / AutoCoA / Search-R1 RL datasets (parquet) → records. The question is taken out of the chat prompt,
// without the instructions around it.
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { IdOptions, planIds, rowSource, withPlannedId } from '../data/ids';
import type { TrajectoryRecord } from '../record';

// Markers after which the question follows, in the prompts of the datasets we know (also in schemas/dialects.json
// `question_markers`, for the TRL hook's questions).
export const QUESTION_MARKERS = [
  "Now, please answer the user's question below:", // AutoCoA
  'Question:', // Search-R1 / FlashRAG templates
];

/** The question inside a dataset prompt (the last user message). */
export function extractQuestion(promptText: string): string {
  for (const marker of QUESTION_MARKERS) {
    const at = promptText.lastIndexOf(marker);
    if (at >= 0) return promptText.slice(at + marker.length).trim();
  }
  return promptText.trim();
}

/** `reward_model.ground_truth` is a string, a list of strings, or Search-R1's `{target: [...]}`. */
export function goldenAnswers(groundTruth: unknown): string[] {
  if (typeof groundTruth === 'string') return [groundTruth];
  if (Array.isArray(groundTruth)) return groundTruth.map(String);
  if (groundTruth && typeof groundTruth === 'object' && 'target' in groundTruth)
    return goldenAnswers((groundTruth as { target: unknown }).target);
  if (groundTruth === null || groundTruth === undefined) return [];
  return [String(groundTruth)];
}

/**
 * Golden answers checked rather than coerced (for training data): a string, a non-empty list of strings, or
 * `{target: …}` of either. Returns the list, or the reason the value is not golden answers.
 */
export function strictGoldenAnswers(value: unknown): string[] | { error: string; item?: number } {
  if (typeof value === 'string') return value.trim() ? [value] : { error: 'empty string' };
  if (Array.isArray(value)) {
    if (value.length === 0) return { error: 'empty list (a question needs at least one golden answer)' };
    const bad = value.findIndex((v) => typeof v !== 'string');
    if (bad >= 0) return { error: `${value[bad] === null ? 'null' : typeof value[bad]}, expected a string`, item: bad };
    return value as string[];
  }
  if (value && typeof value === 'object' && 'target' in value)
    return strictGoldenAnswers((value as { target: unknown }).target);
  const kind = value === null ? 'null' : value === undefined ? 'missing' : typeof value;
  return { error: `expected a string or a list of strings, got ${kind}` };
}

type Row = Record<string, unknown>;

/** The text of a verl `prompt`: a string, or the last user message of a chat. */
export function promptText(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt)) {
    const users = prompt.filter((m): m is Row => !!m && typeof m === 'object' && (m as Row).role === 'user');
    const last = users[users.length - 1] ?? (prompt[prompt.length - 1] as Row | undefined);
    return typeof last?.content === 'string' ? last.content : '';
  }
  return '';
}

/** Plain JSON: parquet INT64 columns arrive as BigInt. */
export function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value as Row).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

export function rowToRecord(row: Row, index: number): TrajectoryRecord {
  const r = plain(row) as Row;
  const extra = (r.extra_info ?? {}) as Row;
  const reward = (r.reward_model ?? {}) as Row;
  const id =
    typeof r._id === 'string'
      ? r._id
      : typeof r.id === 'string'
        ? r.id
        : `${r.data_source ?? 'row'}-${extra.index ?? index}`;
  const meta: Row = {};
  for (const key of ['data_source', 'source_file', 'level', 'ability']) if (r[key] !== undefined) meta[key] = r[key];
  if (extra.split !== undefined) meta.split = extra.split;
  if (extra.index !== undefined) meta.index = extra.index;
  return {
    id,
    question: extractQuestion(promptText(r.prompt)),
    golden_answers: goldenAnswers(reward.ground_truth ?? r.golden_answers),
    response: '',
    meta,
  };
}

/**
 * Every row of a verl parquet as a question record. Repeated ids are resolved as `coa data prepare` resolves them
 * (src/core/data/ids.ts): exact repeats (all but `extra_info.index`) dropped, later rows of a repeated id qualified
 * (the original in `meta.source_id`).
 */
export async function importVerlParquet(path: string, opts: IdOptions = {}): Promise<TrajectoryRecord[]> {
  const file = await asyncBufferFromFile(path);
  const rows = (await parquetReadObjects({ file })) as Row[];
  const records = rows.map(rowToRecord);
  const plan = planIds(
    path,
    records.map((r, i) => {
      const { index: _index, ...meta } = (r.meta ?? {}) as Row;
      return {
        id: r.id,
        source: rowSource(plain(rows[i]) as Row),
        content: JSON.stringify([r.question, r.golden_answers, meta]),
        line: i + 1,
      };
    }),
    opts.strictIds,
  );
  if (opts.ids) Object.assign(opts.ids, plan.report);
  return records.flatMap((r, i) => (plan.drop.has(i) ? [] : [withPlannedId(r, plan.rename.get(i))]));
}
