// The trainer's run config (`run.json`). Owned here so the editor can offer completion and validation on it;
// scripts/gen-schemas.ts writes it as schemas/run-config.schema.json, which the Python trainer validates against
// and from which it takes its defaults (the `default` keywords), so every default lives in this file only.
// Every number here is made by ./configZod's z.number(): finite and bounded (its header says why); settings with a
// narrower sane range say so below (learningRate, coefficient, seconds, …), once, for the editor, `coa data check` and
// the trainer alike.
import * as z from './configZod';
import { DIALECT_NAMES } from './dialects';
import { AlertThresholdsSchema, DEFAULT_ALERT_THRESHOLDS } from './alerts';

const int = () => z.number().int();
const posInt = () => z.number().int().positive();

// Sane ranges, each said once. Past them a stage does not fail cleanly: it trains NaN weights (a learning rate or a
// loss scale that large), divides by zero or overflows (a ratio or temperature near 0), or a Python timer overflows
// (timeouts past ~9.2e9 s; a backoff doubled max_retries times).
/** A learning rate: AdamW moves each weight about this much per step, so past 1 every weight diverges. */
const learningRate = () => z.number().positive().max(1);
/** A loss's weight or scale (β, margins, the NLL and KL weights). */
const lossScale = () => z.number().nonnegative().max(1000);
/** A sampling temperature: logits are divided by it (collect's 0 means greedy, said where allowed). */
const temperature = () => z.number().min(1e-3).max(100);
/** Seconds to wait for something: at most 30 days. */
const MAX_WAIT_S = 30 * 24 * 3600;
const seconds = () => z.number().positive().max(MAX_WAIT_S);
/**
 * A reward's parameters: RewardParams of src/core/rewards.ts, whose names and types the environment server checks when
 * it grades. Their values are JSON scalars or lists of names, and their numbers settings like any other (bounded).
 */
const rewardParams = () =>
  z
    .record(
      z.string(),
      z.union([z.int(), z.number(), z.string(), z.boolean(), z.array(z.string())], {
        error: 'expected a finite number, a string, true or false, or a list of strings',
      }),
    )
    .default({})
    .describe('RewardParams of src/core/rewards.ts.');

/**
 * How deep a run config's JSON may nest: a config nests 5 levels, and every recursive reader of it (zod, jsonc-parser,
 * Python's deepcopy at ~3 frames a level under a limit of 1,000, jsonschema, pydantic) stays far from its stack's end.
 * Deeper is refused before parsing, at the bracket that goes too deep, by the core and the trainer alike.
 */
export const CONFIG_MAX_NESTING = 64;

/** Fields every training stage has. */
const stageBase = {
  steps: posInt().default(300).describe('Optimiser steps of this stage.'),
  batch_size: posInt().default(16).describe('Global batch size (split across DDP ranks).'),
  lr: learningRate().default(3e-3).describe('Peak learning rate (AdamW).'),
  warmup_steps: int().nonnegative().default(20).describe('Linear warm-up steps, then cosine decay to 10%.'),
  weight_decay: z
    .number()
    .nonnegative()
    .max(1)
    .default(0.0)
    .describe("AdamW's decoupled weight decay (each step shrinks weights by lr × this, so at most 1)."),
  grad_clip: z.number().positive().default(1.0).describe('Max gradient norm.'),
  max_len: posInt()
    .nullable()
    .default(null)
    .describe(
      "Prompt + response tokens at most (longer examples are cut). null: from the data — the longest example, capped at the model's context. The stage says how many examples a cap cuts, and stops when nothing is left to train.",
    ),
  checkpoint_every: int()
    .nonnegative()
    .default(0)
    .describe('Checkpoint every N steps (0: by time only, checkpoint_minutes).'),
  checkpoint_minutes: z
    .number()
    .nonnegative()
    .max(MAX_WAIT_S / 60)
    .default(5)
    .describe(
      'Also checkpoint when this many minutes passed since the last checkpoint (0: never by time), so a kill loses at most that much of a stage.',
    ),
  log_every: posInt().default(10).describe('Emit a metrics event every N steps.'),
  sample_every: int().nonnegative().default(0).describe('Emit a sample event every N steps (0: never).'),
  micro_batch_tokens: posInt()
    .nullable()
    .default(null)
    .describe(
      'Token budget of one forward/backward: a (mini-)batch is cut into micro-batches of at most this many tokens (padded rows count their padding) and gradients accumulate. null: the whole batch in one pass.',
    ),
  packing: z
    .boolean()
    .default(false)
    .describe(
      "Pack each micro-batch's sequences into one row without padding (position ids restart per sequence, attention stays inside each sequence).",
    ),
  init_from: z
    .string()
    .nullable()
    .default(null)
    .describe('Model directory to start from (default: the previous stage of this run, or model.path).'),
};

