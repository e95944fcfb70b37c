// `coa export verl <run-config.json> [key=value …] --out <dir>`: RL-2 of a run config as verl's launch
// (src/core/export/verl.ts). Writes into <dir>: train.parquet / val.parquet (the questions in verl's layout),
// search_tool.yaml, verl-launch.json ({verl_commit, overrides, env, warnings}) and launch.sh; prints the launch
// (shell-safe) on stdout. verl's file logger and rollout dumps go to <dir>/metrics.jsonl and <dir>/rollouts/, where
// the cockpit's Runs view finds them.
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';
import { loadRunConfig, resolveDataPath } from '../core/data/check';
import { DataError } from '../core/data/errors';
import { modelDirProblem } from '../core/data/model';
import { readQuestions } from '../core/data/questions';
import { isOverride } from '../core/overrides';
import { searchToolConfig, shellWord, VERL_COMMIT, verlLaunch, verlRow, type VerlRow } from '../core/export/verl';
import { isValidName } from '../core/names';
import { CliError, parseArgs } from './args';

const FLAGS = { out: 'string', o: 'string', name: 'string', 'reward-path': 'string' } as const;

export async function runExportCommand(argv: string[]): Promise<number> {
  const [target, ...rest] = argv;
  if (target !== 'verl') throw new CliError('export: give verl (coa export verl <run-config.json> --out <dir>)');
  const args = parseArgs(rest, FLAGS);
  const files = args.positional.filter((a) => !isOverride(a));
  const overrides = args.positional.filter(isOverride);
  if (files.length !== 1) throw new CliError('export verl: give one run config file (and key=value overrides)');
  const out = (args.flags.out ?? args.flags.o) as string | undefined;
  if (!out) throw new CliError('export verl: give the output directory with --out <dir>');
  try {
    return await exportVerl(
      files[0],
      overrides,
      resolve(out),
      args.flags.name as string | undefined,
      args.flags['reward-path'] as string | undefined,
    );
  } catch (e) {
    if (e instanceof DataError) {
      console.error(e.message);
      return 2;
    }
    throw e;
  }
}

/** Our reward function for verl: this checkout's file (verl loads it by path), else the importable module. */
function rewardFunctionPath(): string {
  for (let dir = __dirname; dirname(dir) !== dir; dir = dirname(dir)) {
    const file = join(dir, 'src', 'trainer', 'coa_trainer', 'integrations', 'verl_reward.py');
    if (existsSync(file)) return file;
  }
  return 'pkg://coa_trainer.integrations.verl_reward';
}

const PARQUET_SCHEMA = (() => {
  const str = (name: string) => ({
    name,
    type: 'BYTE_ARRAY' as const,
    converted_type: 'UTF8' as const,
    repetition_type: 'OPTIONAL' as const,
  });
  const group = (name: string, n: number, extra: object = {}) => ({
    name,
    repetition_type: 'OPTIONAL' as const,
    num_children: n,
    ...extra,
  });
  return [
    { name: 'root', num_children: 6 },
    str('data_source'),
    group('prompt', 1, { converted_type: 'LIST' }),
    { name: 'list', repetition_type: 'REPEATED' as const, num_children: 1 },
    group('element', 2),
    str('role'),
    str('content'),
    str('ability'),
    group('reward_model', 2),
    str('style'),
    group('ground_truth', 1),
    group('target', 1, { converted_type: 'LIST' }),
    { name: 'list', repetition_type: 'REPEATED' as const, num_children: 1 },
    str('element'),
    group('extra_info', 4),
    str('split'),
    { name: 'index', type: 'INT64' as const, repetition_type: 'OPTIONAL' as const },
    str('id'),
    str('question'),
    str('agent_name'),
  ];
})();

/** Rows as a parquet file with verl's nested columns (pyarrow reads prompt as list<struct<role, content>>). */
function writeParquet(file: string, rows: VerlRow[]): void {
  const tmp = `${file}.tmp-${process.pid}`;
  parquetWriteFile({
    filename: tmp,
    columnData: [
      { name: 'data_source', data: rows.map((r) => r.data_source) },
      { name: 'prompt', data: rows.map((r) => r.prompt) },
      { name: 'ability', data: rows.map((r) => r.ability) },
      { name: 'reward_model', data: rows.map((r) => r.reward_model) },
      { name: 'extra_info', data: rows.map((r) => ({ ...r.extra_info, index: BigInt(r.extra_info.index) })) },
      { name: 'agent_name', data: rows.map((r) => r.agent_name) },
    ],
    schema: PARQUET_SCHEMA,
  });
  renameSync(tmp, file);
}

