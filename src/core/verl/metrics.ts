// verl's `file` logger → our event protocol, so the live panel, the Runs view and the alerts read a verl run like one
// of ours. verl writes one JSON object per line, `{"step": N, "data": {metric: value}}`, appending from the start of
// the run (verl/utils/tracking.py `FileLogger.log`, volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7; it
// opens the file "wb" — a restarted run truncates it — and orjson writes NaN/inf as null). The file is found at
// $VERL_FILE_LOGGER_PATH or $VERL_FILE_LOGGER_ROOT/<project_name>/<experiment_name>.jsonl (default root ".").
//
// Every line becomes a `metrics` event of stage VERL_STAGE at its step (numbers only: a value that is not a number —
// a string, a list — is not a chart). The first line is preceded by a `run_started`. Alerts come from the core's
// monitor (../alerts.ts) on verl's names mapped to its signals (VERL_SIGNALS), plus signals a caller computed from
// the rollout dumps for that step (`all_wrong_groups`, `format_error_rate`: see ../importers/verl-rollouts.ts `stepSignals`).
import { AlertMonitor, type AlertThresholds } from '../alerts';
import type { TrainerEvent } from '../events';
import { PROTOCOL_VERSION } from '../events';

export const VERL_STAGE = 'verl';

/** verl metric → the alert signal it stands for (names from verl/trainer/ppo/metric_utils.py `compute_data_metrics`). */
export const VERL_SIGNALS: Record<string, string> = {
  'tool_call_counts/mean': 'tc',
  'response_length/mean': 'response_len',
  'critic/score/mean': 'reward_mean',
};

export interface VerlLine {
  step: number;
  data: Record<string, unknown>;
}

/** A parsed verl metrics line, or why it is not one (the message names the field). */
export function parseVerlLine(text: string): VerlLine | { error: string; column: number } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const m = /position (\d+)/.exec((e as Error).message);
    return { error: `invalid JSON: ${(e as Error).message}`, column: m ? Number(m[1]) + 1 : 1 };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return { error: 'expected {"step": N, "data": {...}}', column: 1 };
  const o = value as Record<string, unknown>;
  if (typeof o.step !== 'number' || !Number.isInteger(o.step) || o.step < 0)
    return {
      error: `step: expected a non-negative integer, got ${JSON.stringify(o.step)}`,
      column: columnOf(text, 'step'),
    };
  if (!o.data || typeof o.data !== 'object' || Array.isArray(o.data))
    return { error: 'data: expected an object of metrics', column: columnOf(text, 'data') };
  return { step: o.step, data: o.data as Record<string, unknown> };
}

function columnOf(text: string, key: string): number {
  const i = text.indexOf(`"${key}"`);
  return i < 0 ? 1 : i + 1;
}

/**
 * A verl run's name from its metrics file's path. verl's own layout is `<root>/<project>/<experiment>.jsonl`, so the
 * name is `project/experiment`; a file named `metrics.jsonl` (VERL_FILE_LOGGER_PATH=runs/<run>/metrics.jsonl, as the
 * docs suggest) is named by its folder — naming every such run after its file made them all "metrics".
 */
export function verlRunName(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean);
  const stem = (parts.pop() ?? path).replace(/\.jsonl$/i, '');
  const parent = parts.pop();
  if (!parent) return stem;
  return stem.toLowerCase() === 'metrics' ? parent : `${parent}/${stem}`;
}

/** Does the first line of a file look like verl's file logger? (Auto-detection in the workspace.) */
export function looksLikeVerlMetrics(firstLine: string): boolean {
  const text = firstLine.trim();
  if (!text.startsWith('{"step"')) return false; // verl's key order (FileLogger.log builds {"step", "data"})
  const p = parseVerlLine(text);
  if ('error' in p) return false;
  return Object.keys(JSON.parse(text) as object).length === 2;
}

export interface VerlAdapterOptions {
  /** The run id in the events (the panel shows the file's name). */
  run: string;
  /** Where the metrics came from, kept in run_started's config. */
  source: string;
  thresholds?: Partial<AlertThresholds>;
  /** Seconds since the epoch for the events' `time` (verl's lines carry none). */
  now?: () => number;
}

/** Turns verl metrics lines into protocol events, one line at a time (keeps the alert state between lines). */
export class VerlMetricsAdapter {
  private started = false;
  private monitor: AlertMonitor;
  private readonly now: () => number;

  constructor(private readonly opts: VerlAdapterOptions) {
    this.monitor = new AlertMonitor(opts.thresholds);
    this.now = opts.now ?? (() => Date.now() / 1000);
  }

  /** The file was truncated (a restarted verl run): start over. */
  reset(): void {
    this.started = false;
    this.monitor = new AlertMonitor(this.opts.thresholds);
  }

  /** Events for one parsed line; `extra` are signals computed elsewhere for this step (e.g. from its rollout dump). */
  events(line: VerlLine, extra: Record<string, number> = {}): TrainerEvent[] {
    const time = this.now();
    const base = { v: PROTOCOL_VERSION, time, run: this.opts.run } as const;
    const out: TrainerEvent[] = [];
    if (!this.started) {
      this.started = true;
      out.push({
        ...base,
        type: 'run_started',
        stage: VERL_STAGE,
        config: { engine: 'verl', metrics_file: this.opts.source },
        total_steps: 0,
        device: 'verl',
        world_size: 1,
      });
    }
    // JSON.parse gives finite numbers or null (orjson's NaN): a line of those is used as it is — copying 300 keys
    // per step is most of the cost of reading a long run; only a line with other values (a string, a list) is copied.
    let values = line.data as Record<string, number | null>;
    for (const k in line.data) {
      const v = line.data[k];
      if (v !== null && (typeof v !== 'number' || !Number.isFinite(v))) {
        values = {};
        for (const [k2, v2] of Object.entries(line.data))
          if (v2 === null || (typeof v2 === 'number' && Number.isFinite(v2))) values[k2] = v2 as number | null;
        break;
      }
    }
    for (const [k, v] of Object.entries(extra)) values[`coa/${k}`] = v;
    out.push({ ...base, type: 'metrics', stage: VERL_STAGE, step: line.step, values });
    const signals: Record<string, number> = { ...extra };
    for (const [name, signal] of Object.entries(VERL_SIGNALS)) {
      const v = values[name];
      if (typeof v === 'number') signals[signal] = v;
    }
    for (const a of this.monitor.update(line.step, signals))
      out.push({
        ...base,
        type: 'alert',
        stage: VERL_STAGE,
        step: line.step,
        kind: a.kind,
        severity: a.severity,
        message: a.message,
      });
    return out;
  }
}
