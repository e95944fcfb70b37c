// Wires TrajectoryService to an LSP connection: incremental sync, settings pulled with workspace/configuration,
// diagnostics pushed per document as publishSchedule.ts says (its latest version). Nothing here runs user code, so
// untrusted workspaces are fine.
import {
  Connection,
  DidChangeConfigurationNotification,
  InitializeResult,
  TextDocumentSyncKind,
} from 'vscode-languageserver';
import { TOKEN_TYPES, TrajectoryService } from './service';
import { parseSettings } from './settings';
import { PublishSchedule } from './publishSchedule';

export const SETTINGS_SECTION = 'coaStudio';

export function wire(connection: Connection, service = new TrajectoryService()): TrajectoryService {
  let pullConfig = false;
  let dynamicConfig = false;
  // Per document: at once after a quiet moment, else once a burst of changes pauses (publishSchedule.ts).
  const schedule = new PublishSchedule((uri) => publish(uri));
  const publish = (uri: string) => {
    if (!service.has(uri)) return;
    try {
      // The version lets the client drop diagnostics of a text it no longer shows.
      void connection.sendDiagnostics({ uri, version: service.version(uri), diagnostics: service.diagnose(uri) });
    } catch (e) {
      connection.console.error(`coa: diagnostics for ${uri} failed: ${(e as Error).stack ?? e}`);
    }
  };

  const loadSettings = async (pushed?: unknown) => {
    let section: unknown = (pushed as Record<string, unknown> | undefined)?.[SETTINGS_SECTION];
    if (pullConfig) {
      try {
        [section] = await connection.workspace.getConfiguration([{ section: SETTINGS_SECTION }]);
      } catch (e) {
        connection.console.warn(`coa: workspace/configuration failed, keeping settings: ${(e as Error).message}`);
        return;
      }
    }
    if (section === undefined) return;
    service.setSettings(parseSettings(section));
    for (const uri of service.uris()) schedule.changed(uri);
  };

  connection.onInitialize((params): InitializeResult => {
    const caps = params.capabilities;
    pullConfig = !!caps.workspace?.configuration;
    dynamicConfig = !!caps.workspace?.didChangeConfiguration?.dynamicRegistration;
    const init = params.initializationOptions as { settings?: unknown } | undefined;
    if (init?.settings) service.setSettings(parseSettings(init.settings));
    return {
      capabilities: {
        textDocumentSync: { openClose: true, change: TextDocumentSyncKind.Incremental },
        hoverProvider: true,
        documentSymbolProvider: true,
        foldingRangeProvider: true,
        completionProvider: { triggerCharacters: ['<', '/', '"'] },
        codeActionProvider: { codeActionKinds: ['quickfix'] },
        semanticTokensProvider: {
          legend: { tokenTypes: [...TOKEN_TYPES], tokenModifiers: [] },
          full: true,
          range: true,
        },
      },
      serverInfo: { name: 'coa-studio-server', version: '0.1.0' },
    };
  });

  connection.onInitialized(() => {
    if (dynamicConfig)
      void connection.client.register(DidChangeConfigurationNotification.type, { section: SETTINGS_SECTION });
    void loadSettings();
  });
  connection.onDidChangeConfiguration((p) => void loadSettings(p.settings));

  connection.onDidOpenTextDocument(({ textDocument: t }) => {
    if (service.open(t.uri, t.languageId, t.version, t.text)) schedule.changed(t.uri);
  });
  connection.onDidChangeTextDocument(({ textDocument: t, contentChanges }) => {
    if (!service.has(t.uri)) return;
    service.change(t.uri, t.version ?? 0, contentChanges);
    schedule.changed(t.uri);
  });
  connection.onDidCloseTextDocument(({ textDocument: t }) => {
    service.close(t.uri);
    schedule.closed(t.uri);
    void connection.sendDiagnostics({ uri: t.uri, diagnostics: [] });
  });

  connection.onHover((p) => service.hover(p.textDocument.uri, p.position));
  connection.onDocumentSymbol((p) => service.symbols(p.textDocument.uri));
  connection.onFoldingRanges((p) => service.folding(p.textDocument.uri));
  connection.onCompletion((p) => service.completion(p.textDocument.uri, p.position));
  connection.onCodeAction((p) => service.codeActions(p.textDocument.uri, p.context.diagnostics));
  connection.languages.semanticTokens.on((p) => ({ data: service.semanticTokens(p.textDocument.uri) }));
  connection.languages.semanticTokens.onRange((p) => ({ data: service.semanticTokens(p.textDocument.uri, p.range) }));

  connection.listen();
  return service;
}
