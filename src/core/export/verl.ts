// `coa export verl`: a run config's RL-2 stage as verl's launch — the `key=value` overrides of
// `python -m verl.trainer.main_ppo`, the questions in verl's parquet layout, and the search tool's config — so a
// stage configured (and tried) here trains under verl at scale, with our reward, our search server and the
// cockpit watching. The keys are those of verl's Hydra config at volcengine/verl
// b178a3cd56f58b2d502255daba591e92833930a7 (verl/trainer/config/ppo_trainer.yaml and its defaults; the commit
// docs/integrations.md pins); src/trainer/tests/test_verl_export.py composes verl's own config with them.
import type { RunConfig } from '../config';
import { DIALECT_PROMPTS } from '../prompts';
import type { QuestionRecord } from '../data/questions';

export const VERL_COMMIT = 'b178a3cd56f58b2d502255daba591e92833930a7';

/** One row of verl's RL data (verl/utils/dataset/rl_dataset.py reads these columns; examples/data_preprocess/
 * preprocess_search_r1_dataset.py writes them for search), with `extra_info.question` so our reward keys OTC-GRPO's
 * per-question minimum by the question itself and `extra_info.id` joining results back to the source rows. */
export interface VerlRow {
  data_source: string;
  prompt: { role: string; content: string }[];
  ability: string;
  reward_model: { style: string; ground_truth: { target: string[] } };
  extra_info: { split: string; index: number; id: string; question: string };
  agent_name: string;
}

/** The chat a question is put to the model with: the run's own prompts (model.system_prompt / user_prompt, else
 * the dialect's, src/core/prompts.ts), so verl samples the model as the stages here trained it. */
export function verlRow(config: RunConfig, q: QuestionRecord, split: string, index: number): VerlRow {
  const table = DIALECT_PROMPTS[config.dialect];
  const system = config.model.system_prompt ?? table.system;
  const user = (config.model.user_prompt ?? table.user).split('{question}').join(q.question);
  return {
    data_source: q.data_source ?? 'coa',
    prompt: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: user }],
    ability: 'fact-reasoning',
    reward_model: { style: 'rule', ground_truth: { target: q.golden_answers } },
    extra_info: { split, index, id: q.id, question: q.question },
    agent_name: 'tool_agent',
  };
}

/** A value in Hydra's override grammar: plain where Hydra reads it back as the same string, else quoted. */
export function hydraValue(v: string | number | boolean | null | (string | number | boolean)[]): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `[${v.map((x) => hydraValue(x)).join(',')}]`;
  if (typeof v !== 'string') return String(v);
  const plainish = /^[A-Za-z_/.][\w./@:+-]*$/.test(v) && !/^(null|true|false|nan|inf)$/i.test(v);
  return plainish ? v : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A word a POSIX shell passes through unchanged. */
export function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface VerlLaunch {
  /** `key=value` overrides, in Hydra's grammar, in the order given to verl. */
  overrides: string[];
  /** Environment the launch needs (the file logger's path); the server's URL and token are the user's to export. */
  env: Record<string, string>;
  warnings: string[];
}

export interface VerlPaths {
  model: string;
  trainFiles: string;
  valFiles: string | null;
  toolConfig: string;
  rewardFunction: string;
  rolloutDir: string;
  metricsFile: string;
  experiment: string;
}

type Scalar = string | number | boolean;
/** A reward parameter Hydra's grammar carries as it is (the run config allows numbers, strings, booleans, lists). */
function exportable(v: unknown): v is Scalar | Scalar[] {
  const scalar = (x: unknown) => typeof x === 'number' || typeof x === 'boolean' || typeof x === 'string';
  return scalar(v) || (Array.isArray(v) && v.every(scalar));
}

