// The replay engine's tokenizer: a checkpoint's `tokenizer.json` through Hugging Face `tokenizers` (the official
// Node bindings of the Rust library the trainer's transformers uses), so replay encodes and decodes exactly as
// training did for every model a fast tokenizer loads (WordLevel, BPE, byte-level BPE, Unigram/SentencePiece,
// WordPiece). This adapter only fixes the conventions the engine relies on: no added special tokens when encoding
// (the prompt template has them), offsets in code points (Python's offset_mapping), per-token offsets of decoded text.
// The library is a native addon: loaded on first use (external to the bundles; scripts/build.mjs, .vscodeignore).
import type * as Lib from 'tokenizers';

export interface Encoding {
  ids: number[];
  /** Start of each token in the input, in Unicode code points (as Python's offset_mapping). */
  offsets: number[];
}

export class TokenizerError extends Error {}

export class Tokenizer {
  private constructor(
    private readonly tok: Lib.Tokenizer,
    private readonly source: string,
  ) {}

  static fromFile(path: string): Tokenizer {
    let lib: typeof Lib;
    try {
      lib = require('tokenizers') as typeof Lib;
    } catch (e) {
      throw new TokenizerError(
        `the tokenizers library could not be loaded (${(e as Error).message}); replay needs it installed beside the extension`,
      );
    }
    try {
      return new Tokenizer(lib.Tokenizer.fromFile(path), path);
    } catch (e) {
      throw new TokenizerError(`${path}: ${(e as Error).message}`);
    }
  }

  get vocabSize(): number {
    return this.tok.getVocabSize(true);
  }

  tokenToId(token: string): number | undefined {
    return this.tok.tokenToId(token) ?? undefined;
  }

  idToTokenText(id: number): string | undefined {
    return this.tok.idToToken(id) ?? undefined;
  }

  async encode(text: string): Promise<Encoding> {
    const e = await this.tok.encode(text, null, { addSpecialTokens: false });
    return { ids: e.getIds(), offsets: e.getOffsets().map(([start]) => start) };
  }

  async decode(ids: readonly number[], skipSpecial = false): Promise<string> {
    this.checkIds(ids);
    return this.tok.decode([...ids], skipSpecial);
  }

  /**
   * Decoded text plus where each token's own text starts in it (code points; a separator a decoder puts before a
   * token is not part of it). A token that ends inside a character (byte-level BPE) gets that character's start.
   * Read off the decodes of every prefix (one native batch call), so each decoder's rules apply unchanged.
   */
  async decodeWithOffsets(ids: readonly number[], skipSpecial = false): Promise<{ text: string; offsets: number[] }> {
    this.checkIds(ids);
    const [text, ...prefixes] = await this.tok.decodeBatch(
      [[...ids], ...ids.map((_, i) => ids.slice(0, i + 1))],
      skipSpecial,
    );
    const singles = await this.tok.decodeBatch(
      ids.map((id) => [id]),
      skipSpecial,
    );
    const offsets: number[] = [];
    let end = 0; // end of the text decoded so far, at a character boundary
    for (const [i, prefix] of prefixes.entries()) {
      let start = end;
      if (text.startsWith(prefix)) {
        const own = singles[i];
        const at = prefix.length - own.length;
        if (own && at >= end && text.startsWith(own, at)) start = at;
        end = prefix.length;
      }
      offsets.push(start);
    }
    const cp = codePointIndex(text);
    return { text, offsets: offsets.map(cp) };
  }

  private checkIds(ids: readonly number[]): void {
    const n = this.vocabSize;
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= n)
        throw new TokenizerError(`${this.source}: token id ${id} is outside the vocabulary (${n})`);
    }
  }
}

/** Maps a UTF-16 offset to a code-point offset (identity for text without astral characters). */
function codePointIndex(text: string): (i: number) => number {
  if (!/[\uD800-\uDBFF]/.test(text)) return (i) => i;
  const map: number[] = [];
  let cp = 0;
  for (let i = 0; i <= text.length; i++) {
    map[i] = cp;
    const c = text.charCodeAt(i);
    if (!(c >= 0xd800 && c <= 0xdbff)) cp++;
  }
  return (i) => map[i];
}
