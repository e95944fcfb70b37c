// `npm test`: runs every suite in order, prints one summary line per suite and a closing total.
// A suite fails the run if its command exits non-zero; counts come from each runner's own report. Skipped tests are
// printed with their reasons and counted; under CI (CI=true) a skip not on test/skip-allowlist.json fails its suite.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { suites } from './suites.mjs';
import { ALLOWLIST, allowedBy, readAllowList, underCI } from './skips.mjs';

const only = process.argv.slice(2);
mkdirSync('.cache', { recursive: true });
const ci = underCI();
const allowList = readAllowList();

/** Run a command, streaming its output through and keeping the tail for count parsing. */
function run(argv, env) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let tail = '';
    const keep = (chunk, sink) => {
      sink.write(chunk);
      tail = (tail + chunk.toString()).slice(-65536);
    };
    child.stdout.on('data', (c) => keep(c, process.stdout));
    child.stderr.on('data', (c) => keep(c, process.stderr));
    child.on('error', (e) => resolve({ status: 127, tail: String(e) }));
    child.on('close', (status, signal) => resolve({ status: status ?? signal, tail }));
  });
}

/** The last plain `N passed, M failed` line a runner printed. */
export function plainCounts(tail) {
  const all = [...tail.matchAll(/(\d+) passed, (\d+) failed/g)];
  const last = all[all.length - 1];
  return last ? { passed: Number(last[1]), failed: Number(last[2]) } : null;
}

const results = [];
for (const suite of suites) {
  if (only.length && !only.includes(suite.name)) continue;
  const started = Date.now();
  console.log(`\n=== suite ${suite.name} ===`);
  // `before`: a set-up command (e.g. installing the browser); if it fails the suite fails without running.
  const prep = suite.before ? await run(suite.before(), suite.env) : { status: 0 };
  const { status, tail } =
    prep.status === 0 ? await run(suite.command(), suite.env) : { status: prep.status, tail: '' };
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const counts = suite.counts?.(tail) ??
    plainCounts(tail) ?? { passed: status === 0 ? 1 : 0, failed: status === 0 ? 0 : 1 };
  const skipped = (counts.skipped ?? []).map((s) => ({ ...s, allowed: allowedBy(allowList, suite.name, s) }));
  const refused = ci ? skipped.filter((s) => !s.allowed) : [];
  const ok = status === 0 && counts.failed === 0 && counts.passed > 0 && refused.length === 0;
  results.push({
    name: suite.name,
    ok,
    seconds,
    passed: counts.passed,
    failed: counts.failed,
    skipped: skipped.length,
    refused: refused.length,
  });
  for (const s of skipped) {
    const verdict = s.allowed
      ? `allowed: ${s.allowed.reason}`
      : ci
        ? 'NOT ALLOWED under CI'
        : `not on ${ALLOWLIST.split('/').slice(-2).join('/')}: fails under CI`;
    console.log(`  skipped: ${s.file ? `${s.file} :: ` : ''}${s.test} — ${s.reason} (${verdict})`);
  }
  const why = [
    status !== 0 ? `exit ${status}` : '',
    refused.length ? `${refused.length} skip${refused.length === 1 ? '' : 's'} not on the allow-list under CI` : '',
  ]
    .filter(Boolean)
    .join('; ');
  console.log(
    `suite ${suite.name}: ${ok ? 'PASS' : 'FAIL'} — ${counts.passed} passed, ${counts.failed} failed, ${skipped.length} skipped in ${seconds}s${why ? ` (${why})` : ''}`,
  );
}

console.log('\n=== summary ===');
for (const r of results)
  console.log(
    `${r.ok ? 'PASS' : 'FAIL'}  ${r.name.padEnd(12)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(4)} failed ${String(r.skipped).padStart(4)} skipped  ${r.seconds}s`,
  );
const sum = (k) => results.reduce((a, r) => a + r[k], 0);
const failed =
  sum('failed') + results.filter((r) => !r.ok && r.failed === 0 && r.refused === 0).length + sum('refused');
console.log(
  `total: ${sum('passed')} passed, ${failed} failed, ${sum('skipped')} skipped${ci ? ' (CI: skips must be on test/skip-allowlist.json)' : ''}`,
);
process.exit(results.length > 0 && results.every((r) => r.ok) ? 0 : 1);
