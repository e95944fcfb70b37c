// The test suites `npm test` runs, in order. Each: name, command (argv array), optional counts() reader giving
// passed, failed and the skipped tests with their reasons (scripts/skips.mjs).
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { junitSkips, tapSkips } from './skips.mjs';

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

/** Counts from a TAP file written by node's test runner (skipped and todo tests listed, not passed). */
export function tapCounts(file) {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const num = (k) => Number((text.match(new RegExp(`^# ${k} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
  return { passed: num('pass'), failed: num('fail') + num('cancelled'), skipped: tapSkips(text) };
}

/** Counts from a JUnit XML file written by pytest (junit_family=xunit1: each test names its file). */
export function junitCounts(file) {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const tag = (text.match(/<testsuite [^>]*>/) ?? [''])[0];
  const attr = (k) => Number((tag.match(new RegExp(`${k}="(\\d+)"`)) ?? [])[1] ?? 0);
  return {
    passed: attr('tests') - attr('failures') - attr('errors') - attr('skipped'),
    failed: attr('failures') + attr('errors'),
    skipped: junitSkips(text),
  };
}

/**
 * pytest over `dir` in the project's .venv, its JUnit report read for counts and skips. `parallel`: over one
 * pytest-xdist worker per core (most tests wait on a single-threaded trainer subprocess), each idle worker taking the
 * next test (worksteal: durations range from milliseconds to minutes).
 */
function pytestSuite(name, dir, { parallel = false } = {}) {
  const xml = `.cache/${name}.xml`;
  return {
    name,
    command: () => [
      venvPython,
      '-m',
      'pytest',
      dir,
      '-q',
      '-p',
      'no:cacheprovider',
      '-o',
      'junit_family=xunit1',
      `--junitxml=${xml}`,
      ...(parallel ? ['-n', 'auto', '--dist', 'worksteal'] : []),
      '--durations=15',
    ],
    counts: () => junitCounts(xml),
  };
}
/** Written by scripts/test-e2e.mjs (removed when it starts, so a report is this run's). */
const E2E_TAP = '.cache/e2e.tap';
const venvPython = process.platform === 'win32' ? '.venv/Scripts/python.exe' : '.venv/bin/python';

/** A node:test suite over every `*.test.ts` below `dir`. */
function nodeSuite(name, dir, extra = {}) {
  const tap = `.cache/${name}.tap`;
  return {
    name,
    command: () => [
      process.execPath,
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=1',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
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
  pytestSuite('python', 'src/trainer/tests', { parallel: true }),
  // Chaos drills: seeded SIGKILLs of the pipeline, an SFT and an RL stage → nothing left running, resumes
  // finish, the same final models as an uninterrupted run, each step event once; prints `chaos: N of M SIGKILLs survived …`.
  // One at a time: a drill counts the processes left on the machine.
  pytestSuite('chaos', 'test/chaos'),
  // Real-editor tests: code-server + Playwright (setup cached in .cache/e2e, ~5 min once); prints `e2e: N passed, M
  // failed` (setup or packaging failed: no TAP report, that line is the count).
  {
    name: 'e2e',
    command: () => [process.execPath, 'scripts/test-e2e.mjs'],
    counts: () => (existsSync(E2E_TAP) ? tapCounts(E2E_TAP) : null),
  },
];