export const LmStageSchema = z
  .object({
    ...stageBase,
    steps: posInt().default(600),
    max_len: posInt().default(320).describe('Tokens per packed pretraining sample (lines joined until this many).'),
  })
  .strict();

export const Sft1StageSchema = z
  .object({
    ...stageBase,
    steps: posInt().default(200),
    lr: learningRate().default(1e-3),
    beta: lossScale().positive().default(2.0).describe('Scale of the mean log-prob difference (chosen − rejected).'),
    margin: lossScale().default(0.5).describe('Margin subtracted inside the sigmoid.'),
    alpha: lossScale().default(0.2).describe('Weight of the NLL term −P̄(chosen).'),
  })
  .strict();

const sftMixStage = (steps: number, lr: number) =>
  z
    .object({
      ...stageBase,
      steps: posInt().default(steps),
      lr: learningRate().default(lr),
      coa_cot_ratio: z
        .number()
        .min(1e-3)
        .max(1000)
        .default(5)
        .describe('Chain-of-action : chain-of-thought samples in the SFT mix (AutoCoA used 5:1).'),
    })
    .strict();

/** SFT-2 (how to act): observation tokens excluded from the loss. */
export const Sft2StageSchema = sftMixStage(500, 2e-3);
/** SFT-3 (world model): the same data with observation tokens trained. */
export const Sft3StageSchema = sftMixStage(300, 1e-3);

