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

export function checkFormat(text: string, options: FormatOptions = {}): FormatReport {
  const scanned = scan(text, { dialect: options.dialect, tools: options.tools });
  const d = DIALECTS[scanned.dialect];
  const strict = options.strictness === 'strict';
  const complete = options.complete ?? true;
  const tools = options.tools ?? DEFAULT_TOOLS;
  const out: FormatDiagnostic[] = [];
  const add = (code: RuleCode, message: string, start: number, end: number) => out.push({ code, severity: RULES[code].severity, message, start, end });

  for (const p of scanned.problems) {
    // While generating, a tag still open at the very end is simply not finished yet.
    if (!complete && p.code === 'COA001' && p.atEnd) continue;
    out.push({ code: p.code, severity: p.severity, message: p.message, start: p.start, end: p.end });
  }

  const segs = scanned.segments;
  const text_ = (s: Segment) => text.slice(s.contentStart, s.contentEnd);
  const openSpan = (s: Segment) => s.open ?? { start: s.start, end: s.end };
  const steps = segs.filter((s) => s.kind !== 'text' && !(s.kind === 'think' && s.open === null && s.close === null && isBlank(text_(s))));
  const actions = segs.filter((s) => s.kind === 'action');
  const answers = segs.filter((s) => s.kind === 'answer');

  // Actions and their observations: each observation answers the action right before it.
  let pending: Segment | null = null;
  for (const s of steps) {
    if (s.kind === 'action') {
      if (pending) add('COA005', `action ${describe(pending, text)} has no observation`, openSpan(pending).start, openSpan(pending).end);
      pending = s;
    } else if (s.kind === 'observation') {
      if (!pending) add('COA004', `${d.observation.open} without a preceding action`, openSpan(s).start, openSpan(s).end);
      pending = null;
    } else if (s.kind === 'think' && s.open === null) {
      // Continuation of an AutoCoA think block around a step: not a new step.
    } else if (pending) {
      add('COA005', `action ${describe(pending, text)} has no observation`, openSpan(pending).start, openSpan(pending).end);
      pending = null;
    }
  }
  if (pending && complete) add('COA005', `action ${describe(pending, text)} has no observation`, openSpan(pending).start, openSpan(pending).end);

  for (const a of actions) {
    if (a.tool !== '' && (a.argument ?? '').trim() === '' && a.close) add('COA009', `empty argument in ${describe(a, text)}`, a.start, a.end);
    if (a.tool && !tools.includes(a.tool)) add('COA011', `unknown tool "${a.tool}" (known: ${tools.join(', ')})`, openSpan(a).start, openSpan(a).end);
  }
  if (options.maxTurns !== undefined && actions.length > options.maxTurns) {
    const over = actions[options.maxTurns];
    add('COA012', `${actions.length} tool calls exceed the limit of ${options.maxTurns}`, openSpan(over).start, openSpan(over).end);
  }

  if (answers.length === 0 && complete) add('COA006', 'missing answer', Math.max(0, text.length - 1), text.length);
  for (let k = 1; k < answers.length; k++) add('COA007', `several answers: this is answer ${k + 1}`, openSpan(answers[k]).start, openSpan(answers[k]).end);
  for (const a of answers) if (a.close && isBlank(text_(a))) add('COA015', 'empty answer', a.start, a.end);

  if (answers.length > 0 && d.answer.style === 'tag') {
    // Anything but whitespace (or another answer, flagged above) after the first answer.
    const first = answers[0];
    for (const s of segs) {
      if (s.start < first.end || s.kind === 'answer') continue;
      if (s.kind === 'text' && isBlank(text.slice(s.start, s.end))) continue;
      add('COA008', 'content after the answer', s.start, s.end);
      break;
    }
  }

  if (strict && d.answer.style === 'tag') {
    // Search-R1's sequence rule: only whitespace between tags, and a <think> right before every action and answer.
    for (const s of segs) {
      if (s.kind === 'text' && !isBlank(text.slice(s.start, s.end))) {
        const t = firstNonBlank(text, s.start, s.end);
        add('COA013', 'text outside tags', t.start, t.end);
      }
    }
    let prev: Segment | null = null;
    for (const s of steps) {
      if ((s.kind === 'action' || s.kind === 'answer') && s.depth === 0 && prev?.kind !== 'think') {
        add('COA014', `${describe(s, text)} is not preceded by ${d.think.open}`, openSpan(s).start, openSpan(s).end);
      }
      prev = s;
    }
  }

  out.sort((a, b) => a.start - b.start || a.code.localeCompare(b.code));
  const last = answers[answers.length - 1];
  return {
    ...scanned,
    diagnostics: out,
    formatOk: !out.some((x) => x.severity === 'error'),
    toolCalls: actions.length,
    answer: last ? text_(last).trim() : null,
  };
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
