// Entry of dist/server.js: `node dist/server.js --stdio` (vscode-languageclient also passes --node-ipc or
// --socket=N, which createConnection reads from argv).
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { wire } from './connection';

const connection = createConnection(ProposedFeatures.all);
// A bug in one request must not take the server down with the editor's diagnostics.
process.on('uncaughtException', (e) => connection.console.error(`coa: uncaught ${e.stack ?? e}`));
wire(connection);
