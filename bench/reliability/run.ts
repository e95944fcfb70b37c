// bench/reliability: the attacks of the reliability passes replayed on two checkouts — `before` (default: commit
// 9c89c1b, the tree the attacks were found on) and this one — as one table, attack → held / failed with its figures,
// written as the section bench/reliability of bench/RESULTS.md with the command, the machine and its load:
//   the trainer: a pickle planted as a checkpoint, `lr` 1e999 / 1e300, `train > /dev/full`, `--resume` of a finished
//     stage, a damaged newest checkpoint, events.jsonl a link out of the run (trainer_attacks.py), and the seconds a
//     stage takes to stop after a signal in each phase (signals.py);
//   the environment server: /v1/health under 12 concurrent 30 MB bodies with and without the token, resident memory
//     after 8 timed-out 22.5 MB PUTs, SIGHUP with 20 requests in flight (envAttacks.ts);
//   the CLI and the config readers: `| head -c10`, `> /dev/full`, `-o` a loop of links, 100k-level nesting, a BOM,
//     invalid UTF-8, a model shape that cannot be built (cliAttacks.ts); a 32 MB document in the language server;
//   a seeded fuzz of 10,000 configs and ~10,000 data lines through every reader (test/fuzz).
// Usage: node scripts/build.mjs && node --import tsx bench/reliability/run.ts [--before DIR] [--only a,b] [--tree T]
//        [--no-write]
// `--before DIR`: a built checkout to compare with (default: bench/.work/before-9c89c1b, made as a git worktree of
// 9c89c1b and built on first use). `--only`: trainer, signals, env, cli, lsp, fuzz (`none`: run nothing, write the
// section from the rows kept). `--tree before|after`: run one side only. Each part's rows are kept in
// bench/.work/reliability-rows/<part>.json with the commit, date and load they ran at, and the section is written from
// every part kept there — so a part that missed only because other work held the cores can be run again alone
// (`--only env --tree after`) at a quieter moment. Takes ~40 min on 2 shared cores.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { bodyFigures, stopUnderSignal, timedOutPuts } from './envAttacks';
import { cliAttacks, configAttacks, type Row } from './cliAttacks';
import { open32mb } from './lspLoad';
import { runFuzz } from '../../test/fuzz/run';
import { writeResults } from '../results';

const ROOT = join(__dirname, '../..');
const BEFORE_COMMIT = '9c89c1b';
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const only = arg('--only')?.split(',');
const wants = (part: string) => !only || only.includes(part);

/** The older checkout: given, or a worktree of BEFORE_COMMIT built here (its node_modules and .venv are this one's). */
function beforeCheckout(): string {
  const given = arg('--before');
  if (given) return given;
  const dir = join(ROOT, 'bench/.work', `before-${BEFORE_COMMIT}`);
  if (!existsSync(join(dir, 'dist/cli.js'))) {
    rmSync(dir, { recursive: true, force: true });
    execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', dir, BEFORE_COMMIT], { stdio: 'inherit' });
    for (const link of ['node_modules', '.venv']) symlinkSync(join(ROOT, link), join(dir, link));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' });
  }
  return dir;
}

/**
 * The checkout's commit, `+changes` when its tracked files differ from it (the figures are then of uncommitted work);
 * bench/RESULTS.md, which the benches write, does not count.
 */
const sha = (dir: string) => {
  const head = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const changed = execFileSync(
    'git',
    ['-C', dir, 'status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/RESULTS.md'],
    { encoding: 'utf8' },
  ).trim();
  return changed ? `${head}+changes` : head;
};
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ');
const f0 = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

interface Pair {
  attack: string;
  before?: Row;
  after?: Row;
}

/** One side's rows of one part, as kept between runs. */
interface Side {
  commit: string;
  date: string;
  load: string;
  rows: Row[];
}
type Kept = Partial<Record<'before' | 'after', Side>>;

const PARTS = ['trainer', 'signals', 'env', 'cli', 'lsp', 'fuzz'] as const;
const ROWS_DIR = join(ROOT, 'bench/.work/reliability-rows');
const keptFile = (part: string) => join(ROWS_DIR, `${part}.json`);
const readKept = (part: string): Kept =>
  existsSync(keptFile(part)) ? (JSON.parse(readFileSync(keptFile(part), 'utf8')) as Kept) : {};

/** A Python bench script of this checkout run against `repo` (its trainer), rows read from its --json. */
function pythonRows(script: string, repo: string): Record<string, unknown>[] {
  const out = join(tmpdir(), `coa-rel-${script.replace(/\W/g, '')}-${process.pid}-${Date.now()}.json`);
  const r = spawnSync(join(ROOT, '.venv/bin/python'), [join(__dirname, script), '--repo', repo, '--json', out], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, PYTHONPATH: join(ROOT, 'src/trainer') },
  });
  if (!existsSync(out)) throw new Error(`${script} --repo ${repo} wrote no rows (exit ${r.status})`);
  // trainer_attacks.py writes its rows as a list; signals.py writes its run, {commit, load_before, load_after, rows}.
  const written = JSON.parse(readFileSync(out, 'utf8')) as
    | Record<string, unknown>[]
    | { rows: Record<string, unknown>[] };
  rmSync(out, { force: true });
  return Array.isArray(written) ? written : written.rows;
}

