// The live panel's data model, free of the DOM. Every series lives on the step axis of its own stage (steps restart
// at 0 in each stage, as the trainer logs them). Stages are shown as tabs, one per stage family (src/core/stages.ts):
// siblings such as RL-2 and RL-2-OTC (both from RL-1) and the same stage of other runs share a tab, one line each,
// so they overlay. Evaluations are rows of the results table, never points of one line across settings.
import type { TrainerEvent } from '../../src/core/events';
import {
  RESULT_SETTINGS,
  resultSetting,
  stageFamily,
  stageInfo,
  stageLabelOf,
  stageOrder,
} from '../../src/core/stages';
import type { LivePanelRun } from '../../src/protocols/livePanel';

export interface Series {
  /** Steps within the stage, ascending. */
  x: number[];
  y: (number | null)[];
  /** When each point was logged (the event's time, seconds since the epoch): the time axes. */
  t: number[];
}

/** A chart's x axis: the step within the stage, seconds since the line's stage started, or the wall clock. */
export type XAxis = 'step' | 'relative' | 'wall';

export interface StageData {
  id: string;
  metrics: Map<string, Series>;
  /** Latest step seen in the stage (metrics, progress, alerts, samples…). */
  maxStep: number;
  status: 'running' | 'ok' | 'cancelled' | 'failed';
  /** Steps that sent a sampled rollout, ascending: the trainer writes the stage's rollouts file at the same steps. */
  sampledSteps: number[];
  /** When the stage first started (its first run_started, else its first event): 0 on the relative time axis. */
  startTime: number | null;
  /** `histogram` events by name, ascending steps (the sampler/trainer log-prob difference of each logged step). */
  histograms: Map<string, HistogramPoint[]>;
}

export interface HistogramPoint {
  step: number;
  edges: number[];
  counts: number[];
}

export interface AlertItem {
  run: string;
  stage: string;
  step: number;
  /** When it was raised (seconds since the epoch). */
  time: number;
  kind: string;
  severity: 'warning' | 'error';
  message: string;
}

export interface SampleItem {
  stage: string;
  step: number;
  id: string;
  question: string;
  reward: number | null;
  /** Arrival order (the list shows the newest first). */
  seq: number;
}

export interface EvalItem {
  stage: string;
  step: number;
  split: string;
  metrics: Record<string, number | null>;
}

export interface RunState {
  info: LivePanelRun;
  stages: Map<string, StageData>;
  alerts: AlertItem[];
  samples: SampleItem[];
  /** Latest evaluation per stage × split (a re-run replaces it). */
  evals: Map<string, EvalItem>;
  progress: { stage: string; step: number; total: number; eta_s: number | null } | null;
  status: string;
  /** The stage of the latest metrics event (the tab shown until the user picks one). */
  lastStage: string | null;
}

export const GROUPS = [
  { id: 'loss', title: 'Loss & reward' },
  { id: 'quality', title: 'EM / F1' },
  { id: 'agent', title: 'Agent: tool calls, format, groups' },
  { id: 'policy', title: 'KL / entropy / clip / optimiser' },
  { id: 'throughput', title: 'Throughput' },
  { id: 'system', title: 'System: CPU, GPU, memory' },
  { id: 'length', title: 'Lengths' },
  {
    id: 'diagnostics',
    title: 'Diagnostics: zero-variance groups, sampler/trainer log-prob drift, reward-hacking scanners',
  },
  { id: 'validation', title: 'Validation' },
  { id: 'other', title: 'Other' },
] as const;
export type GroupId = (typeof GROUPS)[number]['id'];

const has = (tokens: string[], words: string[]) => tokens.some((t) => words.some((w) => t === w || t.startsWith(w)));

/**
 * Namespaced metrics of the engines users run, by prefix (first match wins): verl's names from
 * verl/trainer/ppo/metric_utils.py `compute_data_metrics` / `compute_timing_metrics` / `compute_throughout_metrics`
 * and the actor's `actor/*` (volcengine/verl b178a3cd), TRL's GRPOTrainer `_metrics` keys (`tools/*`,
 * `completions/*`, `clip_ratio/*`, `frac_reward_zero_std`; huggingface/trl trl/trainer/grpo_trainer.py).
 */
