// The stable texts of the Train Stage / Resume Run quick picks (the e2e tests select items by these labels) and
// the pure helpers behind the picks. No vscode import.
import { STAGES, PIPELINE } from '../../process/trainer';
import { STAGE_TABLE, stageInfo, stageLabelOf } from '../../../core/stages';
import { resumable, type RunInfo, type StageInfo } from '../runs/model';

export const TITLES = {
  stage: 'CoA: Train Stage (1/4): stage',
  config: 'CoA: Train Stage (2/4): run config',
  model: 'CoA: Train Stage (3/4): model',
  checkpoint: 'CoA: Train Stage (4/4): starting checkpoint',
  resumeRun: 'CoA: Resume Run (1/2): run',
  resumeStage: 'CoA: Resume Run (2/2): stage',
  /** Shown after the run config when it has a data section, or when "Your own data…" was picked. */
  data: 'CoA: Train Stage: data',
} as const;

export const PLACEHOLDERS = {
  stage: 'Pick the stage to train',
  config: 'Pick a run config (*.run.json in the workspace) or the embedded default',
  model: 'Pick the model to start from',
  checkpoint: 'Pick a starting checkpoint',
  resumeRun: 'Pick the run to resume',
  resumeStage: 'Pick the stage to resume from its latest checkpoint',
  data: 'Pick a slot to choose its file, then "Use this data" (checked with coa data check before training)',
} as const;

export const LABELS = {
  embeddedConfig: 'Embedded default config',
  embeddedModel: 'Embedded default model',
  hfModel: 'Hugging Face model directory…',
  noCheckpoint: 'None (start fresh)',
  browseCheckpoint: 'Browse…',
  ownData: 'Your own data…',
  configData: 'Data from the run config',
  changeData: 'Choose other data files…',
  configModel: 'Model from the run config',
  dataDone: 'Use this data',
} as const;

export const STAGE_PICKS = [...STAGES, PIPELINE].map((s) => ({ id: s.id, label: s.label, detail: s.detail }));

/** Label of a "start from this run's stage result" item: `<run id> / <stage> final`. */
export const checkpointLabel = (runId: string, stage: string) => `${runId} / ${stage} final`;

/** Is this directory a Hugging Face model directory (what `model.path` / `init_from` accept)? */
export function looksLikeModelDir(files: string[]): boolean {
  return (
    files.includes('config.json') && files.some((f) => /\.(safetensors|bin)$/.test(f) || f === 'adapter_config.json')
  );
}

/** A finished stage's model (stages/<stage>/final) as the checkpoint step offers it. */
export interface FinalCheckpoint {
  runId: string;
  stage: string;
  step: number | null;
  path: string;
  /** When its run last changed (ms): newer runs are proposed first. */
  updated: number;
}

export interface CheckpointItem {
  label: string;
  description: string;
  path: string;
}

/** Every final model of the workspace's runs, newest run first. */
export function finalCheckpoints(runs: readonly RunInfo[]): FinalCheckpoint[] {
  return [...runs]
    .sort((a, b) => b.updated - a.updated)
    .flatMap((r) =>
      r.stages
        .filter((s) => s.finalDir)
        .map((s) => ({ runId: r.id, stage: s.name, step: s.step, path: s.finalDir!, updated: r.updated })),
    );
}

/** The stages a stage starts from, nearest first (SFT-2 → SFT-1 → pretrain; core/stages.ts `from`). */
function startingStages(stage: string): string[] {
  const chain: string[] = [];
  for (
    let s = STAGE_TABLE.find((x) => x.id === stage)?.from;
    s && !chain.includes(s);
    s = STAGE_TABLE.find((x) => x.id === s)?.from
  )
    chain.push(s);
  return chain;
}

