// `coa env serve` (run the environment server until SIGTERM, SIGINT or SIGHUP) and `coa env index` (build or
// check the saved BM25 index, then exit). Machine-readable: JSON lines on stderr while indexing, one
// `listening` line on stdout. The HTTP contract is in docs/env-server.md.
import { CliError, parseArgs } from './args';
import { isDialectName, DIALECT_NAMES } from '../core/dialects';
import { startEnvServer } from '../env/server';
import { Retriever } from '../env/retriever';
import { CorpusError } from '../env/corpus';
import type { BadLine } from '../core/corpus';
import { watchParent, whenIdle } from './parentWatch';

const USAGE = `coa env serve --corpus <corpus.jsonl> [--index <dir>] [--port 0] [--dialect coa|search-r1|autocoa|hermes]
              [--fault-rate p] [--fault-seed n] [--latency-ms d] [--timeout-ms t] [--max-body-bytes n]
              [--max-reply-bytes n]   refuse answers larger than this (default 64 MiB)
              [--max-body-bytes-in-flight n]   large bodies (> 64 KiB) held at once; others wait unread (default 64 MiB)
              [--parent-pid P]   stop when process P exits (trainers pass their pid: no orphaned servers)
              [--otc-max-runs n] [--otc-max-mb m] [--otc-idle-s s]   bound the per-run OTC-GRPO states
                                 (default 256 runs, 256 MiB estimated, 6 h idle)
              [--workers n]      worker threads for searches and grades (default: one per core)
coa env index --corpus <corpus.jsonl> [--index <dir>]      build (or verify) the saved BM25 index and exit
The token: COA_ENV_TOKEN if set (never a flag: every local user can read command lines with ps), else a random one.`;

const SERVE_FLAGS = {
  corpus: 'string',
  index: 'string',
  port: 'number',
  dialect: 'string',
  token: 'string',
  'fault-rate': 'number',
  'fault-seed': 'number',
  'latency-ms': 'number',
  'timeout-ms': 'number',
  'max-body-bytes': 'number',
  workers: 'number',
  help: 'boolean',
  'parent-pid': 'number',
  'otc-max-runs': 'number',
  'otc-idle-s': 'number',
  'otc-max-mb': 'number',
  'max-reply-bytes': 'number',
  'max-body-bytes-in-flight': 'number',
} as const;

const event = (obj: Record<string, unknown>): void => {
  process.stderr.write(`${JSON.stringify(obj)}\n`);
};
const onProgress = (done: number, total: number): void => event({ event: 'index_progress', done, total });
const onBadLine = (bad: BadLine): void =>
  event({ event: 'bad_line', file: bad.file, line: bad.line, message: bad.message });

function num(
  flags: Record<string, unknown>,
  name: string,
  check: (n: number) => boolean,
  what: string,
): number | undefined {
  const v = flags[name] as number | undefined;
  if (v === undefined) return undefined;
  if (!check(v)) throw new CliError(`--${name} must be ${what}, got ${v}`);
  return v;
}

