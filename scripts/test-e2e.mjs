// The `e2e` suite: setup-e2e (one-time code-server install, cached), package-vsix, then the real-editor tests in
// test/e2e/*.test.ts one file at a time. Prints `e2e: N passed, M failed` (a failed setup counts as one failure).
// Usage: node scripts/test-e2e.mjs [test/e2e/x.test.ts …]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setupE2E } from './setup-e2e.mjs';
import { tapSkips } from './skips.mjs';

const root = resolve(import.meta.dirname, '..');
const tap = join(root, '.cache', 'e2e.tap');
const started = Date.now();
// npm test reads this run's report (scripts/suites.mjs): an old one must not stand in for a failed setup.
rmSync(tap, { force: true });
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;

function fail(step, err) {
  console.error(`e2e: ${step} failed: ${err}`);
  console.log('e2e: 0 passed, 1 failed');
  process.exit(1);
}

let setup;
try {
  setup = setupE2E();
} catch (e) {
  fail('setup', e.message);
}
console.log(`e2e: setup ready (${elapsed()})`);

const pack = spawnSync(process.execPath, [join(root, 'scripts', 'package-vsix.mjs')], { cwd: root, stdio: 'inherit' });
if (pack.status !== 0) fail('package-vsix', `exit ${pack.status ?? pack.signal}`);
console.log(`e2e: vsix packaged (${elapsed()})`);

const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : readdirSync(join(root, 'test', 'e2e'))
      .filter((f) => f.endsWith('.test.ts'))
      .sort()
      .map((f) => join('test', 'e2e', f));
mkdirSync(join(root, '.cache'), { recursive: true });
// The harness installs the vsix with code-server's CLI once per run here and copies it into each editor's
// extensions dir (test/e2e/harness.ts installVsix).
const installCache = mkdtempSync(join(tmpdir(), 'coa-e2e-install-'));
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=1',
    '--test-timeout=420000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...files,
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      COA_E2E_NODE: setup.nodeBin,
      COA_E2E_CODE_SERVER: setup.codeServerBin,
      COA_E2E_INSTALL_CACHE: installCache,
    },
  },
);
rmSync(installCache, { recursive: true, force: true });

const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
const num = (k) => Number((text.match(new RegExp(`^# ${k} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
const passed = num('pass');
const failed = num('fail') + num('cancelled') + (r.status !== 0 && num('fail') + num('cancelled') === 0 ? 1 : 0);
console.log(`e2e: screenshots and code-server logs in .cache/artifacts/e2e/ (${elapsed()})`);
const skipped = tapSkips(text);
for (const s of skipped) console.log(`e2e: skipped ${s.test} — ${s.reason}`);
console.log(`e2e: ${passed} passed, ${failed} failed, ${skipped.length} skipped`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
