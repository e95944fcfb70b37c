// `coa` command line: validate, score, stats, convert (and `env serve`, see ./env.ts).
import { CliError, parseArgs } from './args';
import { runConvert } from './convert';
import { runScore } from './score';
import { runStats } from './stats';
import { runValidate } from './validate';
import { flushed, guardStdio } from './stdout';
import { describeFsError, isSystemError } from '../core/fsErrors';

const USAGE = `coa — CoA Studio command line

  coa validate <files…> [--dialect D] [--strict] [--tools a,b] [--max-turns N] [--incomplete] [--tokens [--tokenizer T]]
      file:line:col: severity CODE message for every problem; exit 1 if any error; --tokens: token ids against
      what their text re-tokenizes to with the run's tokenizer (COA106 at the first divergent token)
  coa score <file> --scheme em|f1|cover-em|autocoa|otc-grpo|otc-ppo [--c N] [--alpha A] [-o out.jsonl]
      write the records with "reward" filled (OTC-GRPO groups by question across the file)
  coa stats <files…> [--scheme S] [--json]
      count, EM, F1, TC, TP, format-error rate — overall, per dialect, per meta.stage
  coa diff <A> <B> | <run-dir> <stage-a> <stage-b> [--step N|last|all] [--scheme S] [--by id|question] [--all] [--json]
      per question gained / lost / both right / both wrong, ΔEM = net / questions, ΔTC and Δreward, by source/kind/hops
  coa scan <rollouts…> [--json]
      reward-hacking scanners per meta.stage × meta.step: format-gate exploits, answers in queries, repeated queries,
      answers before thought, length outliers (rewarded records only); exit 1 when one fires
  coa convert --from verl-parquet|verl-rollouts|search-r1|openai <in> -o <out.coa.jsonl> [--strict-ids]
  coa env serve --corpus <corpus.jsonl> [--port 0] …   (see docs/env-server.md)
  coa data prepare questions|sft|pairs <file…> --out <out.jsonl> [--dialect D] [--report r.json] [--strict-ids]
  coa data check <run-config.json> [key=value …] [--json]
      users' data for the trainer (docs/training.md, "Data contract"); bad data: FILE:LINE:COL: error: FIELD: …, exit 2
  coa export verl <run-config.json> [key=value …] --out <dir> [--name N] [--reward-path P]
      RL-2 as verl's launch: overrides, data in verl's parquet layout, search tool config (docs/integrations.md)

Dialects: coa, search-r1, autocoa, hermes (default: detect per record). Format codes: docs/format-rules.md
Exit codes: 0 done; 1 problems found in the input (validate); 2 usage, unreadable input or unwritable output;
141 the reader of the output closed it (as \`| head\` does; nothing more is printed)`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  switch (command) {
    case 'validate':
      return runValidate(parseArgs(rest, { ...VALIDATE_FLAGS, tokens: 'boolean', tokenizer: 'string' }));
    case 'score':
      return runScore(
        parseArgs(rest, {
          ...VALIDATE_FLAGS,
          scheme: 'string',
          c: 'number',
          alpha: 'number',
          o: 'string',
          output: 'string',
          'no-format-penalty': 'boolean',
        }),
      );
    case 'stats':
      return runStats(parseArgs(rest, { ...VALIDATE_FLAGS, scheme: 'string', json: 'boolean' }));
    case 'diff': {
      const { runDiff, DIFF_FLAGS } = await import('./diff');
      return runDiff(parseArgs(rest, DIFF_FLAGS));
    }
    case 'scan': {
      const { runScan, SCAN_FLAGS } = await import('./scan');
      return runScan(parseArgs(rest, SCAN_FLAGS));
    }
    case 'convert':
      return runConvert(parseArgs(rest, { from: 'string', o: 'string', output: 'string', 'strict-ids': 'boolean' }));
    case 'data': {
      const { runDataCommand } = await import('./data');
      return runDataCommand(rest);
    }
    case 'env': {
      const { runEnvCommand } = await import('./env');
      return runEnvCommand(rest);
    }
    case 'export': {
      const { runExportCommand } = await import('./export');
      return runExportCommand(rest);
    }
    default:
      throw new CliError(`unknown command "${command}" (try: coa --help)`);
  }
}

const VALIDATE_FLAGS = {
  dialect: 'string',
  strict: 'boolean',
  tools: 'string',
  'max-turns': 'number',
  incomplete: 'boolean',
} as const;

/** Entry point for bin/coa.js and `node dist/cli.js`: runs, reports, sets the exit code. */
export function cli(argv: string[]): void {
  guardStdio(); // a closed pipe: quiet exit 141; a write error: one line, exit 2 (./stdout.ts)
  main(argv)
    .then(
      (code) => {
        process.exitCode = code;
      },
      (err: unknown) => {
        // Expected failures (bad flags, missing files, a path the system refuses: ELOOP, EACCES, ENOSPC…) get one
        // line; anything else is a bug worth a trace.
        if (err instanceof CliError) console.error(`coa: ${err.message}`);
        else if (isSystemError(err)) console.error(`coa: ${err.path ? `${err.path}: ` : ''}${describeFsError(err)}`);
        else console.error(`coa: internal error: ${(err as Error)?.stack ?? String(err)}`);
        process.exitCode = 2;
      },
    )
    .then(flushed);
}

if (require.main === module) cli(process.argv.slice(2));