/**
 * Whether a stage's result is a model that has been trained on tool-call trajectories: SFT-2 and SFT-3 (chain-of-action
 * SFT) and the RL stages. Pretrain (closed-book text) and SFT-1 (a pairwise act-or-answer loss) never wrote a tool
 * call, so RL started from them samples trajectories with no search in them and learns nothing about tools.
 */
export function sawToolCalls(stage: string): boolean {
  const info = stageInfo(stage);
  return !!info && (info.kind === 'rl' || (info.kind === 'sft' && info.loss === 'lm'));
}

/**
 * The starting-checkpoint step's items. A stage that starts from an earlier one's model (every stage but pretrain)
 * is offered, first, each run's final model of the nearest earlier stage it has (the model the trainer itself would
 * start from in that run): "None (start fresh)" first made SFT-2 fail with "needs a model". "None" comes first only
 * where it works: pretrain, the whole pipeline, or a model picked in the step before.
 */
export function checkpointItems(
  stage: string,
  finals: readonly FinalCheckpoint[],
  modelPicked: boolean,
): CheckpointItem[] {
  const item = (f: FinalCheckpoint, why = ''): CheckpointItem => ({
    label: checkpointLabel(f.runId, f.stage),
    description: [f.step !== null ? `step ${f.step}` : '', why].filter(Boolean).join(' · '),
    path: f.path,
  });
  // An RL stage starts only from a model that has written tool calls: a run holding only a pretrain must not make
  // that pretrain the focused first item (Enter would start RL from a model that never saw a search).
  const rl = stageInfo(stage)?.kind === 'rl';
  const chain = startingStages(stage).filter((s) => !rl || sawToolCalls(s));
  const freshWorks = startingStages(stage).length === 0 || modelPicked;
  const none: CheckpointItem = {
    label: LABELS.noCheckpoint,
    description: freshWorks ? '' : 'the stage needs model.path or init_from in the config',
    path: '',
  };
  const proposed: FinalCheckpoint[] = [];
  if (!freshWorks) {
    for (const runId of new Set(finals.map((f) => f.runId))) {
      const own = finals.filter((f) => f.runId === runId);
      const from = chain.map((s) => own.find((f) => f.stage === s)).find((f) => f !== undefined);
      if (from) proposed.push(from);
    }
  }
  const unfit = (f: FinalCheckpoint) => rl && !modelPicked && !sawToolCalls(f.stage);
  const rest = finals
    .filter((f) => !proposed.includes(f))
    .map((f) =>
      item(f, unfit(f) ? `never trained on tool calls: ${stageLabelOf(stage)} would learn nothing about search` : ''),
    );
  const browse: CheckpointItem = { label: LABELS.browseCheckpoint, description: 'a model directory', path: '' };
  if (proposed.length)
    return [
      ...proposed.map((f) => item(f, `the ${stageLabelOf(f.stage)} result ${stageLabelOf(stage)} starts from`)),
      none,
      ...rest,
      browse,
    ];
  if (freshWorks || !rl) return [none, ...rest, browse];
  // No result fit to start RL from: say so on the first (focused) item, which only browses for a model directory.
  const wanted = chain.map(stageLabelOf).join(' or ');
  return [
    {
      ...browse,
      description: `no ${wanted} result in runs/ — ${stageLabelOf(stage)} needs a model trained on tool calls: train ${stageLabelOf(chain[chain.length - 1])} first, or pick a model directory`,
    },
    none,
    ...rest,
  ];
}

/** "Resume Run"'s runs: those with a stage to continue (cancelled or failed, with a step checkpoint), newest first. */
export function resumableRuns(runs: readonly RunInfo[]): RunInfo[] {
  return runs.filter((r) => r.stages.some(resumable));
}

/**
 * "Resume Run"'s stages of a run: only those with a checkpoint to continue from. A finished stage, or an evaluation
 * row of the results table (no-tool, workflow, …), has nothing to resume.
 */
export function resumableStages(run: RunInfo): StageInfo[] {
  return run.stages.filter(resumable);
}
