// The files a run config names, read off a raw config object: the editor lists the data files and model for a run,
// and every path field is made absolute by one rule (relative to the config file) when a config is copied or read.
import { isAbsolute, resolve } from 'node:path';

export interface DataEntry {
  /** Where in the config: `data.questions.train`, `data.sft.0`, `data.sft1_pairs`, `data.corpus`, `model.path`. */
  key: string;
  path: string;
  kind: 'questions' | 'sft' | 'pairs' | 'corpus' | 'model';
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** Every data file and the model directory a config names, in config order; tolerant of partial configs. */
export function dataEntries(config: unknown): DataEntry[] {
  const out: DataEntry[] = [];
  const model = str(obj(obj(config)?.model)?.path);
  if (model) out.push({ key: 'model.path', path: model, kind: 'model' });
  const data = obj(obj(config)?.data);
  if (!data) return out;
  const questions = obj(data.questions);
  for (const split of ['train', 'dev', 'test']) {
    const p = str(questions?.[split]);
    if (p) out.push({ key: `data.questions.${split}`, path: p, kind: 'questions' });
  }
  if (Array.isArray(data.sft)) {
    data.sft.forEach((e, i) => {
      const p = str(e) ?? str(obj(e)?.path);
      if (p) out.push({ key: `data.sft.${i}`, path: p, kind: 'sft' });
    });
  }
  const pairs = str(data.sft1_pairs);
  if (pairs) out.push({ key: 'data.sft1_pairs', path: pairs, kind: 'pairs' });
  const corpus = str(data.corpus);
  if (corpus) out.push({ key: 'data.corpus', path: corpus, kind: 'corpus' });
  return out;
}

/**
 * Every field of a run config that names a file or directory. One rule for all of them, applied by `coa data check`,
 * the trainer (coa_trainer/base/config.py, through schemas/config-paths.json) and the extension: a relative path is
 * relative to the directory of the run config file — not to the working directory of whoever runs it.
 * `*` is every key of an object, `[]` every element of a list (a string, or with `.key` an object's field).
 */
export const CONFIG_PATH_FIELDS = [
  'model.path',
  'stages.*.init_from',
  'collect.teacher.path',
  'collect.teacher.tokenizer',
  'data.questions.train',
  'data.questions.dev',
  'data.questions.test',
  'data.sft[]',
  'data.sft[].path',
  'data.sft1_pairs',
  'data.corpus',
  'benchmark.data_dir',
  'env.cli',
  'env.corpus',
  'env.node',
  'logging.wandb.dir',
  'logging.tensorboard.dir',
] as const;

/** Fields that may also hold a command looked up on PATH: a value without a `/` is a command name, not a path. */
export const CONFIG_COMMAND_FIELDS = ['env.node'] as const;

/** Values that once were written as defaults into every copied config and mean "not given" (env.cli's old default,
 * which named the checkout's CLI whatever the config's directory). */
export const CONFIG_LEGACY_DEFAULTS: Record<string, string> = { 'env.cli': 'dist/cli.js' };

/** A copy of `config` with every relative path of CONFIG_PATH_FIELDS resolved against `baseDir` (the config file's
 * directory); tolerant of partial configs. */
export function resolveConfigPaths<T>(config: T, baseDir: string): T {
  const copy = structuredClone(config) as unknown;
  for (const field of CONFIG_PATH_FIELDS) {
    const command = (CONFIG_COMMAND_FIELDS as readonly string[]).includes(field);
    const legacy = CONFIG_LEGACY_DEFAULTS[field];
    visit(copy, field.split('.'), (v) => {
      if (typeof v !== 'string' || v === '') return v;
      if (legacy !== undefined && v === legacy) return null;
      if (isAbsolute(v) || (command && !v.includes('/'))) return v;
      return resolve(baseDir, v);
    });
  }
  return copy as T;
}

function visit(node: unknown, parts: string[], fix: (v: unknown) => unknown): void {
  const o = obj(node);
  if (!o || parts.length === 0) return;
  const [head, ...rest] = parts;
  const keys = head === '*' ? Object.keys(o) : [head.replace(/\[\]$/, '')];
  for (const key of keys) {
    if (!(key in o)) continue;
    if (head.endsWith('[]')) {
      const list = o[key];
      if (!Array.isArray(list)) continue;
      if (rest.length === 0) o[key] = list.map((e) => (typeof e === 'string' ? fix(e) : e));
      else list.forEach((e) => visit(e, rest, fix));
    } else if (rest.length === 0) o[key] = fix(o[key]);
    else visit(o[key], rest, fix);
  }
}
