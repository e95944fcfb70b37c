// The real server over stdio, driven as an editor would drive it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEnvServer } from '../../../src/env/server';
import { ensureBuilt, LspClient, ROOT } from './lsp-client';

ensureBuilt();
const JSONL = readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8');
const URI = 'file:///w/trajectories.coa.jsonl';
const lines = JSONL.split('\n');

test('stdio: initialize → didOpen → diagnostics → hover → didChange → incremental diagnostics', async (t) => {
  const c = new LspClient({ rewardScheme: 'otc-ppo', otc: { c: 2, alpha: 1 } });
  t.after(() => c.shutdown());
  const init = await c.initialize();
  assert.equal(init.capabilities.textDocumentSync.change, 2, 'incremental sync');
  assert.ok(init.capabilities.hoverProvider && init.capabilities.semanticTokensProvider.range);

  let mark = c.notifications.length;
  c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'coa-jsonl', version: 1, text: JSONL } });
  const first = await c.diagnostics(URI, mark);
  assert.deepEqual(
    first.params.diagnostics.map((d: any) => d.code),
    ['COA001', 'COA002', 'COA008', 'COA007', 'COA010'],
  );
  // The server asked for its settings and registered for configuration changes.
  assert.ok(c.serverRequests.some((r) => r.method === 'workspace/configuration'));
  assert.ok(c.serverRequests.some((r) => r.method === 'client/registerCapability'));

  // Hover on the answer of a one-search record: OTC-PPO with c=2 from the pulled settings.
  const i = lines.findIndex((l) => l.includes('"coa-one-search"'));
  const hover = await c.request('textDocument/hover', {
    textDocument: { uri: URI },
    position: { line: i, character: lines[i].indexOf('Herman Wouk</answer>') },
  });
  assert.match(hover.contents.value, /\| scheme \| otc-ppo \|/);
  assert.match(hover.contents.value, /\| r_tool \| 0\.7071 \|/, 'cos(π/4) for m=1, c=2');
  assert.match(hover.contents.value, /c=2/);

  // Break line 0's answer: the new diagnostics include it, the rest are unchanged.
  mark = c.notifications.length;
  const col = lines[0].indexOf('</answer>');
  c.notify('textDocument/didChange', {
    textDocument: { uri: URI, version: 2 },
    contentChanges: [{ range: { start: { line: 0, character: col }, end: { line: 0, character: col + 9 } }, text: '' }],
  });
  const second = await c.diagnostics(URI, mark);
  assert.deepEqual(
    second.params.diagnostics.map((d: any) => [d.range.start.line, d.code]),
    [[0, 'COA001'], ...first.params.diagnostics.map((d: any) => [d.range.start.line, d.code])],
  );

  // Settings change: strict mode adds COA013/COA014 (pulled again through workspace/configuration).
  mark = c.notifications.length;
  c.settings = { strictness: 'strict' };
  c.notify('workspace/didChangeConfiguration', { settings: null });
  const third = await c.diagnostics(URI, mark);
  assert.ok(third.params.diagnostics.some((d: any) => d.code === 'COA014'));

  // Quick fix round trip over the wire.
  const unclosed = third.params.diagnostics.find((d: any) => d.code === 'COA001' && d.range.start.line === 0);
  const actions = await c.request('textDocument/codeAction', {
    textDocument: { uri: URI },
    range: unclosed.range,
    context: { diagnostics: [unclosed] },
  });
  assert.equal(actions[0].kind, 'quickfix');
  assert.equal(actions[0].edit.changes[URI][0].newText, '</answer>');

  const symbols = await c.request('textDocument/documentSymbol', { textDocument: { uri: URI } });
  assert.equal(symbols.length, 12);
  const tokens = await c.request('textDocument/semanticTokens/full', { textDocument: { uri: URI } });
  assert.ok(tokens.data.length > 0 && tokens.data.length % 5 === 0);
  const folds = await c.request('textDocument/foldingRange', { textDocument: { uri: URI } });
  assert.ok(folds.length > 0);

  mark = c.notifications.length;
  c.notify('textDocument/didClose', { textDocument: { uri: URI } });
  assert.deepEqual((await c.diagnostics(URI, mark)).params.diagnostics, []);
});

test('stdio: a client without workspace/configuration pushes settings; .coa documents', async (t) => {
  const c = new LspClient();
  t.after(() => c.shutdown());
  await c.initialize({});
  c.notify('workspace/didChangeConfiguration', { settings: { coaStudio: { strictness: 'strict' } } });
  const uri = 'file:///w/e.coa';
  const mark = c.notifications.length;
  c.notify('textDocument/didOpen', {
    textDocument: {
      uri,
      languageId: 'coa',
      version: 1,
      text: 'hello <search>q</search>\n<observation>o</observation>\n<answer>x</answer>',
    },
  });
  const d = await c.diagnostics(uri, mark);
  assert.deepEqual(
    d.params.diagnostics.map((x: any) => x.code),
    ['COA013', 'COA014', 'COA014'],
  );
  assert.equal(c.serverRequests.filter((r) => r.method === 'workspace/configuration').length, 0);
});

test('stdio: hover on an action asks the environment server when one is configured', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-lsp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const corpus = join(dir, 'corpus.jsonl');
  writeFileSync(
    corpus,
    [
      '{"id": "d1", "contents": "\\"Jaws (film)\\"\\nJaws is a 1975 film directed by Steven Spielberg."}',
      '{"id": "d2", "contents": "\\"Paris\\"\\nParis is the capital of France."}',
    ].join('\n') + '\n',
  );
  const env = await startEnvServer({ corpus, indexDir: join(dir, 'idx') });
  t.after(() => env.close());
  const c = new LspClient({ envServer: { url: env.url, token: env.token } });
  t.after(() => c.shutdown());
  await c.initialize();
  const mark = c.notifications.length;
  c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'coa-jsonl', version: 1, text: JSONL } });
  await c.diagnostics(URI, mark);
  const i = lines.findIndex((l) => l.includes('"search-r1-strict-ok"'));
  const h = await c.request('textDocument/hover', {
    textDocument: { uri: URI },
    position: { line: i, character: lines[i].indexOf('<search>') + 2 },
  });
  assert.match(h.contents.value, /environment server result/);
  assert.match(h.contents.value, /\*\*Jaws \(film\)\*\*/);
  assert.equal(env.stats().queries, 1, 'one search request reached the environment server');

  // A wrong token: the hover says why and falls back to the local observation.
  c.settings = { envServer: { url: env.url, token: 'wrong' } };
  c.notify('workspace/didChangeConfiguration', { settings: null });
  await c.waitFor(() => c.serverRequests.filter((r) => r.method === 'workspace/configuration').length >= 2);
  await new Promise((r) => setTimeout(r, 50));
  const h2 = await c.request('textDocument/hover', {
    textDocument: { uri: URI },
    position: { line: i, character: lines[i].indexOf('<search>') + 2 },
  });
  assert.match(h2.contents.value, /_environment server: /);
  assert.match(h2.contents.value, /observation:/);
});
