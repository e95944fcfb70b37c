// "CoA: Convert to Trajectories…": a verl/AutoCoA parquet, verl rollout dumps, Search-R1 transcripts or OpenAI
// chats → a *.coa.jsonl the notebook opens, through the same core conversion as `coa convert` (src/core/convert.ts)
// — a .vsix user has no `coa` command. Offered when such a file is opened (a parquet otherwise shows as binary).
import * as vscode from 'vscode';
import { closeSync, existsSync, openSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  CONVERT_SOURCES,
  ConvertError,
  SOURCE_INFO,
  convertInput,
  guessSource,
  type ConvertSource,
} from '../../../core/convert';

export const CONVERT_TITLE = 'CoA: Convert to Trajectories';
export const CONVERT_ACTION = 'Convert to Trajectories…';

/** The first bytes of a file (or of a dump folder's first file), for guessing its source. */
function headOf(path: string): string {
  try {
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.alloc(4096);
      return buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** `data.parquet` → `data.coa.jsonl` beside it (`.jsonl`/`.json`/`.txt` replaced; a folder gets `<folder>.coa.jsonl`). */
export function defaultOutput(input: string): string {
  const name = basename(input).replace(/\.(parquet|jsonl|json|txt)$/i, '');
  return join(dirname(input), `${name}.coa.jsonl`);
}

function activeInput(): vscode.Uri | undefined {
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  if (
    input instanceof vscode.TabInputText ||
    input instanceof vscode.TabInputCustom ||
    input instanceof vscode.TabInputNotebook
  )
    return input.uri;
  return undefined;
}

/** The command: input (the argument, the active editor's file, or asked), source, output; then the conversion. */
export async function convertToTrajectories(log: vscode.LogOutputChannel, target?: unknown): Promise<void> {
  let uri = target instanceof vscode.Uri ? target : activeInput();
  if (!uri || uri.scheme !== 'file' || !guessable(uri.fsPath)) {
    const picked = await vscode.window.showOpenDialog({
      title: `${CONVERT_TITLE}: input`,
      canSelectMany: false,
      canSelectFolders: true,
      filters: { 'Datasets and dumps': ['parquet', 'jsonl', 'json', 'txt'] },
    });
    if (!picked?.[0]) return;
    uri = picked[0];
  }
  const input = uri.fsPath;
  const folder = statSync(input, { throwIfNoEntry: false })?.isDirectory() ?? false;
  const guess = folder ? 'verl-rollouts' : guessSource(input, headOf(input));
  const items = CONVERT_SOURCES.map((id) => ({
    id,
    label: SOURCE_INFO[id].label,
    detail: SOURCE_INFO[id].detail,
    description: id === guess ? 'looks like this' : '',
  }));
  items.sort((a, b) => Number(b.id === guess) - Number(a.id === guess));
  const source = await vscode.window.showQuickPick(items, {
    title: `${CONVERT_TITLE} (1/2): what ${basename(input)} is`,
    placeHolder: 'The format of the input',
    ignoreFocusOut: true,
  });
  if (!source) return;
  const out = await vscode.window.showSaveDialog({
    title: `${CONVERT_TITLE} (2/2): output`,
    defaultUri: vscode.Uri.file(defaultOutput(input)),
    filters: { 'Trajectories (JSONL)': ['jsonl'] },
  });
  if (!out) return;
  await convertAndOpen(log, source.id, input, out.fsPath);
}

function guessable(path: string): boolean {
  return existsSync(path) && (statSync(path).isDirectory() || /\.(parquet|jsonl|json|txt)$/i.test(path));
}

/** Convert, write atomically (a temporary file renamed into place), open the result and say what was written. */
export async function convertAndOpen(
  log: vscode.LogOutputChannel,
  source: ConvertSource,
  input: string,
  output: string,
): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Converting ${basename(input)}` },
    async () => {
      try {
        const r = await convertInput(source, input, { log: (line) => log.info(line) });
        const tmp = `${output}.tmp-${process.pid}`;
        try {
          writeFileSync(tmp, r.records.map((rec) => JSON.stringify(rec)).join('\n') + (r.records.length ? '\n' : ''));
          renameSync(tmp, output);
        } catch (e) {
          rmSync(tmp, { force: true });
          throw new ConvertError(`cannot write ${output}: ${(e as Error).message}`);
        }
        return r;
      } catch (e) {
        if (!(e instanceof ConvertError)) log.error(`convert ${input}: ${(e as Error).stack ?? e}`);
        void vscode.window.showErrorMessage(`CoA: ${(e as Error).message}`);
        return undefined;
      }
    },
  );
  if (!result) return;
  const skipped = result.skipped ? `; ${result.skipped} line(s) skipped (see the CoA Studio log)` : '';
  log.info(`convert: ${result.records.length} records from ${input} (${source}) written to ${output}`);
  // The result opens at once (as a notebook, or in the browser when large): the conversion was asked for to read it.
  // The message is not awaited — it used to hold an "Open" button, and nothing opened until it was clicked.
  void vscode.window.showInformationMessage(
    `CoA: ${result.records.length.toLocaleString('en-US')} records written to ${basename(output)}${skipped}.`,
  );
  await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(output));
}

/**
 * Offer the conversion when a convertible file is opened (once per file and session): a parquet shows as binary
 * otherwise, and transcripts, chats and dumps as plain text or JSON.
 */
export function registerConvertOffers(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): void {
  const offered = new Set<string>();
  const consider = (tab: vscode.Tab) => {
    const input = tab.input;
    if (!(input instanceof vscode.TabInputText) || input.uri.scheme !== 'file') return;
    const path = input.uri.fsPath;
    if (offered.has(path)) return;
    const source = guessSource(path, /\.parquet$/i.test(path) ? '' : headOf(path));
    if (!source) return;
    offered.add(path);
    void vscode.window
      .showInformationMessage(
        `CoA: ${basename(path)} looks like ${SOURCE_INFO[source].label}. Convert it to trajectories (*.coa.jsonl) to read it as a notebook?`,
        CONVERT_ACTION,
      )
      .then((pick) => {
        if (pick) void convertToTrajectories(log, input.uri);
      });
  };
  context.subscriptions.push(vscode.window.tabGroups.onDidChangeTabs((e) => e.opened.forEach(consider)));
  vscode.window.tabGroups.all.forEach((g) => g.tabs.forEach(consider));
}
