// TrajectoryService in-process: diagnostics placed exactly, incremental re-checks, hovers computed by the core,
// symbols, folding, tokens, completion and quick fixes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Diagnostic } from 'vscode-languageserver';
import { TrajectoryService, TOKEN_TYPES } from '../../../src/server/service';
import { counters } from '../../../src/server/analysis';
import { parseSettings } from '../../../src/server/settings';
import { checkFormat } from '../../../src/core/rules';
import { describeFormula, scoreRecords } from '../../../src/core/rewards';
import { parseRecordLine } from '../../../src/core/jsonl';

const EXAMPLES = join(__dirname, '../../../examples');
const JSONL = readFileSync(join(EXAMPLES, 'trajectories.coa.jsonl'), 'utf8');
const COA = readFileSync(join(EXAMPLES, 'episode.coa'), 'utf8');
const URI = 'file:///w/t.coa.jsonl';

function open(text: string, uri = URI, languageId = 'coa-jsonl'): TrajectoryService {
  const s = new TrajectoryService();
  s.open(uri, languageId, 1, text);
  return s;
}
const textOf = (lines: string[], d: Diagnostic) =>
  lines[d.range.start.line].slice(d.range.start.character, d.range.end.character);
const rec = (id: string, response: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, question: 'Q?', golden_answers: ['Paris'], response, ...extra });

test('JSONL diagnostics: every core format diagnostic, with its code, at the raw range of its decoded span', () => {
  const s = open(JSONL);
  const lines = JSONL.split('\n');
  const got = s.diagnose(URI);
  const expected: { line: number; code: string; text: string }[] = [];
  lines.forEach((raw, i) => {
    const e = parseRecordLine(raw, i + 1);
    if (!e.record) return;
    for (const d of checkFormat(e.record.response, { dialect: e.record.dialect ?? 'auto' }).diagnostics) {
      expected.push({
        line: i,
        code: d.code,
        text: JSON.stringify(e.record.response.slice(d.start, d.end)).slice(1, -1),
      });
    }
  });
  assert.deepEqual(new Set(expected.map((e) => e.code)), new Set(['COA001', 'COA002', 'COA008', 'COA007', 'COA010']));
  assert.deepEqual(
    got.map((d) => ({ line: d.range.start.line, code: d.code, text: textOf(lines, d) })),
    expected,
  );
  assert.ok(got.every((d) => d.source === 'coa'));
  // A tag right after an escaped newline: the column accounts for `\n` taking two raw characters.
  const stray = got.find((d) => d.code === 'COA002')!;
  assert.equal(textOf(lines, stray), '</think>');
});

test('JSONL diagnostics: invalid JSON, schema violations, duplicate ids, blank lines', () => {
  const text = [
    '{"id": "a", "question": "q", "response": "<answer>x</answer>"}',
    '',
    '{"id": "b", "question": ',
    '{"id": 5, "question": "q", "response": "x"}',
    '{"id": "a", "question": "q", "response": "<answer>y</answer>"}',
  ].join('\n');
  const lines = text.split('\n');
  const d = open(text).diagnose(URI);
  assert.deepEqual(
    d.map((x) => [x.range.start.line, x.code]),
    [
      [2, 'COA101'],
      [3, 'COA102'],
      [4, 'COA103'],
    ],
  );
  assert.equal(textOf(lines, d[1]), '5', 'schema violation points at the offending value');
  assert.match(String(d[2].message), /first on line 1/);
  assert.equal(textOf(lines, d[2]), '"a"');
});

test('.coa documents: the whole document is one response; offsets become line/character', () => {
  const s = open(COA, 'file:///w/e.coa', 'coa');
  assert.deepEqual(s.diagnose('file:///w/e.coa'), []);
  const broken = '<think>a\n<search>q</search>\n<observation>o</observation>\n</answer>';
  s.change('file:///w/e.coa', 2, [{ text: broken }]);
  const d = s.diagnose('file:///w/e.coa');
  const expected = checkFormat(broken).diagnostics.map((x) => x.code);
  assert.deepEqual(
    d.map((x) => x.code),
    expected,
  );
  const lines = broken.split('\n');
  for (const x of d) assert.ok(lines[x.range.start.line].slice(x.range.start.character).length > 0);
  assert.equal(textOf(lines, d.find((x) => x.code === 'COA002')!), '</answer>');
});

