// `coa data check <run config> --json` in a child process (argument array, no shell), before Train Stage starts
// the trainer: the same importers as training, so a file that passes here is one the trainer can read. A child
// process rather than the extension host because a corpus can be gigabytes. No vscode import (unit-tested).
import { execFile } from 'node:child_process';
import type { CheckResult } from '../../core/data/check';
import { parseDataErrorLine, type DataErrorLocation } from '../../core/data/errors';

export type DataCheckOutcome =
  | { ok: true; result: CheckResult }
  | { ok: false; message: string; location: DataErrorLocation | null; cancelled?: boolean };

export interface DataCheckOptions {
  /** Node executable (in VS Code: process.execPath with ELECTRON_RUN_AS_NODE=1 in env). */
  node: string;
  /** dist/cli.js */
  cli: string;
  config: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export function runDataCheck(o: DataCheckOptions): Promise<DataCheckOutcome> {
  return new Promise((resolve) => {
    execFile(
      o.node,
      [o.cli, 'data', 'check', o.config, '--json'],
      { env: o.env, signal: o.signal, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (!err) {
          try {
            return resolve({ ok: true, result: JSON.parse(stdout) as CheckResult });
          } catch (e) {
            return resolve({
              ok: false,
              message: `data check printed no result (${(e as Error).message})`,
              location: null,
            });
          }
        }
        if ((err as NodeJS.ErrnoException).name === 'AbortError')
          return resolve({ ok: false, message: 'data check cancelled', location: null, cancelled: true });
        const text = stderr.trim() || (err as Error).message;
        const line = text.split('\n').find((l) => parseDataErrorLine(l)) ?? text.split('\n')[0];
        resolve({ ok: false, message: line.replace(/^coa: /, ''), location: parseDataErrorLine(line) });
      },
    );
  });
}
