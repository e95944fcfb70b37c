// What Train Stage and Collect Trajectories run: a request, made by their quick picks (./request.ts) or given to the
// command by a script (`executeCommand('coaStudio.trainStage', { stage, config?, … })`), which is checked against
// these schemas first (src/extension/commandArgs.ts). No vscode import (unit-tested).
import { z } from 'zod';
import { COLLECT, PIPELINE, STAGES } from '../../process/trainer';
import { DataPicksSchema } from './data';

const path = () => z.string().min(1);

export const TrainRequestSchema = z
  .object({
    /** A stage of Train Stage's list, the whole pipeline, or a collection. */
    stage: z.enum([...STAGES.map((s) => s.id), PIPELINE.id, COLLECT.id]),
    /** Absolute or workspace-relative *.run.json; absent: the embedded default. */
    config: path().optional(),
    /** HF model directory; absent: the embedded default model. */
    model: path().optional(),
    /** Starting model directory (a stage's final/). */
    checkpoint: path().optional(),
    /** Data files replacing the config's own (absolute paths). */
    data: DataPicksSchema.optional(),
    /** The embedded default model even though the config names model.path. */
    embeddedModel: z.boolean().optional(),
    /** Collect: an OpenAI-compatible endpoint as the teacher (collect.teacher.url). */
    teacherUrl: path().optional(),
  })
  .strict();
export type TrainRequest = z.infer<typeof TrainRequestSchema>;

/** "CoA: Collect Trajectories", scripted: the run config, the teacher (a model directory or an endpoint URL), data. */
export const CollectRequestSchema = z
  .object({
    config: path().optional(),
    teacher: path().optional(),
    teacherUrl: path().optional(),
    data: DataPicksSchema.optional(),
  })
  .strict();
export type CollectRequest = z.infer<typeof CollectRequestSchema>;