/** The overrides of RL-2 (`stages.rl2`) for verl's GRPO with the agent loop. */
export function verlLaunch(config: RunConfig, paths: VerlPaths): VerlLaunch {
  const rl = config.stages.rl2;
  const warnings: string[] = [];
  const set = (key: string, value: Parameters<typeof hydraValue>[0]) => `${key}=${hydraValue(value)}`;
  const add = (key: string, value: Parameters<typeof hydraValue>[0]) => `+${set(key, value)}`;
  if (config.dialect !== 'hermes')
    warnings.push(
      `dialect ${config.dialect}: verl's tool agent loop runs Hermes tool calls (<tool_call>{"name": "search", …}); a model prompted in ${config.dialect} writes calls verl will not execute — train and export with dialect hermes`,
    );
  else if (!config.model.system_prompt)
    warnings.push(
      'the hermes system prompt shows {"query": "…"}; verl\'s SearchTool takes {"query_list": […]} (the tool schema the chat template adds says so): set model.system_prompt if your model was not trained on both',
    );
  if (rl.prompts_per_step % rl.mini_batches !== 0)
    warnings.push(
      `stages.rl2.prompts_per_step ${rl.prompts_per_step} is not a multiple of mini_batches ${rl.mini_batches}: verl's ppo_mini_batch_size is rounded down`,
    );
  const reward = rl.reward;
  const overrides = [
    set('algorithm.adv_estimator', 'grpo'),
    set('algorithm.norm_adv_by_std_in_grpo', rl.std_normalize),
    set('algorithm.use_kl_in_reward', false),
    set('data.train_files', paths.trainFiles),
    set('data.val_files', paths.valFiles ?? paths.trainFiles),
    set('data.train_batch_size', rl.prompts_per_step),
    set('data.return_raw_chat', true),
    set('actor_rollout_ref.model.path', paths.model),
    set('actor_rollout_ref.actor.optim.lr', rl.lr),
    set('actor_rollout_ref.actor.optim.lr_warmup_steps', rl.warmup_steps),
    set('actor_rollout_ref.actor.optim.weight_decay', rl.weight_decay),
    set('actor_rollout_ref.actor.grad_clip', rl.grad_clip),
    set('actor_rollout_ref.actor.ppo_mini_batch_size', Math.max(1, Math.floor(rl.prompts_per_step / rl.mini_batches))),
    set('actor_rollout_ref.actor.ppo_epochs', rl.ppo_epochs),
    set('actor_rollout_ref.actor.clip_ratio', rl.clip_eps),
    // our KL is the k3 estimator to the frozen reference, in the loss: verl's low_var_kl is k3
    set('actor_rollout_ref.actor.use_kl_loss', rl.kl_coef > 0),
    set('actor_rollout_ref.actor.kl_loss_coef', rl.kl_coef),
    set('actor_rollout_ref.actor.kl_loss_type', 'low_var_kl'),
    set('actor_rollout_ref.rollout.n', rl.group_size),
    set('actor_rollout_ref.rollout.temperature', rl.temperature),
    set('actor_rollout_ref.rollout.multi_turn.enable', true),
    set('actor_rollout_ref.rollout.multi_turn.format', 'hermes'),
    // a tool call is an assistant turn, and the answer one more
    set('actor_rollout_ref.rollout.multi_turn.max_assistant_turns', rl.max_turns + 1),
    set('actor_rollout_ref.rollout.multi_turn.tool_config_path', paths.toolConfig),
    // our reward, graded by the environment server (COA_ENV_URL), the whole batch in one call (exact OTC-GRPO)
    set('reward_model.reward_manager', 'batch'),
    set('reward_model.use_reward_loop', false),
    set('custom_reward_function.path', paths.rewardFunction),
    set('custom_reward_function.name', 'compute_score'),
    add('custom_reward_function.reward_kwargs.scheme', reward.scheme),
    ...Object.entries(reward.params).flatMap(([k, v]) =>
      exportable(v) ? [add(`custom_reward_function.reward_kwargs.params.${k}`, v)] : [],
    ),
    ...(reward.scheme === 'otc-grpo' ? [add('custom_reward_function.reward_kwargs.run', paths.experiment)] : []),
    set('trainer.total_training_steps', rl.steps),
    set('trainer.project_name', 'coa-studio'),
    set('trainer.experiment_name', paths.experiment),
    // where the cockpit watches: verl's file logger (path in VERL_FILE_LOGGER_PATH) and its rollout dumps
    set('trainer.logger', ['console', 'file']),
    set('trainer.rollout_data_dir', paths.rolloutDir),
  ];
  for (const [k, v] of Object.entries(reward.params))
    if (!exportable(v))
      warnings.push(`stages.rl2.reward.params.${k} is not a number, boolean, string or list of them: not exported`);
  return { overrides, env: { VERL_FILE_LOGGER_PATH: paths.metricsFile }, warnings };
}

/** verl's search tool (verl/tools/search_tool.py SearchTool, whose requests are Search-R1's `/retrieve`) pointed at
 * our environment server. The URL is read from COA_ENV_URL when verl loads the tool (OmegaConf's oc.env resolver),
 * so the per-run token is in no file and on no command line. `caller` names the tool's health line. */
export function searchToolConfig(caller: string, topk: number): string {
  return [
    '# verl tool config (actor_rollout_ref.rollout.multi_turn.tool_config_path), written by `coa export verl`.',
    '# The URL comes from COA_ENV_URL (the token_url `coa env serve` prints) when verl loads this file.',
    'tools:',
    '  - class_name: verl.tools.search_tool.SearchTool',
    '    config:',
    `      retrieval_service_url: \${oc.env:COA_ENV_URL}/${caller}/retrieve`,
    `      topk: ${topk}`,
    '      num_workers: 32',
    '      rate_limit: 32',
    '      timeout: 30',
    '      type: native',
    '    tool_schema:',
    '      type: function',
    '      function:',
    '        name: search',
    '        description: Searches the corpus for passages relevant to the given queries.',
    '        parameters:',
    '          type: object',
    '          properties:',
    '            query_list:',
    '              type: array',
    '              items:',
    '                type: string',
    '              description: Fully-formed search queries; the results come back for each query.',
    '          required:',
    '            - query_list',
    '',
  ].join('\n');
}
