// The language server's logic, independent of any connection: documents in, LSP-shaped answers out.
// JSONL documents are analysed line by line with a per-line cache (an edit re-checks only the lines it touches);
// a `.coa` document is one response, checked whole.
import {
  CodeAction,
  CodeActionKind,
  CompletionItem,
  CompletionItemKind,
  Diagnostic,
  DiagnosticSeverity,
  DocumentSymbol,
  FoldingRange,
  Hover,
  InsertTextFormat,
  MarkupKind,
  Range,
  SymbolKind,
} from 'vscode-languageserver';
import { allTags, DIALECT_NAMES, DIALECTS, DialectName } from '../core/dialects';
import type { FormatReport } from '../core/rules';
import type { Segment } from '../core/scanner';
import type { RewardBreakdown, TrajectoryRecord } from '../core/record';
import { analyzeCoa, analyzeLine, detailOf, LineDetail, LineResult, LocalDiagnostic } from './analysis';
import { ContentChange, LineModel, Position } from './lines';
import { HUGE_LINE } from './positions';
import { actionMarkdown, rewardMarkdown, rewardOf } from './rewardHover';
import { DEFAULT_SETTINGS, Settings } from './settings';

export const TOKEN_TYPES = ['macro', 'function', 'type', 'keyword', 'parameter'] as const;
const TOKEN_OF: Record<string, number> = { think: 0, action: 1, observation: 2, answer: 3 };
const ARGUMENT_TOKEN = 4;

/** Full semantic tokens stop after this many lines (the editor asks for visible ranges too). */
const FULL_TOKENS_MAX_LINES = 5000;
/** Documents with more records than this get record symbols without step children. */
const STEP_SYMBOLS_MAX_RECORDS = 5000;
/** Per-line cap on published diagnostics (a garbage line can hold millions of stray tags). */
const MAX_LINE_DIAGNOSTICS = 100;
/** Per-document cap: past it one summary diagnostic stands for the rest. Every publish sends the whole list, and an
 * editor gains nothing from its 40,000th problem (an 18 MB file's 6,667 problems are 2.2 MB per publish). */
export const MAX_DOCUMENT_DIAGNOSTICS = 1000;

type Kind = 'coa' | 'jsonl' | 'plain-jsonl';

interface CoaState {
  version: number;
  text: string;
  lineStarts: number[];
  report: FormatReport | null;
  diagnostics: LocalDiagnostic[];
}

interface Doc {
  uri: string;
  kind: Kind;
  model: LineModel<LineResult>;
  coa?: CoaState;
  /** Single-record OTC-GRPO breakdowns by line (for group n), reset with the results. */
  solo?: WeakMap<LineResult, RewardBreakdown>;
  /** Lines by trimmed question, for the document version it was built for (OTC-GRPO hovers). */
  questions?: { version: number; lines: Map<string, number[]> };
  /** How many cached results carry each record id, and how many ids occur more than once: with none, a
   * re-diagnosis after an edit skips the duplicate-id pass over the whole file. */
  ids: IdCounts;
}

/** Record ids of the cached line results, kept in step with the model by its listener and by lineResult. */
class IdCounts {
  counts = new Map<string, number>();
  repeated = 0;

  removed(r: LineResult): void {
    if (r.id === undefined) return;
    const n = this.counts.get(r.id)!;
    if (n === 2) this.repeated--;
    if (n === 1) this.counts.delete(r.id);
    else this.counts.set(r.id, n - 1);
  }

  added(r: LineResult): void {
    if (r.id === undefined) return;
    const n = (this.counts.get(r.id) ?? 0) + 1;
    this.counts.set(r.id, n);
    if (n === 2) this.repeated++;
  }
}

