// Which tokenizer a trajectory file was made with: the run's. A file of a run directory (`runs/<id>/stages/<stage>/
// rollouts.coa.jsonl`, `runs/<id>/eval/…`) names its stage in its records' meta; the stage's final model carries its
// tokenizer.json (so does the run's model-init for the embedded model). Shared by `coa validate --tokens` and the
// editor's token audit.
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { resultSetting } from '../core/stages';

/** tokenizer.json of a model directory, or the file itself. */
export function tokenizerFile(path: string): string | null {
  if (!existsSync(path)) return null;
  if (statSync(path).isFile()) return path;
  const f = join(path, 'tokenizer.json');
  return existsSync(f) ? f : null;
}

/** The run directory a file lies in (the nearest ancestor with a `stages/` directory or an events.jsonl), or null. */
export function runDirOf(file: string): string | null {
  let d = dirname(resolve(file));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(d, 'stages')) || existsSync(join(d, 'events.jsonl'))) return d;
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  return null;
}

/**
 * The run's tokenizer for a file whose records say `stage` (meta.stage): the file's own stage directory's final model,
 * the stage named, then the run's model-init; null when none is found (the caller asks for --tokenizer).
 */
export function findRunTokenizer(
  file: string,
  stage?: string | null,
): { path: string; tried: string[] } | { path: null; tried: string[] } {
  const tried: string[] = [];
  const own = dirname(resolve(file));
  const run = runDirOf(file);
  const candidates = [join(own, 'final'), own];
  // An evaluation's records name the results setting (sft-rl), whose model is a stage's (rl2).
  if (run && stage) candidates.push(join(run, 'stages', resultSetting(stage)?.stage ?? stage, 'final'));
  if (run) candidates.push(join(run, 'model-init'));
  for (const c of candidates) {
    tried.push(c);
    const f = tokenizerFile(c);
    if (f) return { path: f, tried };
  }
  return { path: null, tried };
}
