// Builds the tiny exported model of fixture.py: a random embedded-default model that memorised one agent
// trajectory, exported with coa_trainer's export-onnx, plus PyTorch references. Cached under .cache/ keyed by
// the sources that shape it, so the replay test files share one build (~15 s on 2 cores).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO = resolve(__dirname, '../../..');

export interface Reference {
  probes: { text: string; ids: number[]; offsets: number[]; decoded: string }[];
  prompt_ids: number[];
  prompt_logits: number[][];
  greedy_ids: number[];
  greedy_text: string;
  /** Probes through alt_tokenizer.json (NFC, Whitespace, grouped Digits). */
  alt: { text: string; ids: number[]; offsets: number[]; decoded: string }[];
  /** Probes through byte-level BPE tokenizers trained on the fixture texts (bpe_gpt2.json, bpe_qwen2.json). */
  bpe: Record<'gpt2' | 'qwen2', { text: string; ids: number[]; decoded: string }[]>;
  /** Probes through a SentencePiece-style Unigram tokenizer (NFKC, Metaspace) trained on the fixture texts (unigram.json). */
  unigram: Probe[];
  /** The realistic tiny model (byte-level BPE, tags as text) memorising `prompt` + `memo`, exported to realistic/onnx. */
  realistic: { probes: Probe[]; prompt: string; memo: string; observation: string };
}

type Probe = { text: string; ids: number[]; offsets: number[]; decoded: string };

/**
 * Every module of the trainer, wherever it lives in the package (the package was reorganised into floors: a fixed
 * list of paths broke the build key), relative to the repository.
 */
export function trainerSources(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(join(REPO, d), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory() && e.name !== '__pycache__') walk(`${d}/${e.name}`);
      else if (e.name.endsWith('.py')) out.push(`${d}/${e.name}`);
    }
  };
  walk('src/trainer/coa_trainer');
  return out;
}

const SOURCES = () => [
  'test/unit/replay/fixture.py',
  'src/core/dialects.ts',
  'src/trainer/tests/realistic_model.py',
  ...trainerSources(),
];

let built: { dir: string; onnx: string; ref: Reference } | undefined;

export function tinyModel(): { dir: string; onnx: string; ref: Reference } {
  if (built) return built;
  const python = join(REPO, '.venv/bin/python');
  if (!existsSync(python))
    throw new Error(`${python} is missing: run npm run setup:python (the replay tests export a model with it)`);
  const hash = createHash('sha256');
  for (const f of SOURCES()) hash.update(f).update(readFileSync(join(REPO, f)));
  const dir = join(REPO, '.cache', `replay-fixture-${hash.digest('hex').slice(0, 12)}`);
  if (!existsSync(join(dir, 'ref.json'))) {
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    execFileSync(python, [join(__dirname, 'fixture.py'), tmp], {
      cwd: REPO,
      env: { ...process.env, PYTHONPATH: join(REPO, 'src/trainer'), OMP_NUM_THREADS: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    });
    try {
      renameSync(tmp, dir);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process finished first: use its build
    }
  }
  built = {
    dir,
    onnx: join(dir, 'onnx/model.onnx'),
    ref: JSON.parse(readFileSync(join(dir, 'ref.json'), 'utf8')) as Reference,
  };
  return built;
}
