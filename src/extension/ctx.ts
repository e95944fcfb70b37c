// The extension's context object, in the shape of rust-analyzer's editors/code `Ctx` (src/ctx.ts there): built once
// in `activate`, it owns every long-lived part — the log, the language server, each feature's state — and it is what
// command handlers receive, so who owns what is visible here rather than in module-level variables. Features call
// each other through these typed members (`ctx.livePanels.open(runDir)`, `ctx.records.show(loc)`), handed to them
// by main.ts; each feature declares the members it uses (`TrainSeams`, `ReplaySeams`, `LivePanelHost`) with the
// other features' own types, never this one: the context sits on the floor above the features (an import of it
// from a feature is a cycle, test/unit/architecture/layers.test.ts). `coaStudio.*` commands are the user's
// (palette, menus, status bar).
import type * as vscode from 'vscode';
import type { LanguageServerHandle } from './languageClient';
import type { LivePanels } from './providers/livePanel/register';
import type { RecordViews } from './providers/notebook/recordView';
import type { Replay } from './providers/replay/controller';
import type { RunsProvider } from './providers/runs';
import type { TokenOverlays } from './providers/tokens/overlays';
import type { TokenAudits } from './providers/tokens/audit';
import type { TrainController } from './providers/train';

export interface Ctx {
  extension: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  languageServer: LanguageServerHandle;
  /** Open live training panels (restored after reloads). */
  livePanels: LivePanels;
  /** Replay NotebookControllers (ONNX checkpoint, onnxruntime-node). */
  replay: Replay;
  /** Loss-mask / log-prob / advantage overlays. */
  tokens: TokenOverlays;
  /** Token audits: stored ids against their text re-tokenized (COA106 diagnostics on step cells). */
  audits: TokenAudits;
  /** Train Stage / Resume / Cancel, the process manager, the status bar. */
  train: TrainController;
  /** The Runs view (activity bar "CoA Studio"). */
  runs: RunsProvider;
  /** Record views: one record of a file of any size as a notebook (coa-record: documents). */
  records: RecordViews;
}
