// What a replay and a fork share (controller.ts runs replays, fork.ts forks): the replay state (models loaded,
// environment servers started), the checkpoint a record's replay runs, the record a cell belongs to, the run's
// settings and its search tool.
import * as vscode from 'vscode';
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { parseRecordLine } from '../../../core/jsonl';
import type { TrajectoryRecord } from '../../../core/record';
import { EnvClient } from '../../../env/client';
import { OnnxModel } from '../../../replay/model';
import { replaySettings, settingsFrom, type ReplaySettings } from '../../../replay/runSettings';
import { RunConfigSchema } from '../../../core/config';
import { isDialectName } from '../../../core/dialects';
import { readConfig } from '../../config';
import { startEnvServer, type RunningEnvServer } from '../../process/envServer';
import { recordViewSource, type RecordViews } from '../notebook/recordView';
import { CancelledError } from '../../../replay/generate';
import { rewardOptions } from '../notebook/serializer';
import { cellMeta } from '../notebook/cells';
import type { TrainController } from '../train';

const CHECKPOINT_KEY = 'coaStudio.replay.checkpoint';

/** What replay reaches of the rest of the extension: record views (a fork opens in one) and ONNX export. */
export interface ReplaySeams {
  records: Pick<RecordViews, 'show'>;
  train: Pick<TrainController, 'exportToOnnx'>;
}

export interface State {
  context: vscode.ExtensionContext;
  seams: ReplaySeams;
  log: vscode.LogOutputChannel;
  models: Map<string, { mtime: number; model: Promise<OnnxModel> }>;
  servers: Map<string, Promise<RunningEnvServer>>;
  controllers: Map<string, vscode.NotebookController>;
}

/** Command: choose the ONNX checkpoint replays use. */
export async function pickCheckpoint(s: State): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title: 'Exported checkpoint (python -m coa_trainer export-onnx … -o model.onnx)',
    canSelectMany: false,
    filters: { 'ONNX model': ['onnx'] },
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
export async function checkpointFor(
  s: State,
  file: string | null,
): Promise<{ checkpoint: string; exportFrom?: string } | undefined> {
  const configured = configuredCheckpoint();
  if (configured && existsSync(configured)) return { checkpoint: configured };
  const stageDir = file && basename(dirname(dirname(file))) === 'stages' ? dirname(file) : null;
  if (stageDir) {
    const onnx = join(stageDir, 'onnx', 'model.onnx');
    if (existsSync(onnx)) return { checkpoint: onnx };
    if (existsSync(join(stageDir, 'final', 'config.json')))
      return { checkpoint: onnx, exportFrom: join(stageDir, 'final') };
  }
  const last = s.context.workspaceState.get<string>(CHECKPOINT_KEY);
  if (last && existsSync(last)) return { checkpoint: last };
  const picked = await pickCheckpoint(s);
  return picked ? { checkpoint: picked } : undefined;
}

/** Exports `chosen.exportFrom` to `chosen.checkpoint` when the stage has no ONNX export yet; cancelled → CancelledError. */
export async function exportIfNeeded(
  s: State,
  chosen: { checkpoint: string; exportFrom?: string },
  signal: AbortSignal,
  report: (message: string) => void,
): Promise<void> {
  if (!chosen.exportFrom || existsSync(chosen.checkpoint)) return;
  report(`exporting ${vscode.workspace.asRelativePath(chosen.exportFrom)} to ONNX (once per stage)…`);
  const t0 = Date.now();
  if (!(await s.seams.train.exportToOnnx(chosen.exportFrom, signal))) throw new CancelledError();
  s.log.info(`exported ${chosen.exportFrom} to ${chosen.checkpoint} in ${Date.now() - t0} ms`);
}

export function recordOf(
  notebook: vscode.NotebookDocument,
  cell: vscode.NotebookCell,
): { record: TrajectoryRecord; last: number } | string {
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
export async function envTool(
  s: State,
  checkpoint: string,
  settings: ReplaySettings,
): Promise<(q: string) => Promise<string>> {
  const cfg = readConfig();
  const dialect = settings.dialect;
  let url = cfg.envServerUrl;
  let token = cfg.envServerToken;
  if (!url) {
    const runCorpus = settings.corpus && existsSync(settings.corpus) ? settings.corpus : undefined;
    const corpus =
      runCorpus ??
      findCorpus(checkpoint) ??
      (
        await vscode.window.showOpenDialog({
          title: 'Search corpus for the environment server (FlashRAG JSONL)',
          filters: { JSONL: ['jsonl'] },
        })
      )?.[0]?.fsPath;
    if (!corpus) throw new Error('no environment server: set coaStudio.envServer.url or pick a corpus');
    let server = s.servers.get(corpus);
    if (!server) {
      server = startEnvServer({
        node: process.execPath,
        cli: join(s.context.extensionPath, 'dist', 'cli.js'),
        corpus,
        dialect,
        log: s.log,
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
  const defaults = settingsFrom(
    RunConfigSchema.parse({}),
    null,
    "the run config defaults (the checkpoint is in no run directory) and the editor's reward scheme",
    null,
  );
  const dialect = isDialectName(model.info.dialect) ? model.info.dialect : defaults.dialect;
  return {
    ...defaults,
    dialect,
    promptTemplate: model.info.prompt_template ?? defaults.promptTemplate,
    scheme,
    params,
  };
}
