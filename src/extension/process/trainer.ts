// What the extension runs in Python, as argument arrays (never a shell line): a training stage, the whole
// pipeline, a resume, the ONNX export; plus the child environment and the run config a run is started with.
// Pure: unit-tested without VS Code or Python.
import { join } from 'node:path';
import { PIPELINE_INFO, STAGE_TABLE, stageLabelOf } from '../../core/stages';
import type { RunConfigInput } from '../../core/config';

/** The stages `coa_trainer train --stage` accepts, with the picker's texts from the one stage table (src/core/stages.ts). */
export const STAGES = STAGE_TABLE.filter((s) => !s.trains && s.kind !== 'collect').map((s) => ({
  id: s.id,
  label: s.label,
  detail: s.description,
}));
/** `coa_trainer collect` ("CoA: Collect Trajectories"): not a `train --stage`, a command of its own. */
export const COLLECT = { id: 'collect', label: stageLabelOf('collect') } as const;
export const PIPELINE = { id: PIPELINE_INFO.id, label: PIPELINE_INFO.label, detail: PIPELINE_INFO.description };

/** Stages that talk to the environment server while training (RL-1 for the grader only, RL-2 also for tools). */
export const ENV_STAGES: readonly string[] = [
  ...STAGE_TABLE.filter((s) => s.kind === 'rl' && !s.trains).map((s) => s.id),
  COLLECT.id,
];

export const stageLabel = stageLabelOf;

export interface TrainerInvocation {
  /** 'pipeline' or a stage id. */
  stage: string;
  config: string;
  runDir: string;
  resume?: boolean;
  env?: { url: string; token: string };
}

export function trainerArgs(inv: TrainerInvocation): string[] {
  if (inv.stage === PIPELINE.id) {
    const args = ['-m', 'coa_trainer', 'pipeline', '--config', inv.config, '--run-dir', inv.runDir];
    if (inv.resume) args.push('--resume');
    return args;
  }
  const args =
    inv.stage === COLLECT.id
      ? ['-m', 'coa_trainer', 'collect', '--config', inv.config, '--run-dir', inv.runDir]
      : ['-m', 'coa_trainer', 'train', '--stage', inv.stage, '--config', inv.config, '--run-dir', inv.runDir];
  if (inv.resume) args.push('--resume');
  if (inv.env) args.push(`--env-url=${inv.env.url}`); // the token goes in the environment: trainerTokenEnv
  return args;
}

/**
 * The environment entries that carry a run's env-server token to the trainer (COA_ENV_TOKEN). Never an argument:
 * any local user reads every process's command line with `ps`, and the token lets them rewrite the run's OTC state.
 */
export function trainerTokenEnv(inv: Pick<TrainerInvocation, 'env'>): NodeJS.ProcessEnv {
  return inv.env ? { COA_ENV_TOKEN: inv.env.token } : {};
}

export function exportOnnxArgs(finalDir: string, out: string): string[] {
  return ['-m', 'coa_trainer', 'export-onnx', '--checkpoint', finalDir, '-o', out];
}

export interface ChildEnvOptions {
  base: NodeJS.ProcessEnv;
  /** The extension's root: its src/trainer goes first on PYTHONPATH. */
  extensionPath: string;
  /** Node for the trainer's own environment server (COA_NODE). */
  node: string;
}

export function trainerEnv(o: ChildEnvOptions): NodeJS.ProcessEnv {
  const trainerSrc = join(o.extensionPath, 'src', 'trainer');
  const sep = process.platform === 'win32' ? ';' : ':';
  return {
    ...o.base,
    PYTHONPATH: o.base.PYTHONPATH ? `${trainerSrc}${sep}${o.base.PYTHONPATH}` : trainerSrc,
    // Events are read from stdout as they happen.
    PYTHONUNBUFFERED: '1',
    COA_NODE: o.node,
    // VS Code's process.execPath is Electron: this makes it behave as plain node (node itself ignores it).
    ELECTRON_RUN_AS_NODE: '1',
  };
}

export interface RunConfigChoice {
  /** The user's config (a *.run.json the core's schema accepted, as written), or null for the embedded default. */
  base: RunConfigInput | null;
  /** 'pipeline' or a stage id. */
  stage: string;
  /** An HF model directory, or null for the embedded default model. */
  modelPath: string | null;
  /** A model directory the stage starts from (a run's stage final), or null. */
  initFrom: string | null;
  /** The extension's dist/cli.js, used when the config does not name one. */
  cli: string;
  /** Collect: an OpenAI-compatible endpoint as the teacher. */
  teacherUrl?: string | null;
}

/**
 * The config written to runs/<id>/config.json: the user's file with the picks applied. The model pick sets
 * model.path; a starting checkpoint becomes stages.<stage>.init_from (for the whole pipeline: model.path); for a
 * collection both name the teacher (collect.teacher.path), or an endpoint URL does (collect.teacher.url).
 */
export function composeRunConfig(c: RunConfigChoice): RunConfigInput {
  const config = structuredClone(c.base ?? {});
  delete config.$schema;
  if (c.modelPath && c.stage !== COLLECT.id) config.model = { ...config.model, path: c.modelPath };
  if (c.stage === COLLECT.id) {
    // the picked model or run result is the teacher; an endpoint URL replaces the config's teacher as a whole
    const picked = c.initFrom ?? c.modelPath;
    const teacher = c.teacherUrl ? { url: c.teacherUrl, path: null } : picked ? { path: picked, url: null } : null;
    if (teacher) config.collect = { ...config.collect, teacher: { ...config.collect?.teacher, ...teacher } };
  } else if (c.initFrom) {
    if (c.stage === PIPELINE.id) config.model = { ...config.model, path: c.initFrom };
    else if (isTrainedStage(c.stage))
      config.stages = { ...config.stages, [c.stage]: { ...config.stages?.[c.stage], init_from: c.initFrom } };
  }
  if (!config.env?.cli) config.env = { ...config.env, cli: c.cli };
  return config;
}

type StageSection = keyof NonNullable<RunConfigInput['stages']>;
/** The run config's `stages` sections (the type makes the list whole: a section added to the schema must be here). */
const STAGE_SECTIONS: Record<StageSection, true> = {
  pretrain: true,
  sft1: true,
  sft2: true,
  sft3: true,
  rl1: true,
  rl2: true,
};

/** A stage with a section of its own in the run config's `stages` (where its starting checkpoint goes). */
function isTrainedStage(stage: string): stage is StageSection {
  return Object.hasOwn(STAGE_SECTIONS, stage);
}

/**
 * runs/<id>: the run config's `name` (when it has one), a sortable UTC time and the stage, e.g.
 * hotpot-qwen-20261122-031500-sft2 — so runs of different configs tell themselves apart in the Runs view.
 */
export function makeRunId(now: Date, stage: string, name?: string): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}-${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}-${stage}`;
  // A path segment: letters, digits, . _ - only; never empty, never a leading dot.
  const slug = (name ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-.]+|-+$/g, '')
    .slice(0, 40);
  return slug ? `${slug}-${stamp}` : stamp;
}
