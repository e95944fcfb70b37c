// The replay NotebookControllers ("CoA Replay: checkpoint + environment server", "CoA Replay: simulated
// environment") and the commands behind them. Running a cell of a record replays that record's question with
// the picked ONNX checkpoint, appending a cell per step as it is generated (session.ts); the kernel's stop button
// or the progress notification's Cancel aborts it. The engine itself (src/replay) knows nothing of VS Code.
import * as vscode from 'vscode';
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { parseRecordLine } from '../../../core/jsonl';
import type { TrajectoryRecord } from '../../../core/record';
import { EnvClient } from '../../../env/client';
import type { ReplayMode } from '../../../replay/agent';
import { OnnxModel } from '../../../replay/model';
import { describeSettings, replaySettings, settingsFrom, type ReplaySettings } from '../../../replay/runSettings';
import { RunConfigSchema } from '../../../core/config';
import { isDialectName } from '../../../core/dialects';
import { readConfig } from '../../config';
import { startEnvServer, type RunningEnvServer } from '../../process/envServer';
import { requireTrust } from '../../workspace';
import { recordViewSource } from '../notebook/recordView';
import { CancelledError } from '../../../replay/generate';
import { toVscode } from '../notebook/serializer';
import { rewardOptions } from '../notebook/serializer';
import { NOTEBOOK_TYPES, cellMeta, isTrajectoryNotebook } from '../notebook/cells';
import type { CellData } from '../notebook/codec';
import { runReplaySession } from './session';
import { forkFromStep } from './fork';
import type { Ctx } from '../../ctx';

const CHECKPOINT_KEY = 'coaStudio.replay.checkpoint';

/** What replay reaches of the rest of the extension: record views (a fork opens in one) and ONNX export. */
export type ReplaySeams = Pick<Ctx, 'records' | 'train'>;

export interface State {
  context: vscode.ExtensionContext;
  seams: ReplaySeams;
  log: vscode.LogOutputChannel;
  models: Map<string, { mtime: number; model: Promise<OnnxModel> }>;
  servers: Map<string, Promise<RunningEnvServer>>;
  controllers: Map<string, vscode.NotebookController>;
}

/** What the command table reaches of replay: the two replay commands, the checkpoint picker and the fork (fork.ts). */
export interface Replay {
  command(mode: ReplayMode): Promise<void>;
  pickCheckpoint(): Promise<string | undefined>;
  fork(cell?: unknown): Promise<void>;
}

export function registerReplay(context: vscode.ExtensionContext, log: vscode.LogOutputChannel, seams: ReplaySeams): Replay {
  const s: State = { context, seams, log, models: new Map(), servers: new Map(), controllers: new Map() };
  for (const type of NOTEBOOK_TYPES) {
    for (const mode of ['env', 'simulated'] as const) {
      const c = vscode.notebooks.createNotebookController(`coa-replay-${mode}-${type}`, type,
        mode === 'env' ? 'CoA Replay: checkpoint + environment server' : 'CoA Replay: simulated environment');
      c.description = mode === 'env' ? 'ONNX checkpoint, tools from the environment server (RL-2)' : 'ONNX checkpoint writes its own observations (RL-1)';
      c.supportedLanguages = ['coa', 'json', 'plaintext'];
      c.supportsExecutionOrder = false;
      c.executeHandler = (cells, notebook) => executeCells(s, c, mode, cells, notebook);
      s.controllers.set(`${mode}:${type}`, c);
      context.subscriptions.push(c);
    }
  }
  context.subscriptions.push({
    dispose: () => {
      for (const srv of s.servers.values()) void srv.then((x) => x.stop(), () => undefined);
      for (const m of s.models.values()) void m.model.then((x) => x.release(), () => undefined);
    },
  });
  return { command: (mode) => replayCommand(s, mode), pickCheckpoint: () => pickCheckpoint(s), fork: (cell) => forkFromStep(s, cell) };
}

async function executeCells(s: State, c: vscode.NotebookController, mode: ReplayMode, cells: vscode.NotebookCell[], notebook: vscode.NotebookDocument): Promise<void> {
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
    const show = (item: vscode.NotebookCellOutputItem) => void exec.replaceOutput([...keep, new vscode.NotebookCellOutput([item], { coaReplayProgress: true })]);
    let ok = false;
    try {
      ok = await replayCell(s, notebook, cell, mode, ctl.signal, (msg) => show(vscode.NotebookCellOutputItem.text(msg)));
    } catch (e) {
      show(vscode.NotebookCellOutputItem.error(e as Error));
    }
    exec.end(ok, Date.now());
  }
}

