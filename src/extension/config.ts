// Typed reader for the `coaStudio.*` settings (one place in the extension that knows their names).
import * as vscode from 'vscode';
import type { DialectName } from '../core/dialects';
import type { Scheme } from '../core/record';
import { settingDefault, type SettingName } from '../core/settingDefaults';

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
  // Fallbacks from the manifest's table (src/core/settingDefaults.ts), as VS Code's own defaults are.
  const get = <K extends SettingName>(name: K) => c.get(name, settingDefault(name));
  return {
    dialect: get('dialect') as CoaConfig['dialect'],
    rewardScheme: get('rewardScheme') as Scheme,
    strictness: get('strictness') as CoaConfig['strictness'],
    tools: get('tools'),
    otcC: get('otc.c'),
    otcAlpha: get('otc.alpha'),
    envServerUrl: get('envServer.url'),
    envServerToken: get('envServer.token'),
    replayCheckpoint: get('replay.checkpoint'),
    replayTemperature: get('replay.temperature'),
    python: get('python'),
    notebookLargeFileMB: get('notebook.largeFileMB'),
    cancelGraceSeconds: get('training.cancelGraceSeconds'),
    openLivePanelOnStart: get('training.openLivePanel'),
    notebookMaxCells: get('notebook.maxCells'),
  };
}
