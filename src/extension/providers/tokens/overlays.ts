// Token overlays in text editors of trajectory files and in the step cells of trajectory notebooks: per view (loss
// mask, log-prob heat map, advantage sign) a set of decoration types, toggled by one command each; a hover with
// token id, text, log-prob, mask and advantage while any view is on. Only visible lines and visible cells are
// decorated, so a large file costs what the screen shows (cells are found from the visible notebook editors'
// ranges, never by walking a notebook's cells).
import * as vscode from 'vscode';
import {
  type OverlayView,
  OVERLAY_VIEWS,
  STYLE_KEYS,
  cellTokenSpans,
  groupByStyle,
  hoverMarkdown,
  spanAt,
  tokenSpans,
  type SpansResult,
  type TokenSpan,
} from './mapping';
import { cellMeta, isTrajectoryNotebook } from '../notebook/cells';
import { OVERLAY_STYLES } from './styles';
import { registerOverlayLegend } from './legend';

const CELL_SCHEME = 'vscode-notebook-cell';

const MAX_LINE_CHARS = 2_000_000; // a line beyond this is not parsed for overlays (a hover must stay instant)
const SETTLE_MS = 120; // decorations follow editor and scroll changes once they settle…
const MAX_SETTLE_MS = 1000; // …or at the latest this long after the first change of a burst that keeps going
const CELL_STABLE_MS = 600; // a notebook cell's editor is decorated once it has lasted this long (see later())

function decorationFor(view: OverlayView, key: string): vscode.TextEditorDecorationType {
  const s = OVERLAY_STYLES[view][key] ?? OVERLAY_STYLES.logprob.lp4;
  if (s.lineStyle === 'through')
    return vscode.window.createTextEditorDecorationType({
      opacity: s.faded ? '0.45' : undefined,
      textDecoration: `line-through ${s.line}`,
    });
  if (s.line)
    return vscode.window.createTextEditorDecorationType({
      borderWidth: s.lineStyle === 'dotted' ? '0 0 1px 0' : '0 0 2px 0',
      borderStyle: s.lineStyle,
      borderColor: s.line,
    });
  return vscode.window.createTextEditorDecorationType({
    backgroundColor: s.background,
    borderRadius: view === 'mask' ? '2px' : undefined,
  });
}

export class TokenOverlays implements vscode.Disposable, vscode.HoverProvider {
  private readonly on = new Set<OverlayView>();
  private readonly changed = new vscode.EventEmitter<ReadonlySet<OverlayView>>();
  /** The set of overlays that are on changed (the legend listens). */
  readonly onDidChange = this.changed.event;
  get active(): ReadonlySet<OverlayView> {
    return this.on;
  }
  private readonly types = new Map<string, vscode.TextEditorDecorationType>();
  private readonly cache = new Map<string, { version: number; lines: Map<number, SpansResult> }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    for (const view of OVERLAY_VIEWS)
      for (const key of STYLE_KEYS[view]) this.types.set(`${view}:${key}`, decorationFor(view, key));
    this.disposables.push(
      vscode.window.onDidChangeVisibleTextEditors(() => this.refreshAll()),
      vscode.window.onDidChangeTextEditorVisibleRanges((e) => this.later(e.textEditor)),
      vscode.workspace.onDidChangeTextDocument((e) => {
        this.cache.delete(e.document.uri.toString());
        for (const ed of vscode.window.visibleTextEditors) {
          if (ed.document !== e.document) continue;
          // An edit moved or dropped what the editor shows: set everything again, whatever was set before.
          this.applied.delete(ed);
          this.later(ed);
        }
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.cache.delete(d.uri.toString())),
      vscode.window.onDidChangeNotebookEditorVisibleRanges(() => this.refreshAll()),
      // A cell editor is decorated once its notebook editor shows it (see later()): the notebook editor may come second.
      vscode.window.onDidChangeVisibleNotebookEditors(() => this.refreshAll()),
      vscode.workspace.onDidChangeNotebookDocument(() => {
        this.cells.clear();
        this.cellSpans.clear();
      }),
      vscode.languages.registerHoverProvider(
        [
          { language: 'coa-jsonl' },
          { language: 'jsonl' },
          { pattern: '**/*.jsonl' },
          { scheme: CELL_SCHEME, language: 'coa' },
        ],
        this,
      ),
    );
  }

  /** Step cells of the visible trajectory notebooks, by cell document URI (rebuilt from visible ranges only). */
  private readonly cells = new Map<string, vscode.NotebookCell>();
  private visibleCells(): Map<string, vscode.NotebookCell> {
    this.cells.clear();
    for (const ed of vscode.window.visibleNotebookEditors) {
      if (!isTrajectoryNotebook(ed.notebook.notebookType)) continue;
      for (const range of ed.visibleRanges)
        for (const cell of ed.notebook.getCells(range)) this.cells.set(cell.document.uri.toString(), cell);
    }
    return this.cells;
  }

