// The live panel's data model, free of the DOM: runs, their metric series on a run-global step axis, stage
// boundaries, alerts and sampled rollouts. Metric names are grouped by pattern; a name no pattern knows goes to
// "other" and is still charted (the trainer gains metrics faster than this table).
import type { TrainerEvent } from '../../src/core/events';
import type { LivePanelRun } from './protocol';

export interface Series {
  x: number[];
  y: (number | null)[];
}

export interface StageMark {
  stage: string;
  /** Run-global step where the stage starts (its step 0). */
  x: number;
}

export interface AlertItem {
  stage: string;
  step: number;
  x: number;
  kind: string;
  severity: 'warning' | 'error';
  message: string;
}

export interface SampleItem {
  stage: string;
  step: number;
  /** Run-global step (newest first in the list). */
  x: number;
  id: string;
  question: string;
  reward: number | null;
  record: unknown;
}

export interface RunState {
  info: LivePanelRun;
  stages: StageMark[];
  metrics: Map<string, Series>;
  alerts: AlertItem[];
  samples: SampleItem[];
  progress: { stage: string; step: number; total: number; eta_s: number | null } | null;
  status: string;
  /** Run-global step of the latest event. */
  maxX: number;
}

export const GROUPS = [
  { id: 'loss', title: 'Loss & reward' },
  { id: 'quality', title: 'EM / F1' },
  { id: 'agent', title: 'Agent: tool calls, format, groups' },
  { id: 'policy', title: 'KL / entropy / clip / optimiser' },
  { id: 'throughput', title: 'Throughput' },
  { id: 'other', title: 'Other' },
] as const;
export type GroupId = (typeof GROUPS)[number]['id'];

const has = (tokens: string[], words: string[]) => tokens.some((t) => words.some((w) => t === w || t.startsWith(w)));

/** Which chart group a metric name belongs to (by its `_`/`/`/`.`-separated words). */
export function groupOf(name: string): GroupId {
  const tokens = name.toLowerCase().split(/[/_.\-]+/).filter(Boolean);
  const exact = (words: string[]) => tokens.some((t) => words.includes(t));
  if (has(tokens, ['loss', 'reward', 'advantage', 'return', 'nll', 'margin'])) return 'loss';
  if (exact(['tc', 'tp', 'otc', 'all', 'turns', 'calls']) || has(tokens, ['tool', 'malformed', 'truncat', 'format', 'call'])) return 'agent';
  if (exact(['em', 'f1', 'acc', 'accuracy', 'cover', 'exact'])) return 'quality';
  if (exact(['kl', 'lr']) || has(tokens, ['entropy', 'clip', 'grad', 'ratio'])) return 'policy';
  if (/per_s$|_s$|throughput|tokens|elapsed|seconds|time/.test(name.toLowerCase())) return 'throughput';
  return 'other';
}

export function newRun(info: LivePanelRun): RunState {
  return { info, stages: [], metrics: new Map(), alerts: [], samples: [], progress: null, status: 'waiting', maxX: 0 };
}

const MAX_SAMPLES = 200;
const MAX_ALERTS = 500;

/** Exponential moving average (TensorBoard-style, debiased); nulls stay gaps and do not move the average. */
export function ema(y: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return y;
  let last = 0;
  let n = 0;
  return y.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    last = last * weight + (1 - weight) * v;
    n++;
    return last / (1 - Math.pow(weight, n));
  });
}

export class PanelModel {
  readonly runs = new Map<string, RunState>();
  /** Events applied (every event counts, whatever its type). */
  received = 0;
  /** Metric names in first-seen order, with their group. */
  readonly metricNames = new Map<string, GroupId>();
  /** Bumped on every change, so the view redraws only what changed. */
  version = 0;
  readonly dirtyMetrics = new Set<string>();
  stagesChanged = false;
  listsChanged = false;

  addRun(info: LivePanelRun): RunState {
    let run = this.runs.get(info.key);
    if (!run) {
      run = newRun(info);
      this.runs.set(info.key, run);
      for (const name of this.metricNames.keys()) this.dirtyMetrics.add(name);
      this.stagesChanged = this.listsChanged = true;
    }
    return run;
  }

  removeRun(key: string): void {
    const run = this.runs.get(key);
    if (!run) return;
    this.runs.delete(key);
    for (const name of this.metricNames.keys()) this.dirtyMetrics.add(name);
    this.stagesChanged = this.listsChanged = true;
  }

  /** The file was truncated or replaced: forget what came from it. */
  resetRun(key: string): void {
    const run = this.runs.get(key);
    if (!run) return;
    for (const name of run.metrics.keys()) this.dirtyMetrics.add(name);
    this.runs.set(key, newRun(run.info));
    this.stagesChanged = this.listsChanged = true;
  }

