// Runs the seeded fuzz (./inputs.ts) against a checkout: every config through `coa data check` and the core's config
// reader (in this process, the checkout's own source) and through the trainer's config loader (its .venv, one Python
// process for all of them); every data file through `coa validate` and `coa stats --json`. Counts the internal errors
// (anything but a clean refusal: a stack, "internal error", a Python traceback) and the configs the core and the
// trainer judge differently (one accepts what the other refuses). Used by test/unit/cli/config-fuzz.test.ts (a slice)
// and bench/reliability/run.ts (10,000+ inputs, this checkout and an older one).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuzzInputs } from './inputs';

export interface FuzzReport {
  seed: number;
  configs: number;
  dataFiles: number;
  dataLines: number;
  /** Inputs run through each reader. */
  runs: { dataCheck: number; coreConfig: number; trainerConfig: number; validate: number; stats: number };
  internal: { reader: string; input: string; message: string }[];
  disagreements: { input: string; core: string; trainer: string }[];
  ms: number;
}

type Main = (argv: string[]) => Promise<number>;

/** The checkout's own readers, loaded from its source (tsx). */
function readersOf(root: string) {
  const req = (p: string) => require(join(root, p)) as Record<string, unknown>;
  const main = req('src/cli/main.ts').main as Main;
  const CliError = req('src/cli/args.ts').CliError as new (...a: unknown[]) => Error;
  const DataError = req('src/core/data/errors.ts').DataError as new (...a: unknown[]) => Error;
  const loadRunConfig = req('src/core/data/check.ts').loadRunConfig as (file: string) => unknown;
  // A file-system error reaching the top is one clean line only where the CLI says so (src/cli/main.ts).
  const systemErrorsClean = readFileSync(join(root, 'src/cli/main.ts'), 'utf8').includes('isSystemError');
  return { main, CliError, DataError, loadRunConfig, systemErrorsClean };
}

/** Runs `fn` with console output swallowed; uncaught errors meanwhile are returned as thrown. */
async function quietly<T>(fn: () => Promise<T> | T): Promise<{ value?: T; error?: unknown }> {
  const saved = [console.log, console.error, console.warn];
  const noop = () => undefined;
  console.log = console.error = console.warn = noop;
  let late: unknown;
  const onLate = (e: unknown) => (late ??= e);
  process.on('uncaughtException', onLate);
  process.on('unhandledRejection', onLate);
  try {
    const value = await fn();
    await new Promise((r) => setImmediate(r));
    return late !== undefined ? { error: late } : { value };
  } catch (error) {
    return { error };
  } finally {
    [console.log, console.error, console.warn] = saved;
    process.off('uncaughtException', onLate);
    process.off('unhandledRejection', onLate);
  }
}

const describe = (e: unknown) =>
  String((e as Error)?.stack ?? e)
    .split('\n')
    .slice(0, 4)
    .join(' | ')
    .slice(0, 400);

export async function runFuzz(opts: {
  root: string;
  seed: number;
  configs: number;
  dataFiles: number;
  dir: string;
  linesPerFile?: number;
}): Promise<FuzzReport> {
  const t0 = performance.now();
  const { root, seed, dir } = opts;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const inputs = fuzzInputs(seed, opts.configs, opts.dataFiles, opts.linesPerFile);
  const r = readersOf(root);
  const report: FuzzReport = {
    seed,
    configs: inputs.configs.length,
    dataFiles: inputs.data.length,
    dataLines: 0,
    runs: { dataCheck: 0, coreConfig: 0, trainerConfig: 0, validate: 0, stats: 0 },
    internal: [],
    disagreements: [],
    ms: 0,
  };
  // What the CLI's top level (src/cli/main.ts cli()) prints as one line: a CliError or a system error. A DataError is
  // one line only where its command catches it (`coa data …`) or as the core's reader's own answer; from validate or
  // stats it would reach the top level and print "internal error".
  const cliClean = (e: unknown) =>
    e instanceof r.CliError || (r.systemErrorsClean && typeof (e as NodeJS.ErrnoException)?.syscall === 'string');
  const clean = (e: unknown) => cliClean(e) || e instanceof r.DataError;

  const configFiles = inputs.configs.map((bytes, i) => {
    const file = join(dir, `c${i}.run.json`);
    writeFileSync(file, bytes);
    return file;
  });
  // A config whose data section names "loop" points at a loop of symbolic links.
  if (!existsSync(join(dir, 'loop'))) spawnSync('ln', ['-s', 'loop', join(dir, 'loop')]);
  const core: string[] = [];
  for (const file of configFiles) {
    const check = await quietly(() => r.main(['data', 'check', file]));
    report.runs.dataCheck++;
    if (check.error !== undefined && !clean(check.error))
      report.internal.push({ reader: 'coa data check', input: file, message: describe(check.error) });
    const load = await quietly(() => r.loadRunConfig(file));
    report.runs.coreConfig++;
    if (load.error !== undefined && !clean(load.error))
      report.internal.push({ reader: 'core loadRunConfig', input: file, message: describe(load.error) });
    core.push(
      load.error === undefined
        ? 'ok'
        : clean(load.error)
          ? `error: ${String((load.error as Error).message).slice(0, 200)}`
          : 'internal',
    );
  }

  const list = join(dir, 'configs.txt');
  writeFileSync(list, configFiles.join('\n') + '\n');
  const py = spawnSync(join(root, '.venv/bin/python'), [join(__dirname, 'load_configs.py'), `@${list}`], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: join(root, 'src/trainer') },
    maxBuffer: 1 << 28,
  });
  const rows = py.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { verdict: string; message: string | null });
  if (rows.length !== configFiles.length)
    throw new Error(
      `the trainer's loader answered ${rows.length} of ${configFiles.length} configs (exit ${py.status}): ${py.stderr.slice(-2000)}`,
    );
  rows.forEach((row, i) => {
    report.runs.trainerConfig++;
    if (row.verdict === 'internal')
      report.internal.push({ reader: 'trainer load_config', input: configFiles[i], message: row.message ?? '' });
    const a = core[i] === 'ok' ? 'ok' : 'error';
    if (core[i] !== 'internal' && row.verdict !== 'internal' && a !== row.verdict) {
      report.disagreements.push({
        input: configFiles[i],
        core: core[i],
        trainer: row.verdict === 'ok' ? 'ok' : `error: ${(row.message ?? '').slice(0, 200)}`,
      });
    }
  });

  for (const [i, bytes] of inputs.data.entries()) {
    const file = join(dir, `d${i}.jsonl`);
    writeFileSync(file, bytes);
    report.dataLines += bytes
      .toString('latin1')
      .split('\n')
      .filter((l) => l.trim()).length;
    for (const argv of [
      ['validate', file],
      ['stats', file, '--json'],
    ]) {
      const run = await quietly(() => r.main(argv));
      report.runs[argv[0] as 'validate' | 'stats']++;
      if (run.error !== undefined && !cliClean(run.error))
        report.internal.push({ reader: `coa ${argv[0]}`, input: file, message: describe(run.error) });
    }
  }
  report.ms = performance.now() - t0;
  return report;
}
