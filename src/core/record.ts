// The trajectory record: one JSON object per line of a `*.coa.jsonl` file.
import { z } from 'zod';
import { DIALECT_NAMES } from './dialects';

/** Per-token arrays of `tokens`: each as long as `ids` when present. */
export const PER_TOKEN_KEYS = ['loss_mask', 'logprobs', 'advantages', 'offsets'] as const;

export const TokensSchema = z
  .object({
    ids: z.array(z.number().int()),
    loss_mask: z.array(z.number()).optional(),
    logprobs: z.array(z.number().nullable()).optional(),
    advantages: z.array(z.number()).optional(),
    /** Character offset into `response` where each token starts (optional; lets editors place overlays). */
    offsets: z.array(z.number().int()).optional(),
  })
  .passthrough()
  .superRefine((t, ctx) => {
    for (const key of PER_TOKEN_KEYS) {
      const arr = t[key];
      if (arr && arr.length !== t.ids.length) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `${key} has ${arr.length} entries but ids has ${t.ids.length}`,
        });
      }
    }
  })
  // JSON Schema cannot compare lengths: the generated schema carries the rule as a keyword of its own, which the
  // trainer's validator implements (coa_trainer/base/events.py).
  // `title`: the class's name where the trainer's classes are generated from these schemas (coa_trainer/contracts).
  .meta({ title: 'RecordTokens', 'x-same-length-as': { ids: [...PER_TOKEN_KEYS] } });

export const SCHEMES = ['em', 'f1', 'cover-em', 'autocoa', 'otc-ppo', 'otc-grpo'] as const;
export type Scheme = (typeof SCHEMES)[number];

export const RewardBreakdownSchema = z
  .object({
    scheme: z.enum(SCHEMES),
    em: z.number(),
    f1: z.number(),
    format_ok: z.boolean(),
    violations: z.array(z.string()),
    tool_calls: z.number().int(),
    optimal_tool_calls: z.number().int().nullable(),
    r_tool: z.number(),
    r_correct: z.number(),
    total: z.number(),
  })
  .passthrough()
  .meta({ title: 'RewardBreakdown' });
export type RewardBreakdown = z.infer<typeof RewardBreakdownSchema>;

export const MetaSchema = z
  .object({
    run: z.string().optional(),
    stage: z.string().optional(),
    step: z.number().int().optional(),
    sample: z.number().int().optional(),
    group: z.union([z.string(), z.number()]).optional(),
    /** What per-question reward state (OTC-GRPO's running minimum) is kept per, when not the question text. */
    question_key: z.string().optional(),
  })
  .passthrough()
  .meta({ title: 'RecordMeta' });

export const RecordSchema = z
  .object({
    id: z.string().min(1),
    question: z.string(),
    golden_answers: z.array(z.string()).optional(),
    response: z.string(),
    dialect: z.enum(DIALECT_NAMES).optional(),
    tokens: TokensSchema.optional(),
    reward: RewardBreakdownSchema.optional(),
    meta: MetaSchema.optional(),
  })
  // Unknown top-level keys are kept: users' own fields must survive a round trip.
  .passthrough()
  .meta({ title: 'TrajectoryRecord' });

export type TrajectoryRecord = z.infer<typeof RecordSchema>;

/**
 * A question, not a trajectory: a record whose response was never generated — `response: ""` and no `tokens` (a
 * model that stopped at once still leaves its stop token). `response` stays a required key (the event protocol's
 * sample records need it too); converters write "" for prompt-only rows. Prompt-only datasets (a converted verl
 * parquet, `coa data prepare questions` input) are made of these. The format rules do not apply to a question
 * (no COA006 "missing answer"); views count questions apart from failures. Scoring is unchanged: a response sent
 * to a grader was generated, so an empty one is a trajectory that failed. Rule: docs/format-rules.md.
 */
export function isQuestion(record: Pick<TrajectoryRecord, 'response' | 'tokens'>): boolean {
  return record.response === '' && record.tokens === undefined;
}

/** One JSON line; keys keep the order they were parsed in, so an unchanged record writes back as it was read. */
export function serializeRecord(record: TrajectoryRecord): string {
  return JSON.stringify(record);
}