  /** Spans of a step cell in cell-text offsets: the record's line is kept by its header cell, above it. */
  private readonly cellSpans = new Map<string, SpansResult>();
  private cellSpansOf(doc: vscode.TextDocument): SpansResult {
    // Cached per cell version: each step cell would otherwise re-parse its whole record on every scroll.
    const key = `${doc.uri.toString()}@${doc.version}`;
    let r = this.cellSpans.get(key);
    if (!r) {
      if (this.cellSpans.size > 500) this.cellSpans.clear();
      this.cellSpans.set(key, (r = this.computeCellSpans(doc)));
    }
    return r;
  }

  private computeCellSpans(doc: vscode.TextDocument): SpansResult {
    const cell = this.cells.get(doc.uri.toString()) ?? this.visibleCells().get(doc.uri.toString());
    const meta = cellMeta(cell?.metadata);
    if (!cell || meta?.kind !== 'step') return { spans: null, reason: 'not a step cell' };
    for (let i = cell.index - 1; i >= 0 && i >= cell.index - 1 - meta.index; i--) {
      const h = cellMeta(cell.notebook.cellAt(i).metadata);
      if (h?.kind === 'header') return cellTokenSpans(h.raw, meta.start, meta.end, doc.getText());
    }
    return { spans: null, reason: 'no record header' };
  }

  private rangesOf(
    doc: vscode.TextDocument,
    line: number | null,
  ): { spans: TokenSpan[]; range: (s: TokenSpan) => vscode.Range }[] {
    if (doc.uri.scheme === CELL_SCHEME) {
      const { spans } = this.cellSpansOf(doc);
      return spans ? [{ spans, range: (s) => new vscode.Range(doc.positionAt(s.start), doc.positionAt(s.end)) }] : [];
    }
    if (line === null) return [];
    const { spans } = this.spansOf(doc, line);
    return spans ? [{ spans, range: (s) => new vscode.Range(line, s.start, line, s.end) }] : [];
  }

