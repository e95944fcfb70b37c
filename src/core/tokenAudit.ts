// Token audit: a record's stored token ids against the ids its text re-tokenizes to, with the run's tokenizer
// (train–inference drift: TRL #5224, verl #3960 / #6719, verifiers #955). Two checks, both needed:
// - per turn: each run of ids with one loss-mask value (a model-written turn, an appended observation) decoded
//   alone and encoded again. A turn whose stored ids are not what its own text encodes to was not sampled as
//   stored — e.g. ids re-encoded across a tag boundary, one token now straddling the model's turn and the
//   observation appended after it;
// - whole response: all ids decoded and encoded again. Turns tokenized one by one (as a rollout loop appends them)
//   can merge differently once joined (`>` + `\n\n` → `>\n\n` in byte-level BPE): what a trainer that re-tokenizes
//   the text would train on instead of what was sampled.
// The tokenizer is given as a codec (src/replay/tokenizer.ts wraps Hugging Face `tokenizers`), so this stays pure.
import type { TrajectoryRecord } from './record';

export interface TokenCodec {
  encode(text: string): Promise<number[]>;
  decode(ids: readonly number[]): Promise<string>;
}

export interface Divergence {
  /** Index in the record's `tokens.ids` of the first token that differs. */
  index: number;
  /** A few stored and re-tokenized ids from there. */
  stored: number[];
  retokenized: number[];
  /** The text of the stored token there (decoded alone). */
  text: string;
}

export interface TurnAudit {
  /** 0-based turn; `model` for loss-mask 1 (sampled), `appended` for loss-mask 0 (observations, tool output). */
  turn: number;
  kind: 'model' | 'appended';
  /** Token index range [start, end) in `tokens.ids`. */
  start: number;
  end: number;
  divergence: Divergence | null;
}

export interface TokenAudit {
  tokens: number;
  turns: TurnAudit[];
  /** The whole response decoded and re-encoded. */
  whole: Divergence | null;
  /** The earliest divergence of either check (null: the ids are what the text tokenizes to). */
  first: (Divergence & { where: string }) | null;
}

/** Turns: maximal runs of one loss-mask value (the whole response when there is no mask). */
export function turnsOf(
  ids: readonly number[],
  mask?: readonly number[],
): { kind: 'model' | 'appended'; start: number; end: number }[] {
  if (!mask || mask.length !== ids.length) return ids.length ? [{ kind: 'model', start: 0, end: ids.length }] : [];
  const out: { kind: 'model' | 'appended'; start: number; end: number }[] = [];
  for (let i = 0; i < ids.length; ) {
    const m = mask[i] > 0;
    let j = i + 1;
    while (j < ids.length && mask[j] > 0 === m) j++;
    out.push({ kind: m ? 'model' : 'appended', start: i, end: j });
    i = j;
  }
  return out;
}

const CONTEXT = 4;

async function compare(codec: TokenCodec, ids: readonly number[], offset: number): Promise<Divergence | null> {
  const again = await codec.encode(await codec.decode(ids));
  let i = 0;
  while (i < ids.length && i < again.length && ids[i] === again[i]) i++;
  if (i === ids.length && i === again.length) return null;
  const at = Math.min(i, ids.length - 1);
  return {
    index: offset + i,
    stored: ids.slice(i, i + CONTEXT),
    retokenized: again.slice(i, i + CONTEXT),
    text: at >= 0 ? await codec.decode([ids[at]]) : '',
  };
}

/** Audits one record's `tokens` (null when it carries none). */
export async function auditTokens(r: Pick<TrajectoryRecord, 'tokens'>, codec: TokenCodec): Promise<TokenAudit | null> {
  const t = r.tokens;
  if (!t?.ids.length) return null;
  const turns: TurnAudit[] = [];
  for (const [n, turn] of turnsOf(t.ids, t.loss_mask).entries()) {
    turns.push({ turn: n, ...turn, divergence: await compare(codec, t.ids.slice(turn.start, turn.end), turn.start) });
  }
  const whole = await compare(codec, t.ids, 0);
  const candidates = [
    ...turns
      .filter((x) => x.divergence)
      .map((x) => ({
        ...x.divergence!,
        where: `turn ${x.turn + 1} (${x.kind === 'model' ? 'model-written' : 'appended'}, tokens ${x.start}–${x.end - 1}) re-tokenized alone`,
      })),
    ...(whole ? [{ ...whole, where: 'the whole response re-tokenized' }] : []),
  ].sort((a, b) => a.index - b.index);
  return { tokens: t.ids.length, turns, whole, first: candidates[0] ?? null };
}

/** One line for a divergence: where, which token, stored vs re-tokenized ids. */
export function describeDivergence(d: Divergence & { where: string }): string {
  return `token ${d.index} ${JSON.stringify(d.text)}: stored [${d.stored.join(', ')}] ≠ re-tokenized [${d.retokenized.join(', ')}] — ${d.where}`;
}

/** A tokenizer's character offset (code points, as Python's offset_mapping) as a UTF-16 index into `text`. */
export function codePointToUtf16(text: string, cp: number): number {
  let i = 0;
  for (let n = 0; n < cp && i < text.length; n++) i += text.codePointAt(i)! > 0xffff ? 2 : 1;
  return i;
}
