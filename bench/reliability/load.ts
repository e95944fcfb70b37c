// bench/reliability/load: load figures (the section bench/reliability/load) — the environment server's /v1/health latency under
// large bodies, a 1.2M-question OTC state and maximal searches; when --timeout-ms answers; resident memory after
// 60,000 caller names and 100 runs' OTC states; how long the server outlives a SIGKILLed parent; the language
// server's hover after 1,000 quick edits to an 18 MB file and a `.coa` with 40,000 unclosed tags.
// Usage: node scripts/build.mjs && node --import tsx bench/reliability/load.ts [--no-write]
// (bench/reliability/run.ts, `npm run bench reliability`, replays the attacks of the reliability passes before → after.)
import { cpus, loadavg, totalmem } from 'node:os';
import { attacks, memory, parentExit, pct, timeoutFigure } from './envLoad';
import { BURST_FILE_PROBLEMS, editBurst, unclosedTags } from './lspLoad';
import { writeResults } from '../results';

/** The documented resident-memory cap after the memory attack (docs/env-server.md, "Memory"), default settings. */
const RSS_CAP_MB = 1024;
const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const ok = (b: boolean) => (b ? 'met' : '**missed**');

async function main(): Promise<void> {
  const figs = await attacks();
  const timeout = await timeoutFigure();
  const mem = await memory();
  const exits = await parentExit();
  const lsp = await editBurst();
  const tags = unclosedTags();
  if (process.argv.includes('--no-write')) return;
  const worst = Math.max(...figs.map((x) => x.health.p99));
  writeResults(
    'bench/reliability/load',
    [
      'Command: `node scripts/build.mjs && node --import tsx bench/reliability/load.ts`',
      `Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores (shared), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; load average at the end ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' / ')}.`,
      'Server: `node dist/cli.js env serve --workers 2` as its own process on a generated corpus of 20,000 passages of ~1 KB; /v1/health polled back to back (20 ms apart, one kept-alive connection) from 200 ms before each attack until its last answer.',
      '',
      '| attack | /v1/health p50 / p99 / max (samples) | attack answered in | answers | target |',
      '| --- | --- | --- | --- | --- |',
      ...figs.map(
        (x) =>
          `| ${x.name} | ${f(x.health.p50)} / ${f(x.health.p99)} / ${f(x.health.max)} ms (${x.health.n}) | ${f(x.attackMs)} ms | ${x.outcome} | p99 < 100 ms ${ok(x.health.p99 < 100)} |`,
      ),
      '',
      '| measure | value | target |',
      '| --- | --- | --- |',
      `| \`--timeout-ms 500\`, a 1.2M-question PUT otc-state | ${timeout.status} ${timeout.code} after ${f(timeout.ms)} ms | 504 on time ${ok(timeout.status === 504 && timeout.ms < 1000)} |`,
      `| resident memory: at start / after 60,000 caller names / after 100 runs' states of 120k questions (peak) | ${f(mem.start)} / ${f(mem.afterCallers)} / ${f(mem.afterRuns)} MB (${f(mem.peak)} MB) | ≤ ${RSS_CAP_MB} MB ${ok(mem.peak <= RSS_CAP_MB)} |`,
      `| GET /v1/tool-health after 60,000 caller names | ${mem.healthReplyBytes} bytes | bounded |`,
      `| OTC states after 100 runs | ${mem.otc} | |`,
      `| outlives a SIGKILLed parent (${exits.length} runs) | median ${f(pct(exits, 50))} ms, max ${f(Math.max(...exits))} ms | about 1 s ${ok(Math.max(...exits) < 1500)} |`,
      `| LSP: hover after 1,000 quick edits to a ${f(lsp.mb)} MB file with ${BURST_FILE_PROBLEMS} problems (${lsp.diagnostics} diagnostics published on open) | ${f(lsp.hoverMs)} ms | < 500 ms ${ok(lsp.hoverMs < 500)} |`,
      `| LSP: publishes for that burst | ${lsp.publishes} (${f(lsp.publishedMb)} MB sent), last version published ${f(lsp.settledMs)} ms after the burst | |`,
      `| LSP: diagnostics of a ${f(tags.kb)} KB \`.coa\` with 40,000 unclosed <think> | ${f(tags.ms)} ms, ${tags.diagnostics} published | |`,
      '',
      `Worst /v1/health p99 over the attacks: ${f(worst)} ms. Wall-clock figures on a shared 2-core machine also count time other processes held the cores.`,
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
