// `npm run bench [name…]`: runs each benchmark in bench/<name>/run.ts; each rewrites its section of bench/RESULTS.md.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const all = readdirSync(join(root, 'bench'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, 'bench', d.name, 'run.ts')))
  .map((d) => d.name)
  .sort();
const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : all;
let failed = 0;
for (const name of names) {
  if (!all.includes(name)) {
    console.error(`bench: no bench/${name}/run.ts (known: ${all.join(', ')})`);
    failed++;
    continue;
  }
  console.log(`\n=== bench ${name} ===`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join('bench', name, 'run.ts')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
console.log(`\nbench: ${names.length - failed} ran, ${failed} failed — results in bench/RESULTS.md`);
process.exit(failed ? 1 : 0);
