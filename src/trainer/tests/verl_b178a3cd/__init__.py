"""verl's reward call paths, copied from volcengine/verl at commit b178a3cd56f58b2d502255daba591e92833930a7
(https://github.com/volcengine/verl, 2026-01-29, version 0.8.0.dev — the commit docs/integrations.md pins), under the
Apache License 2.0 (LICENSE beside this file; Copyright 2024 Bytedance Ltd. and/or its affiliates, batch.py
Copyright 2025 Individual Contributor: Mert Unsal).

verl cannot be imported on a CPU test machine: `import verl` imports Ray and tensordict (verl/protocol.py), neither a
dependency here. So the code that loads and calls a custom reward is copied verbatim, each definition under a comment
naming its file and lines:
- reward.py: verl/utils/import_utils.py `load_module`, `load_extern_object` (how `custom_reward_function.path` is
  loaded, `pkg://` or a file), verl/trainer/ppo/reward.py `get_custom_reward_fn`, `_call_with_kwargs` (reward_kwargs
  merged into every call), verl/utils/ray_utils.py `get_event_loop`;
- workers.py: verl/workers/reward_manager/{abstract,naive,batch}.py — the managers of `reward_model.reward_manager`
  with `reward_model.use_reward_loop=False`: naive (one call per sample, in order) and batch (one call per batch);
- reward_loop.py: verl/experimental/reward_loop/reward_manager/{base,naive}.py and `RewardLoopWorker.compute_score_batch`
  / `compute_score` of verl/experimental/reward_loop/reward_loop.py — the reward loop (verl's default): one asyncio task
  per sample, the reward run in the event loop's thread pool.
Changes are listed at the top of each file (decorators of verl's registry dropped, imports pointed here).
protocol.py is not verl's: a stand-in for verl's DataProto, written here, holding what the copied code reads."""
