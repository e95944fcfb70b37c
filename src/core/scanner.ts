// Scanner: response text → segments with exact character offsets, plus the structural problems met on the way
// (unclosed, stray, nested tags). Never throws; segments partition the text in order.
import { BOXED_OPEN, DEFAULT_TOOLS, DIALECTS, Dialect, DialectName, allTags } from './dialects';
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
  /** Structural problems (COA001–COA003, COA010, COA016, COA017); the rule checker adds the rest. */
  problems: (FormatDiagnostic & { atEnd?: boolean })[];
}

type Role = 'think' | 'action' | 'observation' | 'answer' | 'foreign' | 'unknown';

interface Tag {
  start: number;
  end: number;
  /** The tag as written, e.g. `</think>` (its name is text between `<` or `</` and `>`). */
  text: string;
  closing: boolean;
  role: Role;
  tool?: string;
  /** `\boxed{` of a boxed-answer dialect (start..end covers `\boxed{`). */
  boxed?: boolean;
  /** Shared facts about this tag text (absent for `\boxed{`). */
  info?: TagInfo;
}

const ALL_KNOWN_TAGS = new Set(allTags());

export function scan(text: string, options: ScanOptions = {}): ScanResult {
  // One pass finds the `<…>` tags; the dialect (when auto) is read from them, and `\boxed{` is searched for only
  // where it can matter: in a boxed-answer dialect, or to tell AutoCoA from plain text.
  const tags = tokenize(text);
  let boxed: Tag[] | null = null;
  let name: DialectName;
  if (!options.dialect || options.dialect === 'auto') {
    name = dialectOfTags(tags);
    if (name === 'coa' && !hasPlainTags(tags)) name = (boxed = boxedTags(text)).length ? 'autocoa' : 'coa';
  } else name = options.dialect;
  const d = DIALECTS[name];
  const result = new Scanner(
    text,
    d,
    options.tools ?? DEFAULT_TOOLS,
    d.answer.style === 'boxed' ? merge(tags, boxed ?? boxedTags(text)) : tags,
  ).run();
  // Do not keep a huge text's tags alive until the next scan.
  if (tagList.length > TAG_POOL_SIZE) tagList.length = 0;
  return result;
}

/** Every tag token of a text in order — `<name>`, `</name>` and `\boxed{` — before any dialect gives them roles. */
export function findTags(text: string): { start: number; end: number; text: string }[] {
  return merge(tokenize(text), boxedTags(text)).map((t) => ({ start: t.start, end: t.end, text: t.text }));
}

/** What a tag text means independently of the dialect, shared by every occurrence of that text. */
interface TagInfo {
  text: string;
  hash: number;
  /** DETECT_* bits for dialect detection. */
  detect: number;
  /** For an opening tag: the text of its closing tag. */
  close: string;
  /** Role in the last role table it was looked up in (one table serves a whole file). */
  table: Map<string, RoleInfo> | null;
  role: Role;
  tool?: string;
}

const DETECT_AUTOCOA = 1;
const DETECT_HERMES = 2;
const DETECT_SEARCH_R1 = 4;
/** `<observation>`, `<answer>`, `<search>`: with one of these, `\boxed{` does not make a text AutoCoA. */
const DETECT_PLAIN = 8;
const DETECT_BITS = new Map<string, number>([
  ['<begin_search>', DETECT_AUTOCOA],
  ['</end_search>', DETECT_AUTOCOA],
  ['<search_result>', DETECT_AUTOCOA],
  ['<tool_call>', DETECT_HERMES],
  ['<tool_response>', DETECT_HERMES],
  ['<information>', DETECT_SEARCH_R1],
  ['</information>', DETECT_SEARCH_R1],
  ['<observation>', DETECT_PLAIN],
  ['<answer>', DETECT_PLAIN],
  ['<search>', DETECT_PLAIN],
]);

/** Tag infos by a hash of the tag text (chained): the same few tags recur in every record of a file. */
const SLOTS = 1024;
const infoSlots: (TagInfo[] | undefined)[] = new Array(SLOTS);
let infoCount = 0;
/** The dialects' own tag strings, so that a tag found in a text is the very string the dialect tables hold. */
const LITERALS = new Map(allTags().map((t) => [t, t]));

