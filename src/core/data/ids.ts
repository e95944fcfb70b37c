// Record ids of users' question sets, made unique the same way everywhere (`coa convert`, `coa data prepare`, and so
// the trainer). Published sets repeat ids: AutoCoA's test parquet merges seven source files whose ids restart in each
// (343 ids on 713 rows) and repeats one row exactly but for its position. Those are data facts, not errors:
// - a row equal to an earlier row of the same id (question, golden answers, source) is dropped and counted;
// - of the rows still sharing an id, the first (in file order) keeps it, so results join back to the user's rows on
//   `id`; each later one is qualified by its source (`source_file` stem, else `data_source`) when the group's sources
//   tell its rows apart, else by its line (`dev_0@17`), deterministically, so a file always gives the same ids. The
//   original id goes into the record's `meta.source_id` (joined back on it and the source);
// - `strict` keeps the old refusal: the first repeated id is an error naming both lines.
import { createHash } from 'node:crypto';
import { DataError } from './errors';

export interface IdOptions {
  /** Refuse a repeated id (the first one, naming both lines) instead of dropping exact repeats and qualifying ids. */
  strictIds?: boolean;
  /** Filled with what happened to repeated ids. */
  ids?: IdReport;
}

/** What deciding an id needs to know of one row. */
export interface IdRow {
  id: string;
  /** Where the row says it comes from (a source file's stem, a data source); null when it does not say. */
  source: string | null;
  /** Everything that makes two rows the same question, serialised (compared as a hash). */
  content: string;
  /** 1-based line (or parquet row) for messages and the last-resort qualifier. */
  line: number;
}

export interface IdReport {
  /** Rows dropped as exact repeats of an earlier row. */
  exact_duplicates_dropped: number;
  /** Ids that stood on more than one distinct row (their later rows were qualified). */
  ids_qualified: number;
  /** Rows whose id changed (every row of a repeated id but its first). */
  rows_renamed: number;
  /** The first rename of a few ids, for the summary line: [old, new]. */
  examples: [string, string][];
}

export interface IdPlan {
  /** Row indexes (into the rows given) to drop. */
  drop: Set<number>;
  /** Row index → its new id (never the first row of an id: it keeps its id). The original is the row's `id`. */
  rename: Map<number, string>;
  report: IdReport;
}

export function emptyIdReport(): IdReport {
  return { exact_duplicates_dropped: 0, ids_qualified: 0, rows_renamed: 0, examples: [] };
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/** Decide drops and renames for `rows` (in file order). With `strict`, the first repeat in file order throws. */
export function planIds(file: string, rows: readonly IdRow[], strict = false): IdPlan {
  const byId = new Map<string, number[]>();
  rows.forEach((r, i) => {
    const group = byId.get(r.id);
    if (group && strict) {
      throw new DataError(
        file,
        r.line,
        1,
        'id',
        `duplicate id "${r.id}" (first on line ${rows[group[0]].line}; without --strict-ids exact repeats are dropped and ids repeated across sources are qualified by their source)`,
      );
    }
    if (group) group.push(i);
    else byId.set(r.id, [i]);
  });
  const plan: IdPlan = { drop: new Set(), rename: new Map(), report: emptyIdReport() };
  const taken = new Set(byId.keys());
  for (const [id, group] of byId) {
    if (group.length < 2) continue;
    const seen = new Set<string>();
    const kept: number[] = [];
    for (const i of group) {
      const key = digest(`${rows[i].source ?? ''}\u0000${rows[i].content}`);
      if (seen.has(key)) {
        plan.drop.add(i);
        plan.report.exact_duplicates_dropped++;
      } else {
        seen.add(key);
        kept.push(i);
      }
    }
    if (kept.length < 2) continue;
    plan.report.ids_qualified++;
    const sources = kept.map((i) => rows[i].source);
    const bySource = sources.every((s) => s) && new Set(sources).size === kept.length;
    for (const [k, i] of kept.entries()) {
      if (k === 0) continue; // the first row of an id keeps it
      let next = bySource ? `${rows[i].source}/${id}` : `${id}@${rows[i].line}`;
      if (taken.has(next)) next = `${id}@${rows[i].line}`;
      taken.add(next);
      plan.rename.set(i, next);
      plan.report.rows_renamed++;
      if (k === 1 && plan.report.examples.length < 3) plan.report.examples.push([id, next]);
    }
  }
  return plan;
}

/** One line for logs: what happened to the ids, or null when nothing did. */
export function idSummary(report: IdReport): string | null {
  const parts: string[] = [];
  if (report.exact_duplicates_dropped) parts.push(`${report.exact_duplicates_dropped} exact repeat row(s) dropped`);
  if (report.ids_qualified) {
    const eg = report.examples.map(([a, b]) => `${a} → ${b}`).join(', ');
    parts.push(
      `${report.ids_qualified} id(s) repeated: the first row keeps each, ${report.rows_renamed} later row(s) qualified, the original in meta.source_id (${eg})`,
    );
  }
  return parts.length ? `ids: ${parts.join('; ')} (--strict-ids refuses repeated ids instead)` : null;
}

/** The stem of a source file name, as a qualifier: `TriviaQA_dev.json` → `TriviaQA_dev`. */
export function sourceStem(name: string): string {
  return name.replace(/^.*[\\/]/, '').replace(/\.(jsonl?|parquet|csv|tsv)$/i, '');
}

/** The source a row names: AutoCoA's merged test set has `source_file`; verl rows have `data_source`. */
export function rowSource(row: Record<string, unknown>): string | null {
  if (typeof row.source_file === 'string' && row.source_file) return sourceStem(row.source_file);
  if (typeof row.data_source === 'string' && row.data_source) return row.data_source;
  return null;
}

/** A renamed row's record: the new id, the original kept in `meta.source_id`. Records whose id stays are returned as they are. */
export function withPlannedId<T extends { id: string; meta?: Record<string, unknown> }>(
  record: T,
  renamed: string | undefined,
): T {
  return renamed === undefined
    ? record
    : { ...record, id: renamed, meta: { ...(record.meta ?? {}), source_id: record.id } };
}
