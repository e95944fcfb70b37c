// The command table: every command the extension contributes, with its handler. package.json's
// `contributes.commands` lists the same ids (a unit test keeps them in step).
import * as vscode from 'vscode';
import type { LanguageServerHandle } from './languageClient';

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
} satisfies Record<string, (ctx: CommandContext) => Promise<void>>;

export type CommandId = keyof typeof COMMANDS;

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  return (Object.keys(COMMANDS) as CommandId[]).map((id) => vscode.commands.registerCommand(id, () => COMMANDS[id](ctx)));
}
