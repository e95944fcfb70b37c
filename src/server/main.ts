// Entry of dist/server.js: `node dist/server.js --stdio` (what the extension runs; vscode-languageclient may also
// pass --node-ipc or --socket=N, which createConnection reads from argv).
import { format } from 'node:util';
import { createConnection, ProposedFeatures, StreamMessageWriter, type Connection } from 'vscode-languageserver/node';
import { wire } from './connection';
import { StrictFrameReader } from './frameReader';

/**
 * Over stdio the frames are read strictly (frameReader.ts): a malformed frame is one line on stderr and exit 1, so
 * the client sees the server end instead of a server that silently stopped reading.
 */
function stdioConnection(): Connection {
  let shutdown = false;
  const reader = new StrictFrameReader(process.stdin);
  reader.onError((e) => {
    process.stderr.write(`coa language server: ${e.message}; exiting\n`);
    process.exit(1);
  });
  // The client closed our input: it is gone (exit 0 only after a shutdown request, as the protocol says).
  reader.onClose(() => process.exit(shutdown ? 0 : 1));
  const connection = createConnection(ProposedFeatures.all, reader, new StreamMessageWriter(process.stdout));
  connection.onShutdown(() => {
    shutdown = true;
  });
  // stdout carries the protocol: console output goes to the client's log instead (createConnection does this
  // itself only when it opens stdio from --stdio).
  console.log = console.info = (...a: unknown[]) => connection.console.log(format(...a));
  console.debug = (...a: unknown[]) => connection.console.log(format(...a));
  console.warn = (...a: unknown[]) => connection.console.warn(format(...a));
  console.error = (...a: unknown[]) => connection.console.error(format(...a));
  return connection;
}

const connection = process.argv.includes('--stdio') ? stdioConnection() : createConnection(ProposedFeatures.all);
// A bug in one request must not take the server down with the editor's diagnostics.
process.on('uncaughtException', (e) => connection.console.error(`coa: uncaught ${e.stack ?? e}`));
wire(connection);
