// The test suites `npm test` runs, in order. Each: name, command (argv array), optional counts() reader.
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

function listFiles(dir, suffix) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listFiles(path, suffix));
    else if (name.endsWith(suffix)) out.push(path);
  }
  return out.sort();
}

/** Counts from a TAP file written by node's test runner. */
function tapCounts(file) {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const num = (k) => Number((text.match(new RegExp(`^# ${k} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
  return { passed: num('pass'), failed: num('fail') + num('cancelled') };
}

/** Counts from a JUnit XML file written by pytest. */
function junitCounts(file) {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const tag = (text.match(/<testsuite [^>]*>/) ?? [''])[0];
  const attr = (k) => Number((tag.match(new RegExp(`${k}="(\\d+)"`)) ?? [])[1] ?? 0);
  return { passed: attr('tests') - attr('failures') - attr('errors') - attr('skipped'), failed: attr('failures') + attr('errors') };
}
const venvPython = process.platform === 'win32' ? '.venv/Scripts/python.exe' : '.venv/bin/python';

/** A node:test suite over every `*.test.ts` below `dir`. */
function nodeSuite(name, dir, extra = {}) {
  const tap = `.cache/${name}.tap`;
  return {
    name,
    command: () => [
      process.execPath, '--import', 'tsx', '--test', '--test-concurrency=1',
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`,
      ...listFiles(dir, '.test.ts'),
    ],
    counts: () => tapCounts(tap),
    ...extra,
  };
}

export const suites = [
  { name: 'typecheck', command: () => [process.execPath, 'node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'] },
  // typescript-eslint + ruff (eslint.config.mjs, ruff.toml); prints `lint: N passed, M failed` (files).
  { name: 'lint', command: () => [process.execPath, 'scripts/lint.mjs'] },
  nodeSuite('unit', 'test/unit'),
  // Webview pages in headless Chromium (Debian chromium + playwright-core).
  nodeSuite('webview', 'test/webview', { before: () => [process.execPath, 'scripts/setup-e2e.mjs', '--system-only'] }),
  // TextMate grammars: vscode-tmgrammar-test assertions; prints `grammar: N passed, M failed`.
  { name: 'grammar', command: () => [process.execPath, 'scripts/test-grammar.mjs'] },
  // The Python trainer, in the project's .venv (made by `npm install` → scripts/setup-python.mjs).
  {
    name: 'python',
    command: () => [venvPython, '-m', 'pytest', 'src/trainer/tests', '-q', '-p', 'no:cacheprovider', '--junitxml=.cache/python.xml'],
    counts: () => junitCounts('.cache/python.xml'),
  },
  // Chaos drills (issue 18): seeded SIGKILLs of the pipeline, an SFT and an RL stage → nothing left running, resumes
  // finish, the same final models as an uninterrupted run, each step event once; prints `chaos: N of M SIGKILLs survived …`.
  {
    name: 'chaos',
    command: () => [venvPython, '-m', 'pytest', 'test/chaos', '-q', '-p', 'no:cacheprovider', '--junitxml=.cache/chaos.xml'],
    counts: () => junitCounts('.cache/chaos.xml'),
  },
  // Real-editor tests: code-server + Playwright (setup cached in .cache/e2e, ~5 min once); prints `e2e: N passed, M failed`.
  { name: 'e2e', command: () => [process.execPath, 'scripts/test-e2e.mjs'] },
];
