// Token overlays, the pure part: a record line with `tokens` (ids + offsets into `response`) → one span per token
// in raw line columns (JSON escapes accounted for), the style bucket of each span for each view, and the hover
// text. No `vscode` import: unit-tested directly.
import { mapStringAt } from '../../../core/jsonstring';
import { RecordSchema } from '../../../core/record';

export type OverlayView = 'mask' | 'logprob' | 'advantage';
export const OVERLAY_VIEWS: readonly OverlayView[] = ['mask', 'logprob', 'advantage'];

export interface TokenSpan {
  index: number;
  /** Raw columns in the JSON line, end exclusive. */
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
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { spans: null, reason: 'not valid JSON' };
  }
  const parsed = RecordSchema.safeParse(value);
  if (!parsed.success) return { spans: null, reason: 'not a valid record' };
  const r = parsed.data;
  const t = r.tokens;
  if (!t) return { spans: null, reason: 'no tokens' };
  if (!t.offsets) return { spans: null, reason: 'tokens without offsets' };
  const map = mapStringAt(raw, ['response']);
  if (!map) return { spans: null, reason: 'no response string' };
  const response = r.response;
  const toUtf16 = codePointsToUtf16(response);
  const spans: TokenSpan[] = [];
  for (let i = 0; i < t.ids.length; i++) {
    const a = toUtf16(clamp(t.offsets[i], response));
    let b = i + 1 < t.ids.length ? toUtf16(clamp(t.offsets[i + 1], response)) : response.length;
    if (b < a) b = a; // offsets out of order: a zero-width span rather than a wrong one
    while (b > a && /\s/.test(response[b - 1])) b--; // the separator before the next token is not this token
    spans.push({
      index: i, start: map.toRaw(a), end: map.toRaw(b), id: t.ids[i], text: response.slice(a, b),
      mask: t.loss_mask?.[i] ?? null, logprob: t.logprobs?.[i] ?? null, advantage: t.advantages?.[i] ?? null,
    });
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
  const fmt = (x: number | null, digits = 4) => (x === null ? '—' : Number.isInteger(x) ? String(x) : x.toFixed(digits));
  const p = s.logprob === null ? '' : ` (p = ${Math.exp(s.logprob).toFixed(4)})`;
  return [
    `**token ${s.index}** \`${JSON.stringify(s.text)}\``,
    '',
    `| id | log-prob | loss mask | advantage |`,
    `|---|---|---|---|`,
    `| ${s.id} | ${fmt(s.logprob)}${p} | ${s.mask === null ? '—' : s.mask > 0 ? `${fmt(s.mask)} (trained)` : '0 (masked)'} | ${fmt(s.advantage)} |`,
  ].join('\n');
}