export function documentKind(uri: string, languageId: string): Kind | null {
  const path = uri.toLowerCase().split(/[?#]/)[0];
  if (languageId === 'coa' || path.endsWith('.coa')) return 'coa';
  if (languageId === 'coa-jsonl' || path.endsWith('.coa.jsonl')) return 'jsonl';
  if (languageId === 'jsonl' || path.endsWith('.jsonl')) return 'plain-jsonl';
  return null;
}

export class TrajectoryService {
  private readonly docs = new Map<string, Doc>();
  private settings: Settings = DEFAULT_SETTINGS;

  getSettings(): Settings {
    return this.settings;
  }

  /** New settings invalidate every cached analysis. */
  setSettings(s: Settings): void {
    this.settings = s;
    for (const d of this.docs.values()) {
      d.model.results = new Array(d.model.lineCount);
      d.ids = d.model.listener = new IdCounts();
      d.coa = undefined;
      d.solo = undefined;
      d.questions = undefined;
    }
  }

  open(uri: string, languageId: string, version: number, text: string): boolean {
    const kind = documentKind(uri, languageId);
    if (!kind) return false;
    const model = new LineModel<LineResult>(text, version);
    const ids = (model.listener = new IdCounts());
    this.docs.set(uri, { uri, kind, model, ids });
    return true;
  }

  change(uri: string, version: number, changes: readonly ContentChange[]): void {
    const d = this.docs.get(uri);
    if (!d) return;
    d.model.apply(changes, version);
    d.coa = undefined;
    d.questions = undefined;
  }

  close(uri: string): void {
    this.docs.delete(uri);
  }

  has(uri: string): boolean {
    return this.docs.has(uri);
  }

  /** The document version the last open or change gave. */
  version(uri: string): number | undefined {
    return this.docs.get(uri)?.model.version;
  }

  uris(): string[] {
    return [...this.docs.keys()];
  }

  text(uri: string): string | undefined {
    return this.docs.get(uri)?.model.text();
  }

  // ---- analysis ----

  private lineResult(d: Doc, i: number): LineResult {
    let r = d.model.results[i];
    if (r === undefined) {
      r = d.model.results[i] = analyzeLine(d.model.lines[i], this.settings);
      d.ids.added(r);
    }
    return r;
  }

  private coaState(d: Doc): CoaState {
    if (d.coa && d.coa.version === d.model.version) return d.coa;
    const text = d.model.text();
    const lineStarts = new Array<number>(d.model.lineCount);
    let at = 0;
    d.model.lines.forEach((l, i) => {
      lineStarts[i] = at;
      at += l.length + 1;
    });
    const { report, diagnostics } = analyzeCoa(text, this.settings);
    return (d.coa = { version: d.model.version, text, lineStarts, report, diagnostics });
  }

  private isBinary(d: Doc): boolean {
    const first = d.model.lines[0] ?? '';
    if (first.length >= 8192) return first.slice(0, 8192).includes('\0');
    let n = 0;
    for (let i = 0; i < d.model.lineCount && n < 8192; i++) {
      if (d.model.lines[i].includes('\0')) return true;
      n += d.model.lines[i].length + 1;
    }
    return false;
  }

  /** Plain `*.jsonl` files get diagnostics only when they hold trajectories (a corpus file is not one). */
  private isTrajectoryFile(d: Doc): boolean {
    if (d.kind !== 'plain-jsonl') return true;
    let seen = 0;
    for (let i = 0; i < d.model.lineCount && seen < 50; i++) {
      const r = this.lineResult(d, i);
      if (r.kind === 'blank') continue;
      seen++;
      if (r.looksLikeTrajectory) return true;
    }
    return false;
  }

  diagnose(uri: string): Diagnostic[] {
    const d = this.docs.get(uri);
    if (!d) return [];
    if (d.kind === 'coa') {
      const s = this.coaState(d);
      const shown = s.diagnostics
        .slice(0, MAX_DOCUMENT_DIAGNOSTICS)
        .map((x) =>
          toDiagnostic(x, this.coaRange(s, x.start, x.end), uri, x.fix && this.coaRange(s, x.fix.start, x.fix.end)),
        );
      const hidden = s.diagnostics.length - shown.length;
      if (hidden > 0)
        shown.push(
          moreProblems(hidden, this.coaRange(s, s.diagnostics[shown.length].start, s.diagnostics[shown.length].start)),
        );
      return shown;
    }
    if (this.isBinary(d)) {
      return [
        {
          range: Range.create(0, 0, 0, 1),
          severity: DiagnosticSeverity.Error,
          code: 'COA104',
          source: 'coa',
          message: 'binary data, not a JSONL text file',
        },
      ];
    }
    const out: Diagnostic[] = [];
    const lines = d.model.lines;
    for (let i = 0; i < lines.length; i++) this.lineResult(d, i);
    if (!this.isTrajectoryFile(d)) return [];
    const firstLineOfId = d.ids.repeated > 0 ? new Map<string, number>() : null;
    for (let i = 0; i < lines.length; i++) {
      const r = d.model.results[i]!;
      if (r.diagnostics.length) {
        // LSP objects are rebuilt only for lines that changed or moved.
        if (!r.published || r.published.line !== i)
          r.published = { line: i, list: this.lineDiagnostics(r.diagnostics, i, uri) };
        for (const x of r.published.list) out.push(x);
      }
      if (firstLineOfId && r.id !== undefined) {
        const first = firstLineOfId.get(r.id);
        if (first === undefined) firstLineOfId.set(r.id, i);
        else {
          const quoted = JSON.stringify(r.id);
          const col = Math.max(0, lines[i].indexOf(quoted));
          out.push({
            range: Range.create(i, col, i, col + quoted.length),
            severity: DiagnosticSeverity.Error,
            code: 'COA103',
            source: 'coa',
            message: `duplicate id "${r.id}" (first on line ${first + 1})`,
          });
        }
      }
    }
    if (out.length > MAX_DOCUMENT_DIAGNOSTICS) {
      const hidden = out.length - MAX_DOCUMENT_DIAGNOSTICS;
      const at = out[MAX_DOCUMENT_DIAGNOSTICS].range.start;
      out.length = MAX_DOCUMENT_DIAGNOSTICS;
      out.push(moreProblems(hidden, Range.create(at, at)));
    }
    return out;
  }

  private lineDiagnostics(ds: LocalDiagnostic[], i: number, uri: string): Diagnostic[] {
    const n = Math.min(ds.length, MAX_LINE_DIAGNOSTICS);
    const out: Diagnostic[] = [];
    for (let k = 0; k < n; k++) {
      const x = ds[k];
      out.push(
        toDiagnostic(x, Range.create(i, x.start, i, x.end), uri, x.fix && Range.create(i, x.fix.start, i, x.fix.end)),
      );
    }
    if (ds.length > n)
      out.push({
        range: Range.create(i, 0, i, 1),
        severity: DiagnosticSeverity.Warning,
        source: 'coa',
        message: `${ds.length - n} more problems on this line are not shown`,
      });
    return out;
  }

  /** Record, report and geometry of line i (null for blank, invalid or huge lines where asked). */
  private detail(d: Doc, i: number): LineDetail | null {
    if (i < 0 || i >= d.model.lineCount) return null;
    return detailOf(this.lineResult(d, i), d.model.lines[i], this.settings);
  }

  private coaRange(s: CoaState, start: number, end: number): Range {
    return Range.create(offsetToPosition(s.lineStarts, start), offsetToPosition(s.lineStarts, Math.max(end, start)));
  }

  // ---- hover ----

  async hover(uri: string, pos: Position): Promise<Hover | null> {
    const d = this.docs.get(uri);
    if (!d) return null;
    if (d.kind === 'coa') {
      const s = this.coaState(d);
      if (!s.report || s.text.length > HUGE_LINE * 8) return null;
      const off = s.lineStarts[Math.min(pos.line, s.lineStarts.length - 1)] + pos.character;
      const seg = segmentAt(s.report.segments, off);
      if (!seg) return null;
      const range = this.coaRange(s, seg.start, seg.end);
      if (seg.kind === 'answer') {
        const record: TrajectoryRecord = { id: uri.split('/').pop() ?? uri, question: '', response: s.text };
        const b = rewardOf(record, this.settings);
        return markdown(
          rewardMarkdown(record, b, this.settings, s.report.answer, 1) +
            '\n\n_A `.coa` file has no question or golden answers: EM/F1 are 0._',
          range,
        );
      }
      if (seg.kind === 'action')
        return markdown(
          await actionMarkdown(seg, observationAfter(s.report, seg), s.report.dialect, this.settings),
          range,
        );
      return null;
    }
    if (pos.line < 0 || pos.line >= d.model.lineCount || d.model.lines[pos.line].length > HUGE_LINE) return null;
    const x = this.detail(d, pos.line);
    const g = x?.geometry;
    if (!x || !g) return null;
    const { record, report } = x;
    const onId = g.id && pos.character >= g.id.start && pos.character < g.id.end;
    const off = g.fromRaw(pos.character, record.response.length);
    const seg = onId ? null : off >= 0 ? segmentAt(report.segments, off) : null;
    if (onId || seg?.kind === 'answer') {
      const range = onId
        ? Range.create(pos.line, g.id!.start, pos.line, g.id!.end)
        : Range.create(pos.line, g.toRaw(seg!.start), pos.line, g.toRaw(seg!.end));
      const group = this.settings.rewardScheme === 'otc-grpo' ? this.questionGroup(d, record.question) : [];
      const b = rewardOf(record, this.settings, group);
      return markdown(rewardMarkdown(record, b, this.settings, report.answer, Math.max(1, group.length)), range);
    }
    if (seg?.kind === 'action') {
      const range = Range.create(pos.line, g.toRaw(seg.start), pos.line, g.toRaw(seg.end));
      return markdown(await actionMarkdown(seg, observationAfter(report, seg), report.dialect, this.settings), range);
    }
    return null;
  }

  /** Records of the document with this question, each with its single-record OTC-GRPO breakdown (cached). */
  private questionGroup(d: Doc, question: string): { record: TrajectoryRecord; solo: RewardBreakdown }[] {
    const solo = (d.solo ??= new WeakMap());
    const out: { record: TrajectoryRecord; solo: RewardBreakdown }[] = [];
    if (!d.questions || d.questions.version !== d.model.version) {
      const lines = new Map<string, number[]>();
      for (let i = 0; i < d.model.lineCount; i++) {
        const q = this.lineResult(d, i).question?.trim();
        if (q === undefined) continue;
        const list = lines.get(q);
        if (list) list.push(i);
        else lines.set(q, [i]);
      }
      d.questions = { version: d.model.version, lines };
    }
    for (const i of d.questions.lines.get(question.trim()) ?? []) {
      const r = this.lineResult(d, i);
      const record = this.detail(d, i)!.record;
      let b = solo.get(r);
      if (!b) solo.set(r, (b = rewardOf(record, this.settings)));
      out.push({ record, solo: b });
    }
    return out;
  }

  // ---- structure ----

  symbols(uri: string): DocumentSymbol[] {
    const d = this.docs.get(uri);
    if (!d) return [];
    if (d.kind === 'coa') {
      const s = this.coaState(d);
      if (!s.report) return [];
      const whole = this.coaRange(s, 0, s.text.length);
      const steps = stepSegments(s.report).map((seg) =>
        stepSymbol(seg, s.report!, this.coaRange(s, seg.start, seg.end)),
      );
      return [
        DocumentSymbol.create(
          uri.split('/').pop() ?? 'trajectory',
          `${s.report.dialect} · ${s.report.toolCalls} tool calls`,
          SymbolKind.Object,
          whole,
          Range.create(whole.start, whole.start),
          steps,
        ),
      ];
    }
    if (this.isBinary(d)) return [];
    let records = 0;
    for (let i = 0; i < d.model.lineCount; i++) if (this.lineResult(d, i).kind === 'record') records++;
    const withSteps = records <= STEP_SYMBOLS_MAX_RECORDS;
    const out: DocumentSymbol[] = [];
    for (let i = 0; i < d.model.lineCount; i++) {
      const r = d.model.results[i]!;
      if (r.kind !== 'record') continue;
      const line = d.model.lines[i];
      const whole = Range.create(i, 0, i, line.length);
      const x = withSteps ? this.detail(d, i) : null;
      const g = x?.geometry;
      const sel = g?.id ? Range.create(i, g.id.start, i, g.id.end) : Range.create(i, 0, i, 0);
      const children =
        x && g
          ? stepSegments(x.report).map((seg) =>
              stepSymbol(seg, x.report, Range.create(i, g.toRaw(seg.start), i, g.toRaw(seg.end))),
            )
          : [];
      out.push(
        DocumentSymbol.create(
          clip(r.id!, 100) || `line ${i + 1}`,
          clip(r.question!, 80),
          SymbolKind.Object,
          whole,
          sel,
          children,
        ),
      );
    }
    return out;
  }

  folding(uri: string): FoldingRange[] {
    const d = this.docs.get(uri);
    if (!d) return [];
    const out: FoldingRange[] = [];
    if (d.kind === 'coa') {
      const s = this.coaState(d);
      for (const seg of s.report ? stepSegments(s.report) : []) {
        const a = offsetToPosition(s.lineStarts, seg.start).line;
        const b = offsetToPosition(s.lineStarts, Math.max(seg.start, seg.end - 1)).line;
        if (b > a) out.push(FoldingRange.create(a, b, undefined, undefined, 'region'));
      }
      return out;
    }
    // JSONL: a record is one line; fold runs of records that share a question (an OTC-GRPO group).
    let runStart = -1;
    let runQ = '';
    const flush = (end: number) => {
      if (runStart >= 0 && end > runStart) out.push(FoldingRange.create(runStart, end, undefined, undefined, 'region'));
    };
    for (let i = 0; i < d.model.lineCount; i++) {
      const r = this.lineResult(d, i);
      const q = r.question?.trim();
      if (q !== undefined && q === runQ && runStart >= 0) continue;
      flush(i - 1);
      runStart = q === undefined ? -1 : i;
      runQ = q ?? '';
    }
    flush(d.model.lineCount - 1);
    return out;
  }

  /** Semantic tokens (LSP relative encoding) for tags and action arguments; `range` limits the lines. */
  semanticTokens(uri: string, range?: Range): number[] {
    const d = this.docs.get(uri);
    if (!d) return [];
    const tokens: [number, number, number, number][] = []; // line, char, length, type
    if (d.kind === 'coa') {
      const s = this.coaState(d);
      if (!s.report || (!range && s.text.length > HUGE_LINE * 8)) return [];
      const lo = range ? s.lineStarts[Math.min(range.start.line, s.lineStarts.length - 1)] : 0;
      const hi = range ? (s.lineStarts[range.end.line + 1] ?? s.text.length) : s.text.length;
      for (const seg of s.report.segments) {
        if (seg.end < lo || seg.start > hi) continue;
        for (const [a, b, type] of segmentSpans(seg)) {
          const p = offsetToPosition(s.lineStarts, a);
          const q = offsetToPosition(s.lineStarts, b);
          if (p.line === q.line && b > a) tokens.push([p.line, p.character, b - a, type]);
        }
      }
    } else {
      const first = range ? Math.max(0, range.start.line) : 0;
      const last = Math.min(d.model.lineCount - 1, range ? range.end.line : FULL_TOKENS_MAX_LINES - 1);
      for (let i = first; i <= last; i++) {
        const line = d.model.lines[i];
        if (line.length > HUGE_LINE) continue;
        const x = this.detail(d, i);
        const g = x?.geometry;
        if (!x || !g) continue;
        for (const seg of x.report.segments) {
          for (const [a, b, type] of segmentSpans(seg)) {
            const ra = g.toRaw(a);
            const rb = g.toRaw(b);
            if (rb > ra) tokens.push([i, ra, rb - ra, type]);
          }
        }
      }
    }
    tokens.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    const data: number[] = [];
    let pl = 0;
    let pc = 0;
    for (const [l, c, len, t] of tokens) {
      data.push(l - pl, l === pl ? c - pc : c, len, t, 0);
      pl = l;
      pc = c;
    }
    return data;
  }

  // ---- editing help ----

  completion(uri: string, pos: Position): CompletionItem[] {
    const d = this.docs.get(uri);
    if (!d || pos.line < 0 || pos.line >= d.model.lineCount || pos.character < 0) return [];
    const line = d.model.lines[pos.line];
    const before = line.slice(Math.max(0, pos.character - 200), pos.character);
    if (d.kind !== 'coa') {
      const m = /"dialect"\s*:\s*"([A-Za-z0-9-]*)$/.exec(before);
      if (m) {
        const range = Range.create(pos.line, pos.character - m[1].length, pos.line, pos.character);
        return DIALECT_NAMES.map((name) => ({
          label: name,
          kind: CompletionItemKind.EnumMember,
          detail: DIALECTS[name].description,
          textEdit: { range, newText: name },
        }));
      }
    }
    const t = /<\/?[A-Za-z_0-9.:-]*$/.exec(before);
    if (!t) return [];
    const range = Range.create(pos.line, pos.character - t[0].length, pos.line, pos.character);
    const dialect = this.dialectAt(d, pos.line);
    const tags = dialect ? dialectTags(dialect, this.settings.tools) : allTags(this.settings.tools);
    const closing = t[0].startsWith('</');
    return tags
      .filter((tag) => tag.startsWith('</') === closing)
      .map((tag, k) => {
        const pair = !closing && tag.startsWith('<') ? tag.replace('<', '</') : null;
        const close =
          pair &&
          dialect &&
          DIALECTS[dialect].action.style === 'fixed' &&
          tag === (DIALECTS[dialect].action as { tags: { open: string } }).tags.open
            ? (DIALECTS[dialect].action as { tags: { close: string } }).tags.close
            : pair;
        if (tag === '\\boxed{')
          return {
            label: tag,
            kind: CompletionItemKind.Keyword,
            sortText: String(k).padStart(3, '0'),
            detail: `${dialect} answer`,
            textEdit: { range, newText: '\\\\boxed{$0}' },
            insertTextFormat: InsertTextFormat.Snippet,
          };
        return {
          label: tag,
          kind: CompletionItemKind.Keyword,
          sortText: String(k).padStart(3, '0'),
          detail: dialect ? `${dialect} dialect` : 'any dialect',
          textEdit: { range, newText: close ? `${tag}$0${close}` : tag },
          insertTextFormat: close ? InsertTextFormat.Snippet : InsertTextFormat.PlainText,
        };
      });
  }

  private dialectAt(d: Doc, line: number): DialectName | null {
    if (d.kind === 'coa') return this.coaState(d).report?.dialect ?? null;
    const x = this.detail(d, line);
    if (x) return x.report.dialect;
    return this.settings.dialect === 'auto' ? null : this.settings.dialect;
  }

  codeActions(uri: string, diagnostics: readonly Diagnostic[]): CodeAction[] {
    const d = this.docs.get(uri);
    if (!d) return [];
    const out: CodeAction[] = [];
    for (const diag of diagnostics) {
      const fix = (diag.data as { fix?: { title: string; range: Range; newText: string } } | undefined)?.fix;
      if (!fix) continue;
      out.push({
        title: fix.title,
        kind: CodeActionKind.QuickFix,
        diagnostics: [diag],
        isPreferred: true,
        edit: { changes: { [uri]: [{ range: fix.range, newText: fix.newText }] } },
      });
    }
    // A problem of a record in a JSONL file opened as text leads to that record's view (steps as cells, its reward,
    // token overlays): a quick fix, which the Problems panel offers on the problem's row too. Records are found by
    // line, once per record however many of its problems are asked about.
    if (d.kind === 'coa' || !uri.startsWith('file:')) return out;
    const byLine = new Map<number, Diagnostic[]>();
    for (const diag of diagnostics) {
      if (diag.source !== 'coa') continue;
      const line = diag.range.start.line;
      byLine.set(line, [...(byLine.get(line) ?? []), diag]);
    }
    for (const [line, diags] of byLine) {
      const r = line < d.model.lineCount ? this.lineResult(d, line) : null;
      if (r?.kind === 'record' && r.id !== undefined) out.push(openRecordAction(uri, line, r.id, diags));
    }
    return out;
  }
}

// ---- helpers ----

/** The quick fix that opens the record at 0-based `line` of the file `uri` in the record view (the extension's
 *  `coaStudio.openRecord { file, line, id }`, line 1-based; the id lets it refuse a line unsaved edits moved). */
export function openRecordAction(uri: string, line: number, id: string, diagnostics: Diagnostic[]): CodeAction {
  return {
    title: `Open record ${id} in the record view`,
    kind: CodeActionKind.QuickFix,
    diagnostics,
    command: {
      title: `Open record ${id} in the record view`,
      command: 'coaStudio.openRecord',
      arguments: [{ file: uri, line: line + 1, id }],
    },
  };
}

function toDiagnostic(x: LocalDiagnostic, range: Range, uri: string, fixRange?: Range): Diagnostic {
  const diag: Diagnostic = {
    range,
    severity: x.severity === 'error' ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
    code: x.code,
    source: 'coa',
    message: x.message,
  };
  if (x.fix && fixRange) diag.data = { uri, fix: { title: x.fix.title, range: fixRange, newText: x.fix.newText } };
  return diag;
}

/** The summary that stands for the problems past MAX_DOCUMENT_DIAGNOSTICS, placed where the first of them is. */
function moreProblems(hidden: number, range: Range): Diagnostic {
  const message = `${hidden} more problem${hidden === 1 ? '' : 's'} in this file not shown (at most ${MAX_DOCUMENT_DIAGNOSTICS} per file); \`coa validate <file>\` lists them all`;
  return { range, severity: DiagnosticSeverity.Warning, source: 'coa', message };
}

function offsetToPosition(lineStarts: number[], off: number): Position {
  let lo = 0;
  let hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineStarts[mid] <= off) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo, character: off - lineStarts[lo] };
}

