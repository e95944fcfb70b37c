// `npm test`: runs every suite in order, prints one summary line per suite and a closing total.
// A suite fails the run if its command exits non-zero; counts are read from each runner's own report.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from "node:fs";
import { suites } from './suites.mjs';

const only = process.argv.slice(2);
mkdirSync('.cache', { recursive: true });
const results = [];
for (const suite of suites) {
  if (only.length && !only.includes(suite.name)) continue;
  const started = Date.now();
  console.log(`\n=== suite ${suite.name} ===`);
  const [cmd, ...args] = suite.command();
  const run = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...(suite.env ?? {}) } });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const counts = suite.counts ? suite.counts() : { passed: run.status === 0 ? 1 : 0, failed: run.status === 0 ? 0 : 1 };
  const ok = run.status === 0 && counts.failed === 0 && counts.passed > 0;
  results.push({ name: suite.name, ok, seconds, ...counts });
  console.log(`suite ${suite.name}: ${ok ? 'PASS' : 'FAIL'} — ${counts.passed} passed, ${counts.failed} failed in ${seconds}s${run.status !== 0 ? ` (exit ${run.status ?? run.signal})` : ''}`);
}

console.log('\n=== summary ===');
for (const r of results) console.log(`${r.ok ? 'PASS' : 'FAIL'}  ${r.name.padEnd(12)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(4)} failed  ${r.seconds}s`);
const passed = results.reduce((a, r) => a + r.passed, 0);
const failed = results.reduce((a, r) => a + r.failed, 0) + results.filter((r) => !r.ok && r.failed === 0).length;
console.log(`total: ${passed} passed, ${failed} failed`);
process.exit(results.every((r) => r.ok) && results.length > 0 ? 0 : 1);

