// The token overlays' legend: which overlays are on and what their colours mean. In a trajectory notebook (the
// record view above all) it is the status line of the first step cell of each record that has tokens; in any editor a
// status bar item while an overlay is on, whose hover shows the colours (styles.ts). Both open the chooser.
import * as vscode from 'vscode';
import { OVERLAY_VIEWS, type OverlayView } from './mapping';
import { VIEW_NAMES, legendMarkdown, overlayNames } from './styles';
import { NOTEBOOK_TYPES, cellMeta } from '../notebook/cells';
import { RECORD_SCHEME } from '../notebook/recordView';

const CHOOSE = 'coaStudio.tokens.chooseOverlays';

/** The colours in words (a cell's status line takes plain text). */
const WORDS: Record<OverlayView, string> = {
  mask: 'loss mask (blue trained, faded masked)',
  logprob: 'log-prob (green p≥0.9 → red p<0.01)',
  advantage: 'advantage (green +, red −, dotted 0)',
};

/** What the legend reads and sets of the overlays (TokenOverlays, overlays.ts, which registers the legend). */
export interface OverlaySwitches {
  readonly active: ReadonlySet<OverlayView>;
  readonly onDidChange: vscode.Event<unknown>;
  set(view: OverlayView, on: boolean): void;
}

export function legendLine(on: ReadonlySet<OverlayView>): string {
  const views = OVERLAY_VIEWS.filter((v) => on.has(v));
  return views.length ? `Overlays: ${views.map((v) => WORDS[v]).join(' · ')}` : 'Token overlays: off';
}

export function registerOverlayLegend(context: vscode.ExtensionContext, overlays: OverlaySwitches): void {
  const item = vscode.window.createStatusBarItem('coaStudio.tokens.legend', vscode.StatusBarAlignment.Right, 90);
  item.name = 'CoA Token Overlays';
  item.command = CHOOSE;
  const changed = new vscode.EventEmitter<void>();
  const update = () => {
    const on = overlays.active;
    item.text = `$(symbol-color) ${overlayNames(on)}`;
    const md = new vscode.MarkdownString(legendMarkdown(on));
    md.supportHtml = true;
    item.tooltip = md;
    if (on.size) item.show();
    else item.hide();
    changed.fire();
  };
  const cells: vscode.NotebookCellStatusBarItemProvider = {
    onDidChangeCellStatusBarItems: changed.event,
    provideCellStatusBarItems(cell) {
      // On a record's first step cell (a rendered Markdown header shows no status line), for records whose tokens
      // can be drawn: the header's line names offsets (a cheap test; the overlay itself parses the line).
      const meta = cellMeta(cell.metadata);
      if (meta?.kind !== 'step' || meta.index !== 0 || cell.index === 0) return [];
      const header = cellMeta(cell.notebook.cellAt(cell.index - 1).metadata);
      if (header?.kind !== 'header' || !header.raw.includes('"offsets"')) return [];
      const legend = new vscode.NotebookCellStatusBarItem(
        `$(symbol-color) ${legendLine(overlays.active)}`,
        vscode.NotebookCellStatusBarAlignment.Left,
      );
      legend.command = CHOOSE;
      legend.tooltip = overlays.active.size
        ? 'Hover a token for its id, log-prob, loss mask and advantage; click to choose overlays'
        : 'Click to choose token overlays';
      return [legend];
    },
  };
  // A record view is where tokens are read: the first one opened with tokens turns the log-prob heat map on, until
  // the user chooses overlays themselves (the toggles and the chooser go through `set`, which fires onDidChange).
  let chosen = false;
  let auto = false;
  const firstRecordView = (doc: vscode.NotebookDocument) => {
    if (chosen || overlays.active.size || doc.uri.scheme !== RECORD_SCHEME) return;
    const header = doc
      .getCells()
      .map((c) => cellMeta(c.metadata))
      .find((m) => m?.kind === 'header');
    if (header?.kind !== 'header' || !header.raw.includes('"offsets"')) return;
    auto = true;
    overlays.set('logprob', true);
    auto = false;
  };
  context.subscriptions.push(
    item,
    changed,
    overlays.onDidChange(() => {
      if (!auto) chosen = true;
      update();
    }),
    vscode.workspace.onDidOpenNotebookDocument(firstRecordView),
    ...NOTEBOOK_TYPES.map((type) => vscode.notebooks.registerNotebookCellStatusBarItemProvider(type, cells)),
  );
  update();
}

/** "CoA: Choose Token Overlays…": every overlay at once, those on already ticked. */
export async function chooseOverlays(overlays: OverlaySwitches): Promise<void> {
  const items = OVERLAY_VIEWS.map((v) => ({
    label: VIEW_NAMES[v],
    description: WORDS[v].replace(/^[^(]*\(|\)$/g, ''),
    view: v,
    picked: overlays.active.has(v),
  }));
  const picked = await vscode.window.showQuickPick(items, {
    canPickMany: true,
    title: 'CoA: Token Overlays',
    placeHolder: 'Overlays drawn on records with tokens (loss mask, log-probs, advantages)',
  });
  if (!picked) return;
  for (const v of OVERLAY_VIEWS)
    overlays.set(
      v,
      picked.some((p) => p.view === v),
    );
}