function sameChars(text: string, start: number, tag: string): boolean {
  for (let k = 0; k < tag.length; k++) if (text.charCodeAt(start + k) !== tag.charCodeAt(k)) return false;
  return true;
}

/** The info of the tag text[start, end); `hash` is tagHash of it, computed by the tokenizer on the way. */
function tagInfo(text: string, start: number, end: number, hash: number, closing: boolean): TagInfo {
  const bucket = infoSlots[hash & (SLOTS - 1)];
  if (bucket) {
    for (const info of bucket)
      if (info.hash === hash && info.text.length === end - start && sameChars(text, start, info.text)) return info;
  }
  const sliced = text.slice(start, end);
  const tag = LITERALS.get(sliced) ?? sliced;
  const info: TagInfo = { text: tag, hash, detect: DETECT_BITS.get(tag) ?? 0, close: '', table: null, role: 'unknown' };
  // The closing text of an opening tag is itself a shared tag text, so that finding it compares strings by identity.
  if (!closing) {
    const close = `</${tag.slice(1)}`;
    info.close = tagInfo(close, 0, close.length, tagHash(close), true).text;
  }
  if (infoCount < 4096) {
    // Bounded: a file full of made-up tags must not grow this forever (later ones are simply not shared).
    infoCount++;
    if (bucket) bucket.push(info);
    else infoSlots[hash & (SLOTS - 1)] = [info];
  }
  return info;
}

/** The tokenizer's hash of a tag text (`<name>` or `</name>`). */
function tagHash(tag: string): number {
  const closing = tag.charCodeAt(1) === 47;
  let hash = closing ? 7 : 3;
  for (let k = closing ? 2 : 1; k < tag.length - 1; k++) hash = (Math.imul(hash, 31) + tag.charCodeAt(k)) | 0;
  return hash;
}

/**
 * Every `<name>` and `</name>` (name: `[A-Za-z_][A-Za-z0-9_.:-]{0,63}`) in the text, in order: the matches of the
 * regex `/<(\/?)([A-Za-z_][A-Za-z0-9_.:-]{0,63})>/g`, found by a char-code scanner jumping between `<` with
 * indexOf (several times faster than the regex on long prose).
 */
function tokenize(text: string): Tag[] {
  // The list is reused like its Tag objects (findTags copies what it returns).
  const tags = tagList;
  tags.length = 0;
  let used = 0;
  const n = text.length;
  for (let lt = text.indexOf('<'); lt >= 0; ) {
    let q = lt + 1;
    const closing = text.charCodeAt(q) === 47; /* / */
    if (closing) q++;
    const nameStart = q;
    let c = text.charCodeAt(q);
    if (isNameStart(c)) {
      let hash = closing ? 7 : 3;
      do {
        hash = (Math.imul(hash, 31) + c) | 0;
        c = text.charCodeAt(++q);
      } while (q < n && isNameChar(c));
      if (q - nameStart <= 64 && c === 62 /* > */) {
        const info = tagInfo(text, lt, q + 1, hash, closing);
        // Tag objects never leave the scanner (segments and problems copy positions), so they are reused.
        let t = used < TAG_POOL_SIZE ? tagPool[used++] : undefined;
        if (t) {
          t.start = lt;
          t.end = q + 1;
          t.text = info.text;
          t.closing = closing;
          t.role = 'unknown';
          t.tool = undefined;
          t.info = info;
        } else {
          t = { start: lt, end: q + 1, text: info.text, closing, role: 'unknown', tool: undefined, boxed: false, info };
          if (used <= TAG_POOL_SIZE && tagPool.length < TAG_POOL_SIZE) tagPool.push(t);
        }
        tags.push(t);
        lt = text.indexOf('<', q + 1);
        continue;
      }
    }
    lt = text.indexOf('<', lt + 1);
  }
  return tags;
}

/** Reused Tag objects for the `<…>` tags of one scan (scan runs to completion before the next starts). */
const TAG_POOL_SIZE = 4096;
const tagPool: Tag[] = [];
const tagList: Tag[] = [];

/** Every `\boxed{` (it holds no `<` and a tag no backslash, so these never overlap the tags). */
function boxedTags(text: string): Tag[] {
  const out: Tag[] = [];
  for (let p = text.indexOf('\\'); p >= 0; p = text.indexOf('\\', p + 1)) {
    if (text.startsWith(BOXED_OPEN, p)) {
      out.push({ start: p, end: p + BOXED_OPEN.length, text: BOXED_OPEN, closing: false, role: 'answer', boxed: true });
      p += BOXED_OPEN.length - 1;
    }
  }
  return out;
}