test('incremental: editing one line of a 2000-record file re-checks that line only', () => {
  const lines = Array.from({ length: 2000 }, (_, i) => rec(`r${i}`, `<think>t${i}</think>\n<answer>Paris</answer>`));
  const s = open(lines.join('\n'));
  let before = counters.lineChecks;
  assert.deepEqual(s.diagnose(URI), []);
  assert.equal(counters.lineChecks - before, 2000);

  // Break record 700's answer tag: one check, one diagnostic.
  const col = lines[700].indexOf('</answer>');
  before = counters.lineChecks;
  s.change(URI, 2, [
    { range: { start: { line: 700, character: col }, end: { line: 700, character: col + 2 } }, text: '' },
  ]);
  const d = s.diagnose(URI);
  assert.equal(counters.lineChecks - before, 1);
  assert.ok(d.length > 0 && d.every((x) => x.range.start.line === 700));

  // Insert two new lines in the middle: only they are checked, later lines keep their (shifted) results.
  before = counters.lineChecks;
  s.change(URI, 3, [
    {
      range: { start: { line: 10, character: 0 }, end: { line: 10, character: 0 } },
      text: `${rec('n1', 'x')}\n${rec('n2', '<answer>Paris</answer>')}\n`,
    },
  ]);
  const d2 = s.diagnose(URI);
  assert.equal(counters.lineChecks - before, 2);
  assert.ok(
    d2.some((x) => x.range.start.line === 702),
    'record 700 moved down by two lines',
  );
  assert.ok(d2.some((x) => x.range.start.line === 10 && x.code === 'COA006'));

  // A reload that replaces the whole text with one more line appended re-checks only the new line.
  before = counters.lineChecks;
  const reloaded = `${s.text(URI)}\n${rec('tail', '<answer>Paris</answer>')}`;
  s.change(URI, 4, [{ text: reloaded }]);
  s.diagnose(URI);
  assert.equal(counters.lineChecks - before, 1);
});

test('half-written last line while a trainer appends: diagnosed as invalid JSON, then clean when completed', () => {
  const full = rec('z', '<answer>Paris</answer>');
  const s = open(`${rec('a', '<answer>Paris</answer>')}\n${full.slice(0, 25)}`);
  assert.deepEqual(
    s.diagnose(URI).map((d) => d.code),
    ['COA101'],
  );
  s.change(URI, 2, [
    { range: { start: { line: 1, character: 25 }, end: { line: 1, character: 25 } }, text: full.slice(25) + '\n' },
  ]);
  assert.deepEqual(s.diagnose(URI), []);
});

test('hover on an answer or id: the core reward breakdown under the configured scheme', async () => {
  const line = rec('partial', '<think>t</think>\n<answer>Paris city</answer>', { golden_answers: ['Paris'] });
  const text = `${JSONL}\n${line}`;
  const s = open(text);
  s.setSettings(parseSettings({ rewardScheme: 'f1' }));
  const i = text.split('\n').length - 1;
  const record = parseRecordLine(line, 1).record!;
  const expected = scoreRecords([record], 'f1', {})[0];
  assert.equal(expected.f1, 0.666666666667);
  const h = await s.hover(URI, { line: i, character: line.indexOf('Paris city</answer>') });
  const md = (h!.contents as { value: string }).value;
  assert.match(md, /\| scheme \| f1 \|/);
  assert.match(md, /\| F1 \| 0\.6667 \|/);
  assert.match(md, /\| total \| \*\*0\.6667\*\* \|/);
  assert.match(md, /\| EM \| 0 \|/);
  assert.ok(md.includes(describeFormula('f1', {})));
  for (const row of ['format', 'violations', 'm (tool calls)', 'n (optimal)', 'r_tool'])
    assert.ok(md.includes(`| ${row} |`), row);
  const onId = await s.hover(URI, { line: i, character: line.indexOf('"partial"') + 2 });
  assert.equal((onId!.contents as { value: string }).value, md);
  assert.equal(await s.hover(URI, { line: i, character: 1 }), null, 'no hover on the JSON punctuation');
  // The format penalty shows up as violations and a zero total.
  const j = text.split('\n').findIndex((l) => l.includes('"coa-stray-and-after"'));
  const bad = (
    (await s.hover(URI, { line: j, character: text.split('\n')[j].indexOf('Paris</answer>') }))!.contents as {
      value: string;
    }
  ).value;
  assert.match(bad, /\| violations \| COA002, COA008 \|/);
  assert.match(bad, /\| total \| \*\*0\*\* \|/);
});