/** Command: replay the record of the selected cell (asks for a checkpoint the first time). */
async function replayCommand(s: State, mode: ReplayMode): Promise<void> {
  const editor = vscode.window.activeNotebookEditor;
  if (!editor || !isTrajectoryNotebook(editor.notebook.notebookType)) return void vscode.window.showInformationMessage('Open a trajectory notebook and select a cell of the record to replay.');
  const index = editor.selection?.start ?? 0;
  const cell = editor.notebook.cellAt(Math.min(index, editor.notebook.cellCount - 1));
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: mode === 'env' ? 'Replaying with checkpoint' : 'Replaying in a simulated environment', cancellable: true },
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

/** Command: choose the ONNX checkpoint replays use. */
export async function pickCheckpoint(s: State): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title: 'Exported checkpoint (python -m coa_trainer export-onnx … -o model.onnx)', canSelectMany: false, filters: { 'ONNX model': ['onnx'] },
  });
  if (!picked?.[0]) return undefined;
  await s.context.workspaceState.update(CHECKPOINT_KEY, picked[0].fsPath);
  return picked[0].fsPath;
}

/** Greedy by default; a sampled replay gets a fresh seed, kept in the record's meta so it can be repeated. */
export function sampling(): { temperature: number; seed: number } {
  const temperature = Math.max(0, Number(readConfig().replayTemperature) || 0);
  return { temperature, seed: temperature > 0 ? Math.floor(Math.random() * 2 ** 31) : 0 };
}

/** `coaStudio.replay.checkpoint`, resolved against the first workspace folder; undefined when unset. */
export function configuredCheckpoint(): string | undefined {
  const p = readConfig().replayCheckpoint.trim();
  if (!p) return undefined;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return isAbsolute(p) || !folder ? p : join(folder, p);
}

/** The file a notebook's record comes from: a record view's source, the notebook's own file, else none. */
export function sourceFile(uri: vscode.Uri): string | null {
  const view = recordViewSource(uri);
  if (view) return view.file.fsPath;
  return uri.scheme === 'file' ? uri.fsPath : null;
}

/**
 * The checkpoint a fork or a replay runs: `coaStudio.replay.checkpoint` when set; else the ONNX export of the stage
 * that wrote the record (runs/<id>/stages/<stage>/onnx/model.onnx), to be exported first (`exportFrom`,
 * exportIfNeeded) when only the stage's final/ model exists — a record of a stage's rollouts means that stage's model,
 * so nothing is asked (a fork's export used to be answered by a replay asking for a checkpoint); else the one last
 * picked, else a picker.
 */
export async function checkpointFor(s: State, file: string | null): Promise<{ checkpoint: string; exportFrom?: string } | undefined> {
  const configured = configuredCheckpoint();
  if (configured && existsSync(configured)) return { checkpoint: configured };
  const stageDir = file && basename(dirname(dirname(file))) === 'stages' ? dirname(file) : null;
  if (stageDir) {
    const onnx = join(stageDir, 'onnx', 'model.onnx');
    if (existsSync(onnx)) return { checkpoint: onnx };
    if (existsSync(join(stageDir, 'final', 'config.json'))) return { checkpoint: onnx, exportFrom: join(stageDir, 'final') };
  }
  const last = s.context.workspaceState.get<string>(CHECKPOINT_KEY);
  if (last && existsSync(last)) return { checkpoint: last };
  const picked = await pickCheckpoint(s);
  return picked ? { checkpoint: picked } : undefined;
}

/** Exports `chosen.exportFrom` to `chosen.checkpoint` when the stage has no ONNX export yet; cancelled → CancelledError. */
export async function exportIfNeeded(s: State, chosen: { checkpoint: string; exportFrom?: string }, signal: AbortSignal, report: (message: string) => void): Promise<void> {
  if (!chosen.exportFrom || existsSync(chosen.checkpoint)) return;
  report(`exporting ${vscode.workspace.asRelativePath(chosen.exportFrom)} to ONNX (once per stage)…`);
  const t0 = Date.now();
  if (!(await s.seams.train.exportToOnnx(chosen.exportFrom, signal))) throw new CancelledError();
  s.log.info(`exported ${chosen.exportFrom} to ${chosen.checkpoint} in ${Date.now() - t0} ms`);
}

