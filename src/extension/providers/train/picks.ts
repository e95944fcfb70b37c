// The stable texts of the Train Stage / Resume Run quick picks (the e2e tests select items by these labels) and
// the pure helpers behind the picks. No vscode import.
import { STAGES, PIPELINE } from '../../process/trainer';

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
  return files.includes('config.json') && files.some((f) => /\.(safetensors|bin)$/.test(f) || f === 'adapter_config.json');
}
