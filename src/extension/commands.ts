// The command table: every command the extension contributes, with its handler. package.json's
// `contributes.commands` lists the same ids (a unit test keeps them in step).
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { openAsTrajectoryNotebook, openTrajectoryBrowser, showNotebookView } from './providers/notebook/register';
import { openRecordCommand } from './providers/notebook/recordView';
import { runSourceArg } from './providers/livePanel/register';
import { chooseOverlays } from './providers/tokens/legend';
import { compareRunsCommand } from './providers/compare/panel';
import { openGroupCommand } from './providers/groups/panel';
import { showSearchBoundary } from './providers/boundary/panel';
import { convertToTrajectories } from './providers/convert';
import { CollectRequestSchema, TrainRequestSchema } from './providers/train/requests';
import { commandArgument } from './commandArgs';
import type { z } from 'zod';
import {
  cancelFromNode,
  deleteRun,
  exportOnnxFromNode,
  openRollouts,
  openRunPanel,
  resumeFromNode,
  revealRun,
} from './providers/runs';

/** Handlers get the context object (ctx.ts) and the command's arguments. */
export type CommandContext = Ctx;

export const COMMANDS = {
  'coaStudio.restartLanguageServer': async (ctx: Ctx) => {
    await ctx.languageServer.restart();
    ctx.log.info('language server restarted');
  },
  'coaStudio.showFormatRules': async (ctx: Ctx) => {
    const uri = vscode.Uri.joinPath(ctx.extension.extensionUri, 'docs', 'format-rules.md');
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  },
  'coaStudio.showLog': async (ctx: Ctx) => ctx.log.show(),
  'coaStudio.openAsTrajectoryNotebook': async () => openAsTrajectoryNotebook(),
  'coaStudio.openTrajectoryBrowser': async () => openTrajectoryBrowser(),
  // Parquet, verl dumps, Search-R1 transcripts, OpenAI chats → *.coa.jsonl (the core's conversion, as coa convert).
  'coaStudio.convertToTrajectories': async (ctx: Ctx, uri?: unknown) => convertToTrajectories(ctx.log, uri),
  // One record of a file of any size in its record view ({ file, line, offset?, length? }; beside the caller).
  'coaStudio.openRecord': async (ctx: Ctx, where?: unknown, options?: unknown) =>
    openRecordCommand(ctx.records, where, options),
  'coaStudio.notebook.showFailures': async () => showNotebookView({ kind: 'failures' }),
  'coaStudio.notebook.showToolCalls': async () => showNotebookView('ask-tool-calls'),
  'coaStudio.notebook.sortByReward': async () => showNotebookView({ kind: 'sort', by: 'reward', order: 'desc' }),
  'coaStudio.notebook.filterByRewardAndMode': async () => showNotebookView('ask-filter'),
  'coaStudio.replayWithCheckpoint': async (ctx: Ctx) => ctx.replay.command('env'),
  'coaStudio.replayInSimulatedEnvironment': async (ctx: Ctx) => ctx.replay.command('simulated'),
  'coaStudio.pickReplayCheckpoint': async (ctx: Ctx) => void (await ctx.replay.pickCheckpoint()),
  // Fork from a step: a step (edited or not) given, the rest regenerated with the checkpoint; original and fork side by side.
  'coaStudio.forkFromStep': async (ctx: Ctx, cell?: unknown) => ctx.replay.fork(cell),
  'coaStudio.tokens.toggleLossMask': async (ctx: Ctx) => void ctx.tokens.toggle('mask'),
  'coaStudio.tokens.toggleLogprobs': async (ctx: Ctx) => void ctx.tokens.toggle('logprob'),
  'coaStudio.tokens.toggleAdvantages': async (ctx: Ctx) => void ctx.tokens.toggle('advantage'),
  'coaStudio.tokens.chooseOverlays': async (ctx: Ctx) => chooseOverlays(ctx.tokens),
  // A record view's GRPO group (its step's G samples side by side), or { file, step, group? }.
  'coaStudio.openGroup': async (ctx: Ctx, arg?: unknown) =>
    openGroupCommand({ extensionUri: ctx.extension.extensionUri, records: ctx.records }, arg),
  // Token ids of the notebook's records against their text re-tokenized with the run's tokenizer (COA106).
  'coaStudio.auditTokens': async (ctx: Ctx) => void (await ctx.audits.auditActive()),
  'coaStudio.compareRuns': async (ctx: Ctx, a?: unknown, b?: unknown) =>
    compareRunsCommand(ctx, a instanceof vscode.Uri ? a : undefined, b instanceof vscode.Uri ? b : undefined),
  // A search boundary report (python -m coa_trainer boundary): given, the active file's, or picked in the workspace.
  'coaStudio.showSearchBoundary': async (ctx: Ctx, report?: unknown) =>
    showSearchBoundary(ctx.extension, ctx.log, report),
  'coaStudio.openLivePanel': async (ctx: Ctx, runDir?: unknown) => ctx.livePanels.open(runSourceArg(runDir)),
  'coaStudio.addRunToLivePanel': async (ctx: Ctx, runDir?: unknown) => ctx.livePanels.addRun(runSourceArg(runDir)),
  // Runs CoA Studio did not start (verl metrics files, TRL runs written by our callback).
  'coaStudio.watchRun': async (ctx: Ctx, source?: unknown) => ctx.livePanels.watch(runSourceArg(source)),
  // Training (trusted workspaces only; the handlers check again at run time) and the Runs view.
  'coaStudio.trainStage': async (ctx: Ctx, request?: unknown) =>
    withArgument('Train Stage', TrainRequestSchema, request, (r) => ctx.train.trainStage(r)),
  'coaStudio.resumeRun': async (ctx: Ctx, node?: unknown) => resumeFromNode(ctx.train, node),
  'coaStudio.cancelRun': async (ctx: Ctx, node?: unknown) => cancelFromNode(ctx.train, node),
  'coaStudio.runDemo': async (ctx: Ctx) => ctx.train.runDemo(),
  'coaStudio.collectTrajectories': async (ctx: Ctx, request?: unknown) =>
    withArgument('Collect Trajectories', CollectRequestSchema, request, (r) => ctx.train.collectTrajectories(r)),
  'coaStudio.runs.refresh': async (ctx: Ctx) => ctx.runs.refresh(),
  'coaStudio.runs.openPanel': async (ctx: Ctx, node?: unknown) => openRunPanel(ctx.livePanels, node),
  'coaStudio.runs.openRollouts': async (_ctx: Ctx, node?: unknown) => openRollouts(node),
  'coaStudio.runs.exportOnnx': async (ctx: Ctx, node?: unknown) => exportOnnxFromNode(ctx.train, node),
  'coaStudio.runs.reveal': async (_ctx: Ctx, node?: unknown) => revealRun(node),
  'coaStudio.runs.delete': async (ctx: Ctx, node?: unknown) => deleteRun(ctx.train, ctx.runs, node),
} satisfies Record<string, (ctx: Ctx) => Promise<void>>;

export type CommandId = keyof typeof COMMANDS;

/** Runs `command` with its argument checked by `schema` (none: the command asks); a wrong one is said, not run. */
async function withArgument<T>(
  command: string,
  schema: z.ZodType<T>,
  arg: unknown,
  run: (value: T | undefined) => Promise<void>,
): Promise<void> {
  const checked = commandArgument(schema, arg);
  if ('problem' in checked)
    return void vscode.window.showErrorMessage(
      `CoA: ${command} was given an argument it cannot use (${checked.problem}); nothing was started.`,
    );
  await run(checked.value);
}

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  return (Object.keys(COMMANDS) as CommandId[]).map((id) =>
    vscode.commands.registerCommand(id, (...args: unknown[]) =>
      (COMMANDS[id] as (ctx: Ctx, ...rest: unknown[]) => Promise<void>)(ctx, ...args),
    ),
  );
}
