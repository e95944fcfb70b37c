// Registration of the trajectory notebook and the handlers of its commands (the command table in commands.ts
// points here). Large files: the serializer returns a stub, and this module swaps it for the trajectory browser.
import * as vscode from 'vscode';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  LARGE_FILE_REASON,
  TrajectorySerializer,
  largeFileBytes,
  notebookDocumentText,
  notebookLimits,
  rewardOptions,
  viewRewards,
} from './serializer';
import { TooLarge, describeTooLarge, tooLargeBeforeParsing } from './threshold';
import {
  META_KEY,
  NOTEBOOK_TYPE,
  NOTEBOOK_TYPES,
  NOTEBOOK_TYPE_ANY_JSONL,
  NotebookMeta,
  isTrajectoryNotebook,
} from './cells';
import { ViewSpec, modesIn, viewNotebook } from './filter';
import { DiagnosticCache, cellMessage, notebookDiagnostics } from './diagnostics';
import { readConfig } from '../../config';
import { BROWSER_VIEW_TYPE, registerTrajectoryBrowser } from '../browser/provider';
import { RecordViews, recordViewSource, registerRecordViews } from './recordView';

export function registerTrajectoryNotebook(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
): RecordViews {
  const records = registerRecordViews(context, log);
  context.subscriptions.push(
    // Outputs are derived (rewards are recomputed on open): never written, never making the notebook dirty.
    ...NOTEBOOK_TYPES.map((type) =>
      vscode.workspace.registerNotebookSerializer(type, new TrajectorySerializer(), { transientOutputs: true }),
    ),
    vscode.workspace.onDidOpenNotebookDocument((doc) => void redirectLargeFile(doc)),
    // A large file's notebook tab is swapped for the browser as soon as it opens, before VS Code reads the file
    // (VS Code may also stop at its own "very large notebook" notice, where no document is ever opened).
    vscode.window.tabGroups.onDidChangeTabs((e) =>
      [...e.opened, ...e.changed].forEach((tab) => void redirectLargeTab(tab)),
    ),
  );
  vscode.window.tabGroups.all.forEach((g) => g.tabs.forEach((tab) => void redirectLargeTab(tab)));
  registerTrajectoryBrowser(context, log, records);
  registerCellDiagnostics(context);
  for (const doc of vscode.workspace.notebookDocuments) void redirectLargeFile(doc);
  return records;
}

/** Whether a notebook is shown in some editor tab. */
function notebookInTab(uri: string): boolean {
  return vscode.window.tabGroups.all.some((g) =>
    g.tabs.some((t) => t.input instanceof vscode.TabInputNotebook && t.input.uri.toString() === uri),
  );
}

/**
 * Format diagnostics of whole records shown on their step cells, refreshed as cells are edited. Problems lists them
 * while the notebook has a tab: VS Code keeps a notebook document open for a while after its tab closed (record
 * views: 40 s to minutes), so waiting for onDidCloseNotebookDocument left a closed record's problems listed.
 */
