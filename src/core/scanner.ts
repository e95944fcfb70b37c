// Scanner: response text → segments with exact character offsets, plus the structural problems met on the way
// (unclosed, stray, nested tags). Never throws; segments partition the text in order.
import { DEFAULT_TOOLS, DIALECTS, Dialect, DialectName, allTags, detectDialect } from './dialects';
import type { FormatDiagnostic, RuleCode } from './codes';
import { RULES } from './codes';

export type SegmentKind = 'think' | 'action' | 'observation' | 'answer' | 'text';

export interface Span {
  start: number;
  end: number;
}

export interface Segment {
  kind: SegmentKind;
  /** Whole segment, tags included, end exclusive. */
  start: number;
  end: number;
  /** Between the tags (or the braces of `\boxed{}`). */
  contentStart: number;
  contentEnd: number;
  /** Opening tag span; null for a `<think>` block opened by the chat template, or a piece that continues a block. */
  open: Span | null;
  /** Closing tag span; null when unclosed, or a piece that a nested step interrupts. */
  close: Span | null;
  /** Nesting depth: 1 for AutoCoA steps written inside `<think>`. */
  depth: number;
  /** Think pieces of one `<think>` block share a block number. */
  block?: number;
  /** Actions: tool name ('' when it cannot be read, e.g. invalid Hermes JSON). */
  tool?: string;
  /** Actions: the argument text (trimmed content; the `arguments` object as JSON for Hermes). */
  argument?: string;
}

export interface ScanOptions {
  dialect?: DialectName | 'auto';
  tools?: readonly string[];
}

export interface ScanResult {
  dialect: DialectName;
  text: string;
  segments: Segment[];
  /** Structural problems (COA001–COA003, COA010, COA016); the rule checker adds the rest. */
  problems: (FormatDiagnostic & { atEnd?: boolean })[];
}

type Role = 'think' | 'action' | 'observation' | 'answer' | 'foreign' | 'unknown';

interface Tag {
  start: number;
  end: number;
  text: string;
  name: string;
  closing: boolean;
  role: Role;
  tool?: string;
  /** `\boxed{` of a boxed-answer dialect (start..end covers `\boxed{`). */
  boxed?: boolean;
}

