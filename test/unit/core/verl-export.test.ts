// `coa export verl`'s pure parts: values in Hydra's override grammar and words a POSIX shell passes unchanged (the
// whole export is checked against verl's own config by src/trainer/tests/test_verl_export.py), and RL-2's settings
// mapped onto verl's keys.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { RunConfigSchema } from '../../../src/core/config';
import { hydraValue, shellWord, verlLaunch } from '../../../src/core/export/verl';

test('Hydra values: plain where Hydra reads the same string back, quoted otherwise', () => {
  assert.equal(hydraValue('/data/train.parquet'), '/data/train.parquet');
  assert.equal(hydraValue('Qwen/Qwen2.5-3B-Instruct'), 'Qwen/Qwen2.5-3B-Instruct');
  assert.equal(hydraValue('/a b/c'), "'/a b/c'");
  assert.equal(hydraValue("it's"), "'it\\'s'");
  assert.equal(hydraValue('true'), "'true'", 'a string that reads as a boolean is quoted');
  assert.equal(hydraValue('3'), "'3'");
  assert.equal(hydraValue(1e-6), '0.000001');
  assert.equal(hydraValue(false), 'false');
  assert.equal(hydraValue(['console', 'file']), '[console,file]');
});

test('shell words survive sh unchanged', () => {
  for (const word of [
    'plain=1',
    "data.train_files='/a b/x.parquet'",
    'a"b',
    "it's $HOME `x` \\ *",
    'trainer.logger=[console,file]',
  ]) {
    const echoed = execFileSync('sh', ['-c', `printf '%s' ${shellWord(word)}`], { encoding: 'utf8' });
    assert.equal(echoed, word);
  }
});

test("RL-2's settings become verl's keys", () => {
  const config = RunConfigSchema.parse({
    dialect: 'hermes',
    model: { system_prompt: 'x' },
    stages: {
      rl2: {
        group_size: 5,
        prompts_per_step: 12,
        mini_batches: 3,
        kl_coef: 0,
        reward: { scheme: 'otc-ppo', params: { c: 2, sources: ['nq', 'hotpotqa'] } },
      },
    },
  });
  const paths = {
    model: 'm',
    trainFiles: 't.parquet',
    valFiles: null,
    toolConfig: 'tool.yaml',
    rewardFunction: 'r.py',
    rolloutDir: 'roll',
    metricsFile: 'm.jsonl',
    experiment: 'e1',
  };
  const { overrides, env, warnings } = verlLaunch(config, paths);
  const get = (k: string) =>
    overrides
      .find((o) => o.replace(/^\+/, '').startsWith(`${k}=`))
      ?.split('=')
      .slice(1)
      .join('=');
  assert.equal(get('actor_rollout_ref.rollout.n'), '5');
  assert.equal(get('data.train_batch_size'), '12');
  assert.equal(get('actor_rollout_ref.actor.ppo_mini_batch_size'), '4');
  assert.equal(get('actor_rollout_ref.actor.use_kl_loss'), 'false');
  assert.equal(get('data.val_files'), 't.parquet', 'no dev/test: validate on the training questions');
  assert.equal(get('custom_reward_function.reward_kwargs.params.c'), '2');
  assert.equal(get('custom_reward_function.reward_kwargs.run'), undefined, 'only OTC-GRPO keeps a run');
  assert.deepEqual(env, { VERL_FILE_LOGGER_PATH: 'm.jsonl' });
  assert.equal(get('custom_reward_function.reward_kwargs.params.sources'), '[nq,hotpotqa]');
  assert.deepEqual(warnings, []);
  assert.match(
    verlLaunch(RunConfigSchema.parse({}), paths).warnings[0],
    /dialect coa: verl's tool agent loop runs Hermes/,
  );
});
