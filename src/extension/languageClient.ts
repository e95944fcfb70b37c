// Starts the trajectory language server (dist/server.js) over stdio with vscode-languageclient.
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from 'vscode-languageclient/node';

export interface LanguageServerHandle extends vscode.Disposable {
  restart(): Promise<void>;
}

/** Documents the server validates: raw trajectories, trajectory JSONL, and any JSONL file. */
export const DOCUMENT_SELECTOR = [
  // Not notebook cells (scheme vscode-notebook-cell): a step cell alone is not a trajectory; the notebook
  // diagnoses whole records itself (providers/notebook/diagnostics.ts).
  { language: 'coa', scheme: 'file' },
  { language: 'coa', scheme: 'untitled' },
  { language: 'coa-jsonl' },
  { language: 'jsonl' },
  { scheme: 'file', pattern: '**/*.jsonl' },
];

export async function startLanguageServer(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Promise<LanguageServerHandle> {
  const module = vscode.Uri.joinPath(context.extensionUri, 'dist', 'server.js').fsPath;
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.stdio },
    debug: { module, transport: TransportKind.stdio, options: { execArgv: ['--nolazy', '--inspect=6010'] } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    synchronize: { configurationSection: 'coaStudio' },
    outputChannel: log,
  };
  const client = new LanguageClient('coaStudio', 'CoA Studio Trajectories', serverOptions, clientOptions);
  await client.start();
  return {
    restart: () => client.restart(),
    dispose: () => void client.stop(),
  };
}
