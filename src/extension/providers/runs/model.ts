// The Runs view's data model: a run directory (events.jsonl + stages/<stage>/{checkpoints,final,rollouts}) →
// run → stages → checkpoints / evals / rollouts, with a status per stage and per run. Pure apart from reading
// the directory (no vscode import), so it is unit-tested on real run directories.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, sep } from 'node:path';
import { parseEvent, type TrainerEvent } from '../../../core/events';
import { PIPELINE_INFO, RESULT_SETTINGS, STAGE_TABLE } from '../../../core/stages';

export type Status = 'running' | 'ok' | 'cancelled' | 'failed' | 'pending';

export interface CheckpointInfo {
  step: number | null;
  path: string;
  /** final/ (an HF model directory) or a resumable checkpoint file. */
  final: boolean;
  /** Written by another engine outside the stage directory (TRL's `<output_dir>/checkpoint-N`, announced by our
   * callback's checkpoint events): a model directory, not resumable by our trainer. */
  external?: boolean;
}

export interface EvalInfo {
  split: string;
  step: number;
  metrics: Record<string, number | null>;
}

export interface StageInfo {
  name: string;
  status: Status;
  step: number | null;
  total: number | null;
  checkpoints: CheckpointInfo[];
  evals: EvalInfo[];
  /** stages/<stage>/final when it holds a model (config.json). */
  finalDir: string | null;
  /** stages/<stage>/rollouts.coa.jsonl when present. */
  rollouts: string | null;
  /** The error event's message when the stage failed. */
  error: string | null;
}

export interface RunInfo {
  id: string;
  dir: string;
  status: Status;
  stages: StageInfo[];
  /** Lines of events.jsonl that were not valid events (reported, skipped). */
  badLines: number;
  /** mtime of events.jsonl (ms), for sorting newest first. */
  updated: number;
}

/** Tree order: the pipeline's stages, then the results table's evaluations, then the pipeline itself (stages.ts). */
export const STAGE_ORDER = [...STAGE_TABLE.map((s) => s.id), ...RESULT_SETTINGS.map((s) => s.id), PIPELINE_INFO.id];

/** Is a process with this pid alive (signal 0)? Injected in tests. */
export type IsAlive = (pid: number) => boolean;
export const isAlive: IsAlive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

function newStage(name: string): StageInfo {
  return {
    name,
    status: 'pending',
    step: null,
    total: null,
    checkpoints: [],
    evals: [],
    finalDir: null,
    rollouts: null,
    error: null,
  };
}

