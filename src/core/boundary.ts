// The search boundary meter's words and its report file, one source for the trainer that measures
// (coa_trainer/evaluation/boundary.py writes `<run>/eval/boundary-<stage>-<split>.json`) and the editor that shows it
// (the Search Boundary panel). The trainer gets the class names as a generated enum (contracts/boundary_class.py).

import { z } from 'zod';
import { BOUNDARY_CLASS_NAMES } from './boundaryClasses';

export { BOUNDARY_CLASSES, BOUNDARY_CLASS_NAMES, type BoundaryClass } from './boundaryClasses';

const share = z.number().min(0).max(1);
const count = z.number().int().nonnegative();
const mean = z.number().nonnegative().nullable();

export const BoundarySummarySchema = z
  .object({
    questions: count,
    classes: z.record(z.enum(BOUNDARY_CLASS_NAMES), count),
    over_search_rate: share.nullable(),
    under_search_rate: share.nullable(),
    em_closed_book: share
      .nullable()
      .describe('EM with search refused (each query answered by the model itself, asked it alone)'),
    em: share.nullable().describe('EM with search'),
    tc: mean.describe('tool calls per question with search'),
    min_tc: mean.describe('estimated fewest tool calls per question, over the questions where one is known'),
    min_tc_questions: count.describe('questions with a known minimum (not unreachable)'),
    tc_over_min: z.number().nullable().describe('tool calls minus the minimum per question, over the same questions'),
    avoidable_share: share
      .nullable()
      .describe('share of the searches of those questions that the minimum does without'),
  })
  .strict();
export type BoundarySummary = z.infer<typeof BoundarySummarySchema>;

/** The embedded benchmark's ground truth: each fact of a question asked alone, closed-book, of the same checkpoint. */
export const BoundaryTruthRowSchema = z
  .object({
    class: z.enum(BOUNDARY_CLASS_NAMES),
    min_calls: count.describe('facts of the question this checkpoint does not answer closed-book'),
    facts_known: z.array(z.boolean()),
    optimal: count.nullable().describe("the benchmark's optimum: facts not in the pretraining text"),
  })
  .strict();

export const BoundaryTruthSchema = z
  .object({
    class_agreement: share.nullable(),
    min_tc_meter: mean.describe("the meter's minimum, over the questions where it has one"),
    min_tc_truth: mean.describe("the truth's minimum over the same questions"),
    min_tc_truth_all: mean,
    optimal_tc: mean.describe("the benchmark's optimum over all questions"),
    optimal_tc_same: mean.describe("the benchmark's optimum over the questions where the meter has a minimum"),
    optimal_agreement: share
      .nullable()
      .describe("share of those questions whose estimated minimum equals the benchmark's optimum"),
    confusion: z.record(z.string(), z.record(z.string(), count)).describe('truth class → meter class → questions'),
  })
  .strict();

export const BoundaryRowSchema = z
  .object({
    id: z.string(),
    question: z.string(),
    golden_answers: z.array(z.string()),
    group: z.string().nullable(),
    class: z.enum(BOUNDARY_CLASS_NAMES),
    closed_book: share.describe('share of closed-book samples right (greedy: 0 or 1)'),
    right: share,
    searched: share,
    tool_calls: z.number().nonnegative(),
    min_calls: count.nullable(),
    reachable: z.boolean().nullable(),
    responses: z
      .object({
        closed_book: z.string(),
        search: z.string(),
        minimal: z.string().optional(),
        forced: z.string().optional(),
      })
      .strict()
      .describe(
        'the trajectories that decided the class: minimal (the fewest searches found), forced (one more search)',
      ),
    truth: BoundaryTruthRowSchema.nullable(),
  })
  .strict();
export type BoundaryRow = z.infer<typeof BoundaryRowSchema>;

export const BoundaryReportSchema = z
  .object({
    version: z.literal(1),
    run: z.string().nullable(),
    stage: z.string(),
    step: count,
    split: z.string(),
    checkpoint: z.string(),
    samples: z.number().int().positive(),
    temperature: z.number().nonnegative(),
    seconds: z.number().nonnegative(),
    summary: BoundarySummarySchema,
    truth: BoundaryTruthSchema.nullable(),
    rows: z.array(BoundaryRowSchema),
  })
  .strict();
export type BoundaryReport = z.infer<typeof BoundaryReportSchema>;
