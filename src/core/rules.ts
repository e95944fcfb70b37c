// Format rules: scanner segments → diagnostics with stable codes. The same function feeds the editor's
// diagnostics, `coa validate`, and the format part of every reward, so they can never disagree.
import { DEFAULT_TOOLS, DIALECTS, DialectName } from './dialects';
import { FormatDiagnostic, RULES, RuleCode, Strictness } from './codes';
import { ScanResult, Segment, scan } from './scanner';

export interface FormatOptions {
  dialect?: DialectName | 'auto';
  strictness?: Strictness;
  tools?: readonly string[];
  /** The episode is finished (default). While generating, unclosed tags and a missing answer are not errors. */
  complete?: boolean;
  /** Most tool calls allowed (COA012); unlimited when absent. */
  maxTurns?: number;
}

export interface FormatReport extends ScanResult {
  diagnostics: FormatDiagnostic[];
  /** No error-severity diagnostic. */
  formatOk: boolean;
  /** m: the number of action segments, well-formed or not. */
  toolCalls: number;
  /** Content of the last answer segment, trimmed; null when there is none. */
  answer: string | null;
}

// Chat-template control tokens such as <|im_end|> are not content.
const SPECIAL_TOKEN_RE = /<\|[^|>]{1,40}\|>/g;
function isBlank(text: string): boolean {
  return text.replace(SPECIAL_TOKEN_RE, '').trim() === '';
}

/** isBlank(text.slice(start, end)) without the copy: ASCII whitespace is decided here, the rest by isBlank. */
function isBlankRange(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || (c >= 9 && c <= 13)) continue;
    // A control token or non-ASCII whitespace: let the exact definition decide.
    if (c === 60 /* < */ || c > 127) return isBlank(text.slice(start, end));
    return false;
  }
  return true;
}

function add(out: FormatDiagnostic[], code: RuleCode, message: string, start: number, end: number): void {
  out.push({ code, severity: RULES[code].severity, message, start, end });
}

/** Where a step's diagnostics point: its opening tag, or the whole piece when the template opened it. */
function openStart(s: Segment): number {
  return s.open ? s.open.start : s.start;
}
function openEnd(s: Segment): number {
  return s.open ? s.open.end : s.end;
}

function byPosition(a: FormatDiagnostic, b: FormatDiagnostic): number {
  // Codes are all `COA` + three digits: code-unit order is their locale order.
  return a.start - b.start || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0);
}

