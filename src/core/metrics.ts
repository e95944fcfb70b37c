// The agent metrics of a batch of graded trajectories — the names the trainer's RL steps, evaluations, collections and
// the TRL callback all log, and the names the alert rules (./alerts.ts) read. One table, so a metric is called the
// same everywhere: the trainer gets it as a generated enum (coa_trainer/contracts/agent_metric.py) and computes every
// one of them in one place (coa_trainer/rollout/metrics.py).

export const AGENT_METRICS = {
  reward_mean: 'mean reward of the trajectories',
  reward_std: 'standard deviation of the rewards',
  em: 'exact-match rate (golden answers, SQuAD normalisation)',
  f1: 'mean token F1 against the golden answers',
  tc: 'tool calls per trajectory',
  tp: "correct answers per tool call (OTC-PO's tool productivity)",
  format_error_rate: 'share of trajectories with a format-rule error',
  tool_failure_rate: 'share of tool calls that failed',
  malformed_call_rate: 'share of trajectories that called a tool with a malformed call',
  truncation_ratio: 'share of trajectories cut at a length limit',
  all_correct_groups: 'share of groups whose every sample is correct (no learning signal)',
  all_wrong_groups: 'share of groups with no correct sample (no learning signal)',
  zero_variance_groups:
    'share of groups whose samples all got the same reward: zero advantages, compute spent for no gradient',
  response_len: 'model-written tokens per trajectory',
  think_len: 'thinking tokens per trajectory',
  retok_mismatches: 'trajectories whose model input was not a prefix of the trained ids',
  retok_drift_rate: 'share of trajectories a decode → encode would change',
  logprob_diff_mean:
    "mean |sampler − trainer| log-prob per trained token, before the step's first update (train–inference drift)",
  logprob_diff_max: "largest |sampler − trainer| log-prob of a trained token, before the step's first update",
  trajectories: 'trajectories in the batch',
} as const;
export type AgentMetric = keyof typeof AGENT_METRICS;
export const AGENT_METRIC_NAMES = Object.keys(AGENT_METRICS) as [AgentMetric, ...AgentMetric[]];

/**
 * Histograms a step may log (`histogram` events, src/core/events.ts): their bin edges, read by the trainer from
 * schemas/histograms.json. logprob_diff: |sampler − trainer| log-prob of each trained token before the step's first
 * update, in decades — fp32 on one device differs by ~1e-7 to 1e-5 (incremental KV-cache vs full forward), a bf16
 * engine against an fp32 trainer by 1e-3 to 1e-1, and a token past 0.18 (ln 1.2) starts outside PPO's clip range.
 */
export const HISTOGRAMS = {
  logprob_diff: {
    edges: [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1],
    meaning: "|sampler − trainer| log-prob per trained token, before the step's first update",
  },
} as const;

// The search boundary meter run inside RL (every `boundary_every` steps on a fixed sample of dev questions:
// coa_trainer/evaluation/boundary.py, classes in ./boundary.ts), logged with the step's metrics so the live panel
// plots them beside reward and TC. The trainer gets the names as a generated enum (contracts/boundary_metric.py).
export const BOUNDARY_METRICS = {
  boundary_over_search:
    'share of the sample questions classed over-search (right with search refused, searched anyway)',
  boundary_under_search:
    'share of the sample questions classed under-search (wrong both ways, right with one more search)',
  boundary_em_closed_book:
    'EM of the sample with search refused (each query answered by the model itself, asked it alone)',
  boundary_tc: 'tool calls per question of the sample with search (greedy)',
  boundary_min_tc: 'estimated fewest tool calls per question, over the sample questions where one is known',
  boundary_tc_over_min: 'tool calls minus that minimum per question, over the same questions',
  boundary_s: 'seconds the meter took at this step (its cost to the stage)',
} as const;
export type BoundaryMetric = keyof typeof BOUNDARY_METRICS;
export const BOUNDARY_METRIC_NAMES = Object.keys(BOUNDARY_METRICS) as [BoundaryMetric, ...BoundaryMetric[]];

/**
 * System metrics the trainer logs with each metrics event, under `system/` (W&B and TensorBoard show the like beside
 * the charts): how the machine is shared — a stage slowed by another process, or by its own threads spinning,
 * shows here before anywhere else. Sampled by coa_trainer/base/system_metrics.py (names read from
 * schemas/system-metrics.json); charted by the live panel in its System group. GPU ones only where a GPU is used.
 */
export const SYSTEM_METRICS = {
  'system/cpu_percent':
    "this process's CPU time over wall time since the last sample, in % of one core (over 100 with several threads)",
  'system/machine_cpu_percent': "share of all the machine's cores busy since the last sample, other processes included",
  'system/rss_gb': 'resident memory of this process, GB',
  'system/mem_percent': "share of the machine's memory in use",
  'system/gpu_util_percent': 'GPU busy share since the last query (NVML through torch), where a GPU is used',
  'system/gpu_mem_gb': "GPU memory held by torch's tensors on this process's device, GB, where a GPU is used",
} as const;
export type SystemMetric = keyof typeof SYSTEM_METRICS;