/** RL stages (GRPO). RL-1: the policy writes its own observations (simulated env); RL-2: the env server searches. */
const { batch_size: _rlNoBatch, ...rlBase } = stageBase;
const rlStage = (steps: number, simulated: number) =>
  z
    .object({
      ...rlBase,
      steps: posInt().default(steps),
      lr: learningRate().default(2e-4),
      warmup_steps: int().nonnegative().default(2),
      max_len: posInt()
        .nullable()
        .default(null)
        .describe(
          "Prompt + response tokens at most; a rollout reaching it is truncated. null: the model's context (max_turns, max_new_tokens and max_obs_tokens bound a rollout anyway; no cap when the model does not say). Questions whose prompt leaves no room are counted, and the stage stops when none has any.",
        ),
      log_every: posInt().default(1),
      sample_every: int()
        .nonnegative()
        .default(5)
        .describe('Emit a sample event (and append to rollouts.coa.jsonl) every N steps.'),
      prompts_per_step: posInt()
        .default(8)
        .describe('Questions per step (global; split across DDP ranks, groups kept whole).'),
      group_size: posInt().default(8).describe('GRPO group size G: samples per question.'),
      kl_coef: lossScale().default(0.001).describe('k3 KL to the frozen reference (AutoCoA used 0.001).'),
      clip_eps: lossScale().positive().default(0.2).describe('PPO clip range of the importance ratio.'),
      mini_batches: posInt()
        .default(1)
        .describe(
          "Optimiser updates per pass over a step's rollout batch: it is split into this many mini-batches of whole groups (at most prompts_per_step / processes). 1: one on-policy update, so the ratio stays 1 and nothing is clipped.",
        ),
      ppo_epochs: posInt()
        .default(1)
        .describe(
          "Passes over a step's rollout batch (each does mini_batches updates) against the sampler's log-probs.",
        ),
      std_normalize: z.boolean().default(true).describe('Divide group-centred rewards by the group std.'),
      temperature: temperature().default(1.0).describe('Sampling temperature of rollouts.'),
      max_turns: posInt().default(3).describe('Tool calls allowed per trajectory.'),
      max_new_tokens: posInt().default(40).describe('Tokens the policy may generate per turn.'),
      max_obs_tokens: posInt()
        .default(48)
        .describe('Observation tokens at most (simulated observations are cut here).'),
      simulated_fraction: z
        .number()
        .min(0)
        .max(1)
        .default(simulated)
        .describe('Share of steps (the first ones) with simulated observations: RL-1 → RL-2 mixing inside a stage.'),
      top_k: posInt().default(2).describe('Documents per real search.'),
      question_split: z
        .enum(['train', 'rl', 'dev'])
        .default('train')
        .describe(
          "Questions RL samples from. The SFT stages memorise train (greedy train EM 1.0), so RL there only sees sampling noise; rl: the embedded benchmark's held-out RL questions (benchmark.rl_fraction), which SFT never saw; dev is for experiments (then report test only).",
        ),
      reward: z
        .object({
          scheme: z.enum(['autocoa', 'em', 'f1', 'otc-grpo', 'otc-ppo']).default('autocoa'),
          params: rewardParams(),
        })
        .strict()
        .default({ scheme: 'autocoa', params: {} }),
      heldout_every: int()
        .nonnegative()
        .default(10)
        .describe('Greedy dev EM every N steps (reward-hacking alert; 0: never).'),
      heldout_limit: posInt().default(32).describe('Dev questions in that check.'),
      boundary_every: int()
        .nonnegative()
        .default(16)
        .describe(
          'Search boundary meter every N steps on a fixed sample of dev questions: over-/under-search rates, closed-book EM and TC against the estimated minimum, logged as boundary_* metrics beside reward and TC (0: never).',
        ),
      boundary_sample: posInt()
        .default(32)
        .describe("Dev questions in the boundary meter's fixed sample (drawn once with the run seed)."),
      alerts: AlertThresholdsSchema.default(DEFAULT_ALERT_THRESHOLDS), // the rules' own thresholds (src/core/alerts.ts)
    })
    .strict();
export const Rl1StageSchema = rlStage(12, 1.0);
export const Rl2StageSchema = rlStage(24, 0.0);

/**
 * How the embedded model's sizes must divide for a Llama/Qwen2 decoder to be built and run (past them transformers
 * refuses the config or the first forward fails on a shape mismatch): `size` a multiple of `times` × `of`. Checked
 * here and written into the JSON schema (`x-coa-multiple-of` on model.embedded) for the trainer, which checks the same
 * table (coa_trainer/base/config.py).
 */
export const EMBEDDED_SHAPE_RULES = [
  {
    size: 'hidden_size',
    of: 'num_heads',
    times: 2,
    why: 'each attention head takes hidden_size / num_heads dimensions, an even number (rotary position embeddings turn them in pairs)',
  },
  {
    size: 'num_heads',
    of: 'num_kv_heads',
    times: 1,
    why: 'the query heads are shared evenly among the key/value heads',
  },
] as const;

type EmbeddedSize = (typeof EMBEDDED_SHAPE_RULES)[number]['size' | 'of'];

/** The message of a broken shape rule (the trainer words it the same way). */
export function shapeRuleMessage(rule: (typeof EMBEDDED_SHAPE_RULES)[number], size: number, of: number): string {
  const need = rule.times === 1 ? `${rule.of} (${of})` : `${rule.times} × ${rule.of} (${rule.times * of})`;
  return `${rule.size} ${size} is not a multiple of ${need}: ${rule.why}`;
}

