// Question sets for training and evaluation → one normalised record per question. Formats: verl parquet
// (`prompt` + `reward_model.ground_truth`, as AutoCoA and Search-R1 ship them), FlashRAG / Search-R1 JSONL
// (`question` + `golden_answers`), `*.coa.jsonl` (the same two fields) and verl rows written as JSONL.
// Bad data stops at the first problem with a DataError naming file, line and field.
import { basename } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { extractQuestion, plain, promptText, strictGoldenAnswers } from '../importers/verl-parquet';
import { DataError, Origin, typeName } from './errors';
import { IdOptions, IdRow, planIds, rowSource, withPlannedId } from './ids';
import { fieldError, JsonLine, readJsonObjects } from './lines';

export interface QuestionRecord {
  id: string;
  question: string;
  golden_answers: string[];
  data_source: string | null;
  origin: Origin;
  /** Only when the file repeats this row's id: `source_id` is the id in the file (this row's `id` was qualified). */
  meta?: { source_id?: string };
}

export function isParquet(file: string): boolean {
  return /\.parquet$/i.test(file);
}

/**
 * Every question of `file`, in file order; throws DataError on the first bad one. Repeated ids are resolved by
 * `planIds` (exact repeats dropped, later rows of a repeated id qualified, the original in meta.source_id): one pass over the file to
 * decide, one to yield, so a large file is never held whole.
 */
export async function* readQuestions(file: string, opts: IdOptions = {}): AsyncGenerator<QuestionRecord> {
  const source = () => (isParquet(file) ? parquetQuestions(file) : jsonlQuestions(file));
  const rows: IdRow[] = [];
  for await (const { q, from } of source()) {
    rows.push({
      id: q.id,
      source: from,
      content: JSON.stringify([q.question, q.golden_answers, q.data_source]),
      line: q.origin.line,
    });
  }
  const plan = planIds(file, rows, opts.strictIds);
  if (opts.ids) Object.assign(opts.ids, plan.report);
  let i = 0;
  for await (const { q } of source()) {
    const at = i++;
    if (plan.drop.has(at)) continue;
    yield withPlannedId(q, plan.rename.get(at));
  }
}

export async function loadQuestions(file: string, opts: IdOptions = {}): Promise<QuestionRecord[]> {
  const out: QuestionRecord[] = [];
  for await (const q of readQuestions(file, opts)) out.push(q);
  return out;
}

/** A question and the source its row names (a `source_file` stem or its data source), for id resolution. */
interface SourcedQuestion {
  q: QuestionRecord;
  from: string | null;
}

type Row = Record<string, unknown>;

async function* parquetQuestions(file: string): AsyncGenerator<SourcedQuestion> {
  let buffer;
  let columns: string[];
  try {
    buffer = await asyncBufferFromFile(file);
    columns = parquetSchema(await parquetMetadataAsync(buffer)).children.map((c) => c.element.name);
  } catch (e) {
    throw new DataError(file, 1, 1, 'file', `not a readable parquet file (${(e as Error).message})`);
  }
  const has = (c: string) => columns.includes(c);
  const listed = `columns: ${columns.join(', ')}`;
  if (!has('prompt') && !has('question'))
    throw new DataError(
      file,
      1,
      1,
      'prompt',
      `missing column (a verl parquet needs "prompt" or "question"; ${listed})`,
    );
  if (!has('reward_model') && !has('golden_answers')) {
    throw new DataError(
      file,
      1,
      1,
      'reward_model',
      `missing column (a verl parquet needs "reward_model.ground_truth" or "golden_answers"; ${listed})`,
    );
  }
  const rows = (await parquetReadObjects({ file: buffer })) as Row[];
  for (let i = 0; i < rows.length; i++) {
    const r = plain(rows[i]) as Row;
    yield {
      q: rowQuestion(file, r, i + 1, (field, message) => new DataError(file, i + 1, 1, field, message)),
      from: rowSource(r),
    };
  }
}