/** Folds the event stream into per-stage state. `running` = started, not finished, and its process alive. */
export function foldEvents(events: TrainerEvent[], alive: IsAlive = isAlive): Map<string, StageInfo> {
  const stages = new Map<string, StageInfo>();
  const pids = new Map<string, number | undefined>();
  const get = (name: string) => {
    let s = stages.get(name);
    if (!s) stages.set(name, (s = newStage(name)));
    return s;
  };
  for (const e of events) {
    switch (e.type) {
      case 'run_started': {
        const s = get(e.stage);
        s.status = 'running';
        s.total = e.total_steps;
        s.step = e.resumed_from ?? 0;
        s.error = null;
        pids.set(e.stage, e.pid);
        break;
      }
      case 'progress':
        get(e.stage).step = e.step;
        get(e.stage).total = e.total;
        break;
      case 'checkpoint': {
        const s = get(e.stage);
        const final = basename(e.path.replace(/[\\/]+$/, '')) === 'final';
        s.checkpoints = s.checkpoints.filter((c) => c.path !== e.path);
        s.checkpoints.push({ step: e.step, path: e.path, final });
        break;
      }
      case 'eval': {
        const s = get(e.stage);
        s.evals = s.evals.filter((v) => v.split !== e.split);
        s.evals.push({ split: e.split, step: e.step, metrics: e.metrics });
        break;
      }
      case 'stage_finished':
        get(e.stage).status = e.status;
        get(e.stage).step = e.step;
        break;
      case 'error':
        if (e.stage) {
          get(e.stage).status = 'failed';
          get(e.stage).error = e.message;
        }
        break;
      default:
        break;
    }
  }
  // An evaluation (a results-table setting such as no-tool or sft-rl) has no run of its own: the pipeline writes
  // its eval event once it is done. Such a stage is finished, not pending.
  for (const [name, s] of stages) if (s.status === 'pending' && !pids.has(name) && s.evals.length) s.status = 'ok';
  // A stage that started and never finished: running if its process lives, otherwise it died (crash, kill -9).
  for (const [name, s] of stages) {
    if (s.status !== 'running') continue;
    const pid = pids.get(name);
    if (pid === undefined || !alive(pid)) {
      s.status = 'failed';
      s.error ??= 'stopped without finishing (the process is gone)';
    }
  }
  return stages;
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

const stepOf = (file: string): number | null => {
  const m = /(\d+)/.exec(file);
  return m ? Number(m[1]) : null;
};

const TYPE_RE = /"type"\s*:\s*"(\w+)"/;
const SKIPPED_TYPES = new Set(['metrics', 'sample', 'log', 'alert']);

/** Reads one run directory. Returns null when it is not a run (no events.jsonl and no stages/). */
export function readRun(dir: string, id: string, alive: IsAlive = isAlive): RunInfo | null {
  const eventsPath = join(dir, 'events.jsonl');
  const hasEvents = existsSync(eventsPath);
  if (!hasEvents && !existsSync(join(dir, 'stages'))) return null;
  const events: TrainerEvent[] = [];
  let badLines = 0;
  let updated = 0;
  if (hasEvents) {
    updated = statSync(eventsPath).mtimeMs;
    for (const line of readFileSync(eventsPath, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      // The tree needs no metrics/sample/log/alert events (the bulk of a long run; the live panel validates
      // those): skip them before JSON parsing and zod, so refreshing during a fast run stays cheap.
      const type = TYPE_RE.exec(line.slice(0, 200))?.[1];
      if (type && SKIPPED_TYPES.has(type)) continue;
      const parsed = parseEvent(line);
      if (parsed.ok) events.push(parsed.event);
      else badLines++;
    }
  }
  const stages = foldEvents(events, alive);
  // The directory is the truth for files: checkpoints pruned by the trainer disappear, ones made outside show up.
  for (const name of listDir(join(dir, 'stages'))) {
    const sdir = join(dir, 'stages', name);
    const s = stages.get(name) ?? newStage(name);
    stages.set(name, s);
    // step-N.safetensors, or step-N.sharded/ (FSDP2, one file per rank; coa_trainer/model/checkpoint.py); an older
    // run's step-N.pt or .dcp/ too (a resume from one says how to convert it); not a .tmp being written.
    const pts = listDir(join(sdir, 'checkpoints'))
      .filter((f) => /^step-\d+\.(safetensors|sharded|pt|dcp)$/.test(f))
      .map((f) => join(sdir, 'checkpoints', f));
    const finalDir = join(sdir, 'final');
    s.finalDir = existsSync(join(finalDir, 'config.json')) ? finalDir : null;
    const onDisk: CheckpointInfo[] = pts.map((p) => ({ step: stepOf(p.slice(sdir.length)), path: p, final: false }));
    if (s.finalDir)
      onDisk.push({ step: s.checkpoints.find((c) => c.final)?.step ?? null, path: s.finalDir, final: true });
    // model directories another engine wrote elsewhere and the events announced (TRL's checkpoints), while they exist
    for (const c of s.checkpoints) {
      if (!c.final && !c.path.startsWith(sdir + sep) && existsSync(join(c.path, 'config.json')))
        onDisk.push({ ...c, external: true });
    }
    s.checkpoints = onDisk.sort((a, b) => Number(a.final) - Number(b.final) || (a.step ?? 0) - (b.step ?? 0));
    const rollouts = join(sdir, 'rollouts.coa.jsonl');
    const collection = join(sdir, 'collection.coa.jsonl'); // `coa_trainer collect` (stages/collect/)
    s.rollouts = existsSync(rollouts) ? rollouts : existsSync(collection) ? collection : null;
    if (s.status === 'pending' && s.finalDir) s.status = 'ok';
  }
  const ordered = [...stages.values()].sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
  return { id, dir, status: runStatus(ordered), stages: ordered, badLines, updated };
}

/**
 * Can "Resume Run" continue this stage? Only from a resumable checkpoint: a stage that failed before its first one
 * (SFT-2 with no model to start from) would fail the same way again, so Resume is not offered for it.
 */
export function resumable(stage: StageInfo): boolean {
  return stage.status !== 'ok' && stage.status !== 'running' && stage.checkpoints.some((c) => !c.final && !c.external);
}

/** The config of the run's last run_started event (the full config, defaults applied), or null. */
export function configFromEvents(dir: string): Record<string, unknown> | null {
  let lines: string[];
  try {
    lines = readFileSync(join(dir, 'events.jsonl'), 'utf8').split('\n');
  } catch {
    return null;
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].includes('"run_started"')) continue;
    const parsed = parseEvent(lines[i]);
    if (parsed.ok && parsed.event.type === 'run_started') return parsed.event.config;
  }
  return null;
}