const PREFIX_GROUPS: [RegExp, GroupId][] = [
  [/^(zero_variance_groups|logprob_diff_|scan_)/, 'diagnostics'], // ours: the RL step's diagnostics (src/core/metrics.ts, scanners.ts)
  [/^critic\/(score|rewards|advantages|returns|values|vf_)/, 'loss'],
  [/^(rewards?|reward_std|frac_reward_zero_std)(\/|$)/, 'loss'],
  [/^(actor|critic|clip_ratio|entropy|kl|grad_norm|learning_rate)(\/|$)/, 'policy'],
  [
    /^(response_length|response_length_non_aborted|prompt_length|response|completions\/(mean|min|max)_(terminated_)?length|completions\/clipped_ratio)(\/|$)/,
    'length',
  ],
  [/^(num_turns|tool_call_counts|agent_loop|tools|coa|completions)\//, 'agent'],
  // The trainer's system metrics (src/core/metrics.ts SYSTEM_METRICS) and verl's memory figures.
  [/^system\//, 'system'],
  [/^perf\/(max_memory|cpu_memory)/, 'system'],
  [/^(perf|timing_s|timing_per_token_ms)\//, 'throughput'],
  [/^(val-core|val-aux)\//, 'validation'],
  // the search boundary meter's rates inside RL (src/core/metrics.ts BOUNDARY_METRICS) beside TC; its TC, EM and
  // seconds go where their words put them
  [/^boundary_(over|under)_search$/, 'agent'],
];

/** Which chart group a metric name belongs to (known namespaces first, then by its `_`/`/`/`.`-separated words). */
export function groupOf(name: string): GroupId {
  for (const [re, group] of PREFIX_GROUPS) if (re.test(name)) return group;
  const tokens = name
    .toLowerCase()
    .split(/[/_.-]+/)
    .filter(Boolean);
  const exact = (words: string[]) => tokens.some((t) => words.includes(t));
  if (has(tokens, ['loss', 'reward', 'advantage', 'return', 'nll', 'margin'])) return 'loss';
  if (
    exact(['tc', 'tp', 'otc', 'all', 'turns', 'calls']) ||
    has(tokens, ['tool', 'malformed', 'truncat', 'format', 'call'])
  )
    return 'agent';
  if (exact(['em', 'f1', 'acc', 'accuracy', 'cover', 'exact'])) return 'quality';
  if (exact(['kl', 'lr']) || has(tokens, ['entropy', 'clip', 'grad', 'ratio'])) return 'policy';
  if (/per_s$|_s$|throughput|tokens|elapsed|seconds|time/.test(name.toLowerCase())) return 'throughput';
  return 'other';
}

/** Alert kinds in words (`3 × tool-call explosion`); an unknown kind or error code is shown as written. */
const ALERT_WORDS: Record<string, string> = {
  tool_call_explosion: 'tool-call explosion',
  think_collapse: 'think collapse',
  all_wrong_groups: 'all-wrong groups',
  reward_hacking: 'reward hacking',
  tool_failures: 'tool failures',
  nan_loss: 'NaN loss',
  zero_variance_groups: 'zero-variance groups',
  logprob_drift: 'sampler/trainer log-prob drift',
  other: 'other alert',
};
export const alertWords = (kind: string) => ALERT_WORDS[kind] ?? kind.replace(/_/g, ' ');

export function newRun(info: LivePanelRun): RunState {
  return {
    info,
    stages: new Map(),
    alerts: [],
    samples: [],
    evals: new Map(),
    progress: null,
    status: 'waiting',
    lastStage: null,
  };
}

const MAX_SAMPLES = 200;
const MAX_ALERTS = 2000;

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

/** One line on a tab's charts: a stage of a run. */
export interface Line {
  run: string;
  stage: string;
  /** Legend text: the stage label, prefixed with the run when several runs are shown. */
  label: string;
}

export interface Tab {
  /** The family id (src/core/stages.ts stageFamily). */
  id: string;
  label: string;
  description: string;
  /** Stage ids in the tab, pipeline order. */
  stages: string[];
}

/**
 * Aligned data for one chart: the union of the lines' x values (steps, or times), and per line the raw and smoothed
 * values and the step of each. `undefined`: the line has no point at this x (another line has) — drawn through;
 * `null`: a gap — a value that was not finite, or a break in the line's steps much longer than its logging interval
 * (a line drawn straight across it would read as data).
 */
export interface ChartData {
  x: number[];
  raw: (number | null | undefined)[][];
  smooth: (number | null | undefined)[][];
  steps: (number | undefined)[][];
}

/**
 * Where a line breaks: after index i when the next logged step is more than twice the line's usual interval (the
 * median step between its points) away. Needs 3 points to know an interval.
 */
export function stepGaps(x: readonly number[], factor = 2): { after: number[]; interval: number } {
  if (x.length < 3) return { after: [], interval: 0 };
  const d = x
    .slice(1)
    .map((v, i) => v - x[i])
    .sort((a, b) => a - b);
  const interval = d[Math.floor(d.length / 2)];
  const after: number[] = [];
  for (let i = 0; i + 1 < x.length; i++) if (interval > 0 && x[i + 1] - x[i] > factor * interval) after.push(i);
  return { after, interval };
}

/** On a time axis a line also breaks where the time between two logged steps is far longer than usual (a stage
 *  cancelled and resumed later, a stalled logger): steps vary in duration, hence a wider margin than for steps. */
const TIME_GAP_FACTOR = 5;

export interface ReadoutRow {
  label: string;
  raw: number | null;
  smooth: number | null;
  /** The line's step at this x (none: the line has no point here). */
  step: number | null;
}

export interface ResultsRow {
  run: string;
  runLabel: string;
  stage: string;
  stageLabel: string;
  split: string;
  step: number;
  values: Record<string, number | null>;
}

export interface AlertGroup {
  kind: string;
  /** `3 × tool-call explosion` */
  title: string;
  severity: 'warning' | 'error';
  count: number;
  /** Newest first. */
  items: AlertItem[];
}

/** Columns first in a results table, in the papers' order; the other metrics follow as first seen. */
const RESULT_COLUMNS = ['em', 'f1', 'tc', 'tp', 'format_error_rate'];

const stageSort = (a: string, b: string, seen: Map<string, number>) =>
  stageOrder(a) - stageOrder(b) || (seen.get(a) ?? 0) - (seen.get(b) ?? 0);

export class PanelModel {
  readonly runs = new Map<string, RunState>();
  /** Events applied (every event counts, whatever its type). */
  received = 0;
  /** Bumped on every change. */
  version = 0;
  /** Families whose data changed since the view last drew them. */
  readonly dirtyTabs = new Set<string>();
  /** Tabs, lines, lists or the results table changed (cheap to redraw, so one flag). */
  structureChanged = false;
  listsChanged = false;
  private seq = 0;
  /** First-seen order of stage ids (for stages the table does not know). */
  private readonly seenStages = new Map<string, number>();
  /** Metric names per family, first-seen order. */
  private readonly tabMetrics = new Map<string, Map<string, GroupId>>();

  addRun(info: LivePanelRun): RunState {
    let run = this.runs.get(info.key);
    if (!run) {
      run = newRun(info);
      this.runs.set(info.key, run);
      this.structureChanged = this.listsChanged = true;
    }
    return run;
  }

  removeRun(key: string): void {
    const run = this.runs.get(key);
    if (!run) return;
    for (const s of run.stages.keys()) this.dirtyTabs.add(stageFamily(s));
    this.runs.delete(key);
    this.rebuildTabMetrics();
    this.structureChanged = this.listsChanged = true;
  }

  /** The file was truncated or replaced: forget what came from it. */
  resetRun(key: string): void {
    const run = this.runs.get(key);
    if (!run) return;
    for (const s of run.stages.keys()) this.dirtyTabs.add(stageFamily(s));
    this.runs.set(key, newRun(run.info));
    this.rebuildTabMetrics();
    this.structureChanged = this.listsChanged = true;
  }

  private rebuildTabMetrics(): void {
    this.tabMetrics.clear();
    for (const run of this.runs.values())
      for (const s of run.stages.values())
        for (const name of s.metrics.keys()) this.noteMetric(stageFamily(s.id), name);
  }

  private noteMetric(family: string, name: string): void {
    let names = this.tabMetrics.get(family);
    if (!names) this.tabMetrics.set(family, (names = new Map()));
    if (!names.has(name)) {
      names.set(name, groupOf(name));
      this.structureChanged = true;
    }
  }

  private stage(run: RunState, id: string): StageData {
    let s = run.stages.get(id);
    if (!s) {
      s = {
        id,
        metrics: new Map(),
        maxStep: 0,
        status: 'running',
        sampledSteps: [],
        histograms: new Map(),
        startTime: null,
      };
      run.stages.set(id, s);
      if (!this.seenStages.has(id)) this.seenStages.set(id, this.seenStages.size);
      this.structureChanged = true;
    }
    return s;
  }

  private touch(run: RunState, id: string, step: number, time?: number): StageData {
    const s = this.stage(run, id);
    // The legend's "step N" follows every event: runs that send no progress events (verl, TRL) otherwise showed the
    // step of their last alert while the charts moved on.
    if (step > s.maxStep) {
      s.maxStep = step;
      this.listsChanged = true;
    }
    if (s.startTime === null && time !== undefined) s.startTime = time;
    return s;
  }

  private push(run: RunState, s: StageData, name: string, x: number, y: number | null, t: number): void {
    let series = s.metrics.get(name);
    if (!series) {
      s.metrics.set(name, (series = { x: [], y: [], t: [] }));
      this.noteMetric(stageFamily(s.id), name);
    }
    const n = series.x.length;
    if (n > 0 && x <= series.x[n - 1]) {
      // Out of order (a resumed stage re-logging steps): keep x sorted, last value wins.
      let i = n - 1;
      while (i > 0 && series.x[i - 1] >= x) i--;
      if (series.x[i] === x) {
        series.y[i] = y;
        series.t[i] = t;
      } else if (series.x[i] > x) {
        series.x.splice(i, 0, x);
        series.y.splice(i, 0, y);
        series.t.splice(i, 0, t);
      } else {
        series.x.push(x);
        series.y.push(y);
        series.t.push(t);
      }
    } else {
      series.x.push(x);
      series.y.push(y);
      series.t.push(t);
    }
  }

  apply(key: string, events: TrainerEvent[]): void {
    const run = this.runs.get(key);
    this.received += events.length;
    this.version++;
    if (!run) return; // counted: the panel received it, even for a run removed meanwhile
    for (const e of events) {
      switch (e.type) {
        case 'run_started':
          if (e.stage !== 'pipeline') {
            const s = this.stage(run, e.stage);
            s.status = 'running';
            s.startTime ??= e.time;
          }
          run.status = `${stageLabelOf(e.stage)}: running on ${e.device}${e.world_size > 1 ? ` ×${e.world_size}` : ''}`;
          this.listsChanged = true;
          break;
        case 'metrics': {
          const s = this.touch(run, e.stage, e.step, e.time);
          for (const name in e.values) this.push(run, s, name, e.step, e.values[name], e.time);
          this.dirtyTabs.add(stageFamily(e.stage));
          run.lastStage = e.stage;
          break;
        }
        case 'eval':
          run.evals.set(`${e.stage}\n${e.split}`, { stage: e.stage, step: e.step, split: e.split, metrics: e.metrics });
          this.structureChanged = true;
          break;
        case 'progress':
          if (e.stage !== 'pipeline') this.touch(run, e.stage, e.step);
          run.progress = { stage: e.stage, step: e.step, total: e.total, eta_s: e.eta_s };
          this.listsChanged = true;
          break;
        case 'alert':
          this.touch(run, e.stage, e.step, e.time);
          run.alerts.push({
            run: key,
            stage: e.stage,
            step: e.step,
            time: e.time,
            kind: e.kind,
            severity: e.severity,
            message: e.message,
          });
          if (run.alerts.length > MAX_ALERTS) run.alerts.splice(0, run.alerts.length - MAX_ALERTS);
          this.dirtyTabs.add(stageFamily(e.stage));
          this.listsChanged = true;
          break;
        case 'sample': {
          const steps = this.touch(run, e.stage, e.step).sampledSteps;
          if (!steps.length || steps[steps.length - 1] < e.step) steps.push(e.step);
          else if (!steps.includes(e.step))
            steps.splice(
              steps.findIndex((x) => x > e.step),
              0,
              e.step,
            );
          const r = e.record as { id: string; question?: string; reward?: { total?: number | null } | null };
          run.samples.push({
            stage: e.stage,
            step: e.step,
            id: r.id,
            question: r.question ?? '',
            reward: r.reward?.total ?? null,
            seq: this.seq++,
          });
          if (run.samples.length > MAX_SAMPLES) run.samples.splice(0, run.samples.length - MAX_SAMPLES);
          this.listsChanged = true;
          break;
        }
        case 'stage_finished':
          if (e.stage !== 'pipeline') this.touch(run, e.stage, e.step).status = e.status;
          run.status = `${stageLabelOf(e.stage)}: ${e.status}`;
          // A finished, cancelled or failed stage has nothing left to estimate: its last progress keeps its step only.
          if (run.progress && (run.progress.stage === e.stage || e.stage === 'pipeline'))
            run.progress = { ...run.progress, eta_s: null };
          this.listsChanged = true;
          break;
        case 'error':
          run.status = `error: ${e.message}`;
          run.alerts.push({
            run: key,
            stage: e.stage ?? '',
            step: e.stage ? (run.stages.get(e.stage)?.maxStep ?? 0) : 0,
            time: e.time,
            kind: e.code ?? 'error',
            severity: 'error',
            message: e.message,
          });
          if (run.progress && (!e.stage || run.progress.stage === e.stage))
            run.progress = { ...run.progress, eta_s: null };
          this.listsChanged = true;
          break;
        case 'checkpoint':
          this.touch(run, e.stage, e.step);
          break;
        case 'log':
          break;
        case 'histogram': {
          const s = this.touch(run, e.stage, e.step);
          let h = s.histograms.get(e.name);
          if (!h) s.histograms.set(e.name, (h = []));
          const point = { step: e.step, edges: e.edges, counts: e.counts };
          const i = h.findIndex((p) => p.step >= e.step);
          if (i < 0) h.push(point);
          else if (h[i].step === e.step)
            h[i] = point; // a resumed stage logging the step again
          else h.splice(i, 0, point);
          this.dirtyTabs.add(stageFamily(e.stage));
          break;
        }
      }
    }
  }

  /** Stage families that have charted metrics, pipeline order (unknown stages after, as first seen). */
  tabs(): Tab[] {
    const families = new Map<string, Set<string>>();
    for (const run of this.runs.values())
      for (const s of run.stages.values()) {
        if (s.metrics.size === 0) continue;
        const f = stageFamily(s.id);
        if (!families.has(f)) families.set(f, new Set());
        families.get(f)!.add(s.id);
      }
    const ids = [...families.keys()].sort((a, b) => stageSort(a, b, this.seenStages));
    return ids.map((id) => {
      const stages = [...families.get(id)!].sort((a, b) => stageSort(a, b, this.seenStages));
      const info = stageInfo(id);
      return {
        id,
        label: stages.map(stageLabelOf).join(' · '),
        description: stages
          .map((s) => stageInfo(s)?.description ?? (s === id && info ? info.description : ''))
          .filter(Boolean)
          .join(' '),
        stages,
      };
    });
  }

  /** Metric names charted in a tab, first-seen order, with their group. */
  metricsOf(tab: string): Map<string, GroupId> {
    return this.tabMetrics.get(tab) ?? new Map();
  }

  /** A tab's lines: every run × stage of the family that has metrics, runs in order, stages in pipeline order. */
  lines(tab: string): Line[] {
    const multiRun = this.runs.size > 1;
    const out: Line[] = [];
    for (const run of this.runs.values()) {
      const stages = [...run.stages.values()]
        .filter((s) => s.metrics.size > 0 && stageFamily(s.id) === tab)
        .map((s) => s.id);
      stages.sort((a, b) => stageSort(a, b, this.seenStages));
      for (const stage of stages)
        out.push({
          run: run.info.key,
          stage,
          label: `${multiRun ? run.info.label + ' · ' : ''}${stageLabelOf(stage)}`,
        });
    }
    return out;
  }

  /** The tab the panel opens on: the family of the latest metrics of the last-added run that has any. */
  latestTab(): string | null {
    for (const run of [...this.runs.values()].reverse()) if (run.lastStage) return stageFamily(run.lastStage);
    return null;
  }

  /**
   * Aligned data of one chart on an x axis: the union of the lines' x values; per line its raw and smoothed values
   * and steps (ChartData: undefined where a line has no point, null at a gap).
   */
  chartData(lines: Line[], name: string, smoothing: number, axis: XAxis = 'step'): ChartData {
    type Point = { x: number; step: number | undefined; raw: number | null; smooth: number | null };
    const perLine: Point[][] = lines.map((l) => {
      const stage = this.runs.get(l.run)?.stages.get(l.stage);
      const s = stage?.metrics.get(name);
      if (!s || !s.x.length) return [];
      const start = stage!.startTime ?? s.t[0];
      const at = (i: number) => (axis === 'step' ? s.x[i] : axis === 'wall' ? s.t[i] : s.t[i] - start);
      const sm = ema(s.y, smoothing);
      const points: Point[] = s.x.map((step, i) => ({ x: at(i), step, raw: s.y[i], smooth: sm[i] }));
      const gaps = stepGaps(s.x);
      const after = new Set(gaps.after);
      if (axis !== 'step') for (const i of stepGaps(s.t, TIME_GAP_FACTOR).after) after.add(i);
      for (const i of after)
        points.push({
          x: axis === 'step' ? s.x[i] + gaps.interval : (at(i) + at(i + 1)) / 2,
          step: undefined,
          raw: null,
          smooth: null,
        });
      return points;
    });
    const x = [...new Set(perLine.flatMap((ps) => ps.map((p) => p.x)))].sort((a, b) => a - b);
    const index = new Map(x.map((v, i) => [v, i]));
    const raw: (number | null | undefined)[][] = [];
    const smooth: (number | null | undefined)[][] = [];
    const steps: (number | undefined)[][] = [];
    for (const points of perLine) {
      const r = new Array<number | null | undefined>(x.length).fill(undefined);
      const m = new Array<number | null | undefined>(x.length).fill(undefined);
      const st = new Array<number | undefined>(x.length).fill(undefined);
      for (const p of points) {
        const j = index.get(p.x)!;
        // Two points of one line at one x (the same second on a time axis): the later step wins.
        if (r[j] !== undefined && p.step === undefined) continue;
        r[j] = p.raw;
        m[j] = p.smooth;
        st[j] = p.step;
      }
      raw.push(r);
      smooth.push(m);
      steps.push(st);
    }
    return { x, raw, smooth, steps };
  }

  /** Number of steps on a chart without building its data (for the page's data-points attribute). */
  chartSteps(lines: Line[], name: string): number {
    const series = lines
      .map((l) => this.runs.get(l.run)?.stages.get(l.stage)?.metrics.get(name))
      .filter((s): s is Series => !!s);
    if (series.length <= 1) return series[0]?.x.length ?? 0;
    return new Set(series.flatMap((s) => s.x)).size;
  }

  /** Evaluations as rows: pipeline results settings first (in the table's order), then stage evaluations. */
  results(): { settings: ResultsRow[]; stages: ResultsRow[]; columns: string[] } {
    const settings: ResultsRow[] = [];
    const stages: ResultsRow[] = [];
    const seen = new Set<string>();
    for (const run of this.runs.values())
      for (const e of run.evals.values()) {
        const row = {
          run: run.info.key,
          runLabel: run.info.label,
          stage: e.stage,
          stageLabel: stageLabelOf(e.stage),
          split: e.split,
          step: e.step,
          values: e.metrics,
        };
        (resultSetting(e.stage) ? settings : stages).push(row);
        for (const k of Object.keys(e.metrics)) seen.add(k);
      }
    const settingIndex = (id: string) => RESULT_SETTINGS.findIndex((s) => s.id === id);
    const runIndex = new Map([...this.runs.keys()].map((k, i) => [k, i]));
    settings.sort(
      (a, b) =>
        settingIndex(a.stage) - settingIndex(b.stage) ||
        runIndex.get(a.run)! - runIndex.get(b.run)! ||
        a.split.localeCompare(b.split),
    );
    stages.sort(
      (a, b) =>
        stageSort(a.stage, b.stage, this.seenStages) ||
        runIndex.get(a.run)! - runIndex.get(b.run)! ||
        a.split.localeCompare(b.split),
    );
    const columns = [
      ...RESULT_COLUMNS.filter((c) => seen.has(c)),
      ...[...seen].filter((c) => !RESULT_COLUMNS.includes(c)),
    ];
    return { settings, stages, columns };
  }

  /** Alerts of every run grouped by kind (most frequent first), newest first within a group. */
  alertGroups(dismissed: ReadonlySet<string> = new Set()): AlertGroup[] {
    const groups = new Map<string, AlertItem[]>();
    for (const run of this.runs.values())
      for (const a of run.alerts) {
        if (dismissed.has(a.kind)) continue;
        if (!groups.has(a.kind)) groups.set(a.kind, []);
        groups.get(a.kind)!.push(a);
      }
    const out = [...groups].map(([kind, items]) => ({
      kind,
      title: `${items.length} × ${alertWords(kind)}`,
      severity: items.some((a) => a.severity === 'error') ? ('error' as const) : ('warning' as const),
      count: items.length,
      items: items.slice().reverse(),
    }));
    return out.sort((a, b) => (a.severity === b.severity ? b.count - a.count : a.severity === 'error' ? -1 : 1));
  }

  /** Alerts to mark on a tab's charts, with the index of the line (run × stage) they belong to and their x. */
  alertMarks(
    lines: Line[],
    axis: XAxis = 'step',
  ): { line: number; step: number; x: number; kind: string; severity: 'warning' | 'error'; message: string }[] {
    const out: {
      line: number;
      step: number;
      x: number;
      kind: string;
      severity: 'warning' | 'error';
      message: string;
    }[] = [];
    lines.forEach((l, i) => {
      const start = this.runs.get(l.run)?.stages.get(l.stage)?.startTime ?? 0;
      for (const a of this.runs.get(l.run)?.alerts ?? []) {
        if (a.stage !== l.stage) continue;
        out.push({
          line: i,
          step: a.step,
          x: axis === 'step' ? a.step : axis === 'wall' ? a.time : a.time - start,
          kind: a.kind,
          severity: a.severity,
          message: a.message,
        });
      }
    });
    return out;
  }

  /**
   * The step whose rollouts a click on `step` lists: the nearest step that sampled rollouts (the trainer writes them
   * every sample_every steps), or `step` itself when the stage never sent a sample event.
   */
  rolloutStep(run: string, stage: string, step: number): number {
    const steps = this.runs.get(run)?.stages.get(stage)?.sampledSteps ?? [];
    const i = nearestIndex(steps, step);
    return i < 0 ? step : steps[i];
  }

  /** Sampled rollouts of every run, newest first. */
  samples(): (SampleItem & { run: RunState })[] {
    return [...this.runs.values()]
      .flatMap((run) => run.samples.map((s) => ({ ...s, run })))
      .sort((a, b) => b.seq - a.seq);
  }
}

/** The readout under the cursor: every line's raw and smoothed value (and step) at index `idx` of a chart's data. */
export function readout(lines: Line[], data: ChartData, idx: number): ReadoutRow[] {
  return lines.map((l, i) => ({
    label: l.label,
    raw: data.raw[i]?.[idx] ?? null,
    smooth: data.smooth[i]?.[idx] ?? null,
    step: data.steps[i]?.[idx] ?? null,
  }));
}

/** Index of the step in a chart's x values nearest to `step` (the x values are sorted), or -1 when empty. */
export function nearestIndex(x: number[], step: number): number {
  if (!x.length) return -1;
  let lo = 0;
  let hi = x.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x[mid] < step) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && Math.abs(x[lo - 1] - step) <= Math.abs(x[lo] - step) ? lo - 1 : lo;
}

/** Case-insensitive filter of chart names: every space-separated word must occur in the name. */
export function matchesFilter(name: string, filter: string): boolean {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const n = name.toLowerCase();
  return words.every((w) => n.includes(w));
}
