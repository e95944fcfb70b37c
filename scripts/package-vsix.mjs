// Builds the bundles, then packages the extension with @vscode/vsce into .cache/e2e/coa-studio.vsix.
// What goes in is .vscodeignore's allow-list (bundles, grammars, schemas, format rules, trainer sources,
// onnxruntime-node's and tokenizers' runtime files for this platform). Prints `vsix: <path> <size> (<files> files)`.
// vsce lists every file under the package root before applying .vscodeignore (only node_modules is pruned), which
// here means walking .venv and .cache (GBs: ~90 s). So it runs on a staged copy without those; the allow-list
// still decides what ships.
// Usage: node scripts/package-vsix.mjs [--no-build] [--out <path>]   (default: $COA_E2E_VSIX, the path the e2e harness
// installs, else .cache/e2e/coa-studio.vsix; the staged copy sits beside the output, so checkouts that share one
// .cache/e2e can each package their own)
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const outArg = args.indexOf('--out');
export const vsixPath =
  outArg >= 0
    ? resolve(args[outArg + 1])
    : process.env.COA_E2E_VSIX
      ? resolve(process.env.COA_E2E_VSIX)
      : join(root, '.cache', 'e2e', 'coa-studio.vsix');

// .vscodeignore ships onnxruntime-node's linux-x64 binaries only; the vsix says so with its target.
const TARGET = 'linux-x64';

// Top-level entries never staged (build caches, environments, data, tests); .vscodeignore filters the rest.
const NOT_STAGED = new Set(['node_modules', '.venv', '.cache', '.git', 'runs', 'bench', 'test', 'out', 'data']);
// Runtime node_modules (what extension.js requires, kept external by esbuild) and the subpaths worth copying.
const RUNTIME_MODULES = {
  'onnxruntime-node': ['package.json', 'LICENSE', 'dist', `bin/napi-v6/${TARGET.replace('-', '/')}`],
  'onnxruntime-common': ['package.json', 'dist/cjs'],
  // Hugging Face tokenizers' package holds every platform's binary (60 MB); its loader picks tokenizers.<platform>.node.
  tokenizers: ['package.json', 'LICENSE', 'index.js', `tokenizers.${TARGET}-gnu.node`],
};

/**
 * The staged package root. Its package.json and onnxruntime-node's name only the runtime modules as dependencies
 * (onnxruntime-node's adm-zip/global-agent serve its install script, which is not shipped), so vsce's
 * `npm list --production` sees a complete tree.
 */
function stage(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(root)) {
    if (!NOT_STAGED.has(name))
      cpSync(join(root, name), join(dir, name), { recursive: true, filter: (src) => !src.includes('__pycache__') });
  }
  for (const [mod, parts] of Object.entries(RUNTIME_MODULES)) {
    for (const part of parts) {
      const src = join(root, 'node_modules', mod, part);
      if (existsSync(src)) cpSync(src, join(dir, 'node_modules', mod, part), { recursive: true });
    }
  }
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  pkg.dependencies = {
    'onnxruntime-node': pkg.dependencies['onnxruntime-node'],
    tokenizers: pkg.dependencies.tokenizers,
  };
  delete pkg.scripts; // no prepare/postinstall side effects from vsce's npm calls
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  const ort = join(dir, 'node_modules', 'onnxruntime-node', 'package.json');
  const ortPkg = JSON.parse(readFileSync(ort, 'utf8'));
  ortPkg.dependencies = { 'onnxruntime-common': ortPkg.dependencies['onnxruntime-common'] };
  delete ortPkg.scripts;
  writeFileSync(ort, JSON.stringify(ortPkg, null, 2));
}

function run(argv, cwd = root) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) {
    process.stderr.write(`${r.stdout ?? ''}${r.stderr ?? ''}`);
    throw new Error(
      `${argv.slice(1).join(' ')} failed (exit ${r.status ?? r.signal}${r.error ? `: ${r.error.message}` : ''})`,
    );
  }
  return r.stdout;
}

try {
  if (`${process.platform}-${process.arch}` !== TARGET)
    throw new Error(
      `packaging is set up for ${TARGET} (see .vscodeignore), this is ${process.platform}-${process.arch}`,
    );
  const started = Date.now();
  if (!args.includes('--no-build')) process.stdout.write(run([process.execPath, 'scripts/build.mjs']));
  mkdirSync(dirname(vsixPath), { recursive: true });
  const vsce = join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
  const license = existsSync(join(root, 'LICENSE')) ? [] : ['--skip-license'];
  const stageDir = `${vsixPath}.stage`;
  stage(stageDir);
  const out = run(
    [
      process.execPath,
      vsce,
      'package',
      '--out',
      vsixPath,
      '--target',
      TARGET,
      '--allow-missing-repository',
      '--no-rewrite-relative-links',
      ...license,
    ],
    stageDir,
  );
  const files = Number((out.match(/Packaged: .*\((\d+) files?/) ?? [])[1] ?? NaN);
  const mib = (statSync(vsixPath).size / 1048576).toFixed(1);
  rmSync(stageDir, { recursive: true, force: true });
  console.log(`vsix: ${vsixPath} ${mib} MiB (${files} files) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (e) {
  console.error(`package-vsix: ${e.message}`);
  process.exit(1);
}