  /** The toggle command of one view; returns the new state. */
  toggle(view: OverlayView): boolean {
    this.set(view, !this.on.has(view));
    const ed =
      vscode.window.activeTextEditor ??
      vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === CELL_SCHEME);
    if (this.on.has(view) && ed && !this.anyTokens(ed)) {
      void vscode.window.showInformationMessage(
        'No visible record has `tokens` with `offsets`: nothing to overlay here.',
      );
    }
    return this.on.has(view);
  }

  /** Turn one overlay on or off (the toggle commands, the legend's chooser). */
  set(view: OverlayView, on: boolean): void {
    if (on === this.on.has(view)) return;
    if (on) this.on.add(view);
    else this.on.delete(view);
    void vscode.commands.executeCommand('setContext', `coaStudio.tokens.${view}`, on);
    this.refreshAll();
    this.changed.fire(this.on);
  }

  private spansOf(doc: vscode.TextDocument, line: number): SpansResult {
    const key = doc.uri.toString();
    let entry = this.cache.get(key);
    if (!entry || entry.version !== doc.version) {
      entry = { version: doc.version, lines: new Map() };
      this.cache.set(key, entry);
    }
    let r = entry.lines.get(line);
    if (!r) {
      const text = doc.lineAt(line).text;
      r =
        text.length > MAX_LINE_CHARS
          ? { spans: null, reason: 'line too long' }
          : text.trim() === ''
            ? { spans: null, reason: 'blank' }
            : tokenSpans(text);
      entry.lines.set(line, r);
    }
    return r;
  }

  private anyTokens(ed: vscode.TextEditor): boolean {
    if (ed.document.uri.scheme === CELL_SCHEME)
      return vscode.window.visibleTextEditors.some(
        (e) => e.document.uri.scheme === CELL_SCHEME && this.cellSpansOf(e.document).spans,
      );
    return ed.visibleRanges.some((r) => {
      for (let l = r.start.line; l <= r.end.line; l++) if (this.spansOf(ed.document, l).spans) return true;
      return false;
    });
  }

  private isTrajectoryFile(doc: vscode.TextDocument): boolean {
    return doc.uri.scheme !== CELL_SCHEME && (doc.languageId === 'coa-jsonl' || doc.fileName.endsWith('.jsonl'));
  }

  private refreshAll(): void {
    this.cells.clear();
    for (const ed of vscode.window.visibleTextEditors) this.later(ed);
  }

  /**
   * Editors to decorate once events settle. A notebook lays its cells out in bursts: cell editors shown for a few
   * milliseconds are gone by the time a decoration reaches the window, and each such call logged "Illegal argument:
   * TextEditor" in the extension host. So the refresh waits until no event has come for SETTLE_MS (each event
   * restarts the wait, up to MAX_SETTLE_MS after the first), and then goes only to editors still visible — and for a
   * notebook's cells, only to cells its editor still shows: a cell editor outside every visible notebook range is being
   * torn down (its notebook closing or the cell scrolled away), and whatever it was given goes with it.
   */
  private readonly pending = new Set<vscode.TextEditor>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private firstPending = 0;
  /** When each editor was first asked to be decorated (about when it appeared). */
  private readonly seen = new WeakMap<vscode.TextEditor, number>();
  private later(ed: vscode.TextEditor): void {
    this.pending.add(ed);
    const now = Date.now();
    if (!this.seen.has(ed)) this.seen.set(ed, now);
    if (this.timer === undefined) this.firstPending = now;
    else if (now - this.firstPending < MAX_SETTLE_MS) clearTimeout(this.timer);
    else return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const visible = new Set(vscode.window.visibleTextEditors);
      const cells = this.visibleCells();
      const young: vscode.TextEditor[] = [];
      const now = Date.now();
      for (const e of this.pending) {
        if (!visible.has(e)) continue;
        if (e.document.uri.scheme === CELL_SCHEME) {
          if (!cells.has(e.document.uri.toString())) continue;
          // A notebook re-renders its cells a few times while it opens or its space changes, each time with new cell
          // editors the window may drop before a decoration gets there (its frames are slow under load): a cell editor
          // is decorated once it has lasted CELL_STABLE_MS.
          if (now - (this.seen.get(e) ?? now) < CELL_STABLE_MS) {
            young.push(e);
            continue;
          }
        }
        this.refresh(e);
      }
      this.pending.clear();
      for (const e of young) this.later(e);
    }, SETTLE_MS);
  }

  private refresh(ed: vscode.TextEditor): void {
    const ranges = new Map<string, vscode.Range[]>();
    if (this.on.size && ed.document.uri.scheme === CELL_SCHEME && ed.document.languageId === 'coa') {
      for (const { spans, range } of this.rangesOf(ed.document, null)) {
        for (const view of this.on) {
          for (const [key, list] of groupByStyle(view, spans)) {
            const k = `${view}:${key}`;
            ranges.set(k, [...(ranges.get(k) ?? []), ...list.map(range)]);
          }
        }
      }
    } else if (this.on.size && this.isTrajectoryFile(ed.document)) {
      for (const vr of ed.visibleRanges) {
        for (let l = vr.start.line; l <= vr.end.line && l < ed.document.lineCount; l++) {
          const { spans } = this.spansOf(ed.document, l);
          if (!spans) continue;
          for (const view of this.on) {
            for (const [key, list] of groupByStyle(view, spans)) {
              const k = `${view}:${key}`;
              const out = ranges.get(k) ?? [];
              for (const s of list) out.push(new vscode.Range(l, s.start, l, s.end));
              ranges.set(k, out);
            }
          }
        }
      }
    }
    // Only what changed goes to the window. Setting every type (empty ones too) on every visible editor at each
    // event sent hundreds of calls, and those that reached an editor closed meanwhile each logged "Illegal
    // argument: TextEditor" in the extension host (569 after a session of opening and closing record views).
    const applied = this.applied.get(ed) ?? new Map<string, string>();
    this.applied.set(ed, applied);
    for (const [k, type] of this.types) {
      const list = ranges.get(k) ?? [];
      const sig = list.map((r) => `${r.start.line}:${r.start.character}-${r.end.line}:${r.end.character}`).join(',');
      if ((applied.get(k) ?? '') === sig) continue;
      applied.set(k, sig);
      ed.setDecorations(type, list);
    }
  }

  /** What each editor was last given per decoration type (a signature of its ranges; none = nothing set). */
  private readonly applied = new WeakMap<vscode.TextEditor, Map<string, string>>();

  provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    if (!this.on.size) return undefined;
    if (doc.uri.scheme === CELL_SCHEME) {
      const [found] = this.rangesOf(doc, null);
      const s = found && spanAt(found.spans, doc.offsetAt(pos));
      return s ? new vscode.Hover(new vscode.MarkdownString(hoverMarkdown(s)), found.range(s)) : undefined;
    }
    const { spans } = this.spansOf(doc, pos.line);
    const s = spans && spanAt(spans, pos.character);
    if (!s) return undefined;
    const md = new vscode.MarkdownString(hoverMarkdown(s));
    return new vscode.Hover(md, new vscode.Range(pos.line, s.start, pos.line, s.end));
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.changed.dispose();
    for (const d of this.disposables) d.dispose();
    for (const t of this.types.values()) t.dispose();
  }
}

export function registerTokenOverlays(context: vscode.ExtensionContext): TokenOverlays {
  const overlays = new TokenOverlays();
  context.subscriptions.push(overlays);
  registerOverlayLegend(context, overlays);
  return overlays;
}
