// The replay NotebookControllers ("CoA Replay: checkpoint + environment server", "CoA Replay: simulated
// environment") and the commands behind them. Running a cell of a record replays that record's question with
// the picked ONNX checkpoint, appending a cell per step as it is generated (session.ts); the kernel's stop button
// or the progress notification's Cancel aborts it. The engine itself (src/replay) knows nothing of VS Code.
import * as vscode from 'vscode';
import type { ReplayMode } from '../../../replay/agent';
import { describeSettings } from '../../../replay/runSettings';
import { requireTrust } from '../../workspace';
import { toVscode } from '../notebook/serializer';
import { NOTEBOOK_TYPES, isTrajectoryNotebook } from '../notebook/cells';
import type { CellData } from '../notebook/codec';
import { runReplaySession } from './session';
import { forkFromStep } from './fork';
import {
  type ReplaySeams,
  type State,
  checkpointFor,
  envTool,
  exportIfNeeded,
  loadModel,
  pickCheckpoint,
  recordOf,
  sampling,
  settingsFor,
  sourceFile,
} from './state';

export type { ReplaySeams } from './state';

/** What the command table reaches of replay: the two replay commands, the checkpoint picker and the fork (fork.ts). */
export interface Replay {
  command(mode: ReplayMode): Promise<void>;
  pickCheckpoint(): Promise<string | undefined>;
  fork(cell?: unknown): Promise<void>;
}

export function registerReplay(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  seams: ReplaySeams,
): Replay {
  const s: State = { context, seams, log, models: new Map(), servers: new Map(), controllers: new Map() };
  for (const type of NOTEBOOK_TYPES) {
    for (const mode of ['env', 'simulated'] as const) {
      const c = vscode.notebooks.createNotebookController(
        `coa-replay-${mode}-${type}`,
        type,
        mode === 'env' ? 'CoA Replay: checkpoint + environment server' : 'CoA Replay: simulated environment',
      );
      c.description =
        mode === 'env'
          ? 'ONNX checkpoint, tools from the environment server (RL-2)'
          : 'ONNX checkpoint writes its own observations (RL-1)';
      c.supportedLanguages = ['coa', 'json', 'plaintext'];
      c.supportsExecutionOrder = false;
      c.executeHandler = (cells, notebook) => executeCells(s, c, mode, cells, notebook);
      s.controllers.set(`${mode}:${type}`, c);
      context.subscriptions.push(c);
    }
  }
  context.subscriptions.push({
    dispose: () => {
      for (const srv of s.servers.values())
        void srv.then(
          (x) => x.stop(),
          () => undefined,
        );
      for (const m of s.models.values())
        void m.model.then(
          (x) => x.release(),
          () => undefined,
        );
    },
  });
  return {
    command: (mode) => replayCommand(s, mode),
    pickCheckpoint: () => pickCheckpoint(s),
    fork: (cell) => forkFromStep(s, cell),
  };
}

async function executeCells(
  s: State,
  c: vscode.NotebookController,
  mode: ReplayMode,
  cells: vscode.NotebookCell[],
  notebook: vscode.NotebookDocument,
): Promise<void> {
  const done = new Set<string>();
  for (const cell of cells) {
    // One replay per record, however many of its cells were run (keyed by the record's id and line).
    const found = recordOf(notebook, cell);
    const key = typeof found === 'string' ? `cell:${cell.index}` : `${found.record.id}\u0000${found.last}`;
    if (done.has(key)) continue;
    done.add(key);
    const exec = c.createNotebookCellExecution(cell);
    const ctl = new AbortController();
    exec.token.onCancellationRequested(() => ctl.abort());
    exec.start(Date.now());
    // The cell keeps its own outputs (the reward breakdown on a record's last step); progress goes below them.
    const keep = cell.outputs.filter((o) => !o.metadata?.coaReplayProgress);
    const show = (item: vscode.NotebookCellOutputItem) =>
      void exec.replaceOutput([...keep, new vscode.NotebookCellOutput([item], { coaReplayProgress: true })]);
    let ok = false;
    try {
      ok = await replayCell(s, notebook, cell, mode, ctl.signal, (msg) =>
        show(vscode.NotebookCellOutputItem.text(msg)),
      );
    } catch (e) {
      show(vscode.NotebookCellOutputItem.error(e as Error));
    }
    exec.end(ok, Date.now());
  }
}

