// Honest counts: every suite's skipped tests are read from the runner's own report with their reasons,
// and under CI a skip not on test/skip-allowlist.json fails — in pytest itself (test/skip_policy.py, imported by
// each pytest suite's conftest.py) and in npm test's summary (scripts/skips.mjs). Real runs of both runners.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ALLOWLIST, allowedBy, junitSkips, readAllowList, tapSkips, underCI } from '../../../scripts/skips.mjs';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const PYTHON = join(ROOT, '.venv', 'bin', 'python');

test('node:test skips, todos and nested skips come out of the TAP report with their reasons', () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-skips-'));
  const file = join(dir, 'x.test.mjs');
  writeFileSync(
    file,
    [
      "import test from 'node:test';",
      "test('needs the venv', (t) => t.skip('no .venv: run npm install'));",
      "test('a # in its name', { skip: 'chromium missing' }, () => {});",
      "test('later', { todo: 'not written yet' }, () => {});",
      "test('runs', () => {});",
      "test('group', async (t) => { await t.test('inner', (t) => t.skip('inner why')); await t.test('fine', () => {}); });",
    ].join('\n'),
  );
  // Without NODE_TEST_CONTEXT the child reports on its own (with it, it would stream to this runner instead).
  const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { encoding: 'utf8', env });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(tapSkips(r.stdout), [
    { test: 'needs the venv', reason: 'no .venv: run npm install' },
    { test: 'a # in its name', reason: 'chromium missing' },
    { test: 'later', reason: 'todo: not written yet' },
    { test: 'group > inner', reason: 'inner why' },
  ]);
  assert.match(r.stdout, /^# pass 3$/m, 'skipped tests are not counted as passed');
});

/** pytest over a scratch suite whose conftest.py loads the skip policy as the project's conftests do. */
function pytest(env: Record<string, string>): { status: number | null; out: string; xml: string } {
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run npm install (it creates the trainer's .venv)`);
  const dir = mkdtempSync(join(tmpdir(), 'coa-pyskips-'));
  // its own ini file: a pytest.ini / setup.cfg / pyproject.toml above the temp dir must not become rootdir or config
  writeFileSync(join(dir, 'pytest.ini'), '[pytest]\n');
  writeFileSync(
    join(dir, 'conftest.py'),
    `import sys\nsys.path.append(${JSON.stringify(join(ROOT, 'test'))})\nfrom skip_policy import pytest_runtest_makereport  # noqa\n`,
  );
  writeFileSync(
    join(dir, 'test_x.py'),
    [
      'import pytest',
      '@pytest.fixture',
      'def server():',
      '    pytest.skip("environment server: dist/env-worker.js is missing")',
      'def test_search(server):',
      '    pass',
      '@pytest.mark.skipif(True, reason="node not on PATH")',
      'def test_cli():',
      '    pass',
      'def test_fine():',
      '    pass',
    ].join('\n'),
  );
  const xml = join(dir, 'out.xml');
  const { CI: _ci, ...base } = process.env;
  const r = spawnSync(
    PYTHON,
    [
      '-m',
      'pytest',
      dir,
      `--rootdir=${dir}`,
      '-q',
      '-p',
      'no:cacheprovider',
      '-o',
      'junit_family=xunit1',
      `--junitxml=${xml}`,
    ],
    { encoding: 'utf8', env: { ...base, ...env } },
  );
  return { status: r.status, out: r.stdout + r.stderr, xml: readFileSync(xml, 'utf8') };
}

test('pytest: outside CI a missing prerequisite is a skip, listed with its reason and file', () => {
  const r = pytest({});
  assert.equal(r.status, 0, r.out);
  assert.deepEqual(
    junitSkips(r.xml).map(({ test, file, reason }) => ({ test, file, reason })),
    [
      { test: 'test_search', file: 'test_x.py', reason: 'environment server: dist/env-worker.js is missing' },
      { test: 'test_cli', file: 'test_x.py', reason: 'node not on PATH' },
    ],
  );
});

test('pytest: under CI the same skips fail, naming the reason and the allow-list', () => {
  const r = pytest({ CI: 'true' });
  assert.equal(r.status, 1, r.out);
  assert.deepEqual(junitSkips(r.xml), []);
  assert.match(r.out, /skipped under CI: environment server: dist\/env-worker\.js is missing/);
  assert.match(r.out, /skipped under CI: node not on PATH/);
  assert.match(r.out, /test\/skip-allowlist\.json/);
  assert.match(r.out, /1 passed/);
});

test('the allow-list is short, every entry has a reason, and both languages match an entry the same way', () => {
  const allow = readAllowList();
  assert.ok(allow.length <= 10, `${allow.length} allowed skips: keep ${ALLOWLIST} short`);
  for (const e of allow) assert.ok(e.reason.length >= 20, `${e.test}: say why the skip is right`);
  const flash = allow.find((e) => e.test === 'test_flash_attention_without_its_package_is_a_clear_error')!;
  // pytest's JUnit report names the file relative to its rootdir (src/trainer): the entry's repository path still matches.
  assert.equal(
    allowedBy(allow, 'python', {
      test: flash.test,
      file: 'tests/test_scale.py',
      reason: 'flash-attn is installed here',
    }),
    flash,
  );
  assert.equal(allowedBy(allow, 'python', { test: flash.test, file: 'tests/test_other.py', reason: 'x' }), undefined);
  assert.equal(allowedBy(allow, 'unit', { test: flash.test, reason: 'x' }), undefined);
  const py = spawnSync(
    PYTHON,
    [
      '-c',
      [
        'import sys; from pathlib import Path',
        `sys.path.append(${JSON.stringify(join(ROOT, 'test'))})`,
        'import skip_policy as s',
        `print(bool(s.allowed(Path(${JSON.stringify(join(ROOT, flash.file!))}), ${JSON.stringify(flash.test)}, s.allow_list())), bool(s.allowed(Path(${JSON.stringify(join(ROOT, 'src/trainer/tests/test_x.py'))}), ${JSON.stringify(flash.test)}, s.allow_list())))`,
      ].join('\n'),
    ],
    { encoding: 'utf8' },
  );
  assert.equal(py.stdout.trim(), 'True False', py.stderr);
});

test('CI is on for CI=true / 1 / yes, off when unset, empty or false', () => {
  assert.deepEqual(
    ['true', 'TRUE', '1', 'yes', '', 'false', '0', undefined].map((CI) => underCI({ CI })),
    [true, true, true, true, false, false, false, false],
  );
});