// Plain loops and module-level helpers (no per-call closures): this runs once per record of a 100 MB file.
export function checkFormat(text: string, options: FormatOptions = {}): FormatReport {
  const scanned = scan(text, { dialect: options.dialect, tools: options.tools });
  const d = DIALECTS[scanned.dialect];
  const strict = options.strictness === 'strict';
  const complete = options.complete ?? true;
  const tools = options.tools ?? DEFAULT_TOOLS;
  const out: FormatDiagnostic[] = [];

  for (const p of scanned.problems) {
    // While generating, a tag still open at the very end is simply not finished yet.
    if (!complete && p.code === 'COA001' && p.atEnd) continue;
    out.push({ code: p.code, severity: p.severity, message: p.message, start: p.start, end: p.end });
  }

  const segs = scanned.segments;
  // Steps, actions and answers are picked out of the segments by each loop below rather than collected into
  // arrays first: this runs once per record of a 100 MB file, where every array is garbage to collect.

  // Actions and their observations: each observation answers the action right before it.
  let pending: Segment | null = null;
  for (const s of segs) {
    if (!isStep(s, text)) continue;
    if (s.kind === 'action') {
      if (pending)
        add(
          out,
          'COA005',
          `action ${describe(pending, text)} has no observation`,
          openStart(pending),
          openEnd(pending),
        );
      pending = s;
    } else if (s.kind === 'observation') {
      if (!pending) add(out, 'COA004', `${d.observation.open} without a preceding action`, openStart(s), openEnd(s));
      pending = null;
    } else if (s.kind === 'think' && s.open === null) {
      // Continuation of an AutoCoA think block around a step: not a new step.
    } else if (pending) {
      add(out, 'COA005', `action ${describe(pending, text)} has no observation`, openStart(pending), openEnd(pending));
      pending = null;
    }
  }
  if (pending && complete)
    add(out, 'COA005', `action ${describe(pending, text)} has no observation`, openStart(pending), openEnd(pending));

  let actionCount = 0;
  let over: Segment | null = null;
  for (const a of segs) {
    if (a.kind !== 'action') continue;
    if (options.maxTurns !== undefined && actionCount === options.maxTurns) over = a;
    actionCount++;
    if (a.tool !== '' && (a.argument ?? '').trim() === '' && a.close)
      add(out, 'COA009', `empty argument in ${describe(a, text)}`, a.start, a.end);
    if (a.tool && !tools.includes(a.tool))
      add(out, 'COA011', `unknown tool "${a.tool}" (known: ${tools.join(', ')})`, openStart(a), openEnd(a));
  }
  if (over)
    add(
      out,
      'COA012',
      `${actionCount} tool calls exceed the limit of ${options.maxTurns}`,
      openStart(over),
      openEnd(over),
    );

  let answerCount = 0;
  let firstAnswer: Segment | null = null;
  let lastAnswer: Segment | null = null;
  for (const a of segs) {
    if (a.kind !== 'answer') continue;
    answerCount++;
    if (answerCount > 1) add(out, 'COA007', `several answers: this is answer ${answerCount}`, openStart(a), openEnd(a));
    if (a.close && isBlankRange(text, a.contentStart, a.contentEnd)) add(out, 'COA015', 'empty answer', a.start, a.end);
    firstAnswer ??= a;
    lastAnswer = a;
  }
  if (answerCount === 0 && complete) add(out, 'COA006', 'missing answer', Math.max(0, text.length - 1), text.length);

  if (firstAnswer && d.answer.style === 'tag') {
    // Anything but whitespace (or another answer, flagged above) after the first answer.
    const first = firstAnswer;
    for (const s of segs) {
      if (s.start < first.end || s.kind === 'answer') continue;
      if (s.kind === 'text' && isBlankRange(text, s.start, s.end)) continue;
      add(out, 'COA008', 'content after the answer', s.start, s.end);
      break;
    }
  }

  if (strict && d.answer.style === 'tag') {
    // Search-R1's sequence rule: only whitespace between tags, and a <think> right before every action and answer.
    for (const s of segs) {
      if (s.kind === 'text' && !isBlankRange(text, s.start, s.end)) {
        const t = firstNonBlank(text, s.start, s.end);
        add(out, 'COA013', 'text outside tags', t.start, t.end);
      }
    }
    let prev: Segment | null = null;
    for (const s of segs) {
      if (!isStep(s, text)) continue;
      if ((s.kind === 'action' || s.kind === 'answer') && s.depth === 0 && prev?.kind !== 'think') {
        add(out, 'COA014', `${describe(s, text)} is not preceded by ${d.think.open}`, openStart(s), openEnd(s));
      }
      prev = s;
    }
  }

  if (out.length > 1) out.sort(byPosition);
  const last = lastAnswer;
  return {
    dialect: scanned.dialect,
    text: scanned.text,
    segments: scanned.segments,
    problems: scanned.problems,
    diagnostics: out,
    formatOk: !hasError(out),
    toolCalls: actionCount,
    answer: last ? text.slice(last.contentStart, last.contentEnd).trim() : null,
  };
}

/** A step: not plain text, and not a blank think piece the template left (no tags of its own). */
function isStep(s: Segment, text: string): boolean {
  if (s.kind === 'text') return false;
  return !(
    s.kind === 'think' &&
    s.open === null &&
    s.close === null &&
    isBlankRange(text, s.contentStart, s.contentEnd)
  );
}

function hasError(out: readonly FormatDiagnostic[]): boolean {
  for (const x of out) if (x.severity === 'error') return true;
  return false;
}

function describe(s: Segment, text: string): string {
  if (s.open) return text.slice(s.open.start, s.open.end);
  return s.kind;
}

function firstNonBlank(text: string, start: number, end: number): { start: number; end: number } {
  const slice = text.slice(start, end);
  const lead = slice.length - slice.trimStart().length;
  const trail = slice.length - slice.trimEnd().length;
  return { start: start + lead, end: Math.max(start + lead + 1, end - trail) };
}