function registerCellDiagnostics(context: vscode.ExtensionContext): void {
  const collection = vscode.languages.createDiagnosticCollection('coa-notebook');
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  const caches = new Map<string, DiagnosticCache>();
  const shown = new Map<string, Map<string, vscode.Uri>>();
  /** Notebooks whose last tab closed: their findings are withdrawn until a tab shows them again. */
  const tabClosed = new Set<string>();
  const withdraw = (key: string) => {
    shown.get(key)?.forEach((uri) => collection.delete(uri));
    shown.delete(key);
  };
  const update = (doc: vscode.NotebookDocument) => {
    // A change's timer can fire after its notebook closed: its cells' findings would stay in Problems for good.
    if (!isTrajectoryNotebook(doc.notebookType) || doc.isClosed || tabClosed.has(doc.uri.toString())) return;
    const cells = doc.getCells();
    const c = readConfig();
    const cache = caches.get(doc.uri.toString()) ?? { key: () => '', records: new Map() };
    cache.key = (i) => `${cells[i].document.uri.toString()}@${cells[i].document.version}`;
    caches.set(doc.uri.toString(), cache);
    const found = notebookDiagnostics(
      cells.map((cell) => ({
        kind: cell.kind === vscode.NotebookCellKind.Markup ? 'markup' : 'code',
        value: cell.document.getText(),
        metadata: cell.metadata,
      })),
      { dialect: c.dialect, strictness: c.strictness, tools: c.tools },
      cache,
    );
    const byCell = new Map<number, vscode.Diagnostic[]>();
    for (const d of found) {
      const docu = cells[d.cell].document;
      const diag = new vscode.Diagnostic(
        new vscode.Range(docu.positionAt(d.start), docu.positionAt(d.end)),
        cellMessage(d),
        d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning,
      );
      diag.code = d.code;
      diag.source = 'coa';
      byCell.set(d.cell, [...(byCell.get(d.cell) ?? []), diag]);
    }
    // Touch only cells that have findings now or had them before: one set() per cell of a 5,000-cell notebook
    // would be 5,000 messages to the window for nothing.
    const key = doc.uri.toString();
    const before = shown.get(key) ?? new Map<string, vscode.Uri>();
    const now = new Map<string, vscode.Uri>();
    for (const [i, diags] of byCell) {
      const uri = cells[i].document.uri;
      now.set(uri.toString(), uri);
      collection.set(uri, diags);
    }
    for (const [k, uri] of before) if (!now.has(k)) collection.delete(uri);
    shown.set(key, now);
  };
  const later = (doc: vscode.NotebookDocument) => {
    const key = doc.uri.toString();
    clearTimeout(timers.get(key));
    timers.set(
      key,
      setTimeout(() => update(doc), 300),
    );
  };
  context.subscriptions.push(
    collection,
    vscode.workspace.onDidOpenNotebookDocument(update),
    vscode.workspace.onDidChangeNotebookDocument((e) => later(e.notebook)),
    vscode.workspace.onDidCloseNotebookDocument((doc) => {
      const key = doc.uri.toString();
      clearTimeout(timers.get(key));
      timers.delete(key);
      caches.delete(key);
      tabClosed.delete(key);
      withdraw(key);
    }),
    vscode.window.tabGroups.onDidChangeTabs((e) => {
      for (const tab of e.closed) {
        if (!(tab.input instanceof vscode.TabInputNotebook)) continue;
        const key = tab.input.uri.toString();
        if (notebookInTab(key)) continue;
        tabClosed.add(key);
        clearTimeout(timers.get(key));
        withdraw(key);
      }
      for (const tab of [...e.opened, ...e.changed]) {
        if (!(tab.input instanceof vscode.TabInputNotebook)) continue;
        const key = tab.input.uri.toString();
        if (!tabClosed.delete(key)) continue;
        const doc = vscode.workspace.notebookDocuments.find((d) => d.uri.toString() === key);
        if (doc) update(doc);
      }
    }),
    // Settings change what the rules say: start over.
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('coaStudio')) return;
      caches.clear();
      vscode.workspace.notebookDocuments.forEach(update);
    }),
    { dispose: () => timers.forEach((t) => clearTimeout(t)) },
  );
  vscode.workspace.notebookDocuments.forEach(update);
}

async function redirectLargeFile(doc: vscode.NotebookDocument): Promise<void> {
  const meta = doc.metadata?.[META_KEY] as NotebookMeta | undefined;
  if (!isTrajectoryNotebook(doc.notebookType) || meta?.readonly !== LARGE_FILE_REASON || doc.uri.scheme !== 'file')
    return;
  await openInBrowserInstead(doc.uri);
}

async function redirectLargeTab(tab: vscode.Tab): Promise<void> {
  const input = tab.input;
  if (
    !(input instanceof vscode.TabInputNotebook) ||
    !isTrajectoryNotebook(input.notebookType) ||
    input.uri.scheme !== 'file'
  )
    return;
  let size: number;
  try {
    size = (await vscode.workspace.fs.stat(input.uri)).size;
  } catch {
    return; // gone or unreadable: the notebook editor reports it
  }
  if (size > largeFileBytes()) await openInBrowserInstead(input.uri, tab.group.viewColumn);
}

const redirecting = new Set<string>();

/** Open the browser on a file and close its notebook tabs (the stub, or VS Code's large-file notice). */
async function openInBrowserInstead(uri: vscode.Uri, viewColumn?: vscode.ViewColumn): Promise<void> {
  const key = uri.toString();
  if (redirecting.has(key)) return;
  redirecting.add(key);
  try {
    await vscode.commands.executeCommand('vscode.openWith', uri, BROWSER_VIEW_TYPE, viewColumn);
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        if (
          tab.input instanceof vscode.TabInputNotebook &&
          isTrajectoryNotebook(tab.input.notebookType) &&
          tab.input.uri.toString() === key
        )
          await vscode.window.tabGroups.close(tab);
      }
    }
  } finally {
    redirecting.delete(key);
  }
}

function activeUri(): vscode.Uri | undefined {
  const uri =
    vscode.window.activeNotebookEditor?.notebook.uri ?? vscode.window.activeTextEditor?.document.uri ?? activeTabUri();
  // A record view stands for its file.
  return uri && (recordViewSource(uri)?.file ?? uri);
}

function activeTabUri(): vscode.Uri | undefined {
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  if (
    input instanceof vscode.TabInputText ||
    input instanceof vscode.TabInputCustom ||
    input instanceof vscode.TabInputNotebook
  )
    return input.uri;
  return undefined;
}

/**
 * "Open as Trajectory Notebook" (the text editor's and the browser's title bar): any .jsonl, as a notebook when it
 * fits the limits (threshold.ts); otherwise it says why and stays in (or goes to) the browser.
 */
