// Fuzz: generated and mutated documents thrown at the service in-process and at the stdio server. Properties:
// nothing throws, every diagnostic range lies inside the document, the server keeps answering (bounded waits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { TrajectoryService } from '../../../src/server/service';
import { ensureBuilt, LspClient, ROOT } from './lsp-client';

const EXAMPLE_LINES = readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n').filter(Boolean);
const PIECES = [
  '<think>',
  '</think>',
  '<search>',
  '</search>',
  '<observation>',
  '</observation>',
  '<answer>',
  '</answer>',
  '<information>',
  '<begin_search>',
  '</end_search>',
  '<search_result>',
  '\\boxed{',
  '}',
  '<tool_call>',
  '</tool_call>',
  '{"name": "search", "arguments": {"query": "x"}}',
  '<tool_response>',
  'Paris',
  ' ',
  '\n',
  '\r\n',
  '"',
  '\\',
  '\u0000',
  '😀',
  '<|im_end|>',
  '<x>',
  '</',
];

const response = fc
  .array(fc.oneof(fc.constantFrom(...PIECES), fc.string({ maxLength: 6 })), { maxLength: 40 })
  .map((a) => a.join(''));
const recordLine = fc
  .record({
    id: fc.string({ minLength: 1, maxLength: 4 }),
    question: fc.constantFrom('Q1?', 'Q2?'),
    golden_answers: fc.constant(['Paris']),
    response,
    dialect: fc.constantFrom(undefined, 'coa', 'search-r1', 'autocoa', 'hermes'),
  })
  .map((r) => JSON.stringify(r));
/** Lines nested 5,000+ levels (in a record or bare), BOM-prefixed lines, invalid UTF-8 as an editor decodes it. */
const deepLine = fc
  .tuple(fc.integer({ min: 5000, max: 9000 }), fc.constantFrom('[]', '{}'), fc.boolean())
  .map(([n, b, inRecord]) => {
    const nest = b === '[]' ? '['.repeat(n) + ']'.repeat(n) : '{"k":'.repeat(n) + '1' + '}'.repeat(n);
    return inRecord ? `{"id":"deep","question":"q","response":"<think>x</think>","x":${nest}}` : nest;
  });
const hostileLine = fc.oneof(
  deepLine,
  fc.constantFrom(...EXAMPLE_LINES).map((l) => `\ufeff${l}`),
  fc
    .tuple(
      fc.constantFrom(...EXAMPLE_LINES),
      fc.nat(),
      fc.constantFrom('\ufffd', '\ud800', '\udfff', '\ufffd\ufffd', '\ufeff'),
    )
    .map(([l, a, bad]) => {
      const i = a % (l.length + 1);
      return l.slice(0, i) + bad + l.slice(i);
    }),
);
/** A line: a valid record, an example, or one of those cut, spliced or sprinkled with garbage. */
const line = fc.oneof(
  hostileLine,
  recordLine,
  fc.constantFrom(...EXAMPLE_LINES),
  fc.tuple(fc.constantFrom(...EXAMPLE_LINES), fc.nat(), fc.nat(), fc.string({ maxLength: 8 })).map(([l, a, b, s]) => {
    const i = a % (l.length + 1);
    const j = Math.min(l.length, i + (b % 20));
    return l.slice(0, i) + s + l.slice(j);
  }),
  fc.string({ maxLength: 60 }),
  fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b).toString('latin1')),
);
const jsonlDoc = fc.array(line, { maxLength: 12 }).map((ls) => ls.join('\n'));
const pos = fc.record({ line: fc.integer({ min: -1, max: 14 }), character: fc.integer({ min: -1, max: 400 }) });
const edit = fc.record({
  start: pos,
  end: pos,
  text: fc.oneof(fc.constantFrom(...PIECES), fc.string({ maxLength: 10 }), line),
});

function checkRanges(s: TrajectoryService, uri: string): void {
  const text = s.text(uri)!;
  const lines = text.split('\n');
  for (const d of s.diagnose(uri)) {
    const { start, end } = d.range;
    assert.ok(
      start.line >= 0 && start.line < lines.length && end.line < lines.length,
      `line out of range: ${JSON.stringify(d)}`,
    );
    assert.ok(
      start.character >= 0 && end.character <= lines[end.line].length + 1,
      `character out of range: ${JSON.stringify(d)}`,
    );
  }
}

