// The command table: every command the extension contributes, with its handler. package.json's
// `contributes.commands` lists the same ids (a unit test keeps them in step).
import * as vscode from 'vscode';
import type { LanguageServerHandle } from './languageClient';
import { openAsTrajectoryNotebook, openTrajectoryBrowser, showNotebookView } from './providers/notebook/register';
import { addRunToLivePanel, openLivePanel } from './providers/livePanel/register';
import { pickCheckpoint, replayCommand } from './providers/replay/controller';
import { toggleTokenView } from './providers/tokens/overlays';
import { compareRunsCommand } from './providers/compare/panel';
import { trainController, type CollectRequest, type TrainRequest } from './providers/train';
import { cancelFromNode, deleteRun, exportOnnxFromNode, openRollouts, openRunPanel, refreshRuns, resumeFromNode, revealRun } from './providers/runs';

export interface CommandContext {
  extension: vscode.ExtensionContext;
  languageServer: LanguageServerHandle;
  log: vscode.LogOutputChannel;
}

export const COMMANDS = {
  'coaStudio.restartLanguageServer': async (ctx: CommandContext) => {
    await ctx.languageServer.restart();
    ctx.log.info('language server restarted');
  },
  'coaStudio.showFormatRules': async (ctx: CommandContext) => {
    const uri = vscode.Uri.joinPath(ctx.extension.extensionUri, 'docs', 'format-rules.md');
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  },
  'coaStudio.showLog': async (ctx: CommandContext) => ctx.log.show(),
  'coaStudio.openAsTrajectoryNotebook': async () => openAsTrajectoryNotebook(),
  'coaStudio.openTrajectoryBrowser': async () => openTrajectoryBrowser(),
  'coaStudio.notebook.showFailures': async () => showNotebookView({ kind: 'failures' }),
  'coaStudio.notebook.showToolCalls': async () => showNotebookView('ask-tool-calls'),
  'coaStudio.notebook.sortByReward': async () => showNotebookView({ kind: 'sort', by: 'reward', order: 'desc' }),
  'coaStudio.notebook.filterByRewardAndMode': async () => showNotebookView('ask-filter'),
  'coaStudio.replayWithCheckpoint': async () => replayCommand('env'),
  'coaStudio.replayInSimulatedEnvironment': async () => replayCommand('simulated'),
  'coaStudio.pickReplayCheckpoint': async () => void (await pickCheckpoint()),
  'coaStudio.tokens.toggleLossMask': async () => toggleTokenView('mask'),
  'coaStudio.tokens.toggleLogprobs': async () => toggleTokenView('logprob'),
  'coaStudio.tokens.toggleAdvantages': async () => toggleTokenView('advantage'),
  'coaStudio.compareRuns': async (ctx: CommandContext) => compareRunsCommand(ctx.extension),
  'coaStudio.openLivePanel': async (_ctx: CommandContext, runDir?: unknown) => openLivePanel(runDir),
  'coaStudio.addRunToLivePanel': async (_ctx: CommandContext, runDir?: unknown) => addRunToLivePanel(runDir),
  // Issue 7 host: training (trusted workspaces only; the handlers check again at run time) and the Runs view.
  'coaStudio.trainStage': async (_ctx: CommandContext, request?: unknown) => trainController().trainStage(request as TrainRequest | undefined),
  'coaStudio.resumeRun': async (_ctx: CommandContext, node?: unknown) => resumeFromNode(node),
  'coaStudio.cancelRun': async (_ctx: CommandContext, node?: unknown) => cancelFromNode(node),
  'coaStudio.runDemo': async () => trainController().runDemo(),
  'coaStudio.collectTrajectories': async (_ctx: CommandContext, request?: unknown) => trainController().collectTrajectories(request as CollectRequest | undefined),
  'coaStudio.runs.refresh': async () => refreshRuns(),
  'coaStudio.runs.openPanel': async (_ctx: CommandContext, node?: unknown) => openRunPanel(node),
  'coaStudio.runs.openRollouts': async (_ctx: CommandContext, node?: unknown) => openRollouts(node),
  'coaStudio.runs.exportOnnx': async (_ctx: CommandContext, node?: unknown) => exportOnnxFromNode(node),
  'coaStudio.runs.reveal': async (_ctx: CommandContext, node?: unknown) => revealRun(node),
  'coaStudio.runs.delete': async (_ctx: CommandContext, node?: unknown) => deleteRun(node),
} satisfies Record<string, (ctx: CommandContext) => Promise<void>>;

export type CommandId = keyof typeof COMMANDS;

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  return (Object.keys(COMMANDS) as CommandId[]).map((id) => vscode.commands.registerCommand(id, (...args: unknown[]) => (COMMANDS[id] as (ctx: CommandContext, ...rest: unknown[]) => Promise<void>)(ctx, ...args)));
}