/** The innermost non-text segment containing a decoded offset. */
function segmentAt(segments: readonly Segment[], off: number): Segment | null {
  let best: Segment | null = null;
  for (const s of segments)
    if (s.kind !== 'text' && s.start <= off && off < s.end && (!best || s.depth >= best.depth)) best = s;
  return best;
}

/** Steps worth a symbol or fold: not plain text, not the empty think piece a template may leave. */
function stepSegments(report: FormatReport): Segment[] {
  return report.segments.filter((s) => s.kind !== 'text' && (s.open !== null || s.contentEnd > s.contentStart));
}

function stepSymbol(seg: Segment, report: FormatReport, range: Range): DocumentSymbol {
  const content = report.text.slice(seg.contentStart, seg.contentEnd).trim();
  const name =
    seg.kind === 'action'
      ? `${seg.tool || 'tool call'}: ${clip(seg.argument ?? '', 60)}`
      : seg.kind === 'answer'
        ? `answer: ${clip(content, 60)}`
        : seg.kind;
  const kind =
    seg.kind === 'action'
      ? SymbolKind.Function
      : seg.kind === 'answer'
        ? SymbolKind.Constant
        : seg.kind === 'observation'
          ? SymbolKind.Field
          : SymbolKind.Event;
  return DocumentSymbol.create(
    name.replace(/\s+/g, ' ') || seg.kind,
    seg.kind === 'think' || seg.kind === 'observation' ? clip(content.replace(/\s+/g, ' '), 60) : undefined,
    kind,
    range,
    range,
  );
}