export const EmbeddedModelSchema = z
  .object({
    family: z.enum(['llama', 'qwen2']).default('llama'),
    hidden_size: posInt().default(64),
    num_layers: posInt().default(3),
    num_heads: posInt().default(4),
    num_kv_heads: posInt().default(2),
    intermediate_size: posInt().default(192),
    max_position: posInt().default(512),
  })
  .strict()
  .superRefine((m, ctx) => {
    for (const rule of EMBEDDED_SHAPE_RULES) {
      const size = m[rule.size as EmbeddedSize];
      const of = m[rule.of as EmbeddedSize];
      if (size % (rule.times * of) !== 0)
        ctx.addIssue({ code: 'custom', path: [rule.size], message: shapeRuleMessage(rule, size, of) });
    }
  })
  .meta({ 'x-coa-multiple-of': EMBEDDED_SHAPE_RULES.map(({ size, of, times, why }) => ({ size, of, times, why })) });

export const LoraSchema = z
  .object({
    r: posInt().default(8),
    alpha: z
      .number()
      .positive()
      .max(4096)
      .default(16)
      .describe("LoRA scale: the adapters' output is multiplied by alpha / r."),
    dropout: z.number().min(0).max(1).default(0.0),
    target_modules: z.array(z.string()).default(['q_proj', 'k_proj', 'v_proj', 'o_proj']),
  })
  .strict();

export const BenchmarkSchema = z
  .object({
    seed: int().nullable().default(null).describe('Seed of the synthetic knowledge base (default: the run seed).'),
    persons: posInt().default(200),
    companies: posInt().default(24),
    cities: posInt().default(24),
    countries: posInt().default(8),
    famous_fraction: z.number().min(0).max(1).default(0.4).describe('Share of entities whose facts are pretrained.'),
    dev_fraction: z.number().min(0).max(0.5).default(0.15),
    test_fraction: z.number().min(0).max(0.5).default(0.15),
    rl_fraction: z
      .number()
      .min(0)
      .max(0.5)
      .default(0)
      .describe(
        'Share of the questions (per kind and known pattern, taken from train) held out for RL: the rl split, which no SFT stage sees (RL samples it with stages.rl1|rl2.question_split "rl"). dev and test do not change with it.',
      ),
    top_k: posInt().default(2).describe('Documents per search in oracle trajectories.'),
    redundant_search_fraction: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe(
        'Share of train questions with a known hop whose SFT trajectory (and SFT-1 pairs) also searches the known facts, as an always-search teacher does (0: tool-optimal oracle).',
      ),
    data_dir: z.string().nullable().default(null).describe('Where the benchmark is written (default: <run>/data).'),
  })
  .strict();

/** A data file path; relative paths are resolved against the directory of the run config file. */
const dataPath = () => z.string().min(1);

/** A trajectory file for SFT, optionally with its dialect (default: detected per record). */
export const SftFileSchema = z.union([
  dataPath(),
  z
    .object({
      path: dataPath(),
      dialect: z
        .enum([...DIALECT_NAMES, 'auto'])
        .default('auto')
        .describe('Dialect of the records that do not name one.'),
    })
    .strict(),
]);

/** What SFT-2/3 train on of the given trajectories: a trajectory is dropped for the first of these that fails. */
export const SftFilterSchema = z
  .object({
    dialect: z
      .enum([...DIALECT_NAMES, 'run', 'any'])
      .default('run')
      .describe(
        "Keep trajectories in this dialect. run: the run's `dialect` (the tags RL and evaluation use); any: keep every dialect, but refuse a mix of dialects in one stage (their tags would be trained side by side).",
      ),
    format_ok: z
      .boolean()
      .default(true)
      .describe("Drop trajectories with a format-rule error (the core's checker, as `coa validate`)."),
    correct: z
      .boolean()
      .default(true)
      .describe(
        'Drop trajectories whose answer is not an exact match of the golden answers; ones without golden answers cannot be graded and are kept (and counted).',
      ),
  })
  .strict();

/**
 * The user's own data. Absent (null): the embedded synthetic benchmark. Every file
 * is read through the core's importers (`coa data prepare …`), never by a second parser.
 */
