// The live panel's registration (serializer for window reloads) and its two commands, which the command table in
// commands.ts points at: "Open Live Training Panel" (argument: a run directory Uri, as the Runs view and Train
// Stage pass it) and "Compare Run in Live Panel" (adds a run to the active panel).
import * as vscode from 'vscode';
import { LIVE_PANEL_VIEW_TYPE, type LivePanelSavedState } from '../../../../webview/live-panel/protocol';
import { DEFAULT_SMOOTHING, LivePanel, type RunSource } from './panel';
import { findRolloutDir, isVerlMetricsUri, watchExternalRun } from './externalRuns';

/** The open live panels (one per run set) and the one last focused, which "Compare Run" adds to. */
export class LivePanels implements vscode.Disposable {
  private readonly panels = new Set<LivePanel>();
  private active: LivePanel | undefined;

  constructor(private readonly extensionUri: vscode.Uri, private readonly log: vscode.LogOutputChannel) {}

  adopt(panel: vscode.WebviewPanel): LivePanel {
    const lp = new LivePanel(panel, this.extensionUri, this.log);
    this.panels.add(lp);
    this.active = lp;
    panel.onDidChangeViewState((e) => e.webviewPanel.active && (this.active = lp));
    lp.onDidDispose = () => {
      this.panels.delete(lp);
      if (this.active === lp) this.active = [...this.panels].pop();
    };
    return lp;
  }

  /** Command "Open Live Training Panel" (argument: a run directory Uri, as the Runs view and Train Stage pass it). */
  async open(arg?: unknown): Promise<void> {
    const dir = (await sourceOf(arg)) ?? (await pickRunDir('Open Live Training Panel'));
    if (!dir) return;
    const existing = [...this.panels].find((p) => p.has(dir));
    if (existing) {
      existing.panel.reveal();
      return;
    }
    const panel = vscode.window.createWebviewPanel(LIVE_PANEL_VIEW_TYPE, 'CoA Live', { viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, {
      enableScripts: true,
      // Charts hold every point received; rebuilding them on each tab switch would mean re-reading the run.
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview')],
    });
    await this.adopt(panel).show([dir]);
  }

  /** Command "Compare Run in Live Panel": adds a run to the active panel. */
  async addRun(arg?: unknown): Promise<void> {
    const active = this.active;
    if (!active) return this.open(arg);
    const dir = (await sourceOf(arg)) ?? (await pickRunDir('Compare Run in Live Panel'));
    if (!dir) return;
    await active.addRun(dir);
    active.panel.reveal(undefined, true);
  }

  /** "CoA: Watch verl/TRL Run…" (issue 16): a verl metrics file or a CoA-protocol run, in a live panel. */
  async watch(arg?: unknown): Promise<void> {
    const given = await sourceOf(arg);
    if (given) return this.open(given);
    await watchExternalRun((source) => this.open(source));
  }

  dispose(): void {
    [...this.panels].forEach((p) => p.panel.dispose());
  }
}

export function registerLivePanel(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): LivePanels {
  const panels = new LivePanels(context.extensionUri, log);
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(LIVE_PANEL_VIEW_TYPE, {
      // After a window reload: the page saved its runs and smoothing with setState; the events are re-read.
      async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: LivePanelSavedState | undefined) {
        const dirs: RunSource[] = (state?.runs ?? []).map((r) =>
          r.engine === 'verl' ? { metrics: vscode.Uri.parse(r.key), rolloutDir: r.rolloutDir ? vscode.Uri.parse(r.rolloutDir) : undefined } : vscode.Uri.parse(r.key));
        await panels.adopt(panel).show(dirs, state?.smoothing ?? DEFAULT_SMOOTHING);
      },
    }),
    panels,
  );
  return panels;
}

/** A run directory from a command argument: a Uri (of the directory or its events.jsonl), a path, or a tree item. */
export function runDirFrom(arg: unknown): vscode.Uri | undefined {
  let uri: vscode.Uri | undefined;
  if (arg instanceof vscode.Uri) uri = arg;
  else if (typeof arg === 'string' && arg) uri = vscode.Uri.file(arg);
  else if (arg && typeof arg === 'object') {
    const o = arg as { resourceUri?: unknown; uri?: unknown; runDir?: unknown; dir?: unknown };
    for (const v of [o.runDir, o.resourceUri, o.uri, o.dir]) if (v !== undefined && (uri = runDirFrom(v))) break;
  }
  if (uri && uri.path.endsWith('/events.jsonl')) uri = vscode.Uri.joinPath(uri, '..');
  return uri;
}

/** Quick pick over the workspace's runs (newest first), or a folder chosen by hand. */
async function pickRunDir(title: string): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles('**/runs/*/events.jsonl', '**/node_modules/**', 200);
  const items = await Promise.all(
    files.map(async (f) => {
      const dir = vscode.Uri.joinPath(f, '..');
      const stat = await vscode.workspace.fs.stat(f).then((s) => s, () => undefined);
      return { label: dir.path.split('/').pop() ?? dir.path, description: vscode.workspace.asRelativePath(dir), dir, mtime: stat?.mtime ?? 0 };
    }),
  );
  items.sort((a, b) => b.mtime - a.mtime);
  const browse = { label: '$(folder-opened) Browse…', description: 'a run directory (holding events.jsonl)', dir: undefined, mtime: 0 };
  const picked = await vscode.window.showQuickPick([...items, browse], { title, placeHolder: items.length ? 'Run' : 'No runs/*/events.jsonl in the workspace' });
  if (!picked) return undefined;
  if (picked.dir) return picked.dir;
  const chosen = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Open run', title });
  return chosen?.[0];
}

/** A verl metrics file given as a Uri (Runs view, Explorer) gets its rollout dump directory looked up. */
async function sourceOf(arg: unknown): Promise<RunSource | undefined> {
  if (arg && typeof arg === 'object' && 'metrics' in arg && (arg as { metrics: unknown }).metrics instanceof vscode.Uri) return arg as RunSource;
  const dir = runDirFrom(arg);
  if (dir && isVerlMetricsUri(dir)) return { metrics: dir, rolloutDir: await findRolloutDir(dir) };
  return dir;
}
