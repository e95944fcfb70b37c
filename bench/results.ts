// Writes one benchmark's section of bench/RESULTS.md, replacing the previous run's section.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function writeResults(name: string, body: string): void {
  const path = join(__dirname, 'RESULTS.md');
  const text = existsSync(path)
    ? readFileSync(path, 'utf8')
    : '# Benchmark results\n\nEach section is rewritten by its benchmark script; the date says when it last ran.\n';
  const section = `## ${name}\n\n_Last run: ${new Date().toISOString().slice(0, 10)}_\n\n${body.trim()}\n`;
  const re = new RegExp(`## ${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\n[\\s\\S]*?(?=\\n## |$)`);
  writeFileSync(path, re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}`);
}