/** Two position-sorted tag lists as one. */
function merge(a: Tag[], b: Tag[]): Tag[] {
  if (b.length === 0) return a;
  const out: Tag[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length)
    out.push(j >= b.length || (i < a.length && a[i].start < b[j].start) ? a[i++] : b[j++]);
  return out;
}

/** [A-Za-z_] */
function isNameStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}

/** [A-Za-z0-9_.:-] */
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 58) || c === 95 || c === 46 || c === 45;
}

/**
 * detectDialect(text) read from the text's `<…>` tags (every match of its regexes is one of these tags), except
 * for `\boxed{`: a 'coa' answer here with no plain tags (hasPlainTags) still needs that check.
 */
function dialectOfTags(tags: readonly Tag[]): DialectName {
  let bits = 0;
  for (let k = 0; k < tags.length; k++) bits |= tags[k].info!.detect;
  if (bits & DETECT_AUTOCOA) return 'autocoa';
  if (bits & DETECT_HERMES) return 'hermes';
  if (bits & DETECT_SEARCH_R1) return 'search-r1';
  return 'coa';
}

function hasPlainTags(tags: readonly Tag[]): boolean {
  for (let k = 0; k < tags.length; k++) if (tags[k].info!.detect & DETECT_PLAIN) return true;
  return false;
}

interface RoleInfo {
  role: Role;
  tool?: string;
}

/** Structural tags of a dialect with a tool list → role (built once per dialect and tool list). */
const roleTables = new Map<string, Map<string, RoleInfo>>();

let lastRoles: { d: Dialect; tools: readonly string[]; table: Map<string, RoleInfo> } | null = null;

function roleTable(d: Dialect, tools: readonly string[]): Map<string, RoleInfo> {
  // Every record of a file comes with the same settings objects: skip building the key.
  if (lastRoles && lastRoles.d === d && lastRoles.tools === tools) return lastRoles.table;
  const table = roleTableFor(d, tools);
  lastRoles = { d, tools, table };
  return table;
}

function roleTableFor(d: Dialect, tools: readonly string[]): Map<string, RoleInfo> {
  const key = d.action.style === 'per-tool' ? `${d.name}\u0000${tools.join('\u0000')}` : d.name;
  let table = roleTables.get(key);
  if (table) return table;
  table = new Map();
  const add = (tag: string, role: Role, tool?: string) => table!.set(tag, { role, tool });
  add(d.think.open, 'think');
  add(d.think.close, 'think');
  add(d.observation.open, 'observation');
  add(d.observation.close, 'observation');
  if (d.answer.style === 'tag') {
    add(d.answer.tags.open, 'answer');
    add(d.answer.tags.close, 'answer');
  }
  if (d.action.style === 'fixed') {
    add(d.action.tags.open, 'action', d.action.tool);
    add(d.action.tags.close, 'action', d.action.tool);
  } else if (d.action.style === 'json') {
    add(d.action.tags.open, 'action');
    add(d.action.tags.close, 'action');
  } else {
    for (const tool of tools) {
      if (!table.has(`<${tool}>`)) {
        add(`<${tool}>`, 'action', tool);
        add(`</${tool}>`, 'action', tool);
      }
    }
  }
  if (roleTables.size > 64) roleTables.clear(); // settings changes only; never grows without bound
  roleTables.set(key, table);
  return table;
}

class Scanner {
  private readonly tags: Tag[];
  private readonly segments: Segment[] = [];
  private readonly problems: ScanResult['problems'] = [];
  /** Sorted tag indices per exact tag text, built on the first long search for a closing tag. */
  private byText: Map<string, number[]> | null = null;
  private blockCount = 0;
  /** Text position where the block last parsed by block/think/boxed ended (they return the next tag index). */
  private at = 0;

  constructor(
    private readonly text: string,
    private readonly d: Dialect,
    private readonly tools: readonly string[],
    raw: Tag[],
  ) {
    this.tags = this.assignRoles(raw);
  }

