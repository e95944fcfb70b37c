// Extension entry point: wires the language server, the command table and the log channel.
import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { startLanguageServer } from './languageClient';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('CoA Studio', { log: true });
  context.subscriptions.push(log);
  const languageServer = await startLanguageServer(context, log);
  context.subscriptions.push(languageServer, ...registerCommands({ extension: context, languageServer, log }));
  // Commands' enablement keys: true once the extension is up.
  await vscode.commands.executeCommand('setContext', 'coaStudio.active', true);
  log.info(`CoA Studio activated (workspace ${vscode.workspace.isTrusted ? 'trusted' : 'untrusted: read-only features only'})`);
}

export function deactivate(): void {}
