// "Compare runs": pick two trajectory files (the active one, then the run directories' evaluations and rollouts
// are offered), read them into the checkpoint diff (src/core/diff: rewards as the trainer stored them, else scored
// with the configured scheme) and show the flip table in a webview (dist/webview/compare.js). An opened row asks
// for its two trajectories, aligned by step; either opens in the record view.
import * as vscode from 'vscode';
import { basename } from 'node:path';
import type { RecordViews } from '../notebook/recordView';
import { webviewHtml } from '../../webview/html';
import { rewardOptions } from '../notebook/serializer';
import { compareFiles, pageState, pairAnswer } from './model';
import type { HostToPage, PageToHost } from '../../../protocols/compare';

type Pick_ = vscode.QuickPickItem & { uri?: vscode.Uri };

/** Evaluations and rollouts of the workspace's runs, newest run first (what a checkpoint comparison is made of). */
async function runFiles(): Promise<vscode.Uri[]> {
  const found = await vscode.workspace.findFiles(
    '**/runs/*/{eval/*.jsonl,stages/*/rollouts.coa.jsonl}',
    '**/node_modules/**',
    400,
  );
  return found.sort((a, b) => a.path.localeCompare(b.path));
}

async function pickFile(title: string, offered: vscode.Uri[], active?: vscode.Uri): Promise<vscode.Uri | undefined> {
  const items: Pick_[] = [];
  if (active)
    items.push({
      label: basename(active.fsPath),
      description: 'the active file',
      detail: vscode.workspace.asRelativePath(active),
      uri: active,
    });
  for (const u of offered)
    if (u.toString() !== active?.toString()) items.push({ label: vscode.workspace.asRelativePath(u), uri: u });
  items.push({ label: 'Choose another file…' });
  const use = items.length > 1 ? await vscode.window.showQuickPick(items, { title, matchOnDetail: true }) : items[0];
  if (!use) return undefined;
  if (use.uri) return use.uri;
  return (
    await vscode.window.showOpenDialog({ title, canSelectMany: false, filters: { 'Trajectory files': ['jsonl'] } })
  )?.[0];
}

export async function compareRunsCommand(
  ctx: { extension: vscode.ExtensionContext; records: Pick<RecordViews, 'show'> },
  a?: vscode.Uri,
  b?: vscode.Uri,
): Promise<void> {
  const current = vscode.window.activeNotebookEditor?.notebook.uri ?? vscode.window.activeTextEditor?.document.uri;
  const active = current?.scheme === 'file' && current.path.endsWith('.jsonl') ? current : undefined;
  const offered = a && b ? [] : await runFiles();
  a ??= await pickFile('Compare runs: A (the baseline)', offered, active);
  if (!a) return;
  b ??= await pickFile(
    'Compare runs: B (compared with A)',
    offered.filter((u) => u.toString() !== a!.toString()),
  );
  if (!b) return;
  const read = async (u: vscode.Uri) => new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
  const { scheme, params } = rewardOptions();
  const options = { scheme, params };
  const files = { a, b };
  const data = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'Comparing runs' },
    async () =>
      compareFiles(
        { text: await read(a!), label: vscode.workspace.asRelativePath(a!) },
        { text: await read(b!), label: vscode.workspace.asRelativePath(b!) },
        options,
      ),
  );
  const panel = vscode.window.createWebviewPanel(
    'coaStudio.compareRuns',
    `Compare: ${basename(a.fsPath)} ↔ ${basename(b.fsPath)}`,
    vscode.ViewColumn.Active,
    {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(ctx.extension.extensionUri, 'dist', 'webview')],
    },
  );
  panel.webview.onDidReceiveMessage((m: PageToHost) => {
    if (m?.type === 'pair' && typeof m.key === 'string') {
      const idx = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);
      void panel.webview.postMessage(pairAnswer(data, m.key, idx(m.a), idx(m.b)) satisfies HostToPage);
    } else if (
      m?.type === 'openRecord' &&
      (m.side === 'a' || m.side === 'b') &&
      Number.isInteger(m.line) &&
      m.line > 0
    ) {
      void ctx.records.show({ file: files[m.side], line: m.line });
    }
  });
  panel.webview.html = webviewHtml(
    panel.webview,
    ctx.extension.extensionUri,
    {
      title: 'Compare runs',
      scripts: ['dist/webview/compare.js'],
      initialState: pageState(data, options),
      body: '<div id="app"></div>',
    },
    vscode.Uri.joinPath,
  );
}
