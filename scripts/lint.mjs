// The `lint` suite: ESLint with typescript-eslint (eslint.config.mjs) over the TypeScript and scripts, ruff
// (ruff.toml) over the Python, pyright (pyrightconfig.json: the trainer package in standard mode, with .venv's
// packages) type-checking the trainer, and the formatters' check (scripts/format.mjs: Biome, ruff format). Prints each
// problem as file:line:col rule message, then `lint: N passed, M failed` where a file passes when no checker reports
// anything in it.
// Usage: node scripts/lint.mjs   (the fixes most rules have: npx eslint . --fix; .venv/bin/ruff check . --fix;
// the layout: npm run format; one Python file's types: npx pyright src/trainer/coa_trainer/x.py)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { formatProblems } from './format.mjs';

const root = resolve(import.meta.dirname, '..');
const ruff = join(root, process.platform === 'win32' ? '.venv/Scripts/ruff.exe' : '.venv/bin/ruff');

function run(argv) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error) throw new Error(`${argv[0]}: ${r.error.message}`);
  return r;
}

/** pyright's run over the trainer, started first: it takes the longest (it reads torch's and transformers' types), so
 * it runs while ESLint and ruff do. Resolves to its JSON report's text. */
function startPyright() {
  const bin = join(root, 'node_modules/pyright/index.js');
  if (!existsSync(bin))
    return Promise.reject(new Error(`${bin} is missing: run npm install (pyright is a devDependency)`));
  if (!existsSync(join(root, '.venv')))
    return Promise.reject(
      new Error(".venv is missing: pyright reads the trainer's packages from it (npm run setup:python)"),
    );
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [bin, '--outputjson', '-p', join(root, 'pyrightconfig.json')], { cwd: root });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', fail);
    // exit 0: no errors, 1: errors reported; anything else is pyright itself failing
    child.on('close', (code) =>
      code === 0 || code === 1 ? done(out) : fail(new Error(`pyright exited ${code}: ${(err || out).slice(-2000)}`)),
    );
  });
}

/** pyright's diagnostics by file (errors and warnings; information notes are not problems). */
function pyrightProblems(report) {
  const byFile = new Map();
  for (const d of JSON.parse(report).generalDiagnostics ?? []) {
    if (d.severity === 'information') continue;
    const file = relative(root, d.file);
    if (!byFile.has(file)) byFile.set(file, []);
    byFile.get(file).push({
      line: (d.range?.start.line ?? 0) + 1,
      column: (d.range?.start.character ?? 0) + 1,
      rule: `pyright:${d.rule ?? d.severity}`,
      message: d.message.replace(/\s*\n\s*/g, ' '),
    });
  }
  return byFile;
}

/** [{ file, problems: [{ line, column, rule, message }] }] from the checkers. */
async function lint() {
  const pyright = startPyright();
  pyright.catch(() => {}); // awaited below; a failure before then is reported there
  const formatting = formatProblems(); // Biome and ruff format, alongside ESLint and ruff check
  formatting.catch(() => {});
  const byFile = new Map(); // file → its problems, every checker's; a file any checker read is listed
  const add = (file, problems) => {
    if (!byFile.has(file)) byFile.set(file, []);
    byFile.get(file).push(...problems);
  };
  const es = run([process.execPath, join(root, 'node_modules/eslint/bin/eslint.js'), '.', '--format', 'json']);
  if (!es.stdout.trim()) throw new Error(`eslint produced no report (exit ${es.status}): ${es.stderr.slice(-2000)}`);
  for (const f of JSON.parse(es.stdout)) {
    add(
      relative(root, f.filePath),
      f.messages.map((m) => ({
        line: m.line ?? 0,
        column: m.column ?? 0,
        rule: m.ruleId ?? 'eslint',
        message: m.message,
      })),
    );
  }
  if (!existsSync(ruff))
    throw new Error(`${ruff} is missing: run npm run setup:python (ruff is pinned in src/trainer/requirements.txt)`);
  const py = run([ruff, 'check', '.', '--output-format', 'json', '--exit-zero']);
  const checked = run([ruff, 'check', '.', '--show-files'])
    .stdout.split('\n')
    .filter((l) => l.trim().endsWith('.py'));
  for (const f of checked) add(relative(root, f.trim()), []);
  for (const d of JSON.parse(py.stdout || '[]')) {
    add(relative(root, d.filename), [
      { line: d.location.row, column: d.location.column, rule: d.code ?? 'ruff', message: d.message },
    ]);
  }
  for (const [file, problems] of pyrightProblems(await pyright)) add(file, problems);
  for (const { file, ...problem } of await formatting) add(file, [problem]);
  return [...byFile].map(([file, problems]) => ({ file, problems }));
}

try {
  const files = await lint();
  const bad = files.filter((f) => f.problems.length);
  for (const f of bad)
    for (const p of f.problems) console.log(`${f.file}:${p.line}:${p.column} ${p.rule} ${p.message}`);
  const problems = bad.reduce((n, f) => n + f.problems.length, 0);
  console.log(`lint: ${files.length} files, ${problems} problems (eslint + ruff + pyright + biome/ruff format)`);
  console.log(`lint: ${files.length - bad.length} passed, ${bad.length} failed`);
  process.exit(bad.length ? 1 : 0);
} catch (e) {
  console.error(`lint: ${e.message}`);
  console.log('lint: 0 passed, 1 failed');
  process.exit(1);
}