export const DataSchema = z
  .object({
    questions: z
      .object({
        train: dataPath()
          .nullable()
          .default(null)
          .describe(
            'Training questions: verl parquet, FlashRAG/Search-R1 JSONL or *.coa.jsonl (question + golden_answers).',
          ),
        dev: dataPath().nullable().default(null).describe('Dev questions (same formats).'),
        test: dataPath().nullable().default(null).describe('Test questions (same formats).'),
      })
      .strict()
      .default({ train: null, dev: null, test: null }),
    sft: z
      .array(SftFileSchema)
      .default([])
      .describe(
        "Trajectories for SFT-2/3 (*.coa.jsonl in any dialect, or OpenAI tool-call chats). Trajectories with tool calls are the CoA part, tool-free ones the CoT part of the stages' coa_cot_ratio mix.",
      ),
    sft1_pairs: dataPath()
      .nullable()
      .default(null)
      .describe(
        'SFT-1 pairs file (chosen/rejected JSONL). null: pairs are built from data.sft (coa data prepare pairs).',
      ),
    corpus: dataPath()
      .nullable()
      .default(null)
      .describe('FlashRAG corpus JSONL ({"id", "contents"}) the environment server searches.'),
    sft_filter: SftFilterSchema.default(SftFilterSchema.parse({})).describe(
      'Which trajectories of data.sft (or a collection) the SFT-2/3 stages train on; the counts kept and dropped are logged when the stage starts.',
    ),
    strict_ids: z
      .boolean()
      .default(false)
      .describe(
        'Refuse a question file that repeats an id. false: exact repeat rows are dropped; the first row of a repeated id keeps it and later ones are qualified by source (e.g. TriviaQA_dev/dev_0), the original in meta.source_id, with a summary (coa data prepare questions --strict-ids).',
      ),
  })
  .strict();
export type DataConfig = z.infer<typeof DataSchema>;

/**
 * `coa_trainer collect`: questions × samples from a teacher, graded by the environment server, selected,
 * and fed to the SFT stages of the same run (AutoCoA's way of building SFT data).
 */