export function recordOf(notebook: vscode.NotebookDocument, cell: vscode.NotebookCell): { record: TrajectoryRecord; last: number } | string {
  const meta = cellMeta(cell.metadata);
  if (!meta || meta.kind === 'error') return 'Select a cell of a valid record to replay.';
  let header: vscode.NotebookCell | undefined;
  for (let i = cell.index; i >= 0; i--) {
    const m = cellMeta(notebook.cellAt(i).metadata);
    if (m?.kind === 'header') {
      header = notebook.cellAt(i);
      break;
    }
  }
  const hm = header && cellMeta(header.metadata);
  if (!header || hm?.kind !== 'header') return 'No record header above this cell.';
  const parsed = parseRecordLine(hm.raw, hm.line);
  if (!parsed.record) return `line ${hm.line}: not a valid record`;
  let last = header.index;
  for (let i = header.index + 1; i < notebook.cellCount; i++) {
    const m = cellMeta(notebook.cellAt(i).metadata);
    if (m?.kind === 'header' || m?.kind === 'error') break;
    last = i;
  }
  return { record: parsed.record, last };
}

export async function loadModel(s: State, path: string): Promise<OnnxModel> {
  const mtime = statSync(path).mtimeMs;
  const cached = s.models.get(path);
  if (cached && cached.mtime === mtime) return cached.model;
  const model = OnnxModel.load(path, { threads: 1 });
  s.models.set(path, { mtime, model });
  model.catch(() => s.models.delete(path));
  return model;
}

/**
 * The env server's search tool: the configured server, else one started for the run's corpus, searching as many
 * documents as the run did (its top_k).
 */
export async function envTool(s: State, checkpoint: string, settings: ReplaySettings): Promise<(q: string) => Promise<string>> {
  const cfg = readConfig();
  const dialect = settings.dialect;
  let url = cfg.envServerUrl;
  let token = cfg.envServerToken;
  if (!url) {
    const runCorpus = settings.corpus && existsSync(settings.corpus) ? settings.corpus : undefined;
    const corpus = runCorpus ?? findCorpus(checkpoint) ?? (await vscode.window.showOpenDialog({ title: 'Search corpus for the environment server (FlashRAG JSONL)', filters: { JSONL: ['jsonl'] } }))?.[0]?.fsPath;
    if (!corpus) throw new Error('no environment server: set coaStudio.envServer.url or pick a corpus');
    let server = s.servers.get(corpus);
    if (!server) {
      server = startEnvServer({
        node: process.execPath, cli: join(s.context.extensionPath, 'dist', 'cli.js'), corpus, dialect, log: s.log,
        env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      });
      s.servers.set(corpus, server);
      server.catch(() => s.servers.delete(corpus));
    }
    ({ url, token } = await server);
  }
  const client = new EnvClient({ url, token, retries: 2 });
  return async (q) => (await client.search({ queries: [q], top_k: settings.topK, dialect })).observations[0];
}

/** runs/<id>/data/corpus.jsonl above an exported checkpoint, when there is one. */
function findCorpus(checkpoint: string): string | undefined {
  for (let d = dirname(checkpoint), i = 0; i < 6; d = dirname(d), i++) {
    const f = join(d, 'data', 'corpus.jsonl');
    if (existsSync(f)) return f;
    if (dirname(d) === d) break;
  }
  return undefined;
}

/**
 * The run's own settings (src/replay/runSettings.ts); for a checkpoint outside any run directory, the run config
 * defaults with the editor's reward scheme, said as such.
 */
export function settingsFor(checkpoint: string, record: TrajectoryRecord, model: OnnxModel): ReplaySettings {
  const own = replaySettings(checkpoint, record);
  if (own) return own;
  const { scheme, params } = rewardOptions();
  const defaults = settingsFrom(RunConfigSchema.parse({}), null, 'the run config defaults (the checkpoint is in no run directory) and the editor\'s reward scheme', null);
  const dialect = isDialectName(model.info.dialect) ? model.info.dialect : defaults.dialect;
  return { ...defaults, dialect, promptTemplate: model.info.prompt_template ?? defaults.promptTemplate, scheme, params };
}

async function replayCell(s: State, notebook: vscode.NotebookDocument, cell: vscode.NotebookCell, mode: ReplayMode, signal: AbortSignal, report: (msg: string) => void): Promise<boolean> {
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
    model, source: found.record, mode, tool, signal, ...sampling(),
    scheme: settings.scheme, params: settings.params, promptTemplate: settings.promptTemplate, maxTurns: settings.maxTurns,
    maxNewTokens: settings.maxNewTokens, maxObservationTokens: settings.maxObsTokens, maxTotal: settings.maxLen ?? undefined,
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
  const msg = result.status === 'cancelled'
    ? `replay cancelled after ${result.steps} steps`
    : `replayed in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${result.steps} steps, ${result.result!.toolCalls} tool calls${result.result!.truncated ? ' (truncated)' : ''}`;
  report(msg);
  s.log.info(`replay of ${found.record.id} (${mode}, ${checkpoint}): ${msg}`);
  return result.status === 'done';
}