  private xOf(run: RunState, stage: string, step: number): number {
    let mark = run.stages.find((s) => s.stage === stage);
    if (!mark) {
      // A stage starts where the run's latest step is; steps restart at 0 in every stage.
      mark = { stage, x: run.maxX };
      run.stages.push(mark);
      this.stagesChanged = true;
    }
    const x = mark.x + step;
    if (x > run.maxX) run.maxX = x;
    return x;
  }

  private push(run: RunState, name: string, x: number, y: number | null): void {
    if (!this.metricNames.has(name)) {
      this.metricNames.set(name, groupOf(name));
      this.listsChanged = true;
    }
    let s = run.metrics.get(name);
    if (!s) run.metrics.set(name, (s = { x: [], y: [] }));
    const n = s.x.length;
    if (n > 0 && x <= s.x[n - 1]) {
      // Out of order (a resumed stage re-logging steps): keep x sorted, last value wins.
      let i = n - 1;
      while (i > 0 && s.x[i - 1] >= x) i--;
      if (s.x[i] === x) s.y[i] = y;
      else if (s.x[i] > x) {
        s.x.splice(i, 0, x);
        s.y.splice(i, 0, y);
      } else {
        s.x.push(x);
        s.y.push(y);
      }
    } else {
      s.x.push(x);
      s.y.push(y);
    }
    this.dirtyMetrics.add(name);
  }

  apply(key: string, events: TrainerEvent[]): void {
    const run = this.runs.get(key);
    this.received += events.length;
    this.version++;
    if (!run) return; // counted: the panel received it, even for a run removed meanwhile
    for (const e of events) {
      switch (e.type) {
        case 'run_started':
          this.xOf(run, e.stage, 0);
          run.status = `${e.stage}: running on ${e.device}${e.world_size > 1 ? ` ×${e.world_size}` : ''}`;
          this.listsChanged = true;
          break;
        case 'metrics': {
          const x = this.xOf(run, e.stage, e.step);
          for (const [name, v] of Object.entries(e.values)) this.push(run, name, x, v);
          break;
        }
        case 'eval': {
          const x = this.xOf(run, e.stage, e.step);
          for (const [name, v] of Object.entries(e.metrics)) this.push(run, `eval/${e.split}/${name}`, x, v);
          break;
        }
        case 'progress':
          this.xOf(run, e.stage, e.step);
          run.progress = { stage: e.stage, step: e.step, total: e.total, eta_s: e.eta_s };
          this.listsChanged = true;
          break;
        case 'alert':
          run.alerts.push({ stage: e.stage, step: e.step, x: this.xOf(run, e.stage, e.step), kind: e.kind, severity: e.severity, message: e.message });
          if (run.alerts.length > MAX_ALERTS) run.alerts.splice(0, run.alerts.length - MAX_ALERTS);
          this.listsChanged = true;
          break;
        case 'sample': {
          const x = this.xOf(run, e.stage, e.step);
          const r = e.record as { id: string; question?: string; reward?: { total?: number | null } | null };
          run.samples.push({ stage: e.stage, step: e.step, x, id: r.id, question: r.question ?? '', reward: r.reward?.total ?? null, record: e.record });
          if (run.samples.length > MAX_SAMPLES) run.samples.splice(0, run.samples.length - MAX_SAMPLES);
          this.listsChanged = true;
          break;
        }
        case 'stage_finished':
          this.xOf(run, e.stage, e.step);
          run.status = `${e.stage}: ${e.status}`;
          this.listsChanged = true;
          break;
        case 'error':
          run.status = `error: ${e.message}`;
          run.alerts.push({ stage: e.stage ?? '', step: 0, x: run.maxX, kind: e.code ?? 'error', severity: 'error', message: e.message });
          this.listsChanged = true;
          break;
        case 'checkpoint':
          this.xOf(run, e.stage, e.step);
          break;
        case 'log':
          break;
      }
    }
  }

  /**
   * uPlot's aligned data for one metric: the union of the runs' steps, each run's values (smoothed) or null.
   * Runs without the metric still get a (null) column so series indices stay the run order.
   */
  aligned(name: string, smoothing: number): { data: [number[], ...(number | null)[][]]; runs: RunState[] } {
    const runs = [...this.runs.values()];
    const series = runs.map((r) => r.metrics.get(name));
    const present = series.filter((s): s is Series => !!s && s.x.length > 0);
    if (present.length <= 1) {
      const only = present[0];
      const xs = only ? only.x : [];
      const cols = series.map((s) => (s && s === only ? ema(s.y, smoothing) : new Array<number | null>(xs.length).fill(null)));
      return { data: [xs, ...cols], runs };
    }
    const xs = [...new Set(present.flatMap((s) => s.x))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const cols = series.map((s) => {
      const col = new Array<number | null>(xs.length).fill(null);
      if (s) {
        const smoothed = ema(s.y, smoothing);
        for (let i = 0; i < s.x.length; i++) col[index.get(s.x[i])!] = smoothed[i];
      }
      return col;
    });
    return { data: [xs, ...cols], runs };
  }
}
