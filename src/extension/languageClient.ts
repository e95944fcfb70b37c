// Starts the trajectory language server (dist/server.js) over stdio with vscode-languageclient.
import * as vscode from 'vscode';
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
  type DynamicFeature,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { OpenFileDiagnostics } from './openFileDiagnostics';

export interface LanguageServerHandle extends vscode.Disposable {
  restart(): Promise<void>;
}

/**
 * Documents the server validates: raw trajectories, trajectory JSONL, and any JSONL file — on disk or untitled
 * only. Never notebook cells (scheme vscode-notebook-cell): a step cell alone is not a trajectory, and the notebook
 * diagnoses whole records itself (providers/notebook/diagnostics.ts).
 */
export const DOCUMENT_SELECTOR = [
  { language: 'coa', scheme: 'file' },
  { language: 'coa', scheme: 'untitled' },
  { language: 'coa-jsonl', scheme: 'file' },
  { language: 'coa-jsonl', scheme: 'untitled' },
  { language: 'jsonl', scheme: 'file' },
  { language: 'jsonl', scheme: 'untitled' },
  { scheme: 'file', pattern: '**/*.jsonl' },
];

/** vscode-languageclient's notebook sync feature (NotebookDocumentSyncRegistrationType.method). */
const NOTEBOOK_SYNC = 'notebookDocument/sync';

type Feature = StaticFeature | DynamicFeature<unknown>;
interface NotebookSyncInternals {
  registrations: Map<string, unknown>;
  findNotebookDocumentAndCell(
    doc: vscode.TextDocument,
  ): [vscode.NotebookDocument | undefined, vscode.NotebookCell | undefined];
}

/**
 * The client without the quadratic notebook walk. vscode-languageclient 11's NotebookDocumentSyncFeature listens to
 * every text document open/change/close and, for a notebook cell, looks the cell up by walking every cell of every
 * open notebook (vscode-languageclient lib/common/notebook.js, `findNotebookDocumentAndCell`) — before checking
 * whether the server asked for notebook sync at all. Opening a 5,872-cell notebook thus cost ~17 M cell visits
 * (profiled: 31 % of the extension host). Our server never registers notebook sync, so with no
 * registration the lookup's result is unused: answer "not found" at once. Should a server ever register it, the
 * library's own lookup runs unchanged.
 */
export class TrajectoryLanguageClient extends LanguageClient {
  override registerFeature(feature: Feature): void {
    const dynamic = feature as Partial<DynamicFeature<unknown>>;
    if (dynamic.registrationType?.method === NOTEBOOK_SYNC) {
      const sync = feature as unknown as NotebookSyncInternals;
      const lookup = sync.findNotebookDocumentAndCell;
      sync.findNotebookDocumentAndCell = (doc) =>
        sync.registrations.size === 0 ? [undefined, undefined] : lookup.call(sync, doc);
    }
    super.registerFeature(feature);
  }
}

export async function startLanguageServer(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
): Promise<LanguageServerHandle> {
  const module = vscode.Uri.joinPath(context.extensionUri, 'dist', 'server.js').fsPath;
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.stdio },
    debug: { module, transport: TransportKind.stdio, options: { execArgv: ['--nolazy', '--inspect=6010'] } },
  };
  const openFiles = new OpenFileDiagnostics();
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    synchronize: { configurationSection: 'coaStudio' },
    outputChannel: log,
    middleware: openFiles.middleware,
  };
  const client = new TrajectoryLanguageClient('coaStudio', 'CoA Studio Trajectories', serverOptions, clientOptions);
  await client.start();
  openFiles.collection = client.diagnostics;
  return {
    restart: async () => {
      await client.restart();
      openFiles.collection = client.diagnostics;
    },
    dispose: () => {
      openFiles.dispose();
      void client.stop();
    },
  };
}
