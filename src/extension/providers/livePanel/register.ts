// The live panel's registration (serializer for window reloads) and `LivePanels`, the context's typed seam for it
// (`ctx.livePanels`): Train Stage, the Runs view and the panel's own "+" call `open` / `addRun` / `watch` with a run
// source. The commands in commands.ts ("Open Live Training Panel", "Compare Run in Live Panel", "Watch verl/TRL
// Run…") are the palette's and the status bar's way in; they parse their argument with `runSourceArg`.
import * as vscode from 'vscode';
import { LIVE_PANEL_VIEW_TYPE, type LivePanelSavedState } from '../../../protocols/livePanel';
import type { RecordViews } from '../notebook/recordView';
import { DEFAULT_SMOOTHING, LivePanel, type RunSource } from './panel';
import { findRolloutDir, isVerlMetricsUri, watchExternalRun } from './externalRuns';
import { openGroupView } from '../groups/panel';

/** The open live panels (one per run set) and the one last focused, which "Compare Run" adds to. */
export class LivePanels implements vscode.Disposable {
  private readonly panels = new Set<LivePanel>();
  private active: LivePanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly records: RecordViews,
  ) {}

  adopt(panel: vscode.WebviewPanel): LivePanel {
    const lp = new LivePanel(panel, this.extensionUri, this.log, {
      records: this.records,
      addRun: () => this.addRun(),
      openGroups: (file, step) =>
        openGroupView({ extensionUri: this.extensionUri, records: this.records }, { file, step }),
    });
    this.panels.add(lp);
    this.active = lp;
    panel.onDidChangeViewState((e) => e.webviewPanel.active && (this.active = lp));
    lp.onDidDispose = () => {
      this.panels.delete(lp);
      if (this.active === lp) this.active = [...this.panels].pop();
    };
    return lp;
  }

  /** Shows `source` (a run directory or a verl run) in a panel, the one already showing it if any; none: a pick. */
  async open(source?: RunSource): Promise<void> {
    const dir = source ? await withRolloutDir(source) : await pickRunDir('Open Live Training Panel');
    if (!dir) return;
    const existing = [...this.panels].find((p) => p.has(dir));
    if (existing) {
      existing.panel.reveal();
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      LIVE_PANEL_VIEW_TYPE,
      'CoA Live',
      { viewColumn: vscode.ViewColumn.Active, preserveFocus: false },
      {
        enableScripts: true,
        // Charts hold every point received; rebuilding them on each tab switch would mean re-reading the run.
        retainContextWhenHidden: true,
        localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview')],
      },
    );
    await this.adopt(panel).show([dir]);
  }

  /** Adds `source` to the panel last focused, to compare (none open: opens one); none given: a pick. */
  async addRun(source?: RunSource): Promise<void> {
    const active = this.active;
    if (!active) return this.open(source);
    const dir = source ? await withRolloutDir(source) : await pickRunDir('Compare Run in Live Panel');
    if (!dir) return;
    await active.addRun(dir);
    active.panel.reveal(undefined, true);
  }

  /** "CoA: Watch verl/TRL Run…": a verl metrics file or a CoA-protocol run, in a live panel. */
  async watch(source?: RunSource): Promise<void> {
    if (source) return this.open(source);
    await watchExternalRun((picked) => this.open(picked));
  }

  dispose(): void {
    [...this.panels].forEach((p) => p.panel.dispose());
  }
}

export function registerLivePanel(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  records: RecordViews,
): LivePanels {
  const panels = new LivePanels(context.extensionUri, log, records);
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(LIVE_PANEL_VIEW_TYPE, {
      // After a window reload: the page saved its runs and smoothing with setState; the events are re-read.
      async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: LivePanelSavedState | undefined) {
        const dirs: RunSource[] = (state?.runs ?? []).map((r) =>
          r.engine === 'verl'
            ? {
                metrics: vscode.Uri.parse(r.key),
                rolloutDir: r.rolloutDir ? vscode.Uri.parse(r.rolloutDir) : undefined,
              }
            : vscode.Uri.parse(r.key),
        );
        await panels.adopt(panel).show(dirs, state?.smoothing ?? DEFAULT_SMOOTHING);
      },
    }),
    panels,
  );
  return panels;
}

/**
 * The argument of the live panel's commands: a Uri (a run directory, its events.jsonl, or a verl metrics file — the
 * status bar and the Runs view's verl items pass one) or a path (scripted callers); anything else: none (a pick).
 */
export function runSourceArg(arg: unknown): vscode.Uri | undefined {
  const uri = arg instanceof vscode.Uri ? arg : typeof arg === 'string' && arg ? vscode.Uri.file(arg) : undefined;
  return uri && uri.path.endsWith('/events.jsonl') ? vscode.Uri.joinPath(uri, '..') : uri;
}

/** Quick pick over the workspace's runs (newest first), or a folder chosen by hand. */
async function pickRunDir(title: string): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles('**/runs/*/events.jsonl', '**/node_modules/**', 200);
  const items = await Promise.all(
    files.map(async (f) => {
      const dir = vscode.Uri.joinPath(f, '..');
      const stat = await vscode.workspace.fs.stat(f).then(
        (s) => s,
        () => undefined,
      );
      return {
        label: dir.path.split('/').pop() ?? dir.path,
        description: vscode.workspace.asRelativePath(dir),
        dir,
        mtime: stat?.mtime ?? 0,
      };
    }),
  );
  items.sort((a, b) => b.mtime - a.mtime);
  const browse = {
    label: '$(folder-opened) Browse…',
    description: 'a run directory (holding events.jsonl)',
    dir: undefined,
    mtime: 0,
  };
  const picked = await vscode.window.showQuickPick([...items, browse], {
    title,
    placeHolder: items.length ? 'Run' : 'No runs/*/events.jsonl in the workspace',
  });
  if (!picked) return undefined;
  if (picked.dir) return picked.dir;
  const chosen = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    openLabel: 'Open run',
    title,
  });
  return chosen?.[0];
}

/** A verl metrics file given as a Uri (Runs view, Explorer) gets its rollout dump directory looked up. */
async function withRolloutDir(source: RunSource): Promise<RunSource> {
  return source instanceof vscode.Uri && isVerlMetricsUri(source)
    ? { metrics: source, rolloutDir: await findRolloutDir(source) }
    : source;
}