async function exportVerl(
  configPath: string,
  overrides: string[],
  out: string,
  nameFlag: string | undefined,
  rewardPath: string | undefined,
): Promise<number> {
  const { config } = loadRunConfig(configPath, overrides);
  const at = (key: string) => new DataError(configPath, 1, 1, key, '');
  const rl2 = config.stages.rl2;
  const modelGiven = rl2.init_from ?? config.model.path;
  if (!modelGiven) {
    const e = at('model.path');
    throw new DataError(
      e.file,
      e.line,
      e.column,
      'model.path',
      'verl needs a Hugging Face model: set model.path or stages.rl2.init_from (e.g. runs/<id>/stages/sft3/final)',
    );
  }
  const warnings: string[] = [];
  const local = resolveDataPath(configPath, modelGiven);
  let model = modelGiven;
  if (existsSync(local)) {
    const problem = modelDirProblem(local);
    if (problem) throw new DataError(configPath, 1, 1, rl2.init_from ? 'stages.rl2.init_from' : 'model.path', problem);
    model = local;
  } else
    warnings.push(
      `model ${modelGiven} is not a directory here: passed to verl as given (a hub id, or a path on the training machine)`,
    );
  const train = config.data?.questions.train;
  if (!train)
    throw new DataError(
      configPath,
      1,
      1,
      'data.questions.train',
      'verl trains on your questions: set data.questions.train (verl parquet, FlashRAG/Search-R1 JSONL or *.coa.jsonl)',
    );
  const experiment = nameFlag ?? config.name ?? basename(out);
  if (!isValidName(experiment))
    throw new CliError(
      `export verl: experiment name ${JSON.stringify(experiment)} must be a plain name (A-Z a-z 0-9 . _ -): give --name`,
    );

  mkdirSync(out, { recursive: true });
  const strictIds = config.data?.strict_ids ?? false;
  const convert = async (key: string, file: string, split: string, target: string): Promise<number> => {
    const rows: VerlRow[] = [];
    for await (const q of readQuestions(resolveDataPath(configPath, file), { strictIds }))
      rows.push(verlRow(config, q, split, rows.length));
    if (!rows.length) throw new DataError(resolveDataPath(configPath, file), 1, 1, 'record', `no questions (${key})`);
    writeParquet(target, rows);
    return rows.length;
  };
  const trainFiles = join(out, 'train.parquet');
  const counts: Record<string, number> = { train: await convert('data.questions.train', train, 'train', trainFiles) };
  const valKey = config.data?.questions.dev ? 'dev' : config.data?.questions.test ? 'test' : null;
  let valFiles: string | null = null;
  if (valKey) {
    valFiles = join(out, 'val.parquet');
    counts[valKey] = await convert(`data.questions.${valKey}`, config.data!.questions[valKey]!, valKey, valFiles);
  } else warnings.push('no data.questions.dev or .test: verl validates on the training questions');

  const toolConfig = join(out, 'search_tool.yaml');
  writeFileSync(toolConfig, searchToolConfig(`verl-${experiment}`, rl2.top_k));
  const launch = verlLaunch(config, {
    model,
    trainFiles,
    valFiles,
    toolConfig,
    rewardFunction: rewardPath ?? rewardFunctionPath(),
    rolloutDir: join(out, 'rollouts'),
    metricsFile: join(out, 'metrics.jsonl'),
    experiment,
  });
  warnings.push(...launch.warnings);
  const server = `npx coa env serve --corpus ${shellWord(config.data?.corpus ? resolveDataPath(configPath, config.data.corpus) : '<corpus.jsonl>')} --dialect ${config.dialect}`;
  const script = [
    '#!/bin/sh',
    `# verl launch of ${configPath} (RL-2), written by \`coa export verl\` for volcengine/verl ${VERL_COMMIT}.`,
    `# First: ${server}`,
    '#   then export COA_ENV_URL=<its token_url> (the reward and the search tool read it; never put it on a command line).',
    ': "${COA_ENV_URL:?export COA_ENV_URL=<token_url printed by coa env serve>}"',
    '# the search tool sends no token header: the URL must carry it (http://127.0.0.1:PORT/t/<token>)',
    'case "$COA_ENV_URL" in */t/?*) ;; *) echo "COA_ENV_URL must be the token_url (…/t/<token>) that coa env serve prints" >&2; exit 2 ;; esac',
    ...Object.entries(launch.env).map(([k, v]) => `export ${k}=${shellWord(v)}`),
    'exec python3 -m verl.trainer.main_ppo \\',
    ...launch.overrides.map((o, i) => `    ${shellWord(o)}${i < launch.overrides.length - 1 ? ' \\' : ' "$@"'}`),
    '',
  ].join('\n');
  writeFileSync(join(out, 'launch.sh'), script);
  chmodSync(join(out, 'launch.sh'), 0o755);
  writeFileSync(
    join(out, 'verl-launch.json'),
    `${JSON.stringify({ verl_commit: VERL_COMMIT, config: resolve(configPath), overrides: launch.overrides, env: launch.env, files: { train: trainFiles, val: valFiles, tool_config: toolConfig }, questions: counts, warnings }, null, 2)}\n`,
  );
  process.stdout.write(script);
  for (const w of warnings) console.error(`export verl: warning: ${w}`);
  console.error(
    `export verl: ${Object.entries(counts)
      .map(([k, n]) => `${n} ${k} questions`)
      .join(
        ', ',
      )}; ${launch.overrides.length} overrides in ${join(out, 'verl-launch.json')} and ${join(out, 'launch.sh')}`,
  );
  return 0;
}
