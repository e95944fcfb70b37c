// The heavy part of the environment server's requests, as plain functions over raw request bytes: JSON
// parsing, schema validation, searching, grading and serialising the answer. They run in the search
// worker threads (search-worker.ts) so the server's event loop only moves bytes; every failure is an
// HttpError with the same codes and paths as the server's own checks (docs/env-server.md). Answers come back as
// UTF-8 bytes that own their memory, so they move to the server's thread without a copy and are written to the
// socket as they are (the server never joins, re-encodes or measures a large string).
import { z } from 'zod';
import type { DialectName } from '../core/dialects';
import { OtcState, RewardParamsSchema, questionKey, scoreRecords } from '../core/rewards';
import { SCAN_RULE_NAMES, scanBatch, scanMetric } from '../core/scanners';
import { HttpError, parseJson } from './http';
import {
  describeIssues,
  GradeRequestSchema,
  ScanRequestSchema,
  SearchRequestSchema,
  type ScanResponse,
} from './protocol';
import { formatObservation } from './observations';
import { DEFAULT_RETRIEVE_TOP_K, RetrieveRequestSchema } from './retrieve';
import { alertsStep } from './alertsRoute';
import type { Retriever } from './retriever';

export function validateRequest<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const { message, path } = describeIssues(r.error);
  throw new HttpError('invalid_request', message, path);
}

const json = (raw: Uint8Array): unknown => parseJson(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));

export function parseSearchRequest(raw: Uint8Array): z.infer<typeof SearchRequestSchema> {
  return validateRequest(SearchRequestSchema, json(raw));
}

/** A retrieve request (Search-R1's / verl's protocol, retrieve.ts) with its defaults applied. */
export function parseRetrieveRequest(value: unknown): { queries: string[]; k: number; returnScores: boolean } {
  const r = validateRequest(RetrieveRequestSchema, value);
  return { queries: r.queries, k: r.topk || DEFAULT_RETRIEVE_TOP_K, returnScores: r.return_scores };
}

/** The error of an answer larger than the server's --max-reply-bytes (the work is dropped, nothing is sent). */
export function replyTooLarge(maxBytes: number): HttpError {
  return new HttpError(
    'reply_too_large',
    `the answer would exceed the server's reply limit of ${maxBytes} bytes (--max-reply-bytes): ask for fewer queries per request or a smaller top_k`,
  );
}

/** UTF-8 bytes of `text` in memory of their own (a small Buffer is a view of a shared pool: never transfer that). */
export function ownedUtf8(text: string): Uint8Array {
  const b = Buffer.from(text, 'utf8');
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b);
}

/**
 * JSON array *elements* (no brackets) from one string each, as bytes, stopping as soon as they pass `maxBytes`
 * (string lengths are a lower bound of their UTF-8 size, so a huge answer is refused before it is all built).
 */
class Fragments {
  private readonly parts: string[] = [];
  private chars = 0;
  constructor(private readonly maxBytes: number) {}

  push(part: string): void {
    this.chars += part.length + 1;
    if (this.chars > this.maxBytes) throw replyTooLarge(this.maxBytes);
    this.parts.push(part);
  }

  bytes(): Uint8Array {
    const out = ownedUtf8(this.parts.join(','));
    if (out.byteLength > this.maxBytes) throw replyTooLarge(this.maxBytes);
    return out;
  }
}

/**
 * Results and observations of `queries` as JSON array elements, so the answers of several workers are joined
 * with commas into one response without parsing them again.
 */
export function searchFragments(
  retriever: Retriever,
  queries: readonly string[],
  topK: number,
  dialect: DialectName,
  maxBytes = Infinity,
): { results: Uint8Array; observations: Uint8Array; empty: number } {
  const results = new Fragments(maxBytes);
  const observations = new Fragments(maxBytes);
  let empty = 0; // queries without a passage, for the server's tool health
  for (const q of queries) {
    const hits = retriever.search(q, topK);
    if (hits.length === 0) empty++;
    results.push(JSON.stringify(hits));
    observations.push(JSON.stringify(formatObservation(dialect, hits)));
  }
  return { results: results.bytes(), observations: observations.bytes(), empty };
}

