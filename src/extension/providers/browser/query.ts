// Filter, sort and page the browser's index. Pure; runs in the extension host on the (possibly partial) index.
import type { BrowserQuery, QueryResult, RecordSummary, SortKey, TableKind } from '../../../protocols/browser';
import { QuestionTally, describeQuestions } from '../../../core/questionSummary';

const keyOf: Record<Exclude<SortKey, 'file'>, (r: RecordSummary) => number | null> = {
  reward: (r) => r.reward,
  em: (r) => r.em,
  'tool-calls': (r) => r.toolCalls,
  step: (r) => r.step,
};

/** `hits`: the records a text search found (search.ts), when one is on. */
export function matches(r: RecordSummary, q: BrowserQuery, hits?: ReadonlySet<number> | null): boolean {
  if (hits && !hits.has(r.i)) return false;
  if (q.errorsOnly) return r.error !== undefined;
  if (q.failuresOnly && (r.isQuestion || !(r.error === undefined && ((r.reward ?? 0) <= 0 || r.formatOk === false))))
    return false;
  if (q.em != null && r.em !== q.em) return false;
  if (q.minReward != null && !((r.reward ?? -Infinity) >= q.minReward)) return false;
  if (q.moreToolCalls != null && !((r.toolCalls ?? -1) > q.moreToolCalls)) return false;
  if (q.stage && r.stage !== q.stage) return false;
  if (q.step != null && r.step !== q.step) return false;
  return true;
}

export function runQuery(
  index: readonly RecordSummary[],
  q: BrowserQuery,
  hits?: ReadonlySet<number> | null,
): QueryResult {
  const pageSize = Math.max(1, q.pageSize ?? 50);
  let rows = index.filter((r) => matches(r, q, hits));
  if (q.sort && q.sort !== 'file') {
    const key = keyOf[q.sort];
    const sign = q.order === 'desc' ? -1 : 1;
    // Records without the key (bad lines) go last either way; ties keep file order.
    rows = rows.sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      if (ka === null || kb === null) return (ka === null ? 1 : 0) - (kb === null ? 1 : 0) || a.i - b.i;
      return sign * (ka - kb) || a.i - b.i;
    });
  } else if (q.order === 'desc') rows = rows.reverse();
  const pages = Math.max(1, Math.ceil(rows.length / pageSize));
  const page = Math.min(Math.max(0, q.page ?? 0), pages - 1);
  return { total: rows.length, page, pageSize, rows: rows.slice(page * pageSize, (page + 1) * pageSize) };
}

/** Jump: the page of the query's result holding the record with this id, or at this 1-based line. */
export function findPage(
  index: readonly RecordSummary[],
  q: BrowserQuery,
  target: string,
  hits?: ReadonlySet<number> | null,
): { page: number; i: number } | null {
  const all = runQuery(index, { ...q, page: 0, pageSize: Number.MAX_SAFE_INTEGER }, hits).rows;
  const pos = all.findIndex(isJumpTarget(target));
  if (pos < 0) return null;
  return { page: Math.floor(pos / Math.max(1, q.pageSize ?? 50)), i: all[pos].i };
}

/** Jump: the indexed record with this id, or at this 1-based line, whatever the table's filter and search. */
export function findIndexed(index: readonly RecordSummary[], target: string): RecordSummary | undefined {
  return index.find(isJumpTarget(target));
}

/** Whether a row is the one a jump names: its id, or its line when the target is digits. */
function isJumpTarget(target: string): (r: RecordSummary) => boolean {
  const t = target.trim();
  const line = /^\d+$/.test(t) ? Number(t) : null;
  return (r) => r.id === t || (line !== null && r.line === line);
}

/** Distinct stages seen so far (the stage filter's choices). */
export function stagesOf(index: readonly RecordSummary[]): string[] {
  return [...new Set(index.map((r) => r.stage).filter((s): s is string => s !== null))].sort();
}

/** The questions line of the browser (the notebook's Questions view, in one line), or '' without questions. */
export function questionsLine(index: readonly RecordSummary[]): string {
  const tally = new QuestionTally();
  for (const r of index) if (r.isQuestion) tally.addQuestion(r.hasGolden ?? false, r.source ?? 'unknown source');
  const s = tally.summary();
  return s.questions ? describeQuestions(s) : '';
}

/** The layout for a file, from its first records: questions when every valid one is a question. */
export function tableKind(rows: readonly RecordSummary[]): TableKind {
  const valid = rows.filter((r) => r.error === undefined);
  return valid.length > 0 && valid.every((r) => r.isQuestion) ? 'questions' : 'trajectories';
}
