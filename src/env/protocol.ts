// The HTTP contract of the environment server (docs/env-server.md): request schemas (zod, strict:
// an unknown key is a 400 naming it), response shapes and the error envelope. Shared by server and client.
import { z } from 'zod';
import { DIALECT_NAMES } from '../core/dialects';
import { RecordSchema, RewardBreakdownSchema, SCHEMES } from '../core/record';
import { RewardParamsSchema } from '../core/rewards';
import { NAME_RE, NAME_RULE_TEXT } from '../core/names';
import { SCAN_RULE_NAMES, type ScanRule } from '../core/scanners';
import { AlertSchema } from '../core/alerts';

export const MAX_QUERIES = 1024;
export const MAX_TOP_K = 100;
export const MAX_QUERY_CHARS = 10_000;

export const SearchRequestSchema = z
  .object({
    queries: z.array(z.string().max(MAX_QUERY_CHARS)).max(MAX_QUERIES),
    top_k: z.number().int().min(1).max(MAX_TOP_K).default(3),
    dialect: z.enum(DIALECT_NAMES).optional(),
  })
  .strict();

export const RUN_ID = NAME_RE;

export const GradeRequestSchema = z
  .object({
    records: z.array(RecordSchema),
    scheme: z.enum(SCHEMES),
    params: RewardParamsSchema.optional(),
    run: z.string().regex(RUN_ID, `run ids are ${NAME_RULE_TEXT}`).optional(),
  })
  .strict();

/** The arguments a model passes to the `search` tool (as in a Hermes `{"name","arguments"}` call). */
export const SearchToolArgsSchema = z
  .object({ query: z.string().min(1).describe('What to look for: a short keyword query or a question.') })
  .strict();

export interface ToolSpec {
  name: string;
  description: string;
  parameters: unknown;
}

export function toolSpecs(passages: number): ToolSpec[] {
  return [
    {
      name: 'search',
      description: `BM25 search over a corpus of ${passages} passages; returns the top passages with their titles.`,
      parameters: z.toJSONSchema(SearchToolArgsSchema),
    },
  ];
}

// The answers, as schemas too: the trainer's client is generated from them (coa_trainer/contracts/env_protocol.py),
// so the two sides of the HTTP contract cannot drift apart.
export const HealthResponseSchema = z.object({
  status: z.literal('ok'),
  passages: z.number().int(),
  uptime_s: z.number(),
  /** Request counters since start (extra to the fixed contract: for dashboards and drills). */
  stats: z.record(z.string(), z.number()).optional(),
});
export type HealthResponse = z.infer<typeof HealthResponseSchema>;

export const SearchResultItemSchema = z.object({
  id: z.string(),
  title: z.string(),
  contents: z.string(),
  text: z.string(),
  score: z.number(),
});
export type SearchResultItem = z.infer<typeof SearchResultItemSchema>;

/** What a client sends (`top_k` may be left out: the server defaults it). */
export type SearchRequest = z.input<typeof SearchRequestSchema>;

export const SearchResponseSchema = z.object({
  results: z.array(z.array(SearchResultItemSchema)),
  observations: z.array(z.string()),
});
export type SearchResponse = z.infer<typeof SearchResponseSchema>;

export type GradeRequest = z.input<typeof GradeRequestSchema>;

export const GradeResponseSchema = z.object({ breakdowns: z.array(RewardBreakdownSchema) });
export type GradeResponse = z.infer<typeof GradeResponseSchema>;

/** One step's graded rollouts for the core's reward-hacking scanners (src/core/scanners.ts); `params` as the grade's. */
export const ScanRequestSchema = z
  .object({
    records: z.array(RecordSchema),
    params: RewardParamsSchema.optional(),
  })
  .strict();
export type ScanRequest = z.input<typeof ScanRequestSchema>;

export const ScanFindingSchema = z.object({
  rule: z.enum(SCAN_RULE_NAMES as [ScanRule, ...ScanRule[]]),
  detail: z.string(),
  start: z.number().int().optional(),
  end: z.number().int().optional(),
});
/** Counts per rule, also as the step's metrics (`scan_<rule>`); the flagged records by their index in the request. */
export const ScanResponseSchema = z.object({
  counts: z.record(z.string(), z.number().int()),
  metrics: z.record(z.string(), z.number()),
  flagged: z.array(z.object({ index: z.number().int(), findings: z.array(ScanFindingSchema) })),
  scanned: z.number().int(),
  length_limit: z.number().nullable(),
});
export type ScanResponse = z.infer<typeof ScanResponseSchema>;

/** POST /v1/alerts (alertsRoute.ts): the alerts that start at this step and the monitor's new state, which the client
 * keeps as it is (in its checkpoints) and sends back with the next step. */
export const AlertsResponseSchema = z.object({
  alerts: z.array(AlertSchema),
  state: z.record(z.string(), z.unknown()),
});
export type AlertsResponse = z.infer<typeof AlertsResponseSchema>;

export const ErrorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), path: z.string().optional() }),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** The contract as one schema of named parts, for generated clients in other languages (scripts/gen-schemas.ts). */
export const ENV_PROTOCOL_PARTS = {
  SearchRequest: () => SearchRequestSchema,
  SearchResponse: () => SearchResponseSchema,
  GradeRequest: () => GradeRequestSchema,
  GradeResponse: () => GradeResponseSchema,
  HealthResponse: () => HealthResponseSchema,
  ScanRequest: () => ScanRequestSchema,
  ScanResponse: () => ScanResponseSchema,
  AlertsResponse: () => AlertsResponseSchema,
  ErrorBody: () => ErrorBodySchema,
} as const;

export const ERROR_CODES = {
  bad_json: 400,
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  unknown_run: 404,
  method_not_allowed: 405,
  body_too_large: 413,
  state_too_large: 413,
  reply_too_large: 400,
  injected_fault: 503,
  shutting_down: 503,
  timeout: 504,
  internal: 500,
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

/** A 400 message and path for the first zod issue (an unknown key is named in the path). */
export function describeIssues(error: z.ZodError): { message: string; path: string } {
  const issue = error.issues[0];
  const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
  const path = formatPath(keys.length > 0 ? [...issue.path, keys[0]] : issue.path);
  const n = error.issues.length - 1;
  const more = n > 0 ? ` (and ${n} more problem${n > 1 ? 's' : ''})` : '';
  return { path, message: `${path || 'body'}: ${issue.message}${more}` };
}

/** `records[2].tokens.ids` from a zod issue path. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}
