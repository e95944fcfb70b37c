// Extension entry point: wires the language server, the command table and the log channel.
import * as vscode from 'vscode';
import { z } from 'zod';
import { registerCommands } from './commands';
import { startLanguageServer } from './languageClient';
import { registerTrajectoryNotebook } from './providers/notebook/register';
import { registerLivePanel } from './providers/livePanel/register';
import { registerReplay } from './providers/replay/controller';
import { registerTokenOverlays } from './providers/tokens/overlays';
import { registerTrain } from './providers/train';
import { registerRuns } from './providers/runs';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // zod's JIT probes `navigator` on its first parse, which the extension host reports as an error; the host only
  // parses events and records at human rates, so the interpreted path costs nothing that matters.
  z.config({ jitless: true });
  const log = vscode.window.createOutputChannel('CoA Studio', { log: true });
  context.subscriptions.push(log);
  const languageServer = await startLanguageServer(context, log);
  context.subscriptions.push(languageServer, ...registerCommands({ extension: context, languageServer, log }));
  registerTrajectoryNotebook(context); // issue 8: trajectory notebook + large-file browser
  registerLivePanel(context, log); // issue 7: live training panel (restored after reloads)
  registerReplay(context, log); // issue 8: replay NotebookControllers (ONNX checkpoint, onnxruntime-node)
  registerTokenOverlays(context); // issue 8: loss-mask / log-prob / advantage overlays
  registerTrain(context, log); // issue 7: Train Stage / Resume / Cancel, process manager, status bar
  registerRuns(context); // issue 7: the Runs view (activity bar "CoA Studio")
  // Commands' enablement keys: true once the extension is up.
  await vscode.commands.executeCommand('setContext', 'coaStudio.active', true);
  log.info(`CoA Studio activated (workspace ${vscode.workspace.isTrusted ? 'trusted' : 'untrusted: read-only features only'})`);
}

export function deactivate(): void {}