  run(): ScanResult {
    let i = 0;
    let pos = 0;
    // A DeepSeek-R1-style template pre-fills `<think>`: the response starts inside it.
    if (this.d.implicitThinkOpen) {
      let firstThink = -1;
      for (let k = 0; k < this.tags.length; k++) {
        if (this.tags[k].role === 'think') {
          firstThink = k;
          break;
        }
      }
      if (firstThink >= 0 && this.tags[firstThink].closing) {
        i = this.think(0, null, 0);
        pos = this.at;
      }
    }
    while (i < this.tags.length) {
      const t = this.tags[i];
      if (t.start < pos) {
        i++;
        continue;
      }
      const opensBlock =
        !t.closing && (t.role === 'think' || t.role === 'action' || t.role === 'observation' || t.role === 'answer');
      const unknownTool =
        this.d.action.style === 'per-tool' &&
        t.role === 'unknown' &&
        !t.closing &&
        this.nextIndex(t.info!.close, i) >= 0;
      if (opensBlock || unknownTool) {
        this.pushText(pos, t.start);
        i = this.block(i, 0);
        pos = this.at;
        continue;
      }
      if (t.closing && t.role !== 'foreign' && t.role !== 'unknown')
        this.problem('COA002', t, `stray closing tag ${t.text}`);
      if (t.role === 'foreign') this.foreign(t);
      i++;
    }
    this.pushText(pos, this.text.length);
    return { dialect: this.d.name, text: this.text, segments: this.segments, problems: this.problems };
  }

  // ---- tokens ----

  /** Roles in this dialect (`\boxed{` tags come only in a boxed-answer dialect and are answers already). */
  private assignRoles(tags: Tag[]): Tag[] {
    const table = roleTable(this.d, this.tools);
    for (let j = 0; j < tags.length; j++) {
      const t = tags[j];
      const info = t.info;
      if (!info) continue;
      if (info.table !== table) {
        const known = table.get(info.text);
        info.table = table;
        info.role = known ? known.role : ALL_KNOWN_TAGS.has(info.text) ? 'foreign' : 'unknown';
        info.tool = known?.tool;
      }
      t.role = info.role;
      if (info.tool !== undefined) t.tool = info.tool;
    }
    return tags;
  }

