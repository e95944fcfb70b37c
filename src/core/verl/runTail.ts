// A verl run as an event stream: its metrics file (./metrics.ts) tailed like an events.jsonl, each step's alert
// signals completed from that step's rollout dump when the rollout directory is known (../importers/verl-rollouts.ts:
// all-wrong groups, format-error rate). verl dumps a step's rollouts before it logs the step's metrics
// (verl/trainer/ppo/ray_trainer.py `fit`: `_log_rollout_data` inside the step, `logger.log` at its end; volcengine/verl
// b178a3cd), so the dump is there when the metrics line arrives. No vscode import: the panel, the bench and tests use it.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { EventTail, type LineParser } from '../eventTail';
import { importVerlRollouts, stepSignals } from '../importers/verl-rollouts';
import type { AlertThresholds } from '../alerts';
import { parseVerlLine, VerlMetricsAdapter } from './metrics';

/** Dumps larger than this are not read for alert signals (the panel must keep up; the notebook opens them). */
export const MAX_SIGNAL_DUMP_BYTES = 64 * 1024 * 1024;

export interface VerlRunOptions {
  rolloutDir?: string;
  run?: string;
  thresholds?: Partial<AlertThresholds>;
  now?: () => number;
}

/** Alert signals of one step from `<rolloutDir>/<step>.jsonl`; {} when there is no dump (or it is too large). */
export function dumpSignals(rolloutDir: string, step: number): Record<string, number> {
  const file = join(rolloutDir, `${step}.jsonl`);
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return {};
  }
  if (size > MAX_SIGNAL_DUMP_BYTES) return {};
  const buf = Buffer.alloc(size);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, size, 0);
  } finally {
    closeSync(fd);
  }
  return stepSignals(importVerlRollouts(buf.toString('utf8')).records);
}

export function verlLineParser(metricsFile: string, opts: VerlRunOptions = {}): LineParser {
  const adapter = new VerlMetricsAdapter({
    run: opts.run ?? basename(metricsFile).replace(/\.jsonl$/, ''),
    source: metricsFile,
    thresholds: opts.thresholds,
    now: opts.now,
  });
  return {
    parse(text) {
      const line = parseVerlLine(text);
      if ('error' in line) return line;
      return adapter.events(line, opts.rolloutDir ? dumpSignals(opts.rolloutDir, line.step) : {});
    },
    reset: () => adapter.reset(),
  };
}

/** Tails a verl metrics file as protocol events (use with followEvents, like an events.jsonl tail). */
export function verlTail(metricsFile: string, opts: VerlRunOptions = {}): EventTail {
  return new EventTail(metricsFile, 0, verlLineParser(metricsFile, opts));
}