export async function runEnvCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h' || sub === 'help') {
    console.log(USAGE);
    return sub ? 0 : 2;
  }
  if (sub !== 'serve' && sub !== 'index') throw new CliError(`unknown subcommand "env ${sub}"\n${USAGE}`);
  const { positional, flags } = parseArgs(rest, SERVE_FLAGS);
  if (flags.help) {
    console.log(USAGE);
    return 0;
  }
  if (positional.length > 0) throw new CliError(`unexpected argument "${positional[0]}"\n${USAGE}`);
  const corpus = flags.corpus as string | undefined;
  if (!corpus) throw new CliError(`--corpus <corpus.jsonl> is required\n${USAGE}`);
  const indexDir = flags.index as string | undefined;

  if (sub === 'index') {
    const r = await openOrFail(() => Retriever.open(corpus, { indexDir, onProgress, onBadLine }), corpus);
    event({
      event: 'index_ready',
      source: r.info.source,
      reason: r.info.reason,
      index_dir: r.info.indexDir,
      passages: r.passages,
      ms: r.info.ms,
    });
    r.close();
    return 0;
  }

  // SIGHUP (the terminal that started it closed, `kill -HUP`) stops it as SIGTERM does: Node's default for it is to
  // die at once, dropping every request in flight without a `stopped` event.
  for (const sig of STOP_SIGNALS) process.once(sig, stopDuringStartup);
  const parentPid = num(flags, 'parent-pid', (n) => Number.isInteger(n) && n > 0, 'a process id');
  // A parent killed with SIGKILL cannot stop us: watch it (src/cli/parentWatch.ts).
  let parentGone: () => void = () => stopDuringStartup('parent exited');
  if (parentPid !== undefined) watchParent(parentPid, () => parentGone());
  const dialect = flags.dialect as string | undefined;
  if (dialect !== undefined && !isDialectName(dialect))
    throw new CliError(`--dialect must be one of ${DIALECT_NAMES.join(', ')}, got "${dialect}"`);
  // The token never comes from the command line: any local user reads every process's arguments with `ps`, and the
  // token lets them rewrite a run's OTC state. The flag is known only to say so.
  if (flags.token !== undefined)
    throw new CliError(
      '--token would show the token to every local user (ps); set COA_ENV_TOKEN in the environment instead',
    );
  const token = process.env.COA_ENV_TOKEN || undefined;
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token))
    throw new CliError(
      'COA_ENV_TOKEN must be printable ASCII without spaces (it is sent as "Authorization: Bearer <token>")',
    );
  const server = await openOrFail(
    () =>
      startEnvServer({
        corpus,
        indexDir,
        dialect,
        port: num(flags, 'port', (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer port 0-65535'),
        token,
        faultRate: num(flags, 'fault-rate', (n) => n >= 0 && n <= 1, 'a probability in [0, 1]'),
        faultSeed: num(flags, 'fault-seed', (n) => Number.isInteger(n), 'an integer'),
        latencyMs: num(flags, 'latency-ms', (n) => n >= 0, '>= 0'),
        timeoutMs: num(flags, 'timeout-ms', (n) => n > 0, '> 0'),
        maxBodyBytes: num(flags, 'max-body-bytes', (n) => Number.isInteger(n) && n > 0, 'a positive integer'),
        maxReplyBytes: num(flags, 'max-reply-bytes', (n) => Number.isInteger(n) && n > 0, 'a positive integer'),
        maxBodyBytesInFlight: num(
          flags,
          'max-body-bytes-in-flight',
          (n) => Number.isInteger(n) && n > 0,
          'a positive integer',
        ),
        otcMaxRuns: num(flags, 'otc-max-runs', (n) => Number.isInteger(n) && n > 0, 'a positive integer'),
        otcMaxBytes: ((mb) => (mb === undefined ? undefined : Math.round(mb * 2 ** 20)))(
          num(flags, 'otc-max-mb', (n) => n > 0, '> 0'),
        ),
        otcIdleMs: ((s) => (s === undefined ? undefined : s * 1000))(num(flags, 'otc-idle-s', (n) => n > 0, '> 0')),
        workers: num(flags, 'workers', (n) => Number.isInteger(n) && n >= 1 && n <= 256, 'an integer 1-256'),
        onProgress,
        onBadLine,
      }),
    corpus,
  );
  event({
    event: 'index_ready',
    source: server.index.source,
    reason: server.index.reason,
    index_dir: server.index.indexDir,
    passages: server.index.header.passages,
    ms: server.index.ms,
  });
  // token_url: the server with its token in the path, for clients that take only a URL (COA_ENV_URL of the verl and
  // TRL integrations); retrieve_url: what Search-R1's `retriever.url` / verl's `retrieval_service_url` take.
  const tokenUrl = `${server.url}/t/${encodeURIComponent(server.token)}`;
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', url: server.url, token: server.token, token_url: tokenUrl, retrieve_url: `${tokenUrl}/retrieve` })}\n`,
  );

  for (const sig of STOP_SIGNALS) process.off(sig, stopDuringStartup);
  const signal = await new Promise<NodeJS.Signals | 'parent exited'>((resolve) => {
    for (const sig of STOP_SIGNALS) process.once(sig, () => resolve(sig));
    // A trainer's stage may outlive a killed pipeline for a moment (it finishes its step and checkpoints, grading
    // with us): stop once nothing is using the server (parentWatch.ts's mayStop).
    parentGone = () => void whenIdle(() => server.activity()).then(() => resolve('parent exited'));
  });
  await server.close();
  event({ event: 'stopped', signal });
  return 0;
}

/** Missing or unreadable files, an unwritable index dir, a port in use: user errors (one line), not crashes. */
async function openOrFail<T>(open: () => Promise<T>, corpus: string): Promise<T> {
  try {
    return await open();
  } catch (e) {
    if (e instanceof CorpusError) throw new CliError(e.message);
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE') throw new CliError(`port in use: ${err.message}`);
    if (
      err.code === 'ENOENT' ||
      err.code === 'EACCES' ||
      err.code === 'EISDIR' ||
      err.code === 'ENOTDIR' ||
      err.code === 'EROFS'
    ) {
      throw new CliError(`${err.path ?? corpus}: ${err.message}`);
    }
    throw e;
  }
}

/** What stops the server: each finishes the requests in flight, then `stopped`. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** A signal while the index is still building: stop at once (the index file is written atomically). */
function stopDuringStartup(signal: NodeJS.Signals | 'parent exited'): void {
  event({ event: 'stopped', signal, during: 'startup' });
  process.exit(signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143);
}
