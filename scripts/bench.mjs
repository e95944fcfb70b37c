// `npm run bench [name…]`: runs each benchmark in bench/<name>/run.ts (Node) or run.py (the project's .venv);
// each rewrites its section of bench/RESULTS.md.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const all = readdirSync(join(root, 'bench'), { withFileTypes: true })
  .filter(
    (d) =>
      d.isDirectory() &&
      (existsSync(join(root, 'bench', d.name, 'run.ts')) || existsSync(join(root, 'bench', d.name, 'run.py'))),
  )
  .map((d) => d.name)
  .sort();
const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : all;
let failed = 0;
for (const name of names) {
  if (!all.includes(name)) {
    console.error(`bench: no bench/${name}/run.ts or run.py (known: ${all.join(', ')})`);
    failed++;
    continue;
  }
  console.log(`\n=== bench ${name} ===`);
  const python = join(root, process.platform === 'win32' ? '.venv/Scripts/python.exe' : '.venv/bin/python');
  const argv = existsSync(join(root, 'bench', name, 'run.ts'))
    ? [process.execPath, '--import', 'tsx', join('bench', name, 'run.ts')]
    : [python, join('bench', name, 'run.py'), '--write'];
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
console.log(`\nbench: ${names.length - failed} ran, ${failed} failed — results in bench/RESULTS.md`);
process.exit(failed ? 1 : 0);
