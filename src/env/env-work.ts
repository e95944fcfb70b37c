// The heavy part of the environment server's requests, as plain functions over raw request bytes: JSON
// parsing, schema validation, searching, grading and serialising the answer. They run in the search
// worker threads (search-worker.ts) so the server's event loop only moves bytes; every failure is an
// HttpError with the same codes and paths as the server's own checks (docs/env-server.md).
import { z } from 'zod';
import type { DialectName } from '../core/dialects';
import { OtcState, questionKey, scoreRecords } from '../core/rewards';
import { HttpError, parseJson } from './http';
import { describeIssues, GradeRequestSchema, SearchRequestSchema } from './protocol';
import { formatObservation } from './observations';
import type { Retriever } from './retriever';

export function validateRequest<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const { message, path } = describeIssues(r.error);
  throw new HttpError('invalid_request', message, path);
}

export function parseSearchRequest(raw: Uint8Array): z.infer<typeof SearchRequestSchema> {
  return validateRequest(SearchRequestSchema, parseJson(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)));
}

/**
 * Results and observations of `queries` as JSON array *elements* (no brackets), so the answers of several
 * workers are joined with commas into one response without parsing them again.
 */
export function searchFragments(retriever: Retriever, queries: readonly string[], topK: number, dialect: DialectName): { results: string; observations: string; empty: number } {
  const results: string[] = [];
  const observations: string[] = [];
  let empty = 0; // queries without a passage, for the server's tool health
  for (const q of queries) {
    const hits = retriever.search(q, topK);
    if (hits.length === 0) empty++;
    results.push(JSON.stringify(hits));
    observations.push(JSON.stringify(formatObservation(dialect, hits)));
  }
  return { results: results.join(','), observations: observations.join(','), empty };
}

export const joinSearchResponse = (parts: { results: string; observations: string }[]): string => {
  const nonEmpty = (key: 'results' | 'observations') => parts.map((p) => p[key]).filter((s) => s !== '').join(',');
  return `{"results":[${nonEmpty('results')}],"observations":[${nonEmpty('observations')}]}`;
};

/** What a grade needs from the server's per-run OTC state: the running minima of these questions. */
export interface StateRequest {
  run: string;
  questions: string[];
}

/**
 * Grade a raw request. For `otc-grpo` with a run, `getState` is asked for the run's minima of the
 * request's questions (the server owns the state); the updated minima come back in `updates`.
 */
export async function gradeRequest(
  raw: Uint8Array,
  getState: (req: StateRequest) => Promise<unknown>,
): Promise<{ json: string; records: number; run?: string; updates?: unknown }> {
  const g = validateRequest(GradeRequestSchema, parseJson(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)));
  let state: OtcState | undefined;
  if (g.run !== undefined && g.scheme === 'otc-grpo') {
    state = OtcState.fromJSON(await getState({ run: g.run, questions: [...new Set(g.records.map(questionKey))] }));
  }
  const breakdowns = scoreRecords(g.records, g.scheme, g.params ?? {}, state);
  return { json: JSON.stringify({ breakdowns }), records: g.records.length, run: g.run, updates: state?.toJSON() };
}