async function* jsonlQuestions(file: string): AsyncGenerator<SourcedQuestion> {
  const stem = basename(file).replace(/(\.coa)?\.jsonl?$/i, '');
  for await (const l of readJsonObjects(file)) {
    const o = l.value;
    const at = (field: string, message: string) => fieldError(file, l, field.split('.'), message);
    // verl rows written as JSONL (golden answers in reward_model): the same reading as the parquet rows.
    if ('reward_model' in o && !('golden_answers' in o) && ('prompt' in o || 'question' in o)) {
      yield { q: rowQuestion(file, o, l.line, at, stem), from: rowSource(o) };
      continue;
    }
    const q = jsonQuestion(file, l, stem);
    yield { q, from: rowSource(o) };
  }
}

function jsonQuestion(file: string, l: JsonLine, stem: string): QuestionRecord {
  const o = l.value;
  if (!('question' in o))
    throw fieldError(file, l, ['question'], 'missing (a question record needs "question" and "golden_answers")');
  if (typeof o.question !== 'string')
    throw fieldError(file, l, ['question'], `expected a string, got ${typeName(o.question)}`);
  if (!o.question.trim()) throw fieldError(file, l, ['question'], 'empty question');
  if (!('golden_answers' in o)) {
    const near = ['answers', 'answer', 'golden_answer', 'ground_truth'].find((k) => k in o);
    throw fieldError(
      file,
      l,
      ['golden_answers'],
      `missing (a question record needs "question" and "golden_answers"${near ? `; found "${near}": FlashRAG and Search-R1 name it golden_answers` : ''})`,
    );
  }
  const golden = strictGoldenAnswers(o.golden_answers);
  if ('error' in golden)
    throw fieldError(
      file,
      l,
      golden.item === undefined ? ['golden_answers'] : ['golden_answers', golden.item],
      golden.error,
    );
  return {
    id: idOf(o.id, file, l, stem),
    question: o.question.trim(),
    golden_answers: golden,
    data_source: typeof o.data_source === 'string' ? o.data_source : null,
    origin: { file, line: l.line },
  };
}

function idOf(id: unknown, file: string, l: JsonLine, stem: string): string {
  if (id === undefined || id === null) return `${stem}-${l.line}`;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  if (typeof id === 'string' && id !== '') return id;
  throw fieldError(file, l, ['id'], `expected a non-empty string or a number, got ${typeName(id)}`);
}

/** A verl row: the question out of the chat prompt (or a `question` column), golden answers out of reward_model. */
function rowQuestion(
  file: string,
  r: Row,
  line: number,
  at: (field: string, message: string) => DataError,
  stem = basename(file).replace(/\.parquet$/i, ''),
): QuestionRecord {
  const extra = (r.extra_info && typeof r.extra_info === 'object' ? r.extra_info : {}) as Row;
  let question: string;
  if (typeof r.question === 'string') question = r.question.trim();
  else {
    if (r.prompt === undefined || r.prompt === null) throw at('prompt', 'missing');
    if (typeof r.prompt !== 'string' && !Array.isArray(r.prompt))
      throw at('prompt', `expected chat messages or a string, got ${typeName(r.prompt)}`);
    question = extractQuestion(promptText(r.prompt));
  }
  if (!question) throw at(typeof r.question === 'string' ? 'question' : 'prompt', 'empty question');
  let golden: string[] | { error: string; item?: number };
  let field = 'golden_answers';
  if (r.reward_model !== undefined && r.reward_model !== null) {
    field = 'reward_model.ground_truth';
    if (typeof r.reward_model !== 'object' || Array.isArray(r.reward_model))
      throw at('reward_model', `expected an object, got ${typeName(r.reward_model)}`);
    golden = strictGoldenAnswers((r.reward_model as Row).ground_truth);
  } else golden = strictGoldenAnswers(r.golden_answers);
  if ('error' in golden) throw at(golden.item === undefined ? field : `${field}.${golden.item}`, golden.error);
  const id =
    typeof r._id === 'string' && r._id
      ? r._id
      : typeof r.id === 'string' && r.id
        ? r.id
        : typeof r.id === 'number'
          ? String(r.id)
          : `${r.data_source ?? stem}-${extra.index ?? line - 1}`;
  return {
    id,
    question,
    golden_answers: golden,
    data_source: typeof r.data_source === 'string' ? r.data_source : null,
    origin: { file, line },
  };
}
