// KV-cached decoding on a Decoder: greedy (temperature 0) or sampled with a seeded generator, stopping at a stop
// id or stop string (included) or a token limit. Log-probs are those of the sampling distribution, as the trainer's `generate`.
import { lastRow, type Decoder } from './model';
import { makeRandom } from '../env/random';
import type { StringStops } from './tags';

export interface GenerateOptions {
  maxNewTokens: number;
  stopIds: ReadonlySet<number>;
  /** Stop once one of these strings has been generated (tags that are text for the tokenizer). */
  stopStrings?: StringStops | null;
  /** 0 = greedy. */
  temperature?: number;
  /** Seeded random source in [0, 1) for sampling (see `seededRandom`). */
  random?: () => number;
  signal?: AbortSignal;
  onToken?: (id: number) => void;
}

export interface Generated {
  ids: number[];
  logprobs: number[];
  /** Ended on a stop id (false: the token limit). */
  stopped: boolean;
}

export class CancelledError extends Error {
  constructor() {
    super('replay cancelled');
    this.name = 'CancelledError';
  }
}

/** Continue from `prefix` (fed first when non-empty) and the decoder's cache. */
export async function generate(dec: Decoder, prefix: readonly number[], opts: GenerateOptions): Promise<Generated> {
  const temperature = opts.temperature ?? 0;
  const random = opts.random ?? Math.random;
  const ids: number[] = [];
  const logprobs: number[] = [];
  if (prefix.length === 0) throw new Error('generate: the first call needs a non-empty prefix (the prompt)');
  let row = lastRow(await dec.feed(prefix));
  for (let n = 0; n < opts.maxNewTokens; n++) {
    if (opts.signal?.aborted) throw new CancelledError();
    const { id, logprob } = pick(row, temperature, random);
    ids.push(id);
    logprobs.push(logprob);
    opts.onToken?.(id);
    if (opts.stopIds.has(id) || (opts.stopStrings && (await opts.stopStrings.hit(ids))))
      return { ids, logprobs, stopped: true };
    if (n + 1 < opts.maxNewTokens) row = lastRow(await dec.feed([id]));
  }
  // The last token is not in the cache yet when the limit ends generation; feed it so the cache matches `ids`.
  if (ids.length) await dec.feed([ids[ids.length - 1]]);
  return { ids, logprobs, stopped: false };
}

/** Argmax (first maximum, as torch.argmax) or a sample from softmax(logits / T); with its log-prob. */
export function pick(logits: Float32Array, temperature: number, random: () => number): { id: number; logprob: number } {
  const scale = temperature > 0 ? 1 / temperature : 1;
  let max = -Infinity;
  let arg = 0;
  for (let i = 0; i < logits.length; i++) {
    if (logits[i] > max) {
      max = logits[i];
      arg = i;
    }
  }
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] - max) * scale);
  const logZ = Math.log(sum);
  let id = arg;
  if (temperature > 0) {
    let u = random() * sum;
    id = logits.length - 1;
    for (let i = 0; i < logits.length; i++) {
      u -= Math.exp((logits[i] - max) * scale);
      if (u < 0) {
        id = i;
        break;
      }
    }
  }
  return { id, logprob: (logits[id] - max) * scale - logZ };
}

/** A seeded PRNG (the env server's mulberry32) so a sampled replay can be repeated. */
export function seededRandom(seed: number): () => number {
  return makeRandom(seed);
}