const TAG_RE = /<(\/?)([A-Za-z_][A-Za-z0-9_.:-]{0,63})>|\\boxed\{/g;
const ALL_KNOWN_TAGS = new Set(allTags());

export function scan(text: string, options: ScanOptions = {}): ScanResult {
  const name: DialectName = !options.dialect || options.dialect === 'auto' ? detectDialect(text) : options.dialect;
  return new Scanner(text, DIALECTS[name], options.tools ?? DEFAULT_TOOLS).run();
}

class Scanner {
  private readonly tags: Tag[] = [];
  private readonly segments: Segment[] = [];
  private readonly problems: ScanResult['problems'] = [];
  /** Sorted tag indices per exact tag text, to find "the next `</think>` after index i" fast. */
  private readonly byText = new Map<string, number[]>();
  private blockCount = 0;

  constructor(
    private readonly text: string,
    private readonly d: Dialect,
    private readonly tools: readonly string[],
  ) {}

  run(): ScanResult {
    this.tokenize();
    let i = 0;
    let pos = 0;
    // A DeepSeek-R1-style template pre-fills `<think>`: the response starts inside it.
    if (this.d.implicitThinkOpen) {
      const firstThink = this.tags.findIndex((t) => t.role === 'think');
      if (firstThink >= 0 && this.tags[firstThink].closing) [i, pos] = this.think(0, null, 0);
    }
    while (i < this.tags.length) {
      const t = this.tags[i];
      if (t.start < pos) {
        i++;
        continue;
      }
      const opensBlock = !t.closing && (t.role === 'think' || t.role === 'action' || t.role === 'observation' || t.role === 'answer');
      const unknownTool = this.d.action.style === 'per-tool' && t.role === 'unknown' && !t.closing && this.nextIndex(`</${t.name}>`, i) >= 0;
      if (opensBlock || unknownTool) {
        this.pushText(pos, t.start);
        [i, pos] = this.block(i, 0);
        continue;
      }
      if (t.closing && t.role !== 'foreign' && t.role !== 'unknown') this.problem('COA002', t, `stray closing tag ${t.text}`);
      if (t.role === 'foreign') this.foreign(t);
      i++;
    }
    this.pushText(pos, this.text.length);
    return { dialect: this.d.name, text: this.text, segments: this.segments, problems: this.problems };
  }

  // ---- tokens ----

  private tokenize(): void {
    const actionTags = new Map<string, { role: Role; closing: boolean; tool?: string }>();
    const add = (tag: string, role: Role, closing: boolean, tool?: string) => actionTags.set(tag, { role, closing, tool });
    add(this.d.think.open, 'think', false);
    add(this.d.think.close, 'think', true);
    add(this.d.observation.open, 'observation', false);
    add(this.d.observation.close, 'observation', true);
    if (this.d.answer.style === 'tag') {
      add(this.d.answer.tags.open, 'answer', false);
      add(this.d.answer.tags.close, 'answer', true);
    }
    if (this.d.action.style === 'fixed') {
      add(this.d.action.tags.open, 'action', false, this.d.action.tool);
      add(this.d.action.tags.close, 'action', true, this.d.action.tool);
    } else if (this.d.action.style === 'json') {
      add(this.d.action.tags.open, 'action', false);
      add(this.d.action.tags.close, 'action', true);
    } else {
      for (const tool of this.tools) {
        if (!actionTags.has(`<${tool}>`)) {
          add(`<${tool}>`, 'action', false, tool);
          add(`</${tool}>`, 'action', true, tool);
        }
      }
    }
    TAG_RE.lastIndex = 0;
    for (let m = TAG_RE.exec(this.text); m; m = TAG_RE.exec(this.text)) {
      const start = m.index;
      const end = start + m[0].length;
      let tag: Tag;
      if (m[0] === '\\boxed{') {
        if (this.d.answer.style !== 'boxed') continue;
        tag = { start, end, text: m[0], name: 'boxed', closing: false, role: 'answer', boxed: true };
      } else {
        const known = actionTags.get(m[0]);
        const role: Role = known ? known.role : ALL_KNOWN_TAGS.has(m[0]) ? 'foreign' : 'unknown';
        tag = { start, end, text: m[0], name: m[2], closing: m[1] === '/', role, tool: known?.tool };
      }
      const list = this.byText.get(tag.text);
      if (list) list.push(this.tags.length);
      else this.byText.set(tag.text, [this.tags.length]);
      this.tags.push(tag);
    }
  }

  /** Index of the first tag with this exact text after index `after`, or -1. */
  private nextIndex(tagText: string, after: number): number {
    const list = this.byText.get(tagText);
    if (!list) return -1;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid] <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo < list.length ? list[lo] : -1;
  }

  private closeTextFor(t: Tag): string {
    if (t.role === 'action' && this.d.action.style === 'fixed') return this.d.action.tags.close;
    return `</${t.name}>`;
  }

  /** First structural opening tag after index i (where an unclosed opaque block is taken to end). */
  private nextOpening(after: number): number {
    for (let j = after + 1; j < this.tags.length; j++) {
      const t = this.tags[j];
      if (!t.closing && t.role !== 'foreign' && t.role !== 'unknown') return j;
    }
    return -1;
  }

  // ---- blocks ----

  /** Parse the block opened by tags[i]; returns [next tag index, next text position]. */
  private block(i: number, depth: number): [number, number] {
    const t = this.tags[i];
    if (t.role === 'think') return this.think(i, t, depth);
    if (t.boxed) return this.boxed(i, depth);
    const kind: SegmentKind = t.role === 'observation' ? 'observation' : t.role === 'answer' ? 'answer' : 'action';
    const closeIdx = this.nextIndex(this.closeTextFor(t), i);
    let end: number;
    let close: Span | null = null;
    let next: number;
    if (closeIdx >= 0) {
      const c = this.tags[closeIdx];
      close = { start: c.start, end: c.end };
      end = c.end;
      next = closeIdx + 1;
    } else {
      // Unclosed: the block runs to the next structural opening tag, or to the end of the text.
      const o = this.nextOpening(i);
      end = o >= 0 ? this.tags[o].start : this.text.length;
      next = o >= 0 ? o : this.tags.length;
      this.problem('COA001', t, `unclosed tag ${t.text}`, o < 0);
    }
    const seg: Segment = {
      kind,
      start: t.start,
      end,
      contentStart: t.end,
      contentEnd: close ? close.start : end,
      open: { start: t.start, end: t.end },
      close,
      depth,
    };
    if (kind === 'action') this.describeAction(seg, t);
    this.segments.push(seg);
    return [next, end];
  }

  private describeAction(seg: Segment, open: Tag): void {
    const raw = this.text.slice(seg.contentStart, seg.contentEnd);
    if (this.d.action.style !== 'json') {
      seg.tool = open.tool ?? open.name;
      seg.argument = raw.trim();
      return;
    }
    const parsed = parseToolCall(raw);
    if ('error' in parsed) {
      seg.tool = '';
      seg.argument = raw.trim();
      this.problems.push({ ...diag('COA010', `invalid tool-call JSON: ${parsed.error}`), start: seg.contentStart, end: seg.contentEnd });
    } else {
      seg.tool = parsed.name;
      seg.argument = parsed.arguments;
    }
  }

  /** `\boxed{…}` with balanced braces. */
  private boxed(i: number, depth: number): [number, number] {
    const t = this.tags[i];
    let level = 1;
    let p = t.end;
    for (; p < this.text.length && level > 0; p++) {
      const ch = this.text.charCodeAt(p);
      if (ch === 123 /* { */) level++;
      else if (ch === 125 /* } */) level--;
    }
    const closed = level === 0;
    if (!closed) this.problem('COA001', t, 'unclosed \\boxed{', true);
    const end = p;
    this.segments.push({
      kind: 'answer',
      start: t.start,
      end,
      contentStart: t.end,
      contentEnd: closed ? end - 1 : end,
      open: { start: t.start, end: t.end },
      close: closed ? { start: end - 1, end } : null,
      depth,
    });
    let next = i + 1;
    while (next < this.tags.length && this.tags[next].start < end) next++;
    return [next, end];
  }

  /**
   * A `<think>` block (open = null when the template opened it). Steps inside are allowed only in dialects that
   * write actions inside thinking; any other opening tag inside is forbidden nesting if `</think>` comes later,
   * and otherwise means the think block was never closed.
   */
  private think(i: number, open: Tag | null, depth: number): [number, number] {
    const block = this.blockCount++;
    const closeText = this.d.think.close;
    const contentStart = open ? open.end : 0;
    let pieceStart = open ? open.start : 0;
    let pieceOpen: Span | null = open ? { start: open.start, end: open.end } : null;
    let j = open ? i + 1 : i;
    const piece = (end: number, contentEnd: number, close: Span | null, cStart: number) => {
      if (end > pieceStart || pieceOpen || close) {
        this.segments.push({ kind: 'think', start: pieceStart, end, contentStart: cStart, contentEnd, open: pieceOpen, close, depth, block });
      }
    };
    let cStart = contentStart;
    while (j < this.tags.length) {
      const t = this.tags[j];
      if (t.text === closeText) {
        piece(t.end, t.start, { start: t.start, end: t.end }, cStart);
        return [j + 1, t.end];
      }
      const isOpening = !t.closing && (t.role === 'think' || t.role === 'action' || t.role === 'observation' || t.role === 'answer');
      if (isOpening && !t.boxed) {
        const closeLater = this.nextIndex(closeText, j) >= 0;
        const allowedInside = this.d.actionsInsideThink && (t.role === 'action' || t.role === 'observation');
        if (allowedInside) {
          piece(t.start, t.start, null, cStart);
          const [nj, npos] = this.block(j, depth + 1);
          j = nj;
          pieceStart = npos;
          cStart = npos;
          pieceOpen = null;
          continue;
        }
        if (!closeLater) {
          // `<think> … <search>` with no `</think>` anywhere after: the think block was left open.
          if (open) this.problem('COA001', open, `unclosed tag ${open.text}`, false);
          piece(t.start, t.start, null, cStart);
          return [j, t.start];
        }
        const inner = t.boxed ? 'boxed' : t.text;
        this.problem('COA003', t, `${inner} is not allowed inside ${this.d.think.open}`);
        // Skip the nested block's own closing tag so it is not reported again as stray.
        if (t.role !== 'think') {
          const innerClose = this.nextIndex(this.closeTextFor(t), j);
          const thinkClose = this.nextIndex(closeText, j);
          if (innerClose >= 0 && innerClose < thinkClose) {
            j = innerClose + 1;
            continue;
          }
        }
        j++;
        continue;
      }
      if (t.closing && t.role !== 'foreign' && t.role !== 'unknown') this.problem('COA002', t, `stray closing tag ${t.text}`);
      if (t.role === 'foreign') this.foreign(t);
      j++;
    }
    // End of text inside <think>.
    if (open) this.problem('COA001', open, `unclosed tag ${open.text}`, true);
    piece(this.text.length, this.text.length, null, cStart);
    return [this.tags.length, this.text.length];
  }

  // ---- output ----

  private pushText(start: number, end: number): void {
    if (end > start) this.segments.push({ kind: 'text', start, end, contentStart: start, contentEnd: end, open: null, close: null, depth: 0 });
  }

  private foreign(t: Tag): void {
    const owner = Object.values(DIALECTS).find((d) => allTagsOf(d).includes(t.text));
    this.problem('COA016', t, `${t.text} belongs to the ${owner?.name ?? 'another'} dialect, not ${this.d.name}`);
  }

  private problem(code: RuleCode, t: { start: number; end: number }, message: string, atEnd?: boolean): void {
    this.problems.push({ ...diag(code, message), start: t.start, end: t.end, ...(atEnd === undefined ? {} : { atEnd }) });
  }
}

