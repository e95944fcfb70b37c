// Typed reader for the `coaStudio.*` settings (one place that knows their names and defaults).
import * as vscode from 'vscode';
import type { DialectName } from '../core/dialects';
import type { Scheme } from '../core/record';
import { DEFAULT_MAX_CELLS } from './providers/notebook/threshold';

export interface CoaConfig {
  dialect: DialectName | 'auto';
  rewardScheme: Scheme;
  strictness: 'lenient' | 'strict';
  tools: string[];
  otcC: number;
  otcAlpha: number;
  envServerUrl: string;
  envServerToken: string;
  /** Replay's exported checkpoint (model.onnx), relative to the first workspace folder; '' = ask. */
  replayCheckpoint: string;
  /** Replay sampling temperature (0 = greedy). */
  replayTemperature: number;
  /** Trainer interpreter override; see python.ts for the search order. */
  python: string;
  /** Trajectory files above this size (MB) open in the paged browser instead of the notebook. */
  notebookLargeFileMB: number;
  /** Trajectory files that would make more notebook cells than this open in the paged browser. */
  notebookMaxCells: number;
  /** Seconds between SIGTERM (the trainer saves a checkpoint) and SIGKILL when a run is cancelled. */
  cancelGraceSeconds: number;
  /** Open the live panel when a run starts. */
  openLivePanelOnStart: boolean;
}

export function readConfig(scope?: vscode.ConfigurationScope): CoaConfig {
  const c = vscode.workspace.getConfiguration('coaStudio', scope);
  return {
    dialect: c.get('dialect', 'auto'),
    rewardScheme: c.get('rewardScheme', 'em'),
    strictness: c.get('strictness', 'lenient'),
    tools: c.get('tools', ['search']),
    otcC: c.get('otc.c', 4),
    otcAlpha: c.get('otc.alpha', 1),
    envServerUrl: c.get('envServer.url', ''),
    envServerToken: c.get('envServer.token', ''),
    replayCheckpoint: c.get('replay.checkpoint', ''),
    replayTemperature: c.get('replay.temperature', 0),
    python: c.get('python', ''),
    notebookLargeFileMB: c.get('notebook.largeFileMB', 50),
    notebookMaxCells: c.get('notebook.maxCells', DEFAULT_MAX_CELLS),
    cancelGraceSeconds: c.get('training.cancelGraceSeconds', 30),
    openLivePanelOnStart: c.get('training.openLivePanel', true),
  };
}