/** One list per query in the retrieve protocol's shape (retrieve.ts), as JSON array elements. */
export function retrieveFragments(
  retriever: Retriever,
  queries: readonly string[],
  k: number,
  returnScores: boolean,
  maxBytes = Infinity,
): { result: Uint8Array; empty: number } {
  const result = new Fragments(maxBytes);
  let empty = 0;
  for (const q of queries) {
    const hits = retriever.search(q, k);
    if (hits.length === 0) empty++;
    const docs = returnScores
      ? hits.map((h) => ({ document: { id: h.id, contents: h.contents }, score: h.score }))
      : hits.map((h) => ({ id: h.id, contents: h.contents }));
    result.push(JSON.stringify(docs));
  }
  return { result: result.bytes(), empty };
}

/** POST /v1/alerts (alertsRoute.ts) from raw bytes: the answer as JSON bytes (its state grows with the keys sent). */
/** POST /v1/scan: the core's reward-hacking scanners over one step's records (stateless). */
export function scanRequest(raw: Uint8Array, maxBytes = Infinity): Uint8Array {
  const q = validateRequest(ScanRequestSchema, json(raw));
  const p = RewardParamsSchema.parse(q.params ?? {});
  const scan = scanBatch(q.records, {
    format: { dialect: p.dialect, strictness: p.strictness, tools: p.tools, maxTurns: p.max_turns },
  });
  const answer: ScanResponse = {
    counts: scan.counts,
    metrics: Object.fromEntries(SCAN_RULE_NAMES.map((r) => [scanMetric(r), scan.counts[r]])),
    flagged: scan.flagged,
    scanned: scan.scanned,
    length_limit: scan.lengthLimit,
  };
  const out = ownedUtf8(JSON.stringify(answer));
  if (out.byteLength > maxBytes) throw replyTooLarge(maxBytes);
  return out;
}

export function alertsRequest(raw: Uint8Array, maxBytes = Infinity): Uint8Array {
  const out = ownedUtf8(JSON.stringify(alertsStep(json(raw))));
  if (out.byteLength > maxBytes) throw replyTooLarge(maxBytes);
  return out;
}

/** The body of a search answer around its parts' elements, in order: `{"results":[…],"observations":[…]}`. */
export function searchResponseParts(
  parts: { results: Uint8Array; observations: Uint8Array }[],
): (string | Uint8Array)[] {
  return [
    '{"results":[',
    ...joined(parts.map((p) => p.results)),
    '],"observations":[',
    ...joined(parts.map((p) => p.observations)),
    ']}',
  ];
}

/** The body of a retrieve answer around its parts' elements: `{"result":[…]}`. */
export function retrieveResponseParts(parts: { result: Uint8Array }[]): (string | Uint8Array)[] {
  return ['{"result":[', ...joined(parts.map((p) => p.result)), ']}'];
}

/** Non-empty element lists with commas between them. */
function joined(lists: Uint8Array[]): (string | Uint8Array)[] {
  const out: (string | Uint8Array)[] = [];
  for (const l of lists) {
    if (l.byteLength === 0) continue;
    if (out.length) out.push(',');
    out.push(l);
  }
  return out;
}

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
): Promise<{ json: Uint8Array; records: number; run?: string; updates?: Record<string, number> }> {
  const g = validateRequest(GradeRequestSchema, json(raw));
  let state: OtcState | undefined;
  if (g.run !== undefined && g.scheme === 'otc-grpo') {
    state = OtcState.fromJSON(await getState({ run: g.run, questions: [...new Set(g.records.map(questionKey))] }));
  }
  const breakdowns = scoreRecords(g.records, g.scheme, g.params ?? {}, state);
  return {
    json: ownedUtf8(JSON.stringify({ breakdowns })),
    records: g.records.length,
    run: g.run,
    updates: state?.toJSON().min_tool_calls,
  };
}
