# Generated from src/core/config.ts (RunConfigSchema) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LoraConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    r: int
    alpha: float
    """
    LoRA scale: the adapters' output is multiplied by alpha / r.
    """
    dropout: float
    target_modules: list[str]


class EmbeddedModelConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    family: Literal["llama", "qwen2"]
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    max_position: int


class ModelConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    path: str | None
    """
    Hugging Face model directory (null: the embedded default).
    """
    lora: LoraConfig | None
    """
    Train LoRA adapters (peft) instead of all weights.
    """
    embedded: EmbeddedModelConfig = Field(..., title="EmbeddedModelConfig")
    dtype: Literal["float32", "bfloat16", "auto"]
    """
    Dtype the weights are loaded (and trained) in. bfloat16: bf16 weights for forward, backward and generation, AdamW on fp32 master weights and moments (under FSDP the fp32 shards are the masters, computed in bf16); auto: the checkpoint's own torch_dtype. The top-level dtype is the autocast of the forward pass.
    """
    attn_implementation: Literal["sdpa", "eager", "flash_attention_2"]
    """
    Attention kernel (transformers attn_implementation). flash_attention_2 needs the flash-attn package and a CUDA device.
    """
    gradient_checkpointing: bool
    """
    Recompute each decoder layer's activations in backward instead of keeping them (less memory, about one more forward of compute). true: always. false: decided when the stage starts by its first update's measured peak without it: on a CUDA device switched on when that passes 85 % of the GPU's memory or runs out of it, on a CPU never (the stage's first event says which, with the figure).
    """
    tags_as_special_tokens: bool | None
    """
    Add the dialect tags to the tokenizer as special tokens (resizing the embeddings). null: yes for the embedded default, no for model.path — a pretrained model keeps its vocabulary and writes tags as text.
    """
    chat_template: bool
    """
    Build prompts with the tokenizer's chat template (system + user, generation prompt) when it has one; prompt_template otherwise.
    """
    system_prompt: str | None
    """
    System turn (null: the dialect's, src/core/prompts.ts).
    """
    user_prompt: str | None
    """
    User turn with {question} (null: the dialect's, src/core/prompts.ts).
    """


class DistributedConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    strategy: Literal["ddp", "fsdp"]
    """
    Under torchrun: ddp (each process holds the whole model) or fsdp (FSDP2: parameters, gradients and optimiser state sharded per decoder layer; checkpoints written sharded by torch.distributed.checkpoint).
    """


class BenchmarkConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    seed: int | None
    """
    Seed of the synthetic knowledge base (default: the run seed).
    """
    persons: int
    companies: int
    cities: int
    countries: int
    famous_fraction: float
    """
    Share of entities whose facts are pretrained.
    """
    dev_fraction: float
    test_fraction: float
    rl_fraction: float
    """
    Share of the questions (per kind and known pattern, taken from train) held out for RL: the rl split, which no SFT stage sees (RL samples it with stages.rl1|rl2.question_split "rl"). dev and test do not change with it.
    """
    top_k: int
    """
    Documents per search in oracle trajectories.
    """
    redundant_search_fraction: float
    """
    Share of train questions with a known hop whose SFT trajectory (and SFT-1 pairs) also searches the known facts, as an always-search teacher does (0: tool-optimal oracle).
    """
    data_dir: str | None
    """
    Where the benchmark is written (default: <run>/data).
    """


class TeacherConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    path: str | None
    """
    Teacher model directory (Hugging Face), sampled by the trainer's own rollout loop. null: this run's latest finished stage, else model.path. Relative paths: against the run config's directory.
    """
    url: str | None
    """
    OpenAI-compatible base URL (vLLM, SGLang, `transformers serve`, a hosted API), e.g. http://127.0.0.1:8000/v1. Set: the endpoint is the teacher.
    """
    api: Literal["completions", "chat"]
    """
    completions: /v1/completions with the prompt rendered here (needs a tokenizer: teacher.tokenizer or teacher.path) and stop strings; chat: /v1/chat/completions, observations sent as user turns.
    """
    model: str | None
    """
    Model name sent to the endpoint (default: the first of GET /models).
    """
    tokenizer: str | None
    """
    Tokenizer directory for an endpoint teacher: renders the chat-template prompt and counts tokens (default: teacher.path).
    """
    api_key_env: str
    """
    Environment variable holding the endpoint's API key (sent as a Bearer token when set).
    """
    concurrency: int
    """
    Requests in flight at once.
    """
    timeout_s: float
    """
    Seconds per request.
    """
    max_retries: int
    """
    Retries of a failed request (exponential backoff); then the sample is counted as failed and collected again on --resume.
    """
    backoff_s: float
    """
    First retry delay; doubled at each retry.
    """


