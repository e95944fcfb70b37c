// bench/diff: `coa diff` wall time on two evaluations of AutoCoA's 2,935 test questions (test/fixtures/autocoaEvals.ts:
// the parquet's questions, synthetic outcomes, files shaped as the trainer's evaluation writes them), as a user runs
// it: `node dist/cli.js diff A B` in a fresh process (start-up, reading, pairing, the flip table, printing), with the
// stored rewards and rescored with --scheme em; and the check that the table's net equals ΔEM.
// Usage: node --import tsx bench/diff/run.ts [--runs 5]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, getPriority, loadavg } from 'node:os';
import { join } from 'node:path';
import { autocoaEvalPair } from '../../test/fixtures/autocoaEvals';
import { writeResults } from '../results';

const ROOT = join(__dirname, '../..');
const CLI = join(ROOT, 'dist/cli.js');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;

function timed(args: string[]): { seconds: number; stdout: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [CLI, 'diff', ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`coa diff ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { seconds, stdout: r.stdout };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build`);
  const dir = join(ROOT, '.cache/bench/diff');
  mkdirSync(dir, { recursive: true });
  const pair = await autocoaEvalPair();
  const fa = join(dir, 'results-a-test.jsonl');
  const fb = join(dir, 'results-b-test.jsonl');
  writeFileSync(fa, pair.a);
  writeFileSync(fb, pair.b);
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const cases: [string, string[]][] = [
    ['stored rewards, text table', [fa, fb]],
    ['stored rewards, --json', [fa, fb, '--json']],
    ['rescored, --scheme em', [fa, fb, '--scheme', 'em']],
  ];
  const rows: string[] = [];
  for (const [what, args] of cases) {
    const times = Array.from({ length: RUNS }, () => timed(args).seconds);
    rows.push(
      `| ${what} | ${median(times).toFixed(2)} s | ${Math.min(...times).toFixed(2)}–${Math.max(...times).toFixed(2)} s |`,
    );
    console.log(rows[rows.length - 1]);
  }
  const j = JSON.parse(timed([fa, fb, '--json']).stdout);
  const em = (text: string) =>
    text
      .trim()
      .split('\n')
      .reduce((s, l) => s + JSON.parse(l).reward.em, 0);
  const check = `gained ${j.totals.gained} − lost ${j.totals.lost} = ${j.totals.gained - j.totals.lost}; Σ EM_B − Σ EM_A over the files = ${em(pair.b) - em(pair.a)}; ΔEM ${j.totals.delta_em.toFixed(4)}`;
  console.log(check);
  if (j.totals.gained - j.totals.lost !== em(pair.b) - em(pair.a)) throw new Error(`net ≠ ΔEM: ${check}`);
  const mb = (f: string) => (statSync(f).size / 1e6).toFixed(1);
  writeResults(
    'bench/diff',
    [
      `Command: \`node --import tsx bench/diff/run.ts --runs ${RUNS}\`: \`node dist/cli.js diff A B\` in a fresh process each time (start-up, read, pair, flip table, print), median of ${RUNS}.`,
      `Input: two evaluations of the ${pair.questions.toLocaleString('en-US')} questions of examples/data/autocoa/all_test.parquet (2,936 rows, one exact repeat dropped by the importer), one trajectory per question with tokens and the stored reward (${mb(fa)} MB and ${mb(fb)} MB; test/fixtures/autocoaEvals.ts).`,
      `Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores, load average at start ${load} (shared machine${getPriority() > 0 ? `; this run at nice ${getPriority()}` : ''}).`,
      '',
      '| case | median | range |',
      '| --- | --- | --- |',
      ...rows,
      '',
      `Net = ΔEM: ${check}.`,
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
