// Agent alerts on metric series (kinds of ./events.ts) — the one implementation. The trainer's RL stages ask for
// them through the environment server (POST /v1/alerts, coa_trainer/env/alerts.py); the editor computes them itself
// for runs it did not start (verl metrics files, src/core/verl/metrics.ts). Each rule compares the mean of the last
// `window` steps with a baseline (the mean of the first `window` steps, once 2 × window steps are in) or a fixed
// threshold. Alerts are edge-triggered: one alert when a condition starts to hold, re-armed once it stops holding —
// a 300-step run does not get 300 alerts.
//
// Signals (metric names of our trainer; other engines' adapters map their names onto these):
// - tool_call_explosion: mean tool calls `tc` > factor × baseline (baseline 0: > 1 call per trajectory)
// - think_collapse:      mean `think_len` < factor × baseline; runs without a think length (verl, TRL) use the
//                        response length `response_len` — the message says which
// - all_wrong_groups:    fraction of groups with no correct sample > threshold
// - zero_variance_groups: fraction of groups whose rewards are all equal (zero advantages, no gradient) > threshold
// - logprob_drift:       mean |sampler − trainer| log-prob per trained token > threshold (nats): the rollout engine
//                        and the trainer disagree about the policy before it has changed
// - tool_failures:       `tool_failure_rate` > threshold
// - reward_hacking:      `reward_mean` up (current − baseline > 0.05) while `format_error_rate` rises
//                        (> baseline + 0.05) or held-out EM falls (latest < first − 0.05)
// State is bounded (first and last `window` values per key), so it travels over HTTP and into checkpoints.
import { z } from 'zod';
import * as setting from './configZod';
import { ALERT_KINDS } from './events';
import type { AgentMetric } from './metrics';

export const MARGIN = 0.05;

/** The thresholds, with their defaults — also the run config's `stages.rl*.alerts` (src/core/config.ts), so their
 * numbers are settings (configZod: finite, bounded). */
export const AlertThresholdsSchema = z
  .object({
    tool_call_explosion: setting
      .number()
      .positive()
      .default(2.0)
      .describe("Mean tool calls above this × the first steps' mean."),
    think_collapse: setting
      .number()
      .positive()
      .default(0.5)
      .describe("Think length below this × the first steps' mean."),
    all_wrong_groups: z.number().min(0).max(1).default(0.5).describe('Fraction of all-wrong groups above this.'),
    zero_variance_groups: z
      .number()
      .min(0)
      .max(1)
      .default(0.8)
      .describe(
        "Fraction of groups whose rewards are all equal (zero advantages: no gradient) above this; above 80 % most of a step's compute teaches nothing.",
      ),
    logprob_drift: setting
      .number()
      .positive()
      .default(0.05)
      .describe('Mean |sampler − trainer| log-prob per trained token above this (nats).'),
    tool_failure_rate: z.number().min(0).max(1).default(0.2).describe('Tool-failure rate above this.'),
    window: z.number().int().positive().default(5).describe('Steps averaged for the baseline and the current value.'),
  })
  .strict();
export type AlertThresholds = z.infer<typeof AlertThresholdsSchema>;
export const DEFAULT_ALERT_THRESHOLDS: AlertThresholds = AlertThresholdsSchema.parse({});

const SeriesStateSchema = z
  .object({ n: z.number().int().nonnegative(), first: z.array(z.number()), recent: z.array(z.number()) })
  .strict();
export const AlertStateSchema = z
  .object({
    series: z.record(z.string(), SeriesStateSchema).default({}),
    heldout: z.array(z.number()).default([]),
    active: z.array(z.string()).default([]),
  })
  .strict();
export type AlertState = z.infer<typeof AlertStateSchema>;
/** The trainer's checkpoints before this module: whole histories per key. */
const LegacyStateSchema = z.object({
  history: z.record(z.string(), z.array(z.number())),
  heldout: z.array(z.number()).default([]),
  active: z.array(z.string()).default([]),
});

export type AlertKind = (typeof ALERT_KINDS)[number];
/** One alert that starts at a step (the `alert` event's fields; POST /v1/alerts answers with these). */
export const AlertSchema = z
  .object({ kind: z.enum(ALERT_KINDS), severity: z.enum(['warning', 'error']), message: z.string() })
  .meta({ title: 'Alert' });
export type Alert = z.infer<typeof AlertSchema>;

export class AlertMonitor {
  readonly thresholds: AlertThresholds;
  private state: AlertState;

  constructor(thresholds: Partial<AlertThresholds> = {}, state?: unknown) {
    this.thresholds = AlertThresholdsSchema.parse(thresholds);
    this.state =
      state === undefined ? { series: {}, heldout: [], active: [] } : loadAlertState(state, this.thresholds.window);
  }

  toJSON(): AlertState {
    return this.state;
  }

  observeHeldout(em: number): void {
    // Only the first and the latest matter to the rule.
    const h = this.state.heldout;
    this.state.heldout = h.length === 0 ? [em] : [h[0], em];
  }

