// Creates the trainer's Python environment: `.venv/` in the repository root with the pinned requirements of
// src/trainer and the `coa_trainer` package made importable through a .pth file (no build step).
// Run by `npm install` (postinstall). Idempotent: a stamp of the inputs makes a second run a no-op.
//   COA_PYTHON=/path/to/python3   interpreter used to create the venv (default: python3, then python)
//   COA_PIP_ARGS="--index-url …"  extra pip arguments (e.g. a CPU-only PyTorch index)
//   COA_SKIP_PYTHON=1             skip entirely (editor-only installs)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const trainerDir = join(root, 'src', 'trainer');
const requirements = join(trainerDir, 'requirements.txt');
const venv = join(root, '.venv');
const isWindows = process.platform === 'win32';
const venvPython = isWindows ? join(venv, 'Scripts', 'python.exe') : join(venv, 'bin', 'python');
const stampFile = join(venv, '.coa-setup-stamp');

function log(message) {
  console.log(`setup-python: ${message}`);
}
function fail(message) {
  console.error(`setup-python: error: ${message}`);
  process.exit(1);
}
/** Runs argv (no shell); returns { status, stdout, stderr }. `inherit` streams output to the terminal. */
function run(argv, { inherit = false } = {}) {
  const [cmd, ...args] = argv;
  const result = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: inherit ? 'inherit' : 'pipe' });
  if (result.error && result.error.code !== 'ENOENT') fail(`could not run ${cmd}: ${result.error.message}`);
  return { status: result.error ? -1 : result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

if (process.env.COA_SKIP_PYTHON === '1') {
  log('COA_SKIP_PYTHON=1: skipping the trainer environment');
  process.exit(0);
}

// 1. Find an interpreter >= 3.10.
const candidates = process.env.COA_PYTHON
  ? [process.env.COA_PYTHON]
  : isWindows
    ? ['python', 'py']
    : ['python3', 'python'];
let python = null;
let version = '';
for (const candidate of candidates) {
  const probe = run([candidate, '-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])']);
  if (probe.status === 0) {
    python = candidate;
    version = probe.stdout.trim();
    break;
  }
}
if (!python) {
  fail(
    `no Python interpreter found (tried ${candidates.join(', ')}). Install Python >= 3.10 and re-run ` +
      '`npm run setup:python`, or point COA_PYTHON at one; set COA_SKIP_PYTHON=1 to install the editor only.',
  );
}
const [major, minor] = version.split('.').map(Number);
if (major < 3 || (major === 3 && minor < 10))
  fail(`${python} is Python ${version}; the trainer needs >= 3.10 (set COA_PYTHON)`);

// 2. Is everything already in place?
const pipArgs = (process.env.COA_PIP_ARGS ?? '').split(/\s+/).filter(Boolean);
const stamp = createHash('sha256')
  .update(readFileSync(requirements))
  .update(`${version}\n${trainerDir}\n${pipArgs.join(' ')}`)
  .digest('hex');
if (existsSync(venvPython) && existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === stamp) {
  if (run([venvPython, '-c', 'import coa_trainer, torch, transformers']).status === 0) {
    log(`.venv is up to date (Python ${version}); nothing to do`);
    process.exit(0);
  }
  log('.venv stamp matches but imports fail; reinstalling');
}

// 3. Create the venv.
if (!existsSync(venvPython)) {
  log(`creating .venv with ${python} (Python ${version})`);
  if (run([python, '-m', 'venv', venv], { inherit: true }).status !== 0) {
    fail(`\`${python} -m venv .venv\` failed (on Debian/Ubuntu: apt-get install python3-venv)`);
  }
}

// 4. Install the pinned requirements.
log(`pip install -r src/trainer/requirements.txt ${pipArgs.join(' ')} (PyTorch is large: the first run takes minutes)`);
const started = Date.now();
const pip = run([venvPython, '-m', 'pip', 'install', '--disable-pip-version-check', '-r', requirements, ...pipArgs], {
  inherit: true,
});
if (pip.status !== 0)
  fail('pip install failed (see the output above); re-run `node scripts/setup-python.mjs` when fixed');
log(`requirements installed in ${((Date.now() - started) / 1000).toFixed(0)} s`);

// 5. Make `coa_trainer` importable from the source tree (edits take effect without reinstalling).
const purelib = run([venvPython, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])']);
if (purelib.status !== 0) fail(`could not locate site-packages of ${venvPython}`);
const pth = join(purelib.stdout.trim(), 'coa_trainer.pth');
writeFileSync(pth, `${trainerDir}\n`);
log(`wrote ${pth}`);

const check = run([venvPython, '-c', 'import coa_trainer; print(coa_trainer.__version__)']);
if (check.status !== 0) fail(`coa_trainer does not import from .venv:\n${check.stderr}`);
writeFileSync(stampFile, `${stamp}\n`);
log(`ready: ${venvPython} (coa_trainer ${check.stdout.trim()})`);
