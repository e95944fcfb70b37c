// Extension entry point: builds the context object (ctx.ts) — log, language server, each feature — and registers
// the command table with it.
import * as vscode from 'vscode';
import { z } from 'zod';
import { registerCommands } from './commands';
import type { Ctx } from './ctx';
import { startLanguageServer } from './languageClient';
import { registerTrajectoryNotebook } from './providers/notebook/register';
import { registerLivePanel } from './providers/livePanel/register';
import { registerReplay } from './providers/replay/controller';
import { registerTokenOverlays } from './providers/tokens/overlays';
import { registerTokenAudits } from './providers/tokens/audit';
import { registerTrain } from './providers/train';
import { registerRuns } from './providers/runs';
import { registerConvertOffers } from './providers/convert';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // zod's JIT probes `navigator` on its first parse, which the extension host reports as an error; the host only
  // parses events and records at human rates, so the interpreted path costs nothing that matters.
  z.config({ jitless: true });
  const log = vscode.window.createOutputChannel('CoA Studio', { log: true });
  context.subscriptions.push(log);
  const languageServer = await startLanguageServer(context, log);
  context.subscriptions.push(languageServer);
  // Built in dependency order: a feature is handed the parts of the context it calls (typed methods, not commands).
  const records = registerTrajectoryNotebook(context, log); // trajectory notebook + large-file browser + record views
  const livePanels = registerLivePanel(context, log, records); // live training panel (restored after reloads)
  const train = registerTrain(context, log, { livePanels }); // Train Stage / Resume / Cancel, process manager, status bar
  const ctx: Ctx = {
    extension: context,
    log,
    languageServer,
    livePanels,
    replay: registerReplay(context, log, { records, train }), // replay NotebookControllers (ONNX checkpoint, onnxruntime-node)
    tokens: registerTokenOverlays(context), // loss-mask / log-prob / advantage overlays
    audits: registerTokenAudits(context), // Audit Tokens: stored ids vs their text re-tokenized with the run's tokenizer
    train,
    runs: registerRuns(context, train), // the Runs view (activity bar "CoA Studio")
    records,
  };
  context.subscriptions.push(...registerCommands(ctx));
  registerConvertOffers(context, log); // a parquet, dump, transcript or chat file opened → offer the conversion
  // Commands' enablement keys: true once the extension is up.
  await vscode.commands.executeCommand('setContext', 'coaStudio.active', true);
  log.info(
    `CoA Studio activated (workspace ${vscode.workspace.isTrusted ? 'trusted' : 'untrusted: read-only features only'})`,
  );
}

export function deactivate(): void {}
