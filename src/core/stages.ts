// The one table of the AutoCoA pipeline's stages and of the results table's evaluation settings: id (as the trainer
// writes it in events and under runs/<id>/stages/), label, and a short description. The Train Stage picker, the
// live panel, the Runs view and anything else in TypeScript that names a stage reads it from here, so the words
// agree everywhere. The trainer reads it too: scripts/gen-schemas.ts writes it to schemas/stages.json.

import { z } from 'zod';

export const StageInfoSchema = z
  .object({
    id: z.string(),
    label: z.string(),
    description: z.string(),
    /** What the stage trains with: the loss family. */
    kind: z.enum(['pretrain', 'sft', 'rl', 'collect']),
    /** The loss a trainer computes: next-token NLL, AutoCoA's pairwise act/answer contrast, GRPO; none to collect. */
    loss: z.enum(['lm', 'pairwise', 'grpo']).nullable(),
    /** Observation tokens are in the loss (SFT-3, the implicit world model); elsewhere they are masked out. */
    trains_observations: z.boolean(),
    /** Where observations come from while training: none (no tools), the model itself, or the environment server. */
    observations: z.enum(['none', 'teacher', 'simulated', 'environment']),
    /** The stage whose final model it starts from (the pipeline's default). */
    from: z.string().optional(),
    /** `coa_trainer train --stage` value when it differs from `id` (a labelled run of another stage). */
    trains: z.string().optional(),
  })
  .strict();
export type StageInfo = z.infer<typeof StageInfoSchema>;

export const STAGE_TABLE: readonly StageInfo[] = [
  {
    id: 'pretrain',
    label: 'Pretrain',
    kind: 'pretrain',
    loss: 'lm',
    trains_observations: false,
    observations: 'none',
    description: 'Language-model pretraining on the knowledge base (closed-book facts).',
  },
  {
    id: 'collect',
    label: 'Collect',
    kind: 'collect',
    loss: null,
    trains_observations: false,
    observations: 'environment',
    description:
      'SFT data from a teacher (a model directory or an OpenAI-compatible endpoint): K samples per question with the search tool (CoA) and without (CoT), graded, selected, paired (coa_trainer collect).',
  },
  {
    id: 'sft1',
    label: 'SFT-1',
    kind: 'sft',
    loss: 'pairwise',
    trains_observations: false,
    observations: 'teacher',
    from: 'pretrain',
    description: 'When to act: pairwise log-prob loss, act vs. answer directly.',
  },
  {
    id: 'sft2',
    label: 'SFT-2',
    kind: 'sft',
    loss: 'lm',
    trains_observations: false,
    observations: 'teacher',
    from: 'sft1',
    description: 'How to act: chain-of-action SFT on teacher trajectories, observation tokens masked.',
  },
  {
    id: 'sft3',
    label: 'SFT-3',
    kind: 'sft',
    loss: 'lm',
    trains_observations: true,
    observations: 'teacher',
    from: 'sft2',
    description: 'World model: the same trajectories with observation tokens trained, so the model can simulate tools.',
  },
  {
    id: 'rl1',
    label: 'RL-1',
    kind: 'rl',
    loss: 'grpo',
    trains_observations: false,
    observations: 'simulated',
    from: 'sft3',
    description:
      'GRPO in a simulated environment: the policy writes its own observations (no real tool calls); rewards from the grader.',
  },
  {
    id: 'rl2',
    label: 'RL-2',
    kind: 'rl',
    loss: 'grpo',
    trains_observations: false,
    observations: 'environment',
    from: 'rl1',
    description: 'GRPO against real tools: searches run on the environment server, starting from RL-1.',
  },
  {
    id: 'rl2-otc',
    label: 'RL-2-OTC',
    kind: 'rl',
    loss: 'grpo',
    trains_observations: false,
    observations: 'environment',
    from: 'rl1',
    trains: 'rl2',
    description:
      'Sibling of RL-2 from the same RL-1 result, with the OTC-GRPO reward (fewer tool calls for the same answer).',
  },
];

/** The whole pipeline as one Train Stage choice. */
export const PIPELINE_INFO = {
  id: 'pipeline',
  label: 'Whole pipeline',
  description:
    'Every stage in order (RL-2 and RL-2-OTC both from RL-1), then the results table, into one run directory.',
} as const;

/** The results table's rows (one evaluation of one stage's final model on the test split). */
export interface ResultSetting {
  id: string;
  label: string;
  /** The stage whose final model is evaluated. */
  stage: string;
  /** How it is evaluated: closed-book, the always-search workflow, or the agent deciding its own calls. */
  mode: 'no-tool' | 'workflow' | 'agent';
  description: string;
}

export const RESULT_SETTINGS: readonly ResultSetting[] = [
  {
    id: 'no-tool',
    label: 'No tool',
    stage: 'pretrain',
    mode: 'no-tool',
    description: 'The pretrained model answering closed-book, no tool calls.',
  },
  {
    id: 'workflow',
    label: 'Workflow',
    stage: 'sft2',
    mode: 'workflow',
    description: 'Always search once: the SFT-1+2 model answers with the first observation given.',
  },
  {
    id: 'sft12',
    label: 'SFT-1+2',
    stage: 'sft2',
    mode: 'agent',
    description: 'The SFT-1+2 agent deciding its own tool calls.',
  },
  { id: 'sft-rl', label: 'SFT + RL', stage: 'rl2', mode: 'agent', description: 'SFT-1/2/3 + RL-1 + RL-2.' },
  {
    id: 'sft-rl-otc',
    label: 'SFT + RL (OTC)',
    stage: 'rl2-otc',
    mode: 'agent',
    description: 'The same with RL-2 trained by OTC-GRPO.',
  },
];

const byId = new Map(STAGE_TABLE.map((s) => [s.id, s]));
const settingById = new Map(RESULT_SETTINGS.map((s) => [s.id, s]));

export function stageInfo(id: string): StageInfo | undefined {
  return byId.get(id);
}

export function resultSetting(id: string): ResultSetting | undefined {
  return settingById.get(id);
}

/** A stage's display label; unknown ids (a custom `--label`) are shown as written. */
export function stageLabelOf(id: string): string {
  return byId.get(id)?.label ?? settingById.get(id)?.label ?? (id === PIPELINE_INFO.id ? PIPELINE_INFO.label : id);
}

/** Pipeline order of a stage id (unknown ids after the known ones, in the order given by the caller). */
export function stageOrder(id: string): number {
  const i = STAGE_TABLE.findIndex((s) => s.id === id);
  return i === -1 ? STAGE_TABLE.length : i;
}

/**
 * The family a stage is charted with: siblings (stages started from the same parent and training the same way, as
 * RL-2 and RL-2-OTC from RL-1) share one tab so their curves overlay on one step axis. A custom label `rl2-foo` joins
 * `rl2`'s family by its prefix.
 */
export function stageFamily(id: string): string {
  const known = byId.get(id);
  if (known) return known.trains ?? known.id;
  const prefix = /^([a-z]+\d+)[-_.]/i.exec(id)?.[1];
  return prefix && byId.has(prefix) ? (byId.get(prefix)!.trains ?? prefix) : id;
}