export async function openAsTrajectoryNotebook(): Promise<void> {
  const uri = activeUri();
  if (!uri) return void vscode.window.showInformationMessage('Open a .jsonl file first.');
  const limits = notebookLimits();
  let tooLarge: TooLarge | null = null;
  if (uri.scheme === 'file') {
    const size = (await vscode.workspace.fs.stat(uri)).size;
    tooLarge =
      size > limits.maxBytes
        ? { why: 'bytes', bytes: size, limit: limits.maxBytes }
        : tooLargeBeforeParsing(await vscode.workspace.fs.readFile(uri), limits);
  }
  if (tooLarge) {
    await vscode.commands.executeCommand('vscode.openWith', uri, BROWSER_VIEW_TYPE);
    const pick = await vscode.window.showInformationMessage(
      `CoA: ${describeTooLarge(tooLarge).replace(/`/g, '')}: it stays in the trajectory browser. Filter there and open single records as notebooks, or raise the limit.`,
      'Open Setting',
    );
    if (pick)
      await vscode.commands.executeCommand(
        'workbench.action.openSettings',
        tooLarge.why === 'bytes' ? 'coaStudio.notebook.largeFileMB' : 'coaStudio.notebook.maxCells',
      );
    return;
  }
  await vscode.commands.executeCommand(
    'vscode.openWith',
    uri,
    uri.path.endsWith('.coa.jsonl') ? NOTEBOOK_TYPE : NOTEBOOK_TYPE_ANY_JSONL,
  );
}

export async function openTrajectoryBrowser(): Promise<void> {
  const uri = activeUri();
  if (!uri) return void vscode.window.showInformationMessage('Open a .jsonl file first.');
  await vscode.commands.executeCommand('vscode.openWith', uri, BROWSER_VIEW_TYPE);
}

/** Filter/sort commands: a new untitled notebook with the matching records of the active trajectory notebook. */
export async function showNotebookView(spec: ViewSpec | 'ask-tool-calls' | 'ask-filter'): Promise<void> {
  const editor = vscode.window.activeNotebookEditor;
  if (!editor || !isTrajectoryNotebook(editor.notebook.notebookType))
    return void vscode.window.showInformationMessage('Open a trajectory notebook first.');
  if (spec === 'ask-tool-calls') {
    const answer = await vscode.window.showInputBox({
      prompt: 'Show trajectories with more than N tool calls',
      value: '3',
      validateInput: (v) => (/^\d+$/.test(v.trim()) ? null : 'a whole number'),
    });
    if (answer === undefined) return;
    spec = { kind: 'tool-calls', more: Number(answer.trim()) };
  }
  let text: string;
  try {
    text = notebookDocumentText(editor.notebook);
  } catch (e) {
    return void vscode.window.showErrorMessage(`CoA Studio: ${(e as Error).message}`);
  }
  if (spec === 'ask-filter') {
    const reward = await vscode.window.showQuickPick(
      [
        { label: 'Any reward', value: null },
        { label: 'Reward > 0', value: 'positive' as const },
        { label: 'Reward 0', value: 'zero' as const },
      ],
      {
        title: 'CoA: Filter Trajectories (1/2): reward',
        placeHolder: "Keep trajectories by their reward (the notebook's scheme)",
      },
    );
    if (!reward) return;
    const modes = modesIn(text);
    const mode = modes.length
      ? await vscode.window.showQuickPick(
          [
            { label: 'Any mode', value: null as string | null },
            ...modes.map((m) => ({ label: m, value: m as string | null })),
          ],
          {
            title: 'CoA: Filter Trajectories (2/2): mode',
            placeHolder: 'Keep trajectories sampled in this mode (meta.mode: coa with the tool, cot without)',
          },
        )
      : { value: null };
    if (!mode) return;
    spec = { kind: 'filter', reward: reward.value, mode: mode.value };
  }
  const view = viewNotebook(text, spec, { ...rewardOptions(), source: editor.notebook.uri.fsPath });
  const meta = view.metadata[META_KEY] as NotebookMeta;
  // Nothing matches: say so instead of opening an empty notebook.
  if (view.count === 0)
    return void vscode.window.showInformationMessage(
      `CoA: no ${meta.view?.description ?? 'records'} in ${basename(editor.notebook.uri.path)}.`,
    );
  // A view is a file of its own in a temp folder, opened through the serializer: VS Code drops the outputs of an
  // untitled notebook made from NotebookData, and the reward outputs are the point of a view.
  const base = basename(editor.notebook.uri.path).replace(/(\.coa)?\.jsonl$/, '');
  const slug =
    spec.kind === 'failures'
      ? 'failures'
      : spec.kind === 'tool-calls'
        ? `more-than-${spec.more}-tool-calls`
        : spec.kind === 'filter'
          ? `filter-${spec.reward ?? 'any'}-${spec.mode ?? 'any'}`
          : `by-${spec.by}`;
  const file = join(mkdtempSync(join(tmpdir(), 'coa-studio-view-')), `${base}.${slug}.coa.jsonl`);
  writeFileSync(file, view.text);
  viewRewards.set(view.text, view.rewards);
  try {
    const doc = await vscode.workspace.openNotebookDocument(vscode.Uri.file(file));
    await vscode.window.showNotebookDocument(doc);
  } finally {
    viewRewards.delete(view.text);
  }
  vscode.window.setStatusBarMessage(`${view.count} ${meta.view?.description ?? ''} (a copy: ${file})`, 10000);
}