/** signals.py's rows (one per stage × phase) as this table's. */
function signalTableRows(rows: Record<string, unknown>[]): Row[] {
  return rows.map((r) => {
    const secs = r.seconds_to_exit as number | null;
    const held = secs !== null && secs <= 5 && r.exit === 130 && r.final_event === 'stage_finished cancelled';
    return {
      attack: `${r.signal} during ${r.stage}'s ${r.phase}: seconds to stop`,
      held,
      figures: `${secs === null ? 'did not exit' : `exit ${r.exit} after ${secs.toFixed(1)} s`}, last event ${r.final_event} (sent at ${r.trigger})`,
    };
  });
}

const signalRows = (repo: string): Row[] => signalTableRows(pythonRows('signals.py', repo));

async function envRows(root: string): Promise<Row[]> {
  const b = await bodyFigures(root);
  const h = (x: typeof b.authed) =>
    `/v1/health p50 / p99 / max ${f0(x.health.p50)} / ${f0(x.health.p99)} / ${f0(x.health.max)} ms (${x.health.n} polls); a bare server polled alike meanwhile (the machine's load alone) p99 ${f0(x.control.p99)} ms; ${x.outcome}`;
  const puts = await timedOutPuts(root, 8, 60);
  const stops = [await stopUnderSignal(root, 'SIGHUP'), await stopUnderSignal(root, 'SIGINT')];
  return [
    { attack: '/v1/health with nothing else running (baseline)', held: true, figures: h(b.baseline) },
    {
      attack: '/v1/health under 12 concurrent 30 MB bodies with the token',
      held: b.authed.health.p99 < 100,
      figures: h(b.authed),
    },
    {
      attack: '/v1/health under 12 concurrent 30 MB bodies without it (answered 401), volley after volley for 3 s',
      held: b.unauthed.health.p99 < 100,
      figures: h(b.unauthed),
    },
    {
      attack: 'resident memory after 8 timed-out PUTs of 22.5 MB (--timeout-ms 300)',
      held: puts.after60s <= puts.start + 100 && puts.otcRuns === 0,
      figures: `${f0(puts.start)} MB after one search (${f0(puts.cold)} MB as started) → ${f0(puts.afterPuts)} MB 2 s after the PUTs → ${f0(puts.after60s)} MB 60 s later (peak ${f0(puts.peak)}); ${puts.answers}; ${puts.otcRuns} states kept`,
    },
    ...stops.map((s) => ({
      attack: `env server on ${s.signal} with 20 searches in flight`,
      held: s.dropped === 0 && s.stoppedEvent && s.exit === 'exit 0',
      figures: `${s.answered} answered, ${s.dropped} dropped; stopped event ${s.stoppedEvent ? 'yes' : 'no'}; ${s.exit} ${f0(s.exitMs)} ms after the signal`,
    })),
  ];
}

async function lspRows(root: string): Promise<Row[]> {
  const l = await open32mb(root, 30);
  return [
    {
      attack: `a ${l.mb.toFixed(0)} MB trajectory document in the language server, then 30 edits`,
      held: l.firstMs < 5000 && l.editP99 < 1000,
      figures: `first diagnostics ${f0(l.firstMs)} ms (server CPU ${f0(l.firstCpuMs)} ms); an edit's diagnostics p50 / p99 / max ${f0(l.editP50)} / ${f0(l.editP99)} / ${f0(l.editMax)} ms (server CPU p99 ${f0(l.editCpuP99)} ms)`,
    },
  ];
}

async function fuzzRows(root: string): Promise<Row[]> {
  const r = await runFuzz({
    root,
    seed: 2026,
    configs: 10_000,
    dataFiles: 2_200,
    dir: join(tmpdir(), `coa-rel-fuzz-${process.pid}`),
  });
  const by = new Map<string, number>();
  for (const x of r.internal) by.set(x.reader, (by.get(x.reader) ?? 0) + 1);
  const where = [...by].map(([k, n]) => `${n} in ${k}`).join(', ');
  return [
    {
      attack: `seeded fuzz (seed ${r.seed}): ${r.configs.toLocaleString('en')} configs through coa data check, the core's reader and the trainer's loader; ${r.dataLines.toLocaleString('en')} data lines (${r.dataFiles.toLocaleString('en')} files) through coa validate and stats`,
      held: r.internal.length === 0 && r.disagreements.length === 0,
      figures: `${r.internal.length} internal errors${where ? ` (${where})` : ''}; ${r.disagreements.length} configs judged differently by the core and the trainer; ${f0(r.ms / 1000)} s`,
    },
  ];
}