test('fuzz in-process: documents, edits and every request never throw and stay in range', async () => {
  await fc.assert(
    fc.asyncProperty(jsonlDoc, fc.array(edit, { maxLength: 5 }), pos, fc.boolean(), async (text, edits, p, coa) => {
      const s = new TrajectoryService();
      const uri = coa ? 'file:///f.coa' : 'file:///f.coa.jsonl';
      s.open(uri, coa ? 'coa' : 'coa-jsonl', 1, text);
      checkRanges(s, uri);
      let v = 2;
      for (const e of edits) {
        s.change(uri, v++, [{ range: { start: e.start, end: e.end }, text: e.text }]);
        checkRanges(s, uri);
      }
      // Incremental state equals a fresh analysis of the same text.
      const fresh = new TrajectoryService();
      fresh.open(uri, coa ? 'coa' : 'coa-jsonl', 1, s.text(uri)!);
      assert.deepEqual(s.diagnose(uri), fresh.diagnose(uri));
      await s.hover(uri, p);
      s.symbols(uri);
      s.folding(uri);
      s.semanticTokens(uri);
      s.completion(uri, p);
      s.codeActions(uri, s.diagnose(uri));
    }),
    { numRuns: 300 },
  );
});

test('fuzz over stdio: random documents and edits; the server answers every request and never dies', async (t) => {
  ensureBuilt();
  const c = new LspClient({ rewardScheme: 'otc-grpo' });
  t.after(() => c.shutdown());
  await c.initialize();
  const uri = 'file:///fz.coa.jsonl';
  const samples = fc.sample(fc.tuple(jsonlDoc, fc.array(edit, { maxLength: 4 }), pos), { numRuns: 40, seed: 42 });
  let version = 1;
  for (const [text, edits, p] of samples) {
    c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'coa-jsonl', version: version++, text } });
    for (const e of edits)
      c.notify('textDocument/didChange', {
        textDocument: { uri, version: version++ },
        contentChanges: [{ range: { start: e.start, end: e.end }, text: e.text }],
      });
    await c.request('textDocument/hover', { textDocument: { uri }, position: p }, 10_000);
    await c.request('textDocument/documentSymbol', { textDocument: { uri } }, 10_000);
    await c.request('textDocument/semanticTokens/full', { textDocument: { uri } }, 10_000);
    c.notify('textDocument/didClose', { textDocument: { uri } });
  }
  assert.equal(c.exited, undefined);
  assert.doesNotMatch(c.stderr, /Error/);
});

test('stdio robustness: a 50 MB single line, binary garbage, a trainer appending half-written lines', async (t) => {
  ensureBuilt();
  const c = new LspClient();
  t.after(() => c.shutdown());
  await c.initialize();

  const huge = JSON.stringify({
    id: 'huge',
    question: 'q',
    response: `<think>${'word "quoted" \\ '.repeat(3_200_000)}</think><search>q</search><answer>x</answer>`,
  });
  assert.ok(huge.length > 50e6);
  let mark = c.notifications.length;
  c.notify('textDocument/didOpen', {
    textDocument: { uri: 'file:///huge.coa.jsonl', languageId: 'coa-jsonl', version: 1, text: huge },
  });
  const d = await c.diagnostics('file:///huge.coa.jsonl', mark);
  assert.deepEqual(
    d.params.diagnostics.map((x: any) => x.code),
    ['COA005'],
  );
  const col = d.params.diagnostics[0].range.start.character;
  assert.equal(huge.slice(col, col + 8), '<search>');
  // Requests on it stay cheap (size guards) and the server stays responsive.
  assert.deepEqual(
    (await c.request('textDocument/semanticTokens/full', { textDocument: { uri: 'file:///huge.coa.jsonl' } })).data,
    [],
  );
  assert.equal(
    await c.request('textDocument/hover', {
      textDocument: { uri: 'file:///huge.coa.jsonl' },
      position: { line: 0, character: col + 2 },
    }),
    null,
  );
  c.notify('textDocument/didClose', { textDocument: { uri: 'file:///huge.coa.jsonl' } });

  mark = c.notifications.length;
  const garbage = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 256)).toString('latin1');
  c.notify('textDocument/didOpen', {
    textDocument: { uri: 'file:///bin.coa.jsonl', languageId: 'coa-jsonl', version: 1, text: garbage },
  });
  assert.deepEqual(
    (await c.diagnostics('file:///bin.coa.jsonl', mark)).params.diagnostics.map((x: any) => x.code),
    ['COA104'],
  );

  // A trainer appends records in chunks that cut lines anywhere; the editor forwards each append.
  const uri = 'file:///run.coa.jsonl';
  const records = Array.from(
    { length: 60 },
    (_, i) =>
      JSON.stringify({
        id: `s${i}`,
        question: 'q',
        golden_answers: ['a'],
        response: '<think>t</think>\n<answer>a</answer>',
      }) + '\n',
  ).join('');
  c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'coa-jsonl', version: 1, text: '' } });
  let line = 0;
  let character = 0;
  let version = 2;
  for (let at = 0; at < records.length; ) {
    const chunk = records.slice(at, at + 97);
    at += chunk.length;
    c.notify('textDocument/didChange', {
      textDocument: { uri, version: version++ },
      contentChanges: [{ range: { start: { line, character }, end: { line, character } }, text: chunk }],
    });
    const parts = chunk.split('\n');
    line += parts.length - 1;
    character = parts.length > 1 ? parts[parts.length - 1].length : character + chunk.length;
  }
  mark = c.notifications.length;
  c.notify('textDocument/didChange', { textDocument: { uri, version: version++ }, contentChanges: [] });
  const last = await c.diagnostics(uri, mark);
  assert.deepEqual(last.params.diagnostics, [], 'once complete, the appended file is clean');
  assert.equal((await c.request('textDocument/documentSymbol', { textDocument: { uri } })).length, 60);
});

