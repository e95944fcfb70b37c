// What makes a directory a model the trainer can load (checked by `coa data check` and the editor's model pick).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** A model directory the trainer can load: config.json plus a tokenizer. Returns the problem, or null. */
export function modelDirProblem(dir: string): string | null {
  if (!existsSync(dir)) return `${dir}: no such directory`;
  if (!statSync(dir).isDirectory()) return `${dir}: not a directory`;
  const cfg = join(dir, 'config.json');
  if (!existsSync(cfg)) return `${dir}: no config.json (not a Hugging Face model directory)`;
  try {
    JSON.parse(readFileSync(cfg, 'utf8'));
  } catch (e) {
    return `${cfg}: not valid JSON (${(e as Error).message})`;
  }
  const has = (f: string) => existsSync(join(dir, f));
  if (
    !(has('tokenizer.json') || has('tokenizer.model') || (has('vocab.json') && has('merges.txt')) || has('vocab.txt'))
  ) {
    return `${dir}: no tokenizer (tokenizer.json, tokenizer.model, vocab.json + merges.txt or vocab.txt)`;
  }
  return null;
}