function diag(code: RuleCode, message: string): Omit<FormatDiagnostic, 'start' | 'end'> {
  return { code, severity: RULES[code].severity, message };
}

function allTagsOf(d: Dialect): string[] {
  const tags = [d.think.open, d.think.close, d.observation.open, d.observation.close];
  if (d.answer.style === 'tag') tags.push(d.answer.tags.open, d.answer.tags.close);
  if (d.action.style === 'per-tool') tags.push('<search>', '</search>');
  else tags.push(d.action.tags.open, d.action.tags.close);
  return tags;
}

/** Hermes tool call body → name and arguments (as JSON text), or why it is invalid. */
export function parseToolCall(raw: string): { name: string; arguments: string } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    return { error: (e as Error).message };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'expected a JSON object' };
  const obj = value as Record<string, unknown>;
  if (typeof obj.name !== 'string' || obj.name === '') return { error: 'missing "name"' };
  let args = obj.arguments ?? obj.parameters ?? {};
  if (typeof args === 'string') {
    // Some templates double-encode the arguments; accept a string that holds a JSON object.
    try {
      args = JSON.parse(args);
    } catch {
      return { error: '"arguments" is a string that is not JSON' };
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { error: '"arguments" must be an object' };
  return { name: obj.name, arguments: JSON.stringify(args) };
}

/** The argument a search-like tool receives: the `query` field of Hermes arguments, else the text itself. */
export function actionQuery(seg: Segment): string {
  const arg = seg.argument ?? '';
  if (arg.startsWith('{')) {
    try {
      const v = JSON.parse(arg) as Record<string, unknown>;
      if (typeof v.query === 'string') return v.query;
      if (Array.isArray(v.query_list)) return v.query_list.join('\n');
    } catch {
      /* fall through: plain text */
    }
  }
  return arg;
}