test('hover with OTC-GRPO: n is the fewest tool calls among correct answers to the same question in the file', async () => {
  const one = '<think>a</think>\n<search>q</search>\n<observation>o</observation>\n<answer>Paris</answer>';
  const two =
    '<think>a</think>\n<search>q</search>\n<observation>o</observation>\n<search>r</search>\n<observation>o</observation>\n<answer>Paris</answer>';
  const text = [
    rec('x1', two),
    rec('x2', one),
    rec('x3', '<answer>Lyon</answer>'),
    JSON.stringify({ id: 'other', question: 'Other?', golden_answers: ['Paris'], response: '<answer>Paris</answer>' }),
  ].join('\n');
  const s = open(text);
  s.setSettings(parseSettings({ rewardScheme: 'otc-grpo', otc: { c: 2, alpha: 1 } }));
  const records = text.split('\n').map((l, i) => parseRecordLine(l, i + 1).record!);
  const group = scoreRecords(records.slice(0, 3), 'otc-grpo', { c: 2 });
  const line0 = text.split('\n')[0];
  const md = ((await s.hover(URI, { line: 0, character: line0.indexOf('"x1"') + 1 }))!.contents as { value: string })
    .value;
  assert.equal(group[0].optimal_tool_calls, 1);
  assert.match(md, /\| n \(optimal\) \| 1 \|/);
  assert.match(md, /\| m \(tool calls\) \| 2 \|/);
  assert.match(md, new RegExp(`\\| r_tool \\| ${group[0].r_tool.toFixed(4).replace(/0+$/, '')} \\|`));
  assert.match(md, /3 records/);
});

test('hover on an action without an environment server: argument and matching observation', async () => {
  const lines = JSONL.split('\n');
  const i = lines.findIndex((l) => l.includes('"coa-one-search"'));
  const s = open(JSONL);
  const h = await s.hover(URI, { line: i, character: lines[i].indexOf('<search>') + 3 });
  const md = (h!.contents as { value: string }).value;
  assert.match(md, /\*\*search\*\* `Don't Stop the Carnival 1965 novel author`/);
  assert.match(md, /a 1965 novel by Herman Wouk/);
});

