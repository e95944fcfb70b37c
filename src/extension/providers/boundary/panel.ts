// "Show Search Boundary": a search boundary report (`python -m coa_trainer boundary` → runs/<id>/eval/
// boundary-<stage>-<split>.json) in a webview — the classes of the checkpoint's questions (over-/under-search …), TC
// against the estimated minimum, the embedded benchmark's ground truth where the report has it, and every question
// with the trajectories that decided its class. State embedded in the page (src/extension/webview/html.ts: nonce-only
// CSP); the bundle is dist/webview/boundary.js.
import * as vscode from 'vscode';
import { basename } from 'node:path';
import { webviewHtml } from '../../webview/html';
import { isReportName, pageState, parseReport } from './report';

const REPORTS = '**/eval/boundary-*.json';

/** The report to show: given (a report file, or a run directory / Runs view node holding some), the active editor's,
 * or picked among the workspace's (newest first). */
async function pickReport(arg: unknown): Promise<vscode.Uri | undefined> {
  const given =
    arg instanceof vscode.Uri
      ? arg
      : typeof arg === 'string' && arg
        ? vscode.Uri.file(arg)
        : arg && typeof arg === 'object' && 'run' in arg
          ? vscode.Uri.file((arg as { run: { dir: string } }).run.dir)
          : undefined;
  if (given && isReportName(basename(given.path))) return given;
  const active = vscode.window.activeTextEditor?.document.uri;
  if (!given && active && isReportName(basename(active.path))) return active;
  const files = given
    ? await vscode.workspace.fs.readDirectory(vscode.Uri.joinPath(given, 'eval')).then(
        (entries) =>
          entries
            .filter(([n, t]) => t === vscode.FileType.File && isReportName(n))
            .map(([n]) => vscode.Uri.joinPath(given, 'eval', n)),
        () => [] as vscode.Uri[],
      )
    : await vscode.workspace.findFiles(REPORTS, '**/node_modules/**', 500);
  const items = await Promise.all(
    files.map(async (uri) => ({
      label: basename(uri.path).replace(/^boundary-|\.json$/g, ''),
      description: vscode.workspace.asRelativePath(uri),
      uri,
      mtime:
        (
          await vscode.workspace.fs.stat(uri).then(
            (s) => s,
            () => undefined,
          )
        )?.mtime ?? 0,
    })),
  );
  if (items.length === 0) {
    void vscode.window.showInformationMessage(
      `CoA: no search boundary report ${given ? `in ${vscode.workspace.asRelativePath(given)}/eval` : 'in this workspace'} — measure one with \`python -m coa_trainer boundary --config <run config> --run-dir <run> --stage rl2\``,
    );
    return undefined;
  }
  if (items.length === 1) return items[0].uri;
  items.sort((a, b) => b.mtime - a.mtime);
  return (
    await vscode.window.showQuickPick(items, {
      title: 'CoA: Show Search Boundary',
      placeHolder: 'Report (stage-split)',
    })
  )?.uri;
}

export async function showSearchBoundary(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  arg?: unknown,
): Promise<void> {
  const uri = await pickReport(arg);
  if (!uri) return;
  const name = vscode.workspace.asRelativePath(uri);
  let state;
  try {
    state = pageState(parseReport(new TextDecoder().decode(await vscode.workspace.fs.readFile(uri)), name), name);
  } catch (e) {
    log.warn(`search boundary: ${(e as Error).message}`);
    void vscode.window.showErrorMessage(`CoA: ${(e as Error).message}`);
    return;
  }
  const { report } = state;
  const panel = vscode.window.createWebviewPanel(
    'coaStudio.searchBoundary',
    `Search boundary: ${report.stage} (${report.split})`,
    vscode.ViewColumn.Active,
    {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(context.extensionUri, 'dist', 'webview')],
    },
  );
  panel.webview.html = webviewHtml(
    panel.webview,
    context.extensionUri,
    {
      title: 'Search boundary',
      scripts: ['dist/webview/boundary.js'],
      initialState: state,
      body: '<div id="app"></div>',
    },
    vscode.Uri.joinPath,
  );
}