  /** Index of the first tag with this exact text after index `after`, or -1. */
  private nextIndex(tagText: string, after: number): number {
    // A closing tag is nearly always among the next few tags: look there before building the index.
    const tags = this.tags;
    const near = Math.min(tags.length, after + 9);
    for (let j = after + 1; j < near; j++) if (tags[j].text === tagText) return j;
    if (near === tags.length) return -1;
    if (!this.byText) {
      this.byText = new Map();
      for (let j = 0; j < tags.length; j++) {
        const list = this.byText.get(tags[j].text);
        if (list) list.push(j);
        else this.byText.set(tags[j].text, [j]);
      }
    }
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
    return t.info ? t.info.close : `</${t.text.slice(1)}`;
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

  /** Parse the block opened by tags[i]; returns the next tag index (and sets `at` to the next text position). */
  private block(i: number, depth: number): number {
    const t = this.tags[i];
    if (t.role === 'think') return this.think(i, t, depth);
    if (t.boxed) return this.boxed(i, depth);
    const kind: SegmentKind = t.role === 'observation' ? 'observation' : t.role === 'answer' ? 'answer' : 'action';
    const closeIdx = this.nextIndex(this.closeTextFor(t), i);
    // The same tag opened again before the close: this one was never closed, and the close belongs to the later
    // one. Taking the first close would swallow everything between (an unclosed <search> eating the observation,
    // think and search that follow it) and pass the format gate; so it ends where the next step starts (COA017).
    const again = closeIdx >= 0 ? this.nextIndex(t.text, i) : -1;
    let end: number;
    let close: Span | null = null;
    let next: number;
    if (again >= 0 && again < closeIdx) {
      const o = this.nextOpening(i);
      const stop = o >= 0 && o < again ? o : again;
      end = this.tags[stop].start;
      next = stop;
      this.problem(
        'COA017',
        t,
        `${t.text} is opened again before it is closed (${this.tags[closeIdx].text} closes the later one)`,
      );
    } else if (closeIdx >= 0) {
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
    this.at = end;
    return next;
  }

  private describeAction(seg: Segment, open: Tag): void {
    const raw = this.text.slice(seg.contentStart, seg.contentEnd);
    if (this.d.action.style !== 'json') {
      seg.tool = open.tool ?? open.text.slice(1, -1);
      seg.argument = raw.trim();
      return;
    }
    const parsed = parseToolCall(raw);
    if ('error' in parsed) {
      seg.tool = '';
      seg.argument = raw.trim();
      this.problems.push({
        ...diag('COA010', `invalid tool-call JSON: ${parsed.error}`),
        start: seg.contentStart,
        end: seg.contentEnd,
      });
    } else {
      seg.tool = parsed.name;
      seg.argument = parsed.arguments;
    }
  }

  /** `\boxed{…}` with balanced braces. */
  private boxed(i: number, depth: number): number {
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
    this.at = end;
    return next;
  }

  /**
   * A `<think>` block (open = null when the template opened it). Steps inside are allowed only in dialects that
   * write actions inside thinking; any other opening tag inside is forbidden nesting if `</think>` comes later,
   * and otherwise means the think block was never closed.
   */
  private think(i: number, open: Tag | null, depth: number): number {
    const block = this.blockCount++;
    const closeText = this.d.think.close;
    const contentStart = open ? open.end : 0;
    let pieceStart = open ? open.start : 0;
    let pieceOpen: Span | null = open ? { start: open.start, end: open.end } : null;
    let j = open ? i + 1 : i;
    let cStart = contentStart;
    while (j < this.tags.length) {
      const t = this.tags[j];
      if (t.text === closeText) {
        this.piece(pieceStart, pieceOpen, t.end, t.start, { start: t.start, end: t.end }, cStart, depth, block);
        this.at = t.end;
        return j + 1;
      }
      const isOpening =
        !t.closing && (t.role === 'think' || t.role === 'action' || t.role === 'observation' || t.role === 'answer');
      if (isOpening && !t.boxed) {
        const closeLater = this.nextIndex(closeText, j) >= 0;
        const allowedInside = this.d.actionsInsideThink && (t.role === 'action' || t.role === 'observation');
        if (allowedInside) {
          this.piece(pieceStart, pieceOpen, t.start, t.start, null, cStart, depth, block);
          j = this.block(j, depth + 1);
          pieceStart = this.at;
          cStart = this.at;
          pieceOpen = null;
          continue;
        }
        if (!closeLater) {
          // `<think> … <search>` with no `</think>` anywhere after: the think block was left open.
          if (open) this.problem('COA001', open, `unclosed tag ${open.text}`, false);
          this.piece(pieceStart, pieceOpen, t.start, t.start, null, cStart, depth, block);
          this.at = t.start;
          return j;
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
      if (t.closing && t.role !== 'foreign' && t.role !== 'unknown')
        this.problem('COA002', t, `stray closing tag ${t.text}`);
      if (t.role === 'foreign') this.foreign(t);
      j++;
    }
    // End of text inside <think>.
    if (open) this.problem('COA001', open, `unclosed tag ${open.text}`, true);
    this.piece(pieceStart, pieceOpen, this.text.length, this.text.length, null, cStart, depth, block);
    this.at = this.text.length;
    return this.tags.length;
  }

  // ---- output ----

  /** One piece of a think block (empty pieces only when they carry a tag). */
  private piece(
    start: number,
    open: Span | null,
    end: number,
    contentEnd: number,
    close: Span | null,
    contentStart: number,
    depth: number,
    block: number,
  ): void {
    if (end > start || open || close)
      this.segments.push({ kind: 'think', start, end, contentStart, contentEnd, open, close, depth, block });
  }

  private pushText(start: number, end: number): void {
    if (end > start)
      this.segments.push({
        kind: 'text',
        start,
        end,
        contentStart: start,
        contentEnd: end,
        open: null,
        close: null,
        depth: 0,
      });
  }

  private foreign(t: Tag): void {
    const owner = Object.values(DIALECTS).find((d) => allTagsOf(d).includes(t.text));
    this.problem('COA016', t, `${t.text} belongs to the ${owner?.name ?? 'another'} dialect, not ${this.d.name}`);
  }

  private problem(code: RuleCode, t: { start: number; end: number }, message: string, atEnd?: boolean): void {
    const p: ScanResult['problems'][number] = {
      code,
      severity: RULES[code].severity,
      message,
      start: t.start,
      end: t.end,
    };
    if (atEnd !== undefined) p.atEnd = atEnd;
    this.problems.push(p);
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
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return { error: '"arguments" must be an object' };
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