const rank = (name: string) => {
  const i = STAGE_ORDER.indexOf(name);
  return i < 0 ? STAGE_ORDER.length : i;
};

export function runStatus(stages: StageInfo[]): Status {
  if (stages.some((s) => s.status === 'running')) return 'running';
  if (stages.some((s) => s.status === 'failed')) return 'failed';
  const last = [...stages].reverse().find((s) => s.status !== 'pending');
  return last?.status ?? 'pending';
}

/** Every run below `runsDir`, newest first. */
export function readRuns(runsDir: string, alive: IsAlive = isAlive): RunInfo[] {
  const runs: RunInfo[] = [];
  for (const id of listDir(runsDir)) {
    const dir = join(runsDir, id);
    try {
      if (!statSync(dir).isDirectory()) continue;
    } catch {
      continue;
    }
    const run = readRun(dir, id, alive);
    if (run) runs.push(run);
  }
  return runs.sort((a, b) => b.updated - a.updated || b.id.localeCompare(a.id));
}

// ------------------------------------------------------------------ tree nodes (what the view shows)

export type RunNode =
  | { kind: 'run'; id: string; label: string; description: string; status: Status; run: RunInfo }
  | { kind: 'stage'; id: string; label: string; description: string; status: Status; run: RunInfo; stage: StageInfo }
  | {
      kind: 'checkpoint';
      id: string;
      label: string;
      description: string;
      path: string;
      final: boolean;
      external: boolean;
      run: RunInfo;
      stage: StageInfo;
    }
  | { kind: 'eval'; id: string; label: string; description: string; run: RunInfo; stage: StageInfo }
  | { kind: 'rollouts'; id: string; label: string; description: string; path: string; run: RunInfo; stage: StageInfo };

const fmt = (v: number | null) => (v === null ? 'n/a' : Number.isInteger(v) ? String(v) : v.toFixed(3));

export function runNode(run: RunInfo, label: (stage: string) => string = (s) => s): RunNode {
  const stages = run.stages.filter((s) => s.status !== 'pending' || s.finalDir).map((s) => label(s.name));
  return {
    kind: 'run',
    id: run.dir,
    label: run.id,
    description: `${run.status}${stages.length ? ` · ${stages.join(', ')}` : ''}`,
    status: run.status,
    run,
  };
}

export function stageNodes(run: RunInfo, label: (stage: string) => string = (s) => s): RunNode[] {
  return run.stages.map((stage) => ({
    kind: 'stage' as const,
    id: `${run.dir}#${stage.name}`,
    label: label(stage.name),
    description: stage.total !== null ? `${stage.status} · step ${stage.step ?? 0}/${stage.total}` : stage.status,
    status: stage.status,
    run,
    stage,
  }));
}

export function stageChildren(run: RunInfo, stage: StageInfo): RunNode[] {
  const base = `${run.dir}#${stage.name}`;
  const nodes: RunNode[] = stage.checkpoints.map((c) => ({
    kind: 'checkpoint' as const,
    id: `${base}#ckpt:${c.path}`,
    label: c.final ? 'final' : `checkpoint ${c.step ?? '?'}`,
    description: c.final
      ? `model${c.step !== null ? ` · step ${c.step}` : ''}`
      : c.external
        ? 'model directory (written by the engine)'
        : 'resumable',
    path: c.path,
    final: c.final,
    external: c.external === true,
    run,
    stage,
  }));
  for (const e of stage.evals) {
    const keys = Object.keys(e.metrics).slice(0, 4);
    nodes.push({
      kind: 'eval',
      id: `${base}#eval:${e.split}`,
      label: `eval ${e.split}`,
      description: keys.map((k) => `${k} ${fmt(e.metrics[k])}`).join(' · '),
      run,
      stage,
    });
  }
  if (stage.rollouts) {
    const collection = stage.rollouts.endsWith('collection.coa.jsonl');
    nodes.push({
      kind: 'rollouts',
      id: `${base}#rollouts`,
      label: collection ? 'collection' : 'rollouts',
      description: collection ? 'collection.coa.jsonl' : 'rollouts.coa.jsonl',
      path: stage.rollouts,
      run,
      stage,
    });
  }
  return nodes;
}