/** Command: replay the record of the selected cell (asks for a checkpoint the first time). */
async function replayCommand(s: State, mode: ReplayMode): Promise<void> {
  const editor = vscode.window.activeNotebookEditor;
  if (!editor || !isTrajectoryNotebook(editor.notebook.notebookType))
    return void vscode.window.showInformationMessage(
      'Open a trajectory notebook and select a cell of the record to replay.',
    );
  const index = editor.selection?.start ?? 0;
  const cell = editor.notebook.cellAt(Math.min(index, editor.notebook.cellCount - 1));
  await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: mode === 'env' ? 'Replaying with checkpoint' : 'Replaying in a simulated environment',
      cancellable: true,
    },
    async (progress, token) => {
      const ctl = new AbortController();
      token.onCancellationRequested(() => ctl.abort());
      try {
        await replayCell(s, editor.notebook, cell, mode, ctl.signal, (message) => progress.report({ message }));
      } catch (e) {
        void vscode.window.showErrorMessage(`CoA Studio replay: ${(e as Error).message}`);
      }
    },
  );
}

async function replayCell(
  s: State,
  notebook: vscode.NotebookDocument,
  cell: vscode.NotebookCell,
  mode: ReplayMode,
  signal: AbortSignal,
  report: (msg: string) => void,
): Promise<boolean> {
  // Replay runs a model file and sends searches (with the configured token) to a configured server: both can come
  // from the workspace, so an untrusted one gets neither (coaStudio.envServer.* are restricted settings too).
  if (!(await requireTrust('Replay'))) return false;
  const found = recordOf(notebook, cell);
  if (typeof found === 'string') throw new Error(found);
  const chosen = await checkpointFor(s, sourceFile(notebook.uri));
  if (!chosen) return false;
  await exportIfNeeded(s, chosen, signal, report);
  const { checkpoint } = chosen;
  report(`loading ${checkpoint}`);
  const model = await loadModel(s, checkpoint);
  const settings = settingsFor(checkpoint, found.record, model);
  report(describeSettings(settings));
  s.log.info(`replay of ${found.record.id}: ${describeSettings(settings)}`);
  const tool = mode === 'env' ? await envTool(s, checkpoint, settings) : undefined;
  // The group of cells this replay owns: inserted after the record, tracked by position and count.
  const start = found.last + 1;
  let count = 0;
  const edit = async (range: vscode.NotebookRange, cells: CellData[]) => {
    const we = new vscode.WorkspaceEdit();
    we.set(notebook.uri, [vscode.NotebookEdit.replaceCells(range, toVscode({ cells, metadata: {} }).cells)]);
    await vscode.workspace.applyEdit(we);
  };
  const t0 = Date.now();
  const result = await runReplaySession({
    model,
    source: found.record,
    mode,
    tool,
    signal,
    ...sampling(),
    scheme: settings.scheme,
    params: settings.params,
    promptTemplate: settings.promptTemplate,
    maxTurns: settings.maxTurns,
    maxNewTokens: settings.maxNewTokens,
    maxObservationTokens: settings.maxObsTokens,
    maxTotal: settings.maxLen ?? undefined,
    sink: {
      append: async (cells) => {
        await edit(new vscode.NotebookRange(start + count, start + count), cells);
        count += cells.length;
        report(`${count - 1} steps, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      },
      replaceAll: async (cells) => {
        await edit(new vscode.NotebookRange(start, start + count), cells);
        count = cells.length;
      },
    },
  });
  const msg =
    result.status === 'cancelled'
      ? `replay cancelled after ${result.steps} steps`
      : `replayed in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${result.steps} steps, ${result.result!.toolCalls} tool calls${result.result!.truncated ? ' (truncated)' : ''}`;
  report(msg);
  s.log.info(`replay of ${found.record.id} (${mode}, ${checkpoint}): ${msg}`);
  return result.status === 'done';
}