test('document symbols, folding ranges and semantic tokens', () => {
  const s = open(JSONL);
  const lines = JSONL.split('\n');
  const sym = s.symbols(URI);
  assert.equal(sym.length, lines.filter((l) => l.trim()).length);
  const two = sym.find((x) => x.name === 'coa-two-searches')!;
  assert.deepEqual(
    two.children!.map((c) => c.name.split(':')[0]),
    ['think', 'search', 'observation', 'think', 'search', 'observation', 'think', 'answer'],
  );
  const ln = two.range.start.line;
  assert.equal(
    textOf(lines, { range: two.children![1].range } as Diagnostic),
    "<search>Don't Stop the Carnival</search>",
  );
  // Consecutive records sharing a question fold together.
  assert.deepEqual(
    s
      .folding(URI)
      .slice(0, 1)
      .map((f) => [f.startLine, f.endLine]),
    [[0, 3]],
  );
  // Tokens decode to tag texts, and the argument of each action.
  const data = s.semanticTokens(URI, { start: { line: ln, character: 0 }, end: { line: ln, character: 0 } });
  let c = 0;
  const got: string[] = [];
  for (let k = 0; k < data.length; k += 5) {
    c = data[k] === 0 && k > 0 ? c + data[k + 1] : data[k + 1];
    got.push(`${TOKEN_TYPES[data[k + 3]]}:${lines[ln].slice(c, c + data[k + 2])}`);
  }
  assert.deepEqual(got.slice(0, 5), [
    'macro:<think>',
    'macro:</think>',
    'function:<search>',
    "parameter:Don't Stop the Carnival",
    'function:</search>',
  ]);

  const coa = open(COA, 'file:///w/e.coa', 'coa');
  const cs = coa.symbols('file:///w/e.coa');
  assert.equal(cs[0].children!.length, 8);
  assert.equal(cs[0].children![7].name, 'answer: Herman Wouk');
  const multi = open('<think>\na\nb\n</think>\n<answer>x</answer>', 'file:///w/m.coa', 'coa');
  assert.deepEqual(
    multi.folding('file:///w/m.coa').map((f) => [f.startLine, f.endLine]),
    [[0, 3]],
  );
});

test('completion: tags of the dialect in use, dialect names in a "dialect" value', () => {
  const line = '{"id": "a", "question": "q", "dialect": "her';
  const s = open(line);
  const d = s.completion(URI, { line: 0, character: line.length });
  assert.deepEqual(
    d.map((x) => x.label),
    ['coa', 'search-r1', 'autocoa', 'hermes'],
  );
  const c = open('<think>a</think>\n<begin_search>x</end_search>\n<', 'file:///w/c.coa', 'coa');
  const items = c.completion('file:///w/c.coa', { line: 2, character: 1 });
  assert.ok(
    items.some(
      (x) =>
        x.label === '<begin_search>' && (x.textEdit as { newText: string }).newText === '<begin_search>$0</end_search>',
    ),
  );
  assert.ok(!items.some((x) => x.label === '<answer>'), 'autocoa answers in \\boxed{}');
  const closing = c.completion('file:///w/c.coa', { line: 1, character: '<begin_search>x</'.length });
  assert.deepEqual(
    closing.map((x) => x.label),
    ['</think>', '</end_search>', '</search_result>'],
  );
  assert.ok(closing.every((x) => String(x.label).startsWith('</')));
});

test('quick fixes: close an unclosed tag, remove a stray closing tag; applying them clears the diagnostic', () => {
  const raw = rec(
    'f',
    '<think>ok</think></think>\n<search>capital of France</search>\n<observation>Paris</observation>\n<answer>Paris  \n',
  );
  const s = open(raw);
  const diags = s.diagnose(URI);
  assert.deepEqual(
    diags.map((d) => d.code),
    ['COA002', 'COA001'],
  );
  let text = raw;
  // Apply the edits right to left so columns stay valid.
  const edits = s
    .codeActions(URI, diags)
    .flatMap((a) => a.edit?.changes?.[URI] ?? [])
    .sort((a, b) => b.range.start.character - a.range.start.character);
  assert.equal(edits.length, 2);
  for (const e of edits) text = text.slice(0, e.range.start.character) + e.newText + text.slice(e.range.end.character);
  assert.equal(
    JSON.parse(text).response,
    '<think>ok</think>\n<search>capital of France</search>\n<observation>Paris</observation>\n<answer>Paris</answer>  \n',
  );
  s.change(URI, 2, [{ text }]);
  assert.deepEqual(s.diagnose(URI), []);
});