export const CollectSchema = z
  .object({
    teacher: z
      .object({
        path: z
          .string()
          .nullable()
          .default(null)
          .describe(
            "Teacher model directory (Hugging Face), sampled by the trainer's own rollout loop. null: this run's latest finished stage, else model.path. Relative paths: against the run config's directory.",
          ),
        url: z
          .string()
          .nullable()
          .default(null)
          .describe(
            'OpenAI-compatible base URL (vLLM, SGLang, `transformers serve`, a hosted API), e.g. http://127.0.0.1:8000/v1. Set: the endpoint is the teacher.',
          ),
        api: z
          .enum(['completions', 'chat'])
          .default('completions')
          .describe(
            'completions: /v1/completions with the prompt rendered here (needs a tokenizer: teacher.tokenizer or teacher.path) and stop strings; chat: /v1/chat/completions, observations sent as user turns.',
          ),
        model: z
          .string()
          .nullable()
          .default(null)
          .describe('Model name sent to the endpoint (default: the first of GET /models).'),
        tokenizer: z
          .string()
          .nullable()
          .default(null)
          .describe(
            'Tokenizer directory for an endpoint teacher: renders the chat-template prompt and counts tokens (default: teacher.path).',
          ),
        api_key_env: z
          .string()
          .default('OPENAI_API_KEY')
          .describe("Environment variable holding the endpoint's API key (sent as a Bearer token when set)."),
        concurrency: posInt().default(8).describe('Requests in flight at once.'),
        timeout_s: seconds().default(120).describe('Seconds per request.'),
        max_retries: int()
          .nonnegative()
          .max(20)
          .default(4)
          .describe(
            'Retries of a failed request (exponential backoff); then the sample is counted as failed and collected again on --resume.',
          ),
        backoff_s: seconds().max(600).default(1.0).describe('First retry delay; doubled at each retry.'),
      })
      .strict()
      .default({
        path: null,
        url: null,
        api: 'completions',
        model: null,
        tokenizer: null,
        api_key_env: 'OPENAI_API_KEY',
        concurrency: 8,
        timeout_s: 120,
        max_retries: 4,
        backoff_s: 1.0,
      }),
    split: z
      .enum(['train', 'dev', 'test'])
      .default('train')
      .describe("Question split to sample (data.questions.<split>, or the embedded benchmark's)."),
    limit: posInt().nullable().default(null).describe('Questions at most (null: all).'),
    modes: z
      .array(z.enum(['coa', 'cot']))
      .min(1)
      .default(['coa', 'cot'])
      .describe(
        "coa: the dialect's agent prompt, searches through the environment server; cot: the tool-free prompt, no tool.",
      ),
    samples: posInt().default(4).describe('Samples per question and mode (K).'),
    temperature: z
      .union([z.literal(0), temperature()])
      .default(0.7)
      .describe('Sampling temperature (0: greedy).'),
    top_p: z
      .number()
      .positive()
      .max(1)
      .default(1.0)
      .describe(
        'Nucleus sampling: the smallest set of most likely tokens whose probability reaches top_p (endpoint and model-directory teachers).',
      ),
    seed: int().nullable().default(null).describe('Sampling seed (default: the run seed).'),
    batch_size: posInt().default(16).describe('Trajectories per batch (one grading call, one progress step).'),
    max_turns: posInt().default(4).describe('Tool calls allowed per trajectory.'),
    max_new_tokens: posInt().default(512).describe('Tokens per turn.'),
    max_obs_tokens: posInt().default(256).describe('Observation tokens at most per search.'),
    max_len: posInt().default(4096).describe('Prompt + response tokens at most.'),
    top_k: posInt().default(3).describe('Documents per search.'),
    reward: z
      .object({
        scheme: z.enum(['em', 'f1', 'cover-em', 'autocoa']).default('em'),
        params: rewardParams(),
      })
      .strict()
      .default({ scheme: 'em', params: {} }),
    select: z
      .object({
        correct_only: z
          .boolean()
          .default(true)
          .describe('Rejection sampling: keep trajectories whose answer is correct (exact match).'),
        format_clean: z.boolean().default(true).describe('Keep only trajectories without a format-rule error.'),
        max_tool_calls: int()
          .nonnegative()
          .nullable()
          .default(null)
          .describe('Drop trajectories with more tool calls (null: no limit).'),
        dedupe: z
          .boolean()
          .default(true)
          .describe('Drop a trajectory whose response is identical to a kept one of the same question.'),
      })
      .strict()
      .default({ correct_only: true, format_clean: true, max_tool_calls: null, dedupe: true }),
    pairs_per_question: posInt()
      .default(1)
      .describe('SFT-1 pairs per question built from the collection (coa data prepare pairs --per-question).'),
    use_for_sft: z
      .boolean()
      .default(true)
      .describe(
        'SFT stages of a run with a finished collection train on it (kept trajectories for SFT-2/3, pairs for SFT-1) instead of data.sft / the oracle.',
      ),
  })
  .strict();

/**
 * Where the trainer also writes its metrics: every `metrics` event's values under the names the live panel charts
 * (`reward_mean`, `em`, `tc`, `loss`, `lr`, `tokens_per_s`, …) at the stage's step, and every `eval` event's as
 * `eval/<split>/<metric>`; one W&B run and one TensorBoard run per stage (the events' `stage`).
 */