  private push(key: string, v: number): void {
    const w = this.thresholds.window;
    const s = (this.state.series[key] ??= { n: 0, first: [], recent: [] });
    s.n++;
    if (s.first.length < w) s.first.push(v);
    s.recent.push(v);
    if (s.recent.length > w) s.recent.shift();
  }

  private base(key: AgentMetric): number | null {
    const s = this.state.series[key];
    const w = this.thresholds.window;
    return s && s.n >= 2 * w ? mean(s.first) : null;
  }

  private now(key: AgentMetric): number | null {
    const s = this.state.series[key];
    return s && s.recent.length ? mean(s.recent) : null;
  }

  /** Adds one step's values (numbers only; null, booleans and strings are ignored) and returns the alerts that start. */
  update(step: number, values: Record<string, unknown>): Alert[] {
    for (const [k, v] of Object.entries(values)) if (typeof v === 'number' && Number.isFinite(v)) this.push(k, v);
    const th = this.thresholds;
    const checks: [AlertKind, boolean, Alert['severity'], string][] = [];

    const tc0 = this.base('tc');
    const tc = this.now('tc');
    if (tc0 !== null && tc !== null) {
      const limit = tc0 > 0 ? th.tool_call_explosion * tc0 : 1.0;
      checks.push([
        'tool_call_explosion',
        tc > limit,
        'warning',
        `tool calls per trajectory ${tc.toFixed(2)} vs ${tc0.toFixed(2)} at the start`,
      ]);
    }
    const lenKey: AgentMetric = this.state.series.think_len ? 'think_len' : 'response_len';
    const l0 = this.base(lenKey);
    const l = this.now(lenKey);
    if (l0 !== null && l !== null && l0 > 0) {
      const what = lenKey === 'think_len' ? 'think length' : 'response length';
      checks.push([
        'think_collapse',
        l < th.think_collapse * l0,
        'warning',
        `${what} ${l.toFixed(1)} tokens vs ${l0.toFixed(1)} at the start`,
      ]);
    }
    const aw = this.now('all_wrong_groups');
    if (aw !== null)
      checks.push([
        'all_wrong_groups',
        aw > th.all_wrong_groups,
        'warning',
        `${pct(aw)} of groups have no correct sample (no learning signal)`,
      ]);
    const zv = this.now('zero_variance_groups');
    if (zv !== null)
      checks.push([
        'zero_variance_groups',
        zv > th.zero_variance_groups,
        'warning',
        `${pct(zv)} of groups have all-equal rewards (zero advantages: compute spent for no gradient)`,
      ]);
    const lp = this.now('logprob_diff_mean');
    if (lp !== null)
      checks.push([
        'logprob_drift',
        lp > th.logprob_drift,
        'warning',
        `sampler and trainer log-probs differ by ${lp.toFixed(3)} nats per token on average before the update (train–inference drift)`,
      ]);
    const tf = this.now('tool_failure_rate');
    if (tf !== null) checks.push(['tool_failures', tf > th.tool_failure_rate, 'error', `tool-failure rate ${pct(tf)}`]);
    const r0 = this.base('reward_mean');
    const r = this.now('reward_mean');
    if (r0 !== null && r !== null) {
      const f0 = this.base('format_error_rate');
      const f = this.now('format_error_rate');
      const fmtUp = f0 !== null && f !== null && f > f0 + MARGIN;
      const h = this.state.heldout;
      const emDown = h.length >= 2 && h[h.length - 1] < h[0] - MARGIN;
      const why = fmtUp ? 'format errors rise' : 'held-out EM falls';
      checks.push([
        'reward_hacking',
        r > r0 + MARGIN && (fmtUp || emDown),
        'warning',
        `reward ${r0.toFixed(2)} → ${r.toFixed(2)} while ${why}`,
      ]);
    }

    const out: Alert[] = [];
    const active = new Set(this.state.active);
    for (const [kind, hit, severity, message] of checks) {
      if (hit && !active.has(kind)) {
        active.add(kind);
        out.push({ kind, severity, message: `step ${step}: ${message}` });
      } else if (!hit) active.delete(kind);
    }
    this.state.active = [...active].sort();
    return out;
  }
}

/** A saved state: this module's shape, or the trainer's older whole-history shape (checkpoints written before it). */
export function loadAlertState(value: unknown, window: number): AlertState {
  const legacy = LegacyStateSchema.safeParse(value);
  if (legacy.success && value && typeof value === 'object' && 'history' in value) {
    const series: AlertState['series'] = {};
    for (const [k, xs] of Object.entries(legacy.data.history))
      series[k] = { n: xs.length, first: xs.slice(0, window), recent: xs.slice(-window) };
    const h = legacy.data.heldout;
    return { series, heldout: h.length > 2 ? [h[0], h[h.length - 1]] : h, active: legacy.data.active };
  }
  return AlertStateSchema.parse(value);
}

function mean(xs: number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
