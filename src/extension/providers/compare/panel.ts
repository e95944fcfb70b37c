// "Compare runs": pick two rollout files (the active trajectory file is offered first), score both with the
// configured reward scheme and show them side by side per question in a webview (src/extension/webview/html.ts,
// state embedded in the page; the bundle is dist/webview/compare.js).
import * as vscode from 'vscode';
import { basename } from 'node:path';
import { webviewHtml } from '../../webview/html';
import { rewardOptions } from '../notebook/serializer';
import { compareRuns } from './model';
import { pageState } from './panel-state';

async function pickFile(title: string, preset?: vscode.Uri): Promise<vscode.Uri | undefined> {
  if (preset) {
    const use = await vscode.window.showQuickPick([{ label: basename(preset.fsPath), description: 'the active file', uri: preset }, { label: 'Choose another file…', uri: undefined }], { title });
    if (!use) return undefined;
    if (use.uri) return use.uri;
  }
  return (await vscode.window.showOpenDialog({ title, canSelectMany: false, filters: { 'Rollout files': ['jsonl'] } }))?.[0];
}

export async function compareRunsCommand(context: vscode.ExtensionContext): Promise<void> {
  const active = vscode.window.activeNotebookEditor?.notebook.uri ?? vscode.window.activeTextEditor?.document.uri;
  const a = await pickFile('Compare runs: run A (rollouts .jsonl)', active?.path.endsWith('.jsonl') ? active : undefined);
  if (!a) return;
  const b = await pickFile('Compare runs: run B (rollouts .jsonl)');
  if (!b) return;
  const read = async (u: vscode.Uri) => new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
  const { scheme, params } = rewardOptions();
  const model = compareRuns({ text: await read(a), label: vscode.workspace.asRelativePath(a) }, { text: await read(b), label: vscode.workspace.asRelativePath(b) }, scheme, params);
  const panel = vscode.window.createWebviewPanel('coaStudio.compareRuns', `Compare: ${basename(a.fsPath)} ↔ ${basename(b.fsPath)}`, vscode.ViewColumn.Active, {
    enableScripts: true,
    localResourceRoots: [vscode.Uri.joinPath(context.extensionUri, 'dist', 'webview')],
  });
  panel.webview.html = webviewHtml(panel.webview, context.extensionUri, { title: 'Compare runs', scripts: ['dist/webview/compare.js'], initialState: pageState(model), body: '<div id="app"></div>' }, vscode.Uri.joinPath);
}