export const LoggingSchema = z
  .object({
    wandb: z
      .object({
        project: z.string().min(1).default('coa-studio').describe('W&B project.'),
        entity: z.string().nullable().default(null).describe('W&B entity (team or user; null: your default).'),
        name: z
          .string()
          .nullable()
          .default(null)
          .describe('Run name prefix (null: the run id); each stage is the W&B run <name>/<stage>.'),
        group: z
          .string()
          .nullable()
          .default(null)
          .describe('W&B group that holds the stages of this run (null: the run id).'),
        mode: z
          .enum(['offline', 'online', 'disabled'])
          .default('offline')
          .describe(
            'offline: written under dir with no network, uploaded later with `wandb sync <dir>/wandb/offline-run-*`; online: streamed (needs a login).',
          ),
        dir: z
          .string()
          .nullable()
          .default(null)
          .describe(
            "Directory W&B writes its wandb/ folder into (null: the run directory). Relative: against the run config's directory.",
          ),
        tags: z.array(z.string()).default([]).describe("W&B tags of every stage's run."),
      })
      .strict()
      .nullable()
      .default(null)
      .describe('Weights & Biases (null: off).'),
    tensorboard: z
      .object({
        dir: z
          .string()
          .nullable()
          .default(null)
          .describe(
            "Log directory shared by runs: each stage writes <dir>/<run id>/<stage>/events.out.tfevents.* (null: <run>/tensorboard/<stage>/…). Relative: against the run config's directory.",
          ),
      })
      .strict()
      .nullable()
      .default(null)
      .describe('TensorBoard event files (null: off).'),
  })
  .strict();

