// A dialect's tags as the checkpoint's tokenizer sees them, for the replay loop: the twin of the trainer's AgentIO
// (src/trainer/coa_trainer/rollout/agentio.py), so replay stops, reads queries and appends observations as training did.
// - special: every tag the loop needs is one token (the embedded default, `model.tags_as_special_tokens`): turns
//   stop on the closing tags' ids, queries are the ids between the tag ids.
// - text: tags are ordinary text (a pretrained model's own vocabulary): a turn stops once the closing tag's string
//   has been generated, however byte-level BPE split it or merged it with what follows (`>` + `\n\n`).
// Either way generated ids are kept as generated and an observation is tokenised once and appended.
import type { ModelInfo } from './model';
import type { Tokenizer } from './tokenizer';

export interface Stops {
  ids: Set<number>;
  strings: StringStops | null;
}

export class TagIO {
  private constructor(
    readonly tok: Tokenizer,
    readonly tags: ModelInfo['tags'],
    private readonly single: Map<string, number>,
    readonly eos: number | undefined,
  ) {}

  /** Special mode exactly when every tag the loop needs encodes to one token. */
  static async make(tok: Tokenizer, info: ModelInfo): Promise<TagIO> {
    const t = info.tags;
    const single = new Map<string, number>();
    for (const s of [t.action_open, t.action_close, t.obs_open, t.obs_close, t.answer_close]) {
      if (!s) continue;
      const ids = (await tok.encode(s)).ids;
      if (ids.length === 1 && ids[0] === tok.tokenToId(s)) single.set(s, ids[0]); // not <unk>, not a merge
    }
    const needed = [
      t.action_open,
      t.action_close,
      t.obs_open,
      t.obs_close,
      ...(t.answer_close ? [t.answer_close] : []),
    ];
    return new TagIO(tok, t, needed.every((s) => single.has(s)) ? single : new Map(), info.eos_id ?? undefined);
  }

  get special(): boolean {
    return this.single.size > 0;
  }

  private id(s: string): number {
    return this.single.get(s)!;
  }

  /** Stops of a policy turn: the action's close, the answer's close, EOS. */
  turnStops(): Stops {
    const closes = [this.tags.action_close, ...(this.tags.answer_close ? [this.tags.answer_close] : [])];
    const ids = new Set<number>(this.eos !== undefined ? [this.eos] : []);
    if (this.special) return { ids: new Set([...ids, ...closes.map((c) => this.id(c))]), strings: null };
    return { ids, strings: new StringStops(this.tok, closes) };
  }

  /** Stops of a simulated observation: its close (EOS too: the loop replaces it with the close). */
  obsStops(): Stops {
    const ids = new Set<number>(this.eos !== undefined ? [this.eos] : []);
    if (this.special) return { ids: new Set([...ids, this.id(this.tags.obs_close)]), strings: null };
    return { ids, strings: new StringStops(this.tok, [this.tags.obs_close]) };
  }

  /** Whether a turn that stopped ended on the action's closing tag (not the answer's, not EOS). */
  async endedWithAction(turn: readonly number[]): Promise<boolean> {
    const last = turn[turn.length - 1];
    if (last === undefined || last === this.eos) return false;
    if (this.special) return last === this.id(this.tags.action_close);
    const text = await this.tok.decode(turn);
    const a = text.lastIndexOf(this.tags.action_close);
    return a >= 0 && a >= (this.tags.answer_close ? text.lastIndexOf(this.tags.answer_close) : -1);
  }

  /**
   * The body of the action that ends `turn` (the query, or a JSON call for the Hermes dialect). `response`: every
   * id generated so far, `turn` its last turn. As the trainer's AgentIO.query: with tag tokens the body runs from
   * the last action-opening id of the whole response to the closing id — for a turn that closed an action it never
   * opened, that reaches back into earlier turns (the query training sent; the format rules flag such a turn) —
   * and with text tags only the turn's own text is read.
   */
  async actionBody(turn: readonly number[], response: readonly number[] = turn): Promise<string> {
    if (this.special) {
      const start = response.lastIndexOf(this.id(this.tags.action_open));
      return start >= 0 && start < response.length - 1 ? this.tok.decode(response.slice(start + 1, -1)) : '';
    }
    const text = await this.tok.decode(turn);
    const end = text.lastIndexOf(this.tags.action_close);
    const start = end < 0 ? -1 : text.lastIndexOf(this.tags.action_open, end);
    return start >= 0 ? text.slice(start + this.tags.action_open.length, end) : '';
  }

  /** `<obs>body</obs>` as ids, tokenised once; the body cut to `maxTokens` tokens. */
  async observationIds(body: string, maxTokens: number): Promise<{ ids: number[]; cut: boolean }> {
    const bodyIds = (await this.tok.encode(body)).ids;
    const cut = bodyIds.length > maxTokens;
    if (this.special)
      return { ids: [this.id(this.tags.obs_open), ...bodyIds.slice(0, maxTokens), this.id(this.tags.obs_close)], cut };
    const kept = cut ? await this.tok.decode(bodyIds.slice(0, maxTokens)) : body;
    return { ids: (await this.tok.encode(`${this.tags.obs_open}${kept}${this.tags.obs_close}`)).ids, cut };
  }

  async obsOpenIds(): Promise<number[]> {
    return this.special ? [this.id(this.tags.obs_open)] : (await this.tok.encode(this.tags.obs_open)).ids;
  }

  async obsCloseIds(): Promise<number[]> {
    return this.special ? [this.id(this.tags.obs_close)] : (await this.tok.encode(this.tags.obs_close)).ids;
  }
}

/**
 * Stop once a string has been generated, however the tokenizer split it (the trainer's generate.StringStops): only
 * tokens whose text holds a stop string's last character trigger a decode of a short tail window.
 */
export class StringStops {
  private readonly lastChars: Set<string>;
  /** Up to 4 byte-level tokens may make one character together. */
  private readonly window: number;
  private readonly candidate = new Map<number, boolean>();

  constructor(
    private readonly tok: Tokenizer,
    readonly strings: string[],
  ) {
    this.lastChars = new Set(strings.map((s) => s[s.length - 1]));
    this.window = 4 * Math.max(1, ...strings.map((s) => s.length)) + 4;
  }

  /** Whether a stop string ends inside the last token of `ids` (it was not complete before it). */
  async hit(ids: readonly number[]): Promise<boolean> {
    const last = ids[ids.length - 1];
    if (last === undefined) return false;
    let c = this.candidate.get(last);
    if (c === undefined) {
      const piece = await this.tok.decode([last]);
      c = [...this.lastChars].some((ch) => piece.includes(ch));
      this.candidate.set(last, c);
    }
    if (!c) return false;
    const tail = ids.slice(-this.window);
    const [full, prev] = await Promise.all([this.tok.decode(tail), this.tok.decode(tail.slice(0, -1))]);
    return this.strings.some((s) => full.indexOf(s, Math.max(0, prev.length - s.length + 1)) >= 0);
  }
}
