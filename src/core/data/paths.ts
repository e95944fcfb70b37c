// The files a run config names (data section and model.path), read off a raw config object: the editor lists
// them for a run and makes them absolute when it copies a user's config into runs/<id>/config.json.
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

/** A copy of `config` whose relative data paths and model.path are resolved against `baseDir`. */
export function absolutizeDataPaths<T>(config: T, baseDir: string): T {
  const copy = structuredClone(config) as Obj;
  const abs = (p: unknown) => (typeof p === 'string' && p !== '' && !isAbsolute(p) ? resolve(baseDir, p) : p);
  const model = obj(copy.model);
  if (model && typeof model.path === 'string') model.path = abs(model.path);
  const teacher = obj(obj(copy.collect)?.teacher); // collect.teacher's directories, resolved like the data files
  if (teacher) for (const key of ['path', 'tokenizer']) if (typeof teacher[key] === 'string') teacher[key] = abs(teacher[key]);
  const data = obj(copy.data);
  if (!data) return copy as T;
  const questions = obj(data.questions);
  if (questions) for (const split of ['train', 'dev', 'test']) if (split in questions) questions[split] = abs(questions[split]);
  if (Array.isArray(data.sft)) data.sft = data.sft.map((e) => (obj(e) ? { ...obj(e), path: abs(obj(e)!.path) } : abs(e)));
  for (const key of ['sft1_pairs', 'corpus']) if (key in data) data[key] = abs(data[key]);
  return copy as T;
}