function observationAfter(report: FormatReport, action: Segment): string | null {
  const segs = report.segments;
  for (let k = segs.indexOf(action) + 1; k < segs.length; k++) {
    const s = segs[k];
    if (s.kind === 'observation') return report.text.slice(s.contentStart, s.contentEnd).trim();
    if (s.kind === 'text' || (s.kind === 'think' && s.open === null)) continue;
    return null;
  }
  return null;
}

/** [start, end, token type] of a segment's tags (and an action's argument), decoded offsets. */
function segmentSpans(seg: Segment): [number, number, number][] {
  const type = TOKEN_OF[seg.kind];
  if (type === undefined) return [];
  const out: [number, number, number][] = [];
  if (seg.open) out.push([seg.open.start, seg.open.end, type]);
  if (seg.kind === 'action' && seg.contentEnd > seg.contentStart)
    out.push([seg.contentStart, seg.contentEnd, ARGUMENT_TOKEN]);
  if (seg.close) out.push([seg.close.start, seg.close.end, type]);
  return out;
}

function dialectTags(name: DialectName, tools: readonly string[]): string[] {
  const d = DIALECTS[name];
  const tags = [d.think.open, d.think.close];
  if (d.action.style === 'per-tool') for (const t of tools) tags.push(`<${t}>`, `</${t}>`);
  else tags.push(d.action.tags.open, d.action.tags.close);
  tags.push(d.observation.open, d.observation.close);
  if (d.answer.style === 'tag') tags.push(d.answer.tags.open, d.answer.tags.close);
  else tags.push('\\boxed{');
  return tags;
}

function markdown(value: string, range: Range): Hover {
  return { contents: { kind: MarkupKind.Markdown, value }, range };
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
