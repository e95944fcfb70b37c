// Grammar tests: runs vscode-tmgrammar-test's assertion engine over test/grammar/*.test.* with our grammars,
// checks that the generated grammars/configurations are up to date with src/core/dialects.ts, and checks the
// language configurations' folding markers. Prints `grammar: N passed, M failed` (N, M count assertions).
//   node scripts/test-grammar.mjs            run everything
//   node scripts/test-grammar.mjs --dump F   print each line of test file F with its tokens (to write assertions)
//
// There is no VS Code here, so the built-in JSON Lines grammar (`source.json.lines`) that the injection also
// targets is stood in for by our own JSON Lines host grammar registered under that scope name; it uses the
// same string scope names (`string.quoted.double.json`) as VS Code's.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { ROOT, OUTPUTS, renderAll, loadDialects } from './grammar-gen.mjs';

const require = createRequire(import.meta.url);
const { createRegistryFromGrammars } = require('vscode-tmgrammar-test/dist/common/index.js');
const { parseGrammarTestCase, runGrammarTestCase } = require('vscode-tmgrammar-test/dist/unit/index.js');

const TEST_DIR = join(ROOT, 'test/grammar');
const read = (p) => readFileSync(join(ROOT, p), 'utf8');

function registry() {
  const host = read(OUTPUTS.jsonl);
  const standIn = JSON.stringify({
    ...JSON.parse(host),
    scopeName: 'source.json.lines',
    name: 'JSON Lines (stand-in for VS Code built-in)',
  });
  return createRegistryFromGrammars([
    { grammar: { path: OUTPUTS.coa, scopeName: 'source.coa' }, content: read(OUTPUTS.coa) },
    { grammar: { path: OUTPUTS.jsonl, scopeName: 'source.coa.jsonl' }, content: host },
    { grammar: { path: 'stand-in/source.json.lines.json', scopeName: 'source.json.lines' }, content: standIn },
    {
      grammar: {
        path: OUTPUTS.injection,
        scopeName: 'coa.jsonl.injection',
        injectTo: ['source.json.lines', 'source.coa.jsonl'],
      },
      content: read(OUTPUTS.injection),
    },
  ]);
}

let passed = 0;
let failed = 0;
const ok = (name) => {
  passed++;
  if (process.env.VERBOSE) console.log(`  ok  ${name}`);
};
const fail = (name, detail) => {
  failed++;
  console.log(`FAIL ${name}${detail ? `\n     ${detail}` : ''}`);
};

async function dump(file) {
  const tc = parseGrammarTestCase(readFileSync(file, 'utf8'));
  const grammar = await registry().loadGrammar(tc.metadata.scope);
  let stack = null;
  for (const line of tc.source) {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    console.log(JSON.stringify(line));
    for (const t of r.tokens)
      console.log(
        `  ${t.startIndex}-${t.endIndex} ${JSON.stringify(line.slice(t.startIndex, t.endIndex))}  ${t.scopes.slice(1).join(' ')}`,
      );
  }
}

/** Every generated file must equal what grammar-gen.mjs writes from the current dialect table. */
async function checkGenerated(dialects) {
  for (const [path, text] of Object.entries(renderAll(dialects))) {
    let onDisk = '';
    try {
      onDisk = read(path);
    } catch {
      /* missing */
    }
    if (onDisk === text) ok(`generated ${path} is up to date`);
    else fail(`generated ${path} is stale`, 'run: node scripts/grammar-gen.mjs');
  }
}

/** Folding markers as VS Code applies them (one regex per line, start tried before end). */
function checkFolding() {
  const cfg = JSON.parse(read(OUTPUTS.config));
  const start = new RegExp(cfg.folding.markers.start);
  const end = new RegExp(cfg.folding.markers.end);
  const cases = [
    ['<think>', 'start'],
    ['Reasoning... <begin_search> q </end_search>', 'none'],
    ['<search> q </search>', 'none'],
    ['more reasoning</think>', 'end'],
    ['<information>Doc 1(Title: "X") text', 'start'],
    ['text</information>', 'end'],
    ['<search_result>', 'start'],
    ['</search_result>', 'end'],
    ['<answer> Herman Wouk </answer>', 'none'],
    ['plain text', 'none'],
  ];
  for (const [line, want] of cases) {
    const got = start.test(line) ? 'start' : end.test(line) ? 'end' : 'none';
    if (got === want) ok(`folding ${JSON.stringify(line)}`);
    else fail(`folding ${JSON.stringify(line)}`, `expected ${want}, got ${got}`);
  }
  for (const p of [OUTPUTS.config, OUTPUTS.jsonlConfig]) {
    const c = JSON.parse(read(p));
    const closes = new Map(c.brackets.map(([o, cl]) => [o, cl]));
    const bad = c.autoClosingPairs.filter((a) => closes.has(a.open) && closes.get(a.open) !== a.close);
    if (bad.length === 0) ok(`${p}: auto-closing pairs agree with brackets`);
    else fail(`${p}: auto-closing pairs disagree with brackets`, JSON.stringify(bad));
  }
}

async function runAssertionFiles() {
  const reg = registry();
  const files = readdirSync(TEST_DIR)
    .filter((f) => f.includes('.test.'))
    .sort();
  if (files.length === 0) fail('test/grammar has no test files');
  for (const f of files) {
    const path = join(TEST_DIR, f);
    const name = relative(ROOT, path);
    let tc;
    try {
      tc = parseGrammarTestCase(readFileSync(path, 'utf8'));
    } catch (e) {
      fail(`${name}: cannot parse`, e.message);
      continue;
    }
    const all = tc.assertions.flatMap((la) => la.scopeAssertions.map((a) => ({ ...a, line: la.testCaseLineNumber })));
    let failures;
    try {
      failures = await runGrammarTestCase(reg, tc);
    } catch (e) {
      fail(`${name}: grammar error`, e.message);
      continue;
    }
    // Map each reported token failure back to the assertion(s) it belongs to.
    const bad = new Set();
    for (const x of failures) {
      all.forEach((a, i) => {
        if (a.line === x.line && a.from < x.end && a.to > x.start) bad.add(i);
      });
      const src = tc.source[x.srcLine] ?? '';
      console.log(
        `FAIL ${name}:${x.line + 1} cols ${x.start}-${x.end} ${JSON.stringify(src.slice(x.start, x.end))}` +
          `\n     missing: ${x.missing.join(' ') || '-'}  unexpected: ${x.unexpected.join(' ') || '-'}\n     actual:  ${x.actual.join(' ')}`,
      );
    }
    failed += bad.size;
    passed += all.length - bad.size;
    console.log(`${bad.size ? 'FAIL' : 'ok  '} ${name}: ${all.length - bad.size}/${all.length} assertions`);
  }
}

const dumpAt = process.argv.indexOf('--dump');
if (dumpAt > 0) {
  await dump(process.argv[dumpAt + 1]);
} else {
  await checkGenerated(await loadDialects());
  checkFolding();
  await runAssertionFiles();
  console.log(`grammar: ${passed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}
