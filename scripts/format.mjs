// `npm run format`: Biome formats the TypeScript, JavaScript, JSON and CSS (biome.jsonc) and ruff format the Python
// (ruff.toml's [format]), in place. `--check` writes nothing: it prints file:line:col rule message for each file a
// formatter would change and exits 1; the `lint` suite runs the same check through formatProblems().
// Usage: node scripts/format.mjs [--check]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');
const ruff = join(root, process.platform === 'win32' ? '.venv/Scripts/ruff.exe' : '.venv/bin/ruff');
const biome = join(root, 'node_modules/@biomejs/biome/bin/biome');

/** Runs argv (no shell) in the repository root; resolves to its exit status and output. */
function run(argv) {
  return new Promise((done, fail) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

function requireTools() {
  if (!existsSync(biome)) throw new Error(`${biome} is missing: run npm install (@biomejs/biome is a devDependency)`);
  if (!existsSync(ruff))
    throw new Error(`${ruff} is missing: run npm run setup:python (ruff is pinned in src/trainer/requirements.txt)`);
}

/** A GitHub workflow command's escaped property or message (`%2C` for a comma, `%0A` for a newline …) as text. */
const unescape = (s) => s.replace(/%(0D|0A|3A|2C|25)/gi, (_, h) => String.fromCharCode(parseInt(h, 16)));

/** Biome's check: one `::error title=format,file=…,line=…,col=…::message` line per file it would change (or could
 * not parse): the GitHub-annotation reporter, a documented line format (Biome's JSON reporter is experimental). */
async function biomeProblems() {
  const r = await run([process.execPath, biome, 'format', '--reporter=github', '--max-diagnostics=none', '.']);
  const problems = [];
  for (const line of r.stdout.split('\n')) {
    const m = line.match(
      /^::(?:error|warning) title=([^,]*),file=([^,]*),line=(\d+)(?:,endLine=\d+)?,col=(\d+)[^:]*::(.*)$/,
    );
    if (!m) continue;
    const [, title, file, row, col, message] = m;
    // a format finding is about the whole file (Biome points it at 1:2); a parse error at its place
    const whole = title === 'format';
    problems.push({
      file: relative(root, unescape(file)),
      line: whole ? 1 : Number(row),
      column: whole ? 1 : Number(col),
      rule: `biome:${title}`,
      message: whole ? 'not formatted: npm run format rewrites it' : unescape(message),
    });
  }
  // exit 1 with problems listed is the check failing; anything else unexplained is Biome itself failing
  if (r.status !== 0 && !problems.length)
    throw new Error(`biome format exited ${r.status}: ${(r.stderr || r.stdout).slice(-2000)}`);
  return problems;
}

/** ruff's check: one `unformatted` entry per file, at the first line it would change (or where it could not parse). */
async function ruffProblems() {
  const r = await run([ruff, 'format', '--check', '--force-exclude', '--output-format', 'json', '.']);
  // exit 0: formatted, 1: some file would change, 2: some file did not parse (listed too) or ruff itself failed
  let found;
  try {
    found = JSON.parse(r.stdout || '[]');
  } catch {
    throw new Error(`ruff format exited ${r.status}: ${(r.stderr || r.stdout).slice(-2000)}`);
  }
  if (r.status !== 0 && !found.length)
    throw new Error(`ruff format exited ${r.status}: ${(r.stderr || r.stdout).slice(-2000)}`);
  return found.map((d) => ({
    file: relative(root, d.filename),
    line: d.location?.row ?? 1,
    column: d.location?.column ?? 1,
    rule: `ruff-format:${d.code ?? 'unformatted'}`,
    message: d.code === 'unformatted' ? 'not formatted: npm run format rewrites it' : d.message,
  }));
}

/** Every file Biome or ruff format would change: [{ file, line, column, rule, message }], paths from the root. */
export async function formatProblems() {
  requireTools();
  const [js, py] = await Promise.all([biomeProblems(), ruffProblems()]);
  return [...js, ...py];
}

/** Rewrites every file in place; prints what each formatter reports. */
async function formatAll() {
  requireTools();
  // Biome's layout of a call chain can settle only on a second pass (on this tree's first reformat: 2 files of 397),
  // so it runs until its own check passes — what the lint suite checks is what this writes.
  for (let pass = 1; ; pass++) {
    await write([process.execPath, biome, 'format', '--write', '.']);
    const left = (await biomeProblems()).filter((p) => p.rule === 'biome:format');
    if (!left.length) break;
    if (pass === 3) throw new Error(`Biome still changes ${left.map((p) => p.file).join(', ')} after ${pass} passes`);
  }
  await write([ruff, 'format', '--force-exclude', '.']);
}

async function write(argv) {
  const r = await run(argv);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  if (r.status !== 0) throw new Error(`${argv.slice(-3).join(' ')} exited ${r.status}`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    if (process.argv.includes('--check')) {
      const problems = await formatProblems();
      for (const p of problems) console.log(`${p.file}:${p.line}:${p.column} ${p.rule} ${p.message}`);
      console.log(
        `format: ${problems.length ? `${problems.length} files to format (npm run format)` : 'every file formatted'}`,
      );
      process.exit(problems.length ? 1 : 0);
    }
    await formatAll();
  } catch (e) {
    console.error(`format: ${e.message}`);
    process.exit(1);
  }
}
