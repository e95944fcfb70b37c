// Token overlays, the pure part: a record line with `tokens` (ids + offsets into `response`) → one span per token
// in raw line columns (JSON escapes accounted for), the style bucket of each span for each view, and the hover
// text. No `vscode` import: unit-tested directly.
import { mapStringAt } from '../../../core/jsonstring';
import { RecordSchema, type TrajectoryRecord } from '../../../core/record';

export type OverlayView = 'mask' | 'logprob' | 'advantage';
export const OVERLAY_VIEWS: readonly OverlayView[] = ['mask', 'logprob', 'advantage'];

export interface TokenSpan {
  index: number;
  /** Raw columns in the JSON line (tokenSpans), offsets in the response or a cell's text (responseTokenSpans,
   *  cellTokenSpans); end exclusive. */
  start: number;
  end: number;
  id: number;
  /** The token's text in `response`. */
  text: string;
  mask: number | null;
  logprob: number | null;
  advantage: number | null;
}

export type SpansResult = { spans: TokenSpan[] } | { spans: null; reason: string };

/** Spans of one JSONL line. Lines without tokens or offsets give a reason instead (shown by the toggle). */
export function tokenSpans(raw: string): SpansResult {
  const parsed = parseLine(raw);
  if ('reason' in parsed) return { spans: null, reason: parsed.reason };
  const inResponse = responseTokenSpans(parsed.record);
  if (!inResponse.spans) return inResponse;
  const map = mapStringAt(raw, ['response']);
  if (!map) return { spans: null, reason: 'no response string' };
  return { spans: inResponse.spans.map((s) => ({ ...s, start: map.toRaw(s.start), end: map.toRaw(s.end) })) };
}

function parseLine(raw: string): { record: TrajectoryRecord } | { reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { reason: 'not valid JSON' };
  }
  const parsed = RecordSchema.safeParse(value);
  return parsed.success ? { record: parsed.data } : { reason: 'not a valid record' };
}

/** One span per token with start/end as UTF-16 offsets into `response`. */
export function responseTokenSpans(r: TrajectoryRecord): SpansResult {
  const t = r.tokens;
  if (!t) return { spans: null, reason: 'no tokens' };
  if (!t.offsets) return { spans: null, reason: 'tokens without offsets' };
  const response = r.response;
  const toUtf16 = codePointsToUtf16(response);
  const spans: TokenSpan[] = [];
  for (let i = 0; i < t.ids.length; i++) {
    const a = toUtf16(clamp(t.offsets[i], response));
    let b = i + 1 < t.ids.length ? toUtf16(clamp(t.offsets[i + 1], response)) : response.length;
    if (b < a) b = a; // offsets out of order: a zero-width span rather than a wrong one
    while (b > a && /\s/.test(response[b - 1])) b--; // the separator before the next token is not this token
    spans.push({
      index: i,
      start: a,
      end: b,
      id: t.ids[i],
      text: response.slice(a, b),
      mask: t.loss_mask?.[i] ?? null,
      logprob: t.logprobs?.[i] ?? null,
      advantage: t.advantages?.[i] ?? null,
    });
  }
  return { spans };
}

/**
 * Spans of one notebook step cell: the record's line (the header cell keeps it), the cell's [start, end) in the
 * response (its metadata) and the cell's current text. Offsets come back relative to the cell text. A cell whose
 * text no longer matches the record (edited) has no overlay: the tokens describe the text as it was.
 */
export function cellTokenSpans(raw: string, cellStart: number, cellEnd: number, cellText: string): SpansResult {
  const parsed = parseLine(raw);
  if ('reason' in parsed) return { spans: null, reason: parsed.reason };
  const r = parsed.record;
  if (r.response.slice(cellStart, cellEnd) !== cellText) return { spans: null, reason: 'cell edited' };
  const all = responseTokenSpans(r);
  if (!all.spans) return all;
  const spans: TokenSpan[] = [];
  for (const s of all.spans) {
    if (s.end <= cellStart || s.start >= cellEnd) continue;
    const start = Math.max(s.start, cellStart) - cellStart;
    const end = Math.min(s.end, cellEnd) - cellStart;
    spans.push({ ...s, start, end });
  }
  return { spans };
}

function clamp(o: number, response: string): number {
  return Math.max(0, Math.min(o, response.length));
}

/** Python's offsets count code points; JS strings count UTF-16 units. Identity for BMP-only text. */
export function codePointsToUtf16(text: string): (cp: number) => number {
  if (!/[\uD800-\uDBFF]/.test(text)) return (cp) => cp;
  const map: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    map.push(i);
    if (c >= 0xd800 && c <= 0xdbff) i++;
  }
  map.push(text.length);
  return (cp) => map[Math.min(cp, map.length - 1)];
}

/** Log-prob heat buckets by probability: p ≥ 0.9, ≥ 0.5, ≥ 0.1, ≥ 0.01, below. */
export const LOGPROB_BUCKETS = ['lp0', 'lp1', 'lp2', 'lp3', 'lp4'] as const;
const LOGPROB_EDGES = [0.9, 0.5, 0.1, 0.01];

/** The style key of a span in a view, or null when the view has nothing to say about it. */
export function styleOf(view: OverlayView, s: TokenSpan): string | null {
  switch (view) {
    case 'mask':
      return s.mask === null ? null : s.mask > 0 ? 'trained' : 'masked';
    case 'logprob': {
      if (s.logprob === null) return null;
      const p = Math.exp(s.logprob);
      const k = LOGPROB_EDGES.findIndex((edge) => p >= edge);
      return LOGPROB_BUCKETS[k < 0 ? 4 : k];
    }
    case 'advantage':
      return s.advantage === null ? null : s.advantage > 0 ? 'positive' : s.advantage < 0 ? 'negative' : 'zero';
  }
}

export const STYLE_KEYS: Record<OverlayView, readonly string[]> = {
  mask: ['trained', 'masked'],
  logprob: LOGPROB_BUCKETS,
  advantage: ['positive', 'negative', 'zero'],
};

/** Ranges per style key for one view over many spans. */
export function groupByStyle(view: OverlayView, spans: readonly TokenSpan[]): Map<string, TokenSpan[]> {
  const out = new Map<string, TokenSpan[]>();
  for (const s of spans) {
    if (s.end <= s.start) continue;
    const k = styleOf(view, s);
    if (k === null) continue;
    const list = out.get(k) ?? [];
    list.push(s);
    out.set(k, list);
  }
  return out;
}

/** The span under a raw column (binary search; spans are in order). */
export function spanAt(spans: readonly TokenSpan[], column: number): TokenSpan | undefined {
  let lo = 0;
  let hi = spans.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = spans[mid];
    if (column < s.start) hi = mid - 1;
    else if (column >= s.end) lo = mid + 1;
    else return s;
  }
  return undefined;
}

export function hoverMarkdown(s: TokenSpan): string {
  const fmt = (x: number | null, digits = 4) =>
    x === null ? '—' : Number.isInteger(x) ? String(x) : x.toFixed(digits);
  const p = s.logprob === null ? '' : ` (p = ${Math.exp(s.logprob).toFixed(4)})`;
  return [
    `**token ${s.index}** \`${JSON.stringify(s.text)}\``,
    '',
    `| id | log-prob | loss mask | advantage |`,
    `|---|---|---|---|`,
    `| ${s.id} | ${fmt(s.logprob)}${p} | ${s.mask === null ? '—' : s.mask > 0 ? `${fmt(s.mask)} (trained)` : '0 (masked)'} | ${fmt(s.advantage)} |`,
  ].join('\n');
}
