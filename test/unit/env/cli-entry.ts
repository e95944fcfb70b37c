// Runs `coa env …` in a child process for cli.test.ts (main.ts dispatches to the same function).
import { runEnvCommand } from '../../../src/cli/env';
import { CliError } from '../../../src/cli/args';

runEnvCommand(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof CliError ? `coa: ${err.message}` : `coa: internal error: ${(err as Error).stack}`);
    process.exitCode = 2;
  },
);