async function main(): Promise<void> {
  const tree = arg('--tree');
  if (tree && tree !== 'before' && tree !== 'after') throw new Error('--tree: before or after');
  const before = beforeCheckout();
  const trees = (
    [
      { name: 'before', dir: before },
      { name: 'after', dir: ROOT },
    ] as const
  ).filter((t) => !tree || t.name === tree);
  const work = join(tmpdir(), `coa-rel-${process.pid}`);
  mkdirSync(work, { recursive: true });
  mkdirSync(ROWS_DIR, { recursive: true });
  const parts: Record<(typeof PARTS)[number], (dir: string) => Promise<Row[]> | Row[]> = {
    trainer: (dir) => pythonRows('trainer_attacks.py', dir) as unknown as Row[],
    signals: (dir) => signalRows(dir),
    env: (dir) => envRows(dir),
    cli: async (dir) => [
      ...(await cliAttacks(dir, join(work, `cli-${dir.length}`))),
      ...configAttacks(dir, join(work, `cfg-${dir.length}`)),
    ],
    lsp: (dir) => lspRows(dir),
    fuzz: (dir) => fuzzRows(dir),
  };
  for (const part of PARTS) {
    if (!wants(part)) continue;
    for (const t of trees) {
      const start = load();
      console.log(`\n=== ${part}: ${t.name} (${t.dir}) — load ${start}`);
      const rows = await parts[part](t.dir);
      const kept = readKept(part);
      kept[t.name] = {
        commit: sha(t.dir),
        date: new Date().toISOString().slice(0, 16).replace('T', ' '),
        load: `${start} at its start, ${load()} at its end`,
        rows,
      };
      writeFileSync(keptFile(part), JSON.stringify(kept, null, 1));
    }
  }
  rmSync(work, { recursive: true, force: true });

  const pairs: Pair[] = [];
  const ran: string[] = [];
  for (const part of PARTS) {
    const kept = readKept(part);
    const byAttack = new Map<string, Pair>();
    for (const side of ['before', 'after'] as const) {
      const k = kept[side];
      if (!k) continue;
      ran.push(`${part} ${side} (${k.commit}, ${k.date} UTC): load ${k.load}`);
      for (const row of k.rows) {
        const p = byAttack.get(row.attack) ?? { attack: row.attack };
        p[side] = row;
        byAttack.set(row.attack, p);
      }
    }
    pairs.push(...byAttack.values());
  }
  const commits = (side: 'before' | 'after') =>
    [...new Set(PARTS.map((p) => readKept(p)[side]?.commit).filter(Boolean))].join(', ') || 'not run';
  const cell = (r?: Row) =>
    r ? `${r.held ? 'held' : '**failed**'} — ${r.figures.replace(/\|/g, '\\|').replace(/\n/g, ' ')}` : 'not run';
  const heldAfter = pairs.filter((p) => p.after?.held).length;
  const heldBefore = pairs.filter((p) => p.before?.held).length;
  const table = [
    `| attack | before (${commits('before')}) | after (${commits('after')}) |`,
    '| --- | --- | --- |',
    ...pairs.map((p) => `| ${p.attack.replace(/\|/g, '\\|')} | ${cell(p.before)} | ${cell(p.after)} |`),
  ].join('\n');
  console.log(`\n${table}\n\nheld: before ${heldBefore} of ${pairs.length}, after ${heldAfter} of ${pairs.length}`);
  if (process.argv.includes('--no-write')) return;
  writeResults(
    'bench/reliability',
    [
      'Command: `node scripts/build.mjs && node --import tsx bench/reliability/run.ts` (`npm run bench reliability`); before = a worktree of 9c89c1b built beside it. A part run again alone (`--only PART --tree after`) replaces only its own rows; each part says below when and at what load it ran.',
      `Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores shared with other work, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, CPU only (GPU: unmeasured).`,
      `Runs (load average 1 / 5 / 15 min): ${ran.join('; ')}.`,
      "Trainer rows: a 4-step pretrain of a tiny embedded model (trainer_attacks.py) and signals.py's stages (one run per row; a before trainer without phase events is signalled at the progress events that exist). Env rows: `coa env serve --workers 2` on a 20,000-passage corpus, in the environment the checkout's trainer and extension start it in (after: `MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072`; before: none), /v1/health polled from a thread of its own every 20 ms; wall-clock figures on a loaded 2-core machine include time other processes held the cores.",
      '',
      table,
      '',
      `Held: before ${heldBefore} of ${pairs.length}, after ${heldAfter} of ${pairs.length}. Targets: /v1/health p99 < 100 ms under the bodies; memory back within 100 MB of the server's baseline (once it has answered a search) 60 s after the PUTs; a stage stopped, \`cancelled\`, exit 130 within 5 s of the signal in every phase; 0 internal errors in the fuzz; the language server row's bound (first diagnostics < 5 s, edit p99 < 1 s) is this bench's, not the issue's.`,
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