export const RunConfigSchema = z
  .object({
    $schema: z.string().optional(),
    name: z.string().optional(),
    seed: int().default(0),
    device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
    dtype: z.enum(['auto', 'float32', 'bfloat16']).default('auto').describe('auto: bf16 on CUDA where supported.'),
    deterministic: z
      .boolean()
      .default(true)
      .describe(
        'Deterministic kernels (torch.use_deterministic_algorithms, CUBLAS_WORKSPACE_CONFIG) so a resumed stage repeats an uninterrupted one exactly on CUDA too; false trades that for speed.',
      ),
    threads: posInt().nullable().default(null).describe("torch threads (default: the machine's cores)."),
    dialect: z.enum(DIALECT_NAMES).default('coa'),
    prompt_template: z.string().default('question : {question}\n').describe('How a question is put to the model.'),
    model: z
      .object({
        path: z
          .string()
          .nullable()
          .default(null)
          .describe('Hugging Face model directory (null: the embedded default).'),
        lora: LoraSchema.nullable().default(null).describe('Train LoRA adapters (peft) instead of all weights.'),
        embedded: EmbeddedModelSchema.default(EmbeddedModelSchema.parse({})),
        dtype: z
          .enum(['float32', 'bfloat16', 'auto'])
          .default('float32')
          .describe(
            "Dtype the weights are loaded (and trained) in. bfloat16: bf16 weights for forward, backward and generation, AdamW on fp32 master weights and moments (under FSDP the fp32 shards are the masters, computed in bf16); auto: the checkpoint's own torch_dtype. The top-level dtype is the autocast of the forward pass.",
          ),
        attn_implementation: z
          .enum(['sdpa', 'eager', 'flash_attention_2'])
          .default('sdpa')
          .describe(
            'Attention kernel (transformers attn_implementation). flash_attention_2 needs the flash-attn package and a CUDA device.',
          ),
        gradient_checkpointing: z
          .boolean()
          .default(false)
          .describe(
            "Recompute each decoder layer's activations in backward instead of keeping them (less memory, about one more forward of compute). true: always. false: decided when the stage starts by its first update's measured peak without it: on a CUDA device switched on when that passes 85 % of the GPU's memory or runs out of it, on a CPU never (the stage's first event says which, with the figure).",
          ),
        tags_as_special_tokens: z
          .boolean()
          .nullable()
          .default(null)
          .describe(
            'Add the dialect tags to the tokenizer as special tokens (resizing the embeddings). null: yes for the embedded default, no for model.path — a pretrained model keeps its vocabulary and writes tags as text.',
          ),
        chat_template: z
          .boolean()
          .default(true)
          .describe(
            "Build prompts with the tokenizer's chat template (system + user, generation prompt) when it has one; prompt_template otherwise.",
          ),
        system_prompt: z
          .string()
          .nullable()
          .default(null)
          .describe("System turn (null: the dialect's, src/core/prompts.ts)."),
        user_prompt: z
          .string()
          .nullable()
          .default(null)
          .describe("User turn with {question} (null: the dialect's, src/core/prompts.ts)."),
      })
      .strict()
      .default({
        path: null,
        lora: null,
        embedded: EmbeddedModelSchema.parse({}),
        dtype: 'float32',
        attn_implementation: 'sdpa',
        gradient_checkpointing: false,
        tags_as_special_tokens: null,
        chat_template: true,
        system_prompt: null,
        user_prompt: null,
      }),
    distributed: z
      .object({
        strategy: z
          .enum(['ddp', 'fsdp'])
          .default('ddp')
          .describe(
            'Under torchrun: ddp (each process holds the whole model) or fsdp (FSDP2: parameters, gradients and optimiser state sharded per decoder layer; checkpoints written sharded by torch.distributed.checkpoint).',
          ),
      })
      .strict()
      .default({ strategy: 'ddp' }),
    benchmark: BenchmarkSchema.default(BenchmarkSchema.parse({})),
    collect: CollectSchema.default(CollectSchema.parse({})).describe(
      'Collect SFT data from a teacher (coa_trainer collect).',
    ),
    data: DataSchema.nullable()
      .default(null)
      .describe('Your own questions, trajectories and corpus (null: the embedded benchmark).'),
    stages: z
      .object({
        pretrain: LmStageSchema.default(LmStageSchema.parse({})),
        sft1: Sft1StageSchema.default(Sft1StageSchema.parse({})),
        sft2: Sft2StageSchema.default(Sft2StageSchema.parse({})),
        sft3: Sft3StageSchema.default(Sft3StageSchema.parse({})),
        rl1: Rl1StageSchema.default(Rl1StageSchema.parse({})),
        rl2: Rl2StageSchema.default(Rl2StageSchema.parse({})),
      })
      .strict()
      .default({
        pretrain: LmStageSchema.parse({}),
        sft1: Sft1StageSchema.parse({}),
        sft2: Sft2StageSchema.parse({}),
        sft3: Sft3StageSchema.parse({}),
        rl1: Rl1StageSchema.parse({}),
        rl2: Rl2StageSchema.parse({}),
      }),
    eval: z
      .object({
        splits: z.array(z.enum(['train', 'dev', 'test'])).default(['dev']),
        limit: posInt().nullable().default(null).describe('Questions per split (null: all).'),
        max_turns: posInt().default(4).describe('Tool calls allowed per question.'),
        max_new_tokens: posInt().default(48).describe('Tokens generated per turn.'),
        batch_size: posInt().default(32),
        top_k: posInt().default(2),
        max_obs_tokens: posInt().default(256).describe('Observation tokens at most per search (longer ones are cut).'),
        max_len: posInt()
          .nullable()
          .default(null)
          .describe(
            "Prompt + response tokens at most; a rollout reaching it is truncated. null: the model's context (no cap when the model does not say).",
          ),
      })
      .strict()
      .default({
        splits: ['dev'],
        limit: null,
        max_turns: 4,
        max_new_tokens: 48,
        batch_size: 32,
        top_k: 2,
        max_obs_tokens: 256,
        max_len: null,
      }),
    env: z
      .object({
        node: z.string().nullable().default(null).describe('node executable (default: COA_NODE or node on PATH).'),
        cli: z
          .string()
          .nullable()
          .default(null)
          .describe(
            "The CoA Studio CLI (dist/cli.js of a build) that serves the environment and prepares data. null: COA_CLI, else the build beside the trainer. Relative: against the run config's directory.",
          ),
        corpus: z.string().nullable().default(null).describe('Search corpus (default: the benchmark corpus).'),
        startup_timeout_s: seconds().default(30),
      })
      .strict()
      .default({ node: null, cli: null, corpus: null, startup_timeout_s: 30 }),
    logging: LoggingSchema.default({ wandb: null, tensorboard: null }).describe(
      'Also log metrics to Weights & Biases and TensorBoard.',
    ),
  })
  .strict();

export type RunConfig = z.infer<typeof RunConfigSchema>;
export type RunConfigInput = z.input<typeof RunConfigSchema>;
