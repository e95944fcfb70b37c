// Bundles every entry point with esbuild. One table: add a line when a new entry point appears.
import { build } from 'esbuild';
import { existsSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

// mainFields: prefer ESM builds (jsonc-parser's UMD build hides its requires from the bundler).
const node = {
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  bundle: true,
  sourcemap: true,
  logLevel: 'warning',
  mainFields: ['module', 'main'],
};
const browser = {
  platform: 'browser',
  target: 'es2022',
  format: 'iife',
  bundle: true,
  sourcemap: true,
  logLevel: 'warning',
};

/** [entry, outfile, options] */
const entries = [
  ['src/cli/main.ts', 'dist/cli.js', { ...node, external: ['tokenizers'] }], // tokenizers: a native addon (coa validate --tokens)
  ['src/extension/main.ts', 'dist/extension.js', { ...node, external: ['vscode', 'onnxruntime-node', 'tokenizers'] }], // native addons: shipped as node_modules
  ['src/server/main.ts', 'dist/server.js', node],
  ['src/env/search-worker.ts', 'dist/env-worker.js', node], // env server search/grade worker threads (started by src/env/search-pool.ts)
  ['src/env/otc-worker.ts', 'dist/otc-worker.js', node], // env server OTC-GRPO state thread (started by src/env/otcStates.ts)
  ['scripts/gen-schemas.ts', 'dist/gen-schemas.js', node],
  ['src/extension/providers/browser/worker.ts', 'dist/browser-worker.js', node], // trajectory browser index (worker thread)
  ['webview/browser/main.ts', 'dist/webview/browser.js', browser],
  ['webview/notebook-renderer/index.ts', 'dist/webview/notebook-renderer.js', { ...browser, format: 'esm' }], // notebook renderers are ES modules
  ['webview/live-panel/main.ts', 'dist/webview/live-panel.js', { ...browser, loader: { '.ttf': 'file' } }], // + live-panel.css, codicon font
  ['webview/compare/main.ts', 'dist/webview/compare.js', browser], // Compare runs
  ['webview/group/main.ts', 'dist/webview/group.js', browser], // GRPO group view
  ['webview/boundary/main.ts', 'dist/webview/boundary.js', browser], // Show Search Boundary
];

mkdirSync('dist', { recursive: true });
const started = Date.now();
const built = [];
for (const [entry, outfile, options] of entries) {
  // A missing entry point is an error, not a skip: a build that is green without its bundle hides a broken tree.
  if (!existsSync(entry)) throw new Error(`build: entry point ${entry} (for ${outfile}) does not exist`);
  await build({ ...options, entryPoints: [entry], outfile });
  built.push(outfile);
}
// Artefacts other languages read (run-config JSON Schema, dialect tags) come from the TypeScript sources: schemas/ for
// the editor and the tests, and the same files inside the Python package (its contracts travel with it: a trainer
// installed from src/trainer reads them there), then the typed Python classes generated from them.
if (built.includes('dist/gen-schemas.js')) {
  for (const out of ['schemas', 'src/trainer/coa_trainer/contracts/json'])
    execFileSync(process.execPath, ['dist/gen-schemas.js', out], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync(process.execPath, ['scripts/gen-python-contracts.mjs'], { stdio: ['ignore', 'ignore', 'inherit'] });
}
console.log(`build: ${built.length} bundles in ${Date.now() - started} ms (${built.join(', ')})`);
