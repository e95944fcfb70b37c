// The retrieval protocol of Search-R1 and verl's search tool, so their configs point at this server unchanged:
//   POST <url>  {"queries": [...], "topk": k, "return_scores": bool}
//   → {"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}   (one list per query)
//   → {"result": [[{"id", "contents"}, ...], ...]}                          (return_scores false: the documents)
// Shapes read from PeterGriffinJin/Search-R1 search_r1/search/retrieval_server.py (`QueryRequest`,
// `retrieve_endpoint`, commit a14dc3a4ffc6fe88c1e95038d9738e21ba3f7a06) and verl's client
// verl/tools/utils/search_r1_like_utils.py `call_search_api` (volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7),
// which posts return_scores=true and reads `document.contents` (title line, newline, text — FlashRAG's layout, what
// our corpus keeps). `topk` missing, null or 0 falls back to the default, as retrieval_server.py does; unknown keys
// are ignored as pydantic does.
//
// Neither client sends an Authorization header and only the URL is configurable, so the per-run token may also be
// the first two path segments: http://127.0.0.1:PORT/t/<token>/retrieve (any endpoint accepts /t/<token>/…).
import type { IncomingMessage } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { checkBearer, HttpError } from './http';
import { MAX_QUERIES, MAX_QUERY_CHARS, MAX_TOP_K } from './protocol';

export const DEFAULT_RETRIEVE_TOP_K = 3;
/** The retrieve endpoint: /retrieve, or /<caller>/retrieve to keep tool health apart per caller. */
export const RETRIEVE_PATH = /^\/(?:(?<caller>[^/]+)\/)?retrieve$/;

export const RetrieveRequestSchema = z.object({
  queries: z.array(z.string().max(MAX_QUERY_CHARS)).max(MAX_QUERIES),
  topk: z.number().int().min(0).max(MAX_TOP_K).nullable().optional(),
  return_scores: z.boolean().default(false),
});

/** The answer: one list per query (built by env-work.ts's retrieveFragments in a worker thread). */
export interface RetrieveDocument {
  id: string;
  contents: string;
}
export type RetrieveResponse =
  | { result: { document: RetrieveDocument; score: number }[][] }
  | { result: RetrieveDocument[][] };

/**
 * Authenticates a request and returns the path the routes see: `/t/<token>/rest` → `/rest` (token checked in
 * constant time), anything else needs `Authorization: Bearer <token>`.
 */
export function authenticate(req: IncomingMessage, token: string): string {
  const path = (req.url ?? '/').split('?')[0];
  const m = /^\/t\/([^/]*)(\/.*)$/.exec(path);
  if (!m) {
    checkBearer(req, token);
    return path;
  }
  let given: Buffer;
  try {
    given = Buffer.from(decodeURIComponent(m[1]));
  } catch {
    given = Buffer.alloc(0);
  }
  const want = Buffer.from(token);
  if (given.length !== want.length || !timingSafeEqual(given, want))
    throw new HttpError('unauthorized', 'wrong token in the URL path (/t/<token>/…)');
  return m[2];
}

/** The path the routes see, before authentication (the token is checked by `authenticate`). */
export function routePath(url: string | undefined): string {
  const path = (url ?? '/').split('?')[0];
  const m = /^\/t\/[^/]*(\/.*)$/.exec(path);
  return m ? m[1] : path;
}