test("a record's problems in a JSONL file opened as text lead to its record view: one quick fix per record, coaStudio.openRecord { file, line, id }", () => {
  const lines = [
    rec('ok-1', '<think>fine</think>\n<answer>Paris</answer>'),
    rec('bad-2', '<think>ok</think></think>\n<answer>Paris  \n'),
    '{"id": "broken", ',
    '',
    rec('bad-5', 'no answer at all'),
  ];
  const uri = 'file:///w/rl2/rollouts.jsonl';
  const s = open(lines.join('\n'), uri, 'jsonl');
  const diags = s.diagnose(uri);
  const byLine = (n: number) => diags.filter((d) => d.range.start.line === n);
  assert.ok(
    byLine(1).length >= 2,
    `record bad-2 has several problems: ${JSON.stringify(byLine(1).map((d) => d.code))}`,
  );
  assert.ok(byLine(2).length >= 1 && byLine(4).length >= 1);
  const opens = s.codeActions(uri, diags).filter((a) => a.command?.command === 'coaStudio.openRecord');
  // The broken line (no record, no id) has none; each record has exactly one, carrying all of its problems.
  assert.deepEqual(
    opens.map((a) => a.title),
    ['Open record bad-2 in the record view', 'Open record bad-5 in the record view'],
  );
  assert.deepEqual(
    opens.map((a) => a.command!.arguments),
    [[{ file: uri, line: 2, id: 'bad-2' }], [{ file: uri, line: 5, id: 'bad-5' }]],
  );
  assert.deepEqual(opens[0].diagnostics, byLine(1));
  assert.ok(opens.every((a) => a.kind === 'quickfix' && a.edit === undefined));
  // Asked about one problem (the Problems panel asks per row): that record only, besides its edit fixes.
  const one = s.codeActions(uri, [byLine(4)[0]]);
  assert.deepEqual(
    one.map((a) => a.title),
    ['Open record bad-5 in the record view'],
  );
  // A .coa episode is one record already; an untitled JSONL has no file for a record view.
  const coa = open('<think>a</think></think>\n<answer>x</answer>', 'file:///w/e.coa', 'coa');
  assert.ok(!coa.codeActions('file:///w/e.coa', coa.diagnose('file:///w/e.coa')).some((a) => a.command));
  const untitled = open(lines.join('\n'), 'untitled:Untitled-1', 'jsonl');
  assert.equal(
    untitled.codeActions('untitled:Untitled-1', untitled.diagnose('untitled:Untitled-1')).filter((a) => a.command)
      .length,
    0,
  );
});

test('robustness: binary data, plain JSONL that is not trajectories, a huge line', () => {
  const bin = open('\u0000\u0001\u00ff\u0000garbage\n\u0000', 'file:///w/b.coa.jsonl');
  assert.deepEqual(
    bin.diagnose('file:///w/b.coa.jsonl').map((d) => d.code),
    ['COA104'],
  );
  const corpus = open('{"id": "1", "contents": "a"}\n{"id": "2", "contents": "b"}', 'file:///w/corpus.jsonl', 'jsonl');
  assert.deepEqual(corpus.diagnose('file:///w/corpus.jsonl'), []);
  const plainTraj = open(rec('a', 'no answer'), 'file:///w/x.jsonl', 'jsonl');
  assert.deepEqual(
    plainTraj.diagnose('file:///w/x.jsonl').map((d) => d.code),
    ['COA006'],
  );

  // 3 MB line: diagnostics placed by the sparse mapper, no step symbols or tokens, no hover table.
  const big = rec('big', `<think>${'lorem "ipsum"\n'.repeat(220_000)}<search>q</search><answer>Paris</answer>`);
  const h = open(big);
  const d = h.diagnose(URI);
  assert.deepEqual(
    d.map((x) => x.code),
    ['COA001', 'COA005'],
  );
  assert.equal(textOf([big], d[1]), '<search>');
  assert.equal(h.symbols(URI)[0].children!.length, 0);
  assert.deepEqual(h.semanticTokens(URI), []);
});

test('settings: bad values fall back field by field', () => {
  const s = parseSettings({
    dialect: 'klingon',
    rewardScheme: 'otc-ppo',
    otc: { c: -1, alpha: 0.5 },
    tools: [],
    strictness: 'strict',
  });
  assert.deepEqual(
    [s.dialect, s.rewardScheme, s.otc.c, s.otc.alpha, s.tools, s.strictness],
    ['auto', 'otc-ppo', 4, 0.5, ['search'], 'strict'],
  );
});
