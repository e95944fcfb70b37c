// The trainer → editor event protocol (version 1). One JSON object per line in `runs/<id>/events.jsonl`,
// also echoed on the trainer's stdout. scripts/gen-schemas.ts exports it as schemas/events.schema.json, which the
// Python trainer validates against (src/trainer/coa_trainer/base/events.py); both are checked against
// test/conformance/events.json.
// Exactly once across resume (docs/training.md, "Stopping, killing, resuming"): each (type, stage, step) of the step
// events — metrics, progress, sample, checkpoint, eval, alert, histogram — appears at most once in the file (an eval is
// also keyed by its split and an alert by its kind: two alerts of different kinds can share a step). A stage resumed from
// a checkpoint rewrites the file without its step events written after that checkpoint (a new file renamed into
// place); readers following the file see a new inode, and eventTail.ts starts again from the top with `reset`.
// run_started, stage_finished, log and error are per attempt (a resumed stage has its own run_started).
import { z } from 'zod';
import { RecordSchema } from './record';

export const PROTOCOL_VERSION = 1;

const base = {
  v: z.literal(PROTOCOL_VERSION),
  /** Seconds since the Unix epoch (float). */
  time: z.number(),
  run: z.string().min(1),
};
const stageStep = {
  stage: z.string().min(1),
  step: z.number().int().nonnegative(),
};
const finiteOrNull = z.number().nullable(); // NaN/inf are written as null: JSON has no NaN.

export const RunStartedEvent = z.object({
  ...base,
  type: z.literal('run_started'),
  stage: z.string().min(1),
  config: z.record(z.string(), z.unknown()),
  total_steps: z.number().int().nonnegative(),
  device: z.string(),
  world_size: z.number().int().positive(),
  pid: z.number().int().optional(),
  resumed_from: z.number().int().nullable().optional(),
  /** What each part of the training step runs on this install, the fallbacks with their reason: e.g.
   * `{"packed attention": "varlen flash" | "padded (why)", "linear cross-entropy": "liger" | "chunked PyTorch (why)",
   * "AdamW": "fused" | …}` (the trainer's model/fastpath.py probes). */
  fast_path: z.record(z.string(), z.string()).optional(),
});
export const ProgressEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('progress'),
  total: z.number().int().nonnegative(),
  elapsed_s: z.number().nonnegative(),
  eta_s: z.number().nonnegative().nullable(),
});
export const MetricsEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('metrics'),
  values: z.record(z.string(), finiteOrNull),
});
export const SampleEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('sample'),
  record: RecordSchema,
});
export const CheckpointEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('checkpoint'),
  path: z.string().min(1),
});
export const EvalEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('eval'),
  split: z.string().min(1),
  metrics: z.record(z.string(), finiteOrNull),
});
/**
 * A histogram of one step (the sampler's vs the trainer's log-probs per trained token, `logprob_diff`): `counts[i]`
 * tokens in bin i, whose bounds are `edges` — bin 0 below edges[0], bin i in [edges[i-1], edges[i]), the last bin
 * edges[edges.length-1] and above (JSON has no infinity) — so counts has one entry more than edges.
 */
export const HistogramEvent = z
  .object({
    ...base,
    ...stageStep,
    type: z.literal('histogram'),
    name: z.string().min(1),
    edges: z.array(z.number()).min(1),
    counts: z.array(z.number().int().nonnegative()),
  })
  .refine((e) => e.counts.length === e.edges.length + 1, {
    message: 'counts must have one entry more than edges',
    path: ['counts'],
  });
export const ALERT_KINDS = [
  'tool_call_explosion',
  'think_collapse',
  'all_wrong_groups',
  'reward_hacking',
  'tool_failures',
  'nan_loss',
  'zero_variance_groups',
  'logprob_drift',
  'other',
] as const;
export const AlertEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('alert'),
  kind: z.enum(ALERT_KINDS),
  severity: z.enum(['warning', 'error']),
  message: z.string().min(1),
});
export const StageFinishedEvent = z.object({
  ...base,
  ...stageStep,
  type: z.literal('stage_finished'),
  status: z.enum(['ok', 'cancelled', 'failed']),
  checkpoint: z.string().nullable(),
});
export const LogEvent = z.object({
  ...base,
  type: z.literal('log'),
  level: z.enum(['debug', 'info', 'warning', 'error']),
  message: z.string(),
});
/**
 * What stopped a trainer command: the `code` of its `error` event and the process's exit status. The trainer's one
 * error type carries one of these (coa_trainer/base/errors.py, generated ErrorCode); the editor may explain them.
 * A cancelled stage is not an error: `stage_finished` with status `cancelled`, exit 130.
 */
export const TRAINER_ERRORS = {
  bad_config: { exit: 2, meaning: 'the run config or a command-line argument cannot be used' },
  bad_data: {
    exit: 2,
    meaning: 'the data (questions, trajectories, pairs, corpus) cannot be used; the message names file, line and field',
  },
  missing_model: { exit: 2, meaning: 'no usable model directory where the stage starts from' },
  bad_teacher: { exit: 2, meaning: 'the collection teacher (a model directory or an endpoint) cannot be used' },
  bad_checkpoint: {
    exit: 2,
    meaning:
      'no checkpoint the stage can resume from safely: an older pickle checkpoint (convert it with `coa_trainer convert-checkpoint`), or none that reads back intact',
  },
  bad_run_dir: {
    exit: 2,
    meaning: 'the run directory holds a symbolic link that leads out of it where the trainer reads its state or writes',
  },
  stage_failed: {
    exit: 1,
    meaning: 'a stage run by the pipeline ended with an error of its own (its event says which)',
  },
  env_unreachable: { exit: 3, meaning: 'the environment server could not be started or reached' },
  diverged: {
    exit: 1,
    meaning:
      'training went non-finite (NaN/Inf loss, gradient or weights; an update that overflowed): the message names the step; nothing from that step on was saved',
  },
  internal: { exit: 1, meaning: 'a bug: the event carries the traceback in `detail`' },
} as const;
export type TrainerErrorCode = keyof typeof TRAINER_ERRORS;
export const TRAINER_ERROR_CODES = Object.keys(TRAINER_ERRORS) as [TrainerErrorCode, ...TrainerErrorCode[]];

export const ErrorEvent = z.object({
  ...base,
  type: z.literal('error'),
  message: z.string().min(1),
  /** One of TRAINER_ERRORS for our trainer; another engine's writer may use its own. */
  code: z.string().optional(),
  detail: z.string().optional(),
  stage: z.string().optional(),
});

export const EventSchema = z.discriminatedUnion('type', [
  RunStartedEvent,
  ProgressEvent,
  MetricsEvent,
  SampleEvent,
  CheckpointEvent,
  EvalEvent,
  AlertEvent,
  StageFinishedEvent,
  LogEvent,
  ErrorEvent,
  HistogramEvent,
]);
export type TrainerEvent = z.infer<typeof EventSchema>;
export type EventType = TrainerEvent['type'];

export type ParsedEvent = { ok: true; event: TrainerEvent } | { ok: false; error: string };

/** Parse one line of an events file. Never throws. */
export function parseEvent(line: string): ParsedEvent {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    return { ok: false, error: `invalid JSON: ${(e as Error).message}` };
  }
  const result = EventSchema.safeParse(value);
  if (result.success) return { ok: true, event: result.data };
  const issue = result.error.issues[0];
  return { ok: false, error: `${issue.path.join('.') || '(root)'}: ${issue.message}` };
}
