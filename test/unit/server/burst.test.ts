// The language server keeps up with bursts of edits. Re-sending the whole diagnostics list on every edit falls
// behind (1,000 quick edits → 1,000 publishes, a hover queued behind them answered after 107 s), so publishes are
// coalesced, a document's diagnostics are capped, and the quick fix of each unclosed tag must not search all
// segments (quadratic over a document). Behaviour only here; the load figures
// are bench/reliability's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_DOCUMENT_DIAGNOSTICS, TrajectoryService } from '../../../src/server/service';
import { ensureBuilt, LspClient, ROOT } from './lsp-client';

const JSONL = readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8');
const URI = 'file:///w/burst.coa.jsonl';

test('stdio: 1,000 quick edits publish the latest version once or a few times, not once per edit; a hover is answered', {
  timeout: 60_000,
}, async (t) => {
  ensureBuilt();
  const c = new LspClient({});
  t.after(() => c.shutdown());
  await c.initialize();
  let mark = c.notifications.length;
  c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'coa-jsonl', version: 1, text: JSONL } });
  await c.diagnostics(URI, mark);
  mark = c.notifications.length;

  // Toggle the closing tag of line 0's answer on and off, 1,000 times, all sent at once as a fast typist's editor does.
  const line0 = JSONL.split('\n')[0];
  const col = line0.indexOf('</answer>');
  const local = new TrajectoryService();
  local.open(URI, 'coa-jsonl', 1, JSONL);
  let version = 1;
  for (let k = 0; k < 1000; k++) {
    version++;
    const change =
      k % 2 === 0
        ? { range: { start: { line: 0, character: col }, end: { line: 0, character: col + 9 } }, text: '' }
        : { range: { start: { line: 0, character: col }, end: { line: 0, character: col } }, text: '</answer>' };
    c.notify('textDocument/didChange', { textDocument: { uri: URI, version }, contentChanges: [change] });
    local.change(URI, version, [change]);
  }
  const hover = await c.request('textDocument/hover', {
    textDocument: { uri: URI },
    position: { line: 1, character: 10 },
  });
  assert.ok(hover === null || typeof hover === 'object');
  const isPublish = (m: { method?: string; params?: any }) =>
    m.method === 'textDocument/publishDiagnostics' && m.params.uri === URI;
  const last = await c
    .waitFor((m) => isPublish(m) && m.params.version === version, 30_000, mark)
    .catch(() => {
      throw new Error(
        `no publish of version ${version} after ${c.notifications.slice(mark).filter(isPublish).length} publishes`,
      );
    });
  const published = c.notifications.slice(mark).filter(isPublish);
  assert.ok(published.length <= 20, `${published.length} publishes for one burst of 1,000 edits`);
  assert.equal(published.at(-1), last, 'the last publish is of the last version');
  // Even version → the tag was removed and put back an even number of times: the text is the original again.
  assert.deepEqual(last.params.diagnostics, local.diagnose(URI));
});

test('a document with 40,000 unclosed tags: the first 1,000 diagnostics with their quick fixes, then one summary', () => {
  const s = new TrajectoryService();
  const uri = 'file:///w/many.coa';
  const text = '<think> x '.repeat(40_000) + '<answer>a</answer>';
  s.open(uri, 'coa', 1, text);
  const d = s.diagnose(uri);
  assert.equal(d.length, MAX_DOCUMENT_DIAGNOSTICS + 1);
  const shown = d.slice(0, MAX_DOCUMENT_DIAGNOSTICS);
  // Each unclosed <think> gets its fix: "</think>" right after its content (before the separating space).
  shown.forEach((x, i) => {
    assert.equal(x.range.start.character, 10 * i, `diagnostic ${i}`);
    const fix = (x.data as { fix: { title: string; range: { start: { character: number } }; newText: string } }).fix;
    assert.equal(fix.newText, '</think>');
    assert.equal(fix.range.start.character, 10 * i + 9);
  });
  const summary = d[MAX_DOCUMENT_DIAGNOSTICS];
  assert.equal(
    summary.message,
    `${40_000 - MAX_DOCUMENT_DIAGNOSTICS} more problems in this file not shown (at most ${MAX_DOCUMENT_DIAGNOSTICS} per file); \`coa validate <file>\` lists them all`,
  );
  assert.deepEqual(
    summary.range.start,
    { line: 0, character: 10 * MAX_DOCUMENT_DIAGNOSTICS },
    'placed where the first hidden problem is',
  );
});

test('a JSONL document with 1,500 broken records (2 problems each): 1,000 diagnostics and a summary', () => {
  const s = new TrajectoryService();
  const uri = 'file:///w/many.coa.jsonl';
  const lines = Array.from({ length: 1500 }, (_, i) =>
    JSON.stringify({ id: `r${i}`, question: 'q', response: '<think>no close' }),
  );
  s.open(uri, 'coa-jsonl', 1, lines.join('\n'));
  const d = s.diagnose(uri);
  assert.equal(d.length, MAX_DOCUMENT_DIAGNOSTICS + 1);
  assert.deepEqual(
    d.slice(0, MAX_DOCUMENT_DIAGNOSTICS).map((x) => [x.range.start.line, x.code]),
    Array.from({ length: MAX_DOCUMENT_DIAGNOSTICS }, (_, i) => [i >> 1, i % 2 ? 'COA006' : 'COA001']),
  );
  assert.match(String(d[MAX_DOCUMENT_DIAGNOSTICS].message), /^2000 more problems in this file not shown/);
  assert.equal(d[MAX_DOCUMENT_DIAGNOSTICS].range.start.line, MAX_DOCUMENT_DIAGNOSTICS / 2);
});