class CollectReward(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    scheme: Literal["em", "f1", "cover-em", "autocoa"]
    params: dict[str, int | float | str | bool | list[str]]
    """
    RewardParams of src/core/rewards.ts.
    """


class CollectSelect(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    correct_only: bool
    """
    Rejection sampling: keep trajectories whose answer is correct (exact match).
    """
    format_clean: bool
    """
    Keep only trajectories without a format-rule error.
    """
    max_tool_calls: int | None
    """
    Drop trajectories with more tool calls (null: no limit).
    """
    dedupe: bool
    """
    Drop a trajectory whose response is identical to a kept one of the same question.
    """


class CollectConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    teacher: TeacherConfig = Field(..., title="TeacherConfig")
    split: Literal["train", "dev", "test"]
    """
    Question split to sample (data.questions.<split>, or the embedded benchmark's).
    """
    limit: int | None
    """
    Questions at most (null: all).
    """
    modes: list[Literal["coa", "cot"]]
    """
    coa: the dialect's agent prompt, searches through the environment server; cot: the tool-free prompt, no tool.
    """
    samples: int
    """
    Samples per question and mode (K).
    """
    temperature: Literal[0] | float
    """
    Sampling temperature (0: greedy).
    """
    top_p: float
    """
    Nucleus sampling: the smallest set of most likely tokens whose probability reaches top_p (endpoint and model-directory teachers).
    """
    seed: int | None
    """
    Sampling seed (default: the run seed).
    """
    batch_size: int
    """
    Trajectories per batch (one grading call, one progress step).
    """
    max_turns: int
    """
    Tool calls allowed per trajectory.
    """
    max_new_tokens: int
    """
    Tokens per turn.
    """
    max_obs_tokens: int
    """
    Observation tokens at most per search.
    """
    max_len: int
    """
    Prompt + response tokens at most.
    """
    top_k: int
    """
    Documents per search.
    """
    reward: CollectReward = Field(..., title="CollectReward")
    select: CollectSelect = Field(..., title="CollectSelect")
    pairs_per_question: int
    """
    SFT-1 pairs per question built from the collection (coa data prepare pairs --per-question).
    """
    use_for_sft: bool
    """
    SFT stages of a run with a finished collection train on it (kept trajectories for SFT-2/3, pairs for SFT-1) instead of data.sft / the oracle.
    """


class QuestionFiles(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    train: str | None
    """
    Training questions: verl parquet, FlashRAG/Search-R1 JSONL or *.coa.jsonl (question + golden_answers).
    """
    dev: str | None
    """
    Dev questions (same formats).
    """
    test: str | None
    """
    Test questions (same formats).
    """


class SftFile(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    path: str
    dialect: Literal["coa", "search-r1", "autocoa", "hermes", "auto"]
    """
    Dialect of the records that do not name one.
    """


class SftFilter(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    dialect: Literal["coa", "search-r1", "autocoa", "hermes", "run", "any"]
    """
    Keep trajectories in this dialect. run: the run's `dialect` (the tags RL and evaluation use); any: keep every dialect, but refuse a mix of dialects in one stage (their tags would be trained side by side).
    """
    format_ok: bool
    """
    Drop trajectories with a format-rule error (the core's checker, as `coa validate`).
    """
    correct: bool
    """
    Drop trajectories whose answer is not an exact match of the golden answers; ones without golden answers cannot be graded and are kept (and counted).
    """


class DataConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    questions: QuestionFiles = Field(..., title="QuestionFiles")
    sft: list[str | SftFile]
    """
    Trajectories for SFT-2/3 (*.coa.jsonl in any dialect, or OpenAI tool-call chats). Trajectories with tool calls are the CoA part, tool-free ones the CoT part of the stages' coa_cot_ratio mix.
    """
    sft1_pairs: str | None
    """
    SFT-1 pairs file (chosen/rejected JSONL). null: pairs are built from data.sft (coa data prepare pairs).
    """
    corpus: str | None
    """
    FlashRAG corpus JSONL ({"id", "contents"}) the environment server searches.
    """
    sft_filter: SftFilter = Field(..., title="SftFilter")
    """
    Which trajectories of data.sft (or a collection) the SFT-2/3 stages train on; the counts kept and dropped are logged when the stage starts.
    """
    strict_ids: bool
    """
    Refuse a question file that repeats an id. false: exact repeat rows are dropped; the first row of a repeated id keeps it and later ones are qualified by source (e.g. TriviaQA_dev/dev_0), the original in meta.source_id, with a summary (coa data prepare questions --strict-ids).
    """


class PretrainStage(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    steps: int
    batch_size: int
    """
    Global batch size (split across DDP ranks).
    """
    lr: float
    """
    Peak learning rate (AdamW).
    """
    warmup_steps: int
    """
    Linear warm-up steps, then cosine decay to 10%.
    """
    weight_decay: float
    """
    AdamW's decoupled weight decay (each step shrinks weights by lr × this, so at most 1).
    """
    grad_clip: float
    """
    Max gradient norm.
    """
    max_len: int
    """
    Tokens per packed pretraining sample (lines joined until this many).
    """
    checkpoint_every: int
    """
    Checkpoint every N steps (0: by time only, checkpoint_minutes).
    """
    checkpoint_minutes: float
    """
    Also checkpoint when this many minutes passed since the last checkpoint (0: never by time), so a kill loses at most that much of a stage.
    """
    log_every: int
    """
    Emit a metrics event every N steps.
    """
    sample_every: int
    """
    Emit a sample event every N steps (0: never).
    """
    micro_batch_tokens: int | None
    """
    Token budget of one forward/backward: a (mini-)batch is cut into micro-batches of at most this many tokens (padded rows count their padding) and gradients accumulate. null: the whole batch in one pass.
    """
    packing: bool
    """
    Pack each micro-batch's sequences into one row without padding (position ids restart per sequence, attention stays inside each sequence).
    """
    init_from: str | None
    """
    Model directory to start from (default: the previous stage of this run, or model.path).
    """


class Sft1Stage(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    steps: int
    batch_size: int
    """
    Global batch size (split across DDP ranks).
    """
    lr: float
    warmup_steps: int
    """
    Linear warm-up steps, then cosine decay to 10%.
    """
    weight_decay: float
    """
    AdamW's decoupled weight decay (each step shrinks weights by lr × this, so at most 1).
    """
    grad_clip: float
    """
    Max gradient norm.
    """
    max_len: int | None
    """
    Prompt + response tokens at most (longer examples are cut). null: from the data — the longest example, capped at the model's context. The stage says how many examples a cap cuts, and stops when nothing is left to train.
    """
    checkpoint_every: int
    """
    Checkpoint every N steps (0: by time only, checkpoint_minutes).
    """
    checkpoint_minutes: float
    """
    Also checkpoint when this many minutes passed since the last checkpoint (0: never by time), so a kill loses at most that much of a stage.
    """
    log_every: int
    """
    Emit a metrics event every N steps.
    """
    sample_every: int
    """
    Emit a sample event every N steps (0: never).
    """
    micro_batch_tokens: int | None
    """
    Token budget of one forward/backward: a (mini-)batch is cut into micro-batches of at most this many tokens (padded rows count their padding) and gradients accumulate. null: the whole batch in one pass.
    """
    packing: bool
    """
    Pack each micro-batch's sequences into one row without padding (position ids restart per sequence, attention stays inside each sequence).
    """
    init_from: str | None
    """
    Model directory to start from (default: the previous stage of this run, or model.path).
    """
    beta: float
    """
    Scale of the mean log-prob difference (chosen − rejected).
    """
    margin: float
    """
    Margin subtracted inside the sigmoid.
    """
    alpha: float
    """
    Weight of the NLL term −P̄(chosen).
    """


class SftMixStage(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    steps: int
    batch_size: int
    """
    Global batch size (split across DDP ranks).
    """
    lr: float
    warmup_steps: int
    """
    Linear warm-up steps, then cosine decay to 10%.
    """
    weight_decay: float
    """
    AdamW's decoupled weight decay (each step shrinks weights by lr × this, so at most 1).
    """
    grad_clip: float
    """
    Max gradient norm.
    """
    max_len: int | None
    """
    Prompt + response tokens at most (longer examples are cut). null: from the data — the longest example, capped at the model's context. The stage says how many examples a cap cuts, and stops when nothing is left to train.
    """
    checkpoint_every: int
    """
    Checkpoint every N steps (0: by time only, checkpoint_minutes).
    """
    checkpoint_minutes: float
    """
    Also checkpoint when this many minutes passed since the last checkpoint (0: never by time), so a kill loses at most that much of a stage.
    """
    log_every: int
    """
    Emit a metrics event every N steps.
    """
    sample_every: int
    """
    Emit a sample event every N steps (0: never).
    """
    micro_batch_tokens: int | None
    """
    Token budget of one forward/backward: a (mini-)batch is cut into micro-batches of at most this many tokens (padded rows count their padding) and gradients accumulate. null: the whole batch in one pass.
    """
    packing: bool
    """
    Pack each micro-batch's sequences into one row without padding (position ids restart per sequence, attention stays inside each sequence).
    """
    init_from: str | None
    """
    Model directory to start from (default: the previous stage of this run, or model.path).
    """
    coa_cot_ratio: float
    """
    Chain-of-action : chain-of-thought samples in the SFT mix (AutoCoA used 5:1).
    """


class RlReward(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    scheme: Literal["autocoa", "em", "f1", "otc-grpo", "otc-ppo"]
    params: dict[str, int | float | str | bool | list[str]]
    """
    RewardParams of src/core/rewards.ts.
    """


class AlertThresholds(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    tool_call_explosion: float
    """
    Mean tool calls above this × the first steps' mean.
    """
    think_collapse: float
    """
    Think length below this × the first steps' mean.
    """
    all_wrong_groups: float
    """
    Fraction of all-wrong groups above this.
    """
    zero_variance_groups: float
    """
    Fraction of groups whose rewards are all equal (zero advantages: no gradient) above this; above 80 % most of a step's compute teaches nothing.
    """
    logprob_drift: float
    """
    Mean |sampler − trainer| log-prob per trained token above this (nats).
    """
    tool_failure_rate: float
    """
    Tool-failure rate above this.
    """
    window: int
    """
    Steps averaged for the baseline and the current value.
    """


class RlStage(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    steps: int
    lr: float
    warmup_steps: int
    weight_decay: float
    """
    AdamW's decoupled weight decay (each step shrinks weights by lr × this, so at most 1).
    """
    grad_clip: float
    """
    Max gradient norm.
    """
    max_len: int | None
    """
    Prompt + response tokens at most; a rollout reaching it is truncated. null: the model's context (max_turns, max_new_tokens and max_obs_tokens bound a rollout anyway; no cap when the model does not say). Questions whose prompt leaves no room are counted, and the stage stops when none has any.
    """
    checkpoint_every: int
    """
    Checkpoint every N steps (0: by time only, checkpoint_minutes).
    """
    checkpoint_minutes: float
    """
    Also checkpoint when this many minutes passed since the last checkpoint (0: never by time), so a kill loses at most that much of a stage.
    """
    log_every: int
    sample_every: int
    """
    Emit a sample event (and append to rollouts.coa.jsonl) every N steps.
    """
    micro_batch_tokens: int | None
    """
    Token budget of one forward/backward: a (mini-)batch is cut into micro-batches of at most this many tokens (padded rows count their padding) and gradients accumulate. null: the whole batch in one pass.
    """
    packing: bool
    """
    Pack each micro-batch's sequences into one row without padding (position ids restart per sequence, attention stays inside each sequence).
    """
    init_from: str | None
    """
    Model directory to start from (default: the previous stage of this run, or model.path).
    """
    prompts_per_step: int
    """
    Questions per step (global; split across DDP ranks, groups kept whole).
    """
    group_size: int
    """
    GRPO group size G: samples per question.
    """
    kl_coef: float
    """
    k3 KL to the frozen reference (AutoCoA used 0.001).
    """
    clip_eps: float
    """
    PPO clip range of the importance ratio.
    """
    mini_batches: int
    """
    Optimiser updates per pass over a step's rollout batch: it is split into this many mini-batches of whole groups (at most prompts_per_step / processes). 1: one on-policy update, so the ratio stays 1 and nothing is clipped.
    """
    ppo_epochs: int
    """
    Passes over a step's rollout batch (each does mini_batches updates) against the sampler's log-probs.
    """
    std_normalize: bool
    """
    Divide group-centred rewards by the group std.
    """
    temperature: float
    """
    Sampling temperature of rollouts.
    """
    max_turns: int
    """
    Tool calls allowed per trajectory.
    """
    max_new_tokens: int
    """
    Tokens the policy may generate per turn.
    """
    max_obs_tokens: int
    """
    Observation tokens at most (simulated observations are cut here).
    """
    simulated_fraction: float
    """
    Share of steps (the first ones) with simulated observations: RL-1 → RL-2 mixing inside a stage.
    """
    top_k: int
    """
    Documents per real search.
    """
    question_split: Literal["train", "rl", "dev"]
    """
    Questions RL samples from. The SFT stages memorise train (greedy train EM 1.0), so RL there only sees sampling noise; rl: the embedded benchmark's held-out RL questions (benchmark.rl_fraction), which SFT never saw; dev is for experiments (then report test only).
    """
    reward: RlReward = Field(..., title="RlReward")
    heldout_every: int
    """
    Greedy dev EM every N steps (reward-hacking alert; 0: never).
    """
    heldout_limit: int
    """
    Dev questions in that check.
    """
    boundary_every: int
    """
    Search boundary meter every N steps on a fixed sample of dev questions: over-/under-search rates, closed-book EM and TC against the estimated minimum, logged as boundary_* metrics beside reward and TC (0: never).
    """
    boundary_sample: int
    """
    Dev questions in the boundary meter's fixed sample (drawn once with the run seed).
    """
    alerts: AlertThresholds = Field(..., title="AlertThresholds")


class StagesConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    pretrain: PretrainStage = Field(..., title="PretrainStage")
    sft1: Sft1Stage = Field(..., title="Sft1Stage")
    sft2: SftMixStage = Field(..., title="SftMixStage")
    sft3: SftMixStage = Field(..., title="SftMixStage")
    rl1: RlStage = Field(..., title="RlStage")
    rl2: RlStage = Field(..., title="RlStage")


class EvalConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    splits: list[Literal["train", "dev", "test"]]
    limit: int | None
    """
    Questions per split (null: all).
    """
    max_turns: int
    """
    Tool calls allowed per question.
    """
    max_new_tokens: int
    """
    Tokens generated per turn.
    """
    batch_size: int
    top_k: int
    max_obs_tokens: int
    """
    Observation tokens at most per search (longer ones are cut).
    """
    max_len: int | None
    """
    Prompt + response tokens at most; a rollout reaching it is truncated. null: the model's context (no cap when the model does not say).
    """


class EnvConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    node: str | None
    """
    node executable (default: COA_NODE or node on PATH).
    """
    cli: str | None
    """
    The CoA Studio CLI (dist/cli.js of a build) that serves the environment and prepares data. null: COA_CLI, else the build beside the trainer. Relative: against the run config's directory.
    """
    corpus: str | None
    """
    Search corpus (default: the benchmark corpus).
    """
    startup_timeout_s: float


class WandbLogging(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    project: str
    """
    W&B project.
    """
    entity: str | None
    """
    W&B entity (team or user; null: your default).
    """
    name: str | None
    """
    Run name prefix (null: the run id); each stage is the W&B run <name>/<stage>.
    """
    group: str | None
    """
    W&B group that holds the stages of this run (null: the run id).
    """
    mode: Literal["offline", "online", "disabled"]
    """
    offline: written under dir with no network, uploaded later with `wandb sync <dir>/wandb/offline-run-*`; online: streamed (needs a login).
    """
    dir: str | None
    """
    Directory W&B writes its wandb/ folder into (null: the run directory). Relative: against the run config's directory.
    """
    tags: list[str]
    """
    W&B tags of every stage's run.
    """


class TensorboardLogging(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    dir: str | None
    """
    Log directory shared by runs: each stage writes <dir>/<run id>/<stage>/events.out.tfevents.* (null: <run>/tensorboard/<stage>/…). Relative: against the run config's directory.
    """


class LoggingConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    wandb: WandbLogging | None
    """
    Weights & Biases (null: off).
    """
    tensorboard: TensorboardLogging | None
    """
    TensorBoard event files (null: off).
    """


class RunConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    field_schema: str | None = Field(None, alias="$schema")
    name: str | None = None
    seed: int
    device: Literal["auto", "cpu", "cuda"]
    dtype: Literal["auto", "float32", "bfloat16"]
    """
    auto: bf16 on CUDA where supported.
    """
    deterministic: bool
    """
    Deterministic kernels (torch.use_deterministic_algorithms, CUBLAS_WORKSPACE_CONFIG) so a resumed stage repeats an uninterrupted one exactly on CUDA too; false trades that for speed.
    """
    threads: int | None
    """
    torch threads (default: the machine's cores).
    """
    dialect: Literal["coa", "search-r1", "autocoa", "hermes"]
    prompt_template: str
    """
    How a question is put to the model.
    """
    model: ModelConfig = Field(..., title="ModelConfig")
    distributed: DistributedConfig = Field(..., title="DistributedConfig")
    benchmark: BenchmarkConfig = Field(..., title="BenchmarkConfig")
    collect: CollectConfig = Field(..., title="CollectConfig")
    """
    Collect SFT data from a teacher (coa_trainer collect).
    """
    data: DataConfig | None
    """
    Your own questions, trajectories and corpus (null: the embedded benchmark).
    """
    stages: StagesConfig = Field(..., title="StagesConfig")
    eval: EvalConfig = Field(..., title="EvalConfig")
    env: EnvConfig = Field(..., title="EnvConfig")
    logging: LoggingConfig = Field(..., title="LoggingConfig")
    """
    Also log metrics to Weights & Biases and TensorBoard.
    """