test('a 5,000-level line: no throw, COA101 on it, the other lines diagnosed as without it, nothing stale after the edit', async (t) => {
  ensureBuilt();
  const deep = `{"id":"deep","question":"q","response":"r","x":${'['.repeat(6000)}${']'.repeat(6000)}}`;
  const others = [
    EXAMPLE_LINES[0],
    `\ufeff${EXAMPLE_LINES[4]}`,
    EXAMPLE_LINES[4],
    '{"id":"u","question":"q\ufffd","response":"<think>x"}',
  ];
  const withDeep = [others[0], deep, ...others.slice(1)].join('\n');
  const without = others.join('\n');
  const s = new TrajectoryService();
  s.open('file:///d.coa.jsonl', 'coa-jsonl', 1, withDeep);
  s.open('file:///w.coa.jsonl', 'coa-jsonl', 1, without);
  const diag = s.diagnose('file:///d.coa.jsonl');
  assert.deepEqual(
    diag.filter((d) => d.range.start.line === 1).map((d) => d.code),
    ['COA101'],
  );
  const key = (d: (typeof diag)[number], shift = 0) => [
    d.range.start.line - shift,
    d.range.start.character,
    d.range.end.character,
    d.code,
    String(d.message).replace(/ \(first on line \d+\)/, ''),
  ];
  const shifted = diag.filter((d) => d.range.start.line !== 1).map((d) => key(d, d.range.start.line > 1 ? 1 : 0));
  assert.deepEqual(
    shifted,
    s.diagnose('file:///w.coa.jsonl').map((d) => key(d)),
  );
  // The BOM line is the same record as the line after it: same diagnostic codes, columns one further right.
  const bomLine = diag.filter((d) => d.range.start.line === 2 && d.code !== 'COA103');
  const plainLine = diag.filter((d) => d.range.start.line === 3 && d.code !== 'COA103');
  assert.ok(bomLine.length > 0);
  assert.deepEqual(
    bomLine.map((d) => [d.code, d.range.start.character - 1]),
    plainLine.map((d) => [d.code, d.range.start.character]),
  );
  for (const p of [
    { line: 1, character: 10 },
    { line: 1, character: 6000 },
    { line: 2, character: 3 },
  ]) {
    await s.hover('file:///d.coa.jsonl', p);
    s.completion('file:///d.coa.jsonl', p);
  }
  s.symbols('file:///d.coa.jsonl');
  s.folding('file:///d.coa.jsonl');
  s.semanticTokens('file:///d.coa.jsonl');
  s.codeActions('file:///d.coa.jsonl', diag);

  // Over stdio: the server publishes the same, then drops the COA101 when the line is deleted (no stale diagnostics).
  const c = new LspClient();
  t.after(() => c.shutdown());
  await c.initialize();
  const uri = 'file:///deep.coa.jsonl';
  let mark = c.notifications.length;
  c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'coa-jsonl', version: 1, text: withDeep } });
  const first = await c.diagnostics(uri, mark);
  assert.deepEqual(
    first.params.diagnostics.map((d: any) => [d.range.start.line, d.code]),
    diag.map((d) => [d.range.start.line, d.code]),
  );
  assert.deepEqual(
    (await c.request('textDocument/documentSymbol', { textDocument: { uri } }, 10_000)) !== undefined,
    true,
  );
  mark = c.notifications.length;
  c.notify('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, text: '' }],
  });
  const after = await c.diagnostics(uri, mark);
  assert.deepEqual(
    after.params.diagnostics.map((d: any) => [d.range.start.line, d.code]),
    s.diagnose('file:///w.coa.jsonl').map((d) => [d.range.start.line, d.code]),
  );
  assert.equal(c.exited, undefined);
  assert.doesNotMatch(c.stderr, /Error/);
});
