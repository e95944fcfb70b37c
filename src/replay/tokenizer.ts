// A Hugging Face `tokenizer.json` reader for the replay engine: encode (ids + character offsets) and decode
// exactly like the Python `tokenizers` library for the components our exported models use — the embedded
// default's WordLevel model and byte-level BPE (GPT-2 / Qwen2 layouts); Lowercase/NFC normalizers;
// WhitespaceSplit/Whitespace/Punctuation/Digits/Split/ByteLevel pre-tokenizers; added (special) tokens; WordPiece
// and ByteLevel decoders. Anything else fails at load time with a message naming the component, rather than
// producing ids the model never saw.
import { readFileSync } from 'node:fs';

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  normalized: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
  single_word?: boolean;
}

/** A piece of text with the code-unit offset of each of its characters in the original input. */
interface Piece {
  text: string;
  /** Original start offset (UTF-16 units) of every code unit of `text`. */
  origin: number[];
  /** Original end offset of the piece. */
  end: number;
}

export interface Encoding {
  ids: number[];
  /** Start of each token in the input, in Unicode code points (as Python's offset_mapping). */
  offsets: number[];
  /** End of each token, in code points. */
  ends: number[];
}

export class TokenizerError extends Error {}

type Normalize = (p: Piece) => Piece;
type PreTokenize = (pieces: Piece[]) => Piece[];

export class Tokenizer {
  private readonly vocab = new Map<string, number>();
  private readonly idToToken: string[] = [];
  private readonly added: AddedToken[];
  private readonly specialIds = new Set<number>();
  private readonly unkId: number | undefined;
  private readonly normalize: Normalize;
  private readonly preTokenize: PreTokenize;
  private readonly decodeTokens: (tokens: string[]) => { text: string; starts: number[] };
  private readonly model: (word: string) => number[];
  private readonly addedRe: RegExp | null;

  constructor(json: unknown, private readonly source = 'tokenizer.json') {
    const t = json as Record<string, any>;
    const model = t?.model;
    if (!model || (model.type !== 'WordLevel' && model.type !== 'BPE')) {
      throw new TokenizerError(`${source}: model type ${JSON.stringify(model?.type)} is not supported by the replay engine (supported: WordLevel, BPE)`);
    }
    for (const [tok, id] of Object.entries(model.vocab as Record<string, number>)) {
      this.vocab.set(tok, id);
      this.idToToken[id] = tok;
    }
    this.added = ((t.added_tokens ?? []) as AddedToken[]).slice();
    for (const a of this.added) {
      this.vocab.set(a.content, a.id);
      this.idToToken[a.id] = a.content;
      if (a.special) this.specialIds.add(a.id);
      if (a.normalized) throw new TokenizerError(`${source}: normalized added token ${JSON.stringify(a.content)} is not supported`);
    }
    this.unkId = model.unk_token != null ? this.vocab.get(model.unk_token) : undefined;
    // Leftmost-longest match over the added tokens, as the library's Aho-Corasick split does.
    const byLength = this.added.map((a) => a.content).sort((a, b) => b.length - a.length);
    this.addedRe = byLength.length ? new RegExp(byLength.map(escapeRe).join('|'), 'g') : null;
    this.normalize = normalizer(t.normalizer, source);
    this.preTokenize = preTokenizer(t.pre_tokenizer, source);
    this.decodeTokens = decoder(t.decoder, source);
    this.model = model.type === 'BPE' ? bpeModel(model, this.vocab, this.unkId, source) : (word) => {
      const id = this.vocab.get(word) ?? this.unkId;
      if (id === undefined) throw new TokenizerError(`${source}: ${JSON.stringify(word)} is not in the vocabulary and there is no unk token`);
      return [id];
    };
  }

  static fromFile(path: string): Tokenizer {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new TokenizerError(`${path}: ${(e as Error).message}`);
    }
    return new Tokenizer(json, path);
  }

  get vocabSize(): number {
    return this.idToToken.length;
  }

  tokenToId(token: string): number | undefined {
    return this.vocab.get(token);
  }

  idToTokenText(id: number): string | undefined {
    return this.idToToken[id];
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  encode(text: string): Encoding {
    const ids: number[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    const plain = (from: number, to: number) => {
      if (from >= to) return;
      const origin = Array.from({ length: to - from }, (_, i) => from + i);
      const pieces = this.preTokenize([this.normalize({ text: text.slice(from, to), origin, end: to })]);
      for (const p of pieces) {
        if (!p.text) continue;
        // A word may become several tokens (BPE): each starts where its first character came from.
        let at = 0;
        for (const id of this.model(p.text)) {
          const len = this.idToToken[id]?.length ?? 1;
          ids.push(id);
          starts.push(p.origin[Math.min(at, p.origin.length - 1)]);
          at += len;
          ends.push(at < p.origin.length ? p.origin[at] : p.end);
        }
      }
    };
    let last = 0;
    if (this.addedRe) {
      this.addedRe.lastIndex = 0;
      for (let m = this.addedRe.exec(text); m; m = this.addedRe.exec(text)) {
        plain(last, m.index);
        ids.push(this.vocab.get(m[0])!);
        starts.push(m.index);
        ends.push(m.index + m[0].length);
        last = m.index + m[0].length;
      }
    }
    plain(last, text.length);
    const cp = codePointIndex(text);
    return { ids, offsets: starts.map(cp), ends: ends.map(cp) };
  }

  decode(ids: readonly number[], skipSpecial = false): string {
    return this.decodeWithOffsets(ids, skipSpecial).text;
  }

  /**
   * Decoded text plus where each token's own text starts in it (code points; the separator a decoder puts before
   * a token is not part of it). Skipped special tokens get the offset of the text that follows them.
   */
  decodeWithOffsets(ids: readonly number[], skipSpecial = false): { text: string; offsets: number[] } {
    const tokens: string[] = [];
    const kept: boolean[] = [];
    for (const id of ids) {
      const tok = this.idToToken[id];
      if (tok === undefined) throw new TokenizerError(`${this.source}: token id ${id} is outside the vocabulary (${this.idToToken.length})`);
      const keep = !(skipSpecial && this.specialIds.has(id));
      kept.push(keep);
      if (keep) tokens.push(tok);
    }
    const { text, starts } = this.decodeTokens(tokens);
    const cp = codePointIndex(text);
    const offsets: number[] = [];
    let k = 0;
    for (const keep of kept) offsets.push(cp(keep ? starts[k++] : text.length) ?? text.length);
    return { text, offsets };
  }
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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

function mapChars(p: Piece, f: (ch: string) => string): Piece {
  let text = '';
  const origin: number[] = [];
  let i = 0;
  for (const ch of p.text) {
    const out = f(ch);
    text += out;
    for (let k = 0; k < out.length; k++) origin.push(p.origin[i]);
    i += ch.length;
  }
  return { text, origin, end: p.end };
}

/**
 * NFC with alignment: the text is cut before every character that is not a combining mark, each run (a base and
 * its marks) is composed on its own, and its output characters keep the run's first origin.
 */
function composeNfc(p: Piece): Piece {
  let text = '';
  const origin: number[] = [];
  const runs = p.text.match(/\P{M}\p{M}*|\p{M}+/gu) ?? [];
  let i = 0;
  for (const run of runs) {
    const out = run.normalize('NFC');
    text += out;
    for (let k = 0; k < out.length; k++) origin.push(p.origin[i]);
    i += run.length;
  }
  return { text, origin, end: p.end };
}

function normalizer(spec: any, source: string): Normalize {
  if (spec == null) return (p) => p;
  switch (spec.type) {
    case 'Lowercase':
      return (p) => mapChars(p, (ch) => ch.toLowerCase());
    case 'NFC':
      return (p) => (p.text === p.text.normalize('NFC') ? p : composeNfc(p));
    case 'Sequence': {
      const parts = (spec.normalizers as any[]).map((n) => normalizer(n, source));
      return (p) => parts.reduce((acc, f) => f(acc), p);
    }
    default:
      throw new TokenizerError(`${source}: normalizer ${JSON.stringify(spec.type)} is not supported by the replay engine`);
  }
}

/** Split a piece wherever `classify` changes; 'drop' characters vanish, 'isolate' ones become their own piece. */
function splitBy(p: Piece, classify: (ch: string, prev: string | null) => 'keep' | 'drop' | 'isolate' | 'break'): Piece[] {
  const out: Piece[] = [];
  let cur: Piece | null = null;
  const flush = () => {
    if (cur && cur.text) out.push(cur);
    cur = null;
  };
  let i = 0;
  let prev: string | null = null;
  for (const ch of p.text) {
    const kind = classify(ch, prev);
    const origin = p.origin.slice(i, i + ch.length);
    const end = i + ch.length < p.origin.length ? p.origin[i + ch.length] : p.end;
    if (kind === 'drop') flush();
    else if (kind === 'isolate') {
      flush();
      out.push({ text: ch, origin, end });
    } else {
      if (kind === 'break') flush();
      if (!cur) cur = { text: '', origin: [], end };
      cur.text += ch;
      cur.origin.push(...origin);
      cur.end = end;
    }
    prev = ch;
    i += ch.length;
  }
  flush();
  return out;
}

const WHITESPACE = /^\p{White_Space}$/u;
// The library's `is_punc`: ASCII punctuation (which includes symbols such as + < = > ^ ` | ~) or Unicode P*.
const PUNCT = /^(?:[!-/:-@[-`{-~]|\p{P})$/u;
const NUMERIC = /^\p{N}$/u;
const WORD = /^[\p{L}\p{N}\p{Mn}\p{Mc}\p{Me}\p{Pc}_]$/u;

function preTokenizer(spec: any, source: string): PreTokenize {
  if (spec == null) return (ps) => ps;
  switch (spec.type) {
    case 'WhitespaceSplit':
      return (ps) => ps.flatMap((p) => splitBy(p, (ch) => (WHITESPACE.test(ch) ? 'drop' : 'keep')));
    case 'Whitespace':
      // \w+|[^\w\s]+
      return (ps) =>
        ps.flatMap((p) =>
          splitBy(p, (ch, prev) => {
            if (WHITESPACE.test(ch)) return 'drop';
            if (prev === null || WHITESPACE.test(prev)) return 'keep';
            return WORD.test(ch) === WORD.test(prev) ? 'keep' : 'break';
          }),
        );
    case 'Punctuation': {
      if ((spec.behavior ?? 'Isolated') !== 'Isolated') throw new TokenizerError(`${source}: Punctuation behavior ${spec.behavior} is not supported`);
      return (ps) => ps.flatMap((p) => splitBy(p, (ch) => (PUNCT.test(ch) ? 'isolate' : 'keep')));
    }
    case 'Digits':
      return (ps) =>
        ps.flatMap((p) =>
          splitBy(p, (ch, prev) => {
            const num = NUMERIC.test(ch);
            if (spec.individual_digits) return num ? 'isolate' : 'keep';
            return prev !== null && num !== NUMERIC.test(prev) ? 'break' : 'keep';
          }),
        );
    case 'ByteLevel': {
      const re = spec.use_regex === false ? null : new RegExp(GPT2_SPLIT, 'gu');
      return (ps) =>
        ps.flatMap((p) => {
          // add_prefix_space: a space before a piece that does not start with one (it belongs to the first character).
          const q = spec.add_prefix_space && !p.text.startsWith(' ') && p.text ? { text: ' ' + p.text, origin: [p.origin[0], ...p.origin], end: p.end } : p;
          return (re ? splitRegex(q, re, 'Isolated') : [q]).map(byteLevelMap);
        });
    }
    case 'Split': {
      const pattern = spec.pattern?.Regex !== undefined ? rustRegex(spec.pattern.Regex, source) : new RegExp(escapeRe(String(spec.pattern?.String ?? '')), 'gu');
      if (!['Isolated', 'Removed'].includes(spec.behavior) || spec.invert) throw new TokenizerError(`${source}: Split behavior ${spec.behavior}${spec.invert ? ' (inverted)' : ''} is not supported`);
      return (ps) => ps.flatMap((p) => splitRegex(p, pattern, spec.behavior));
    }
    case 'Sequence': {
      const parts = (spec.pretokenizers as any[]).map((n) => preTokenizer(n, source));
      return (ps) => parts.reduce((acc, f) => f(acc), ps);
    }
    default:
      throw new TokenizerError(`${source}: pre-tokenizer ${JSON.stringify(spec.type)} is not supported by the replay engine`);
  }
}

/** Decoded text and the UTF-16 offset where each token's own text starts (separators excluded). */
// GPT-2's pre-tokenizer regex (the ByteLevel pre-tokenizer's default), with Unicode white space as Rust's \s.
const GPT2_SPLIT = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\p{White_Space}\\p{L}\\p{N}]+|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";

/** A Rust-regex pattern from tokenizer.json as a JS regex: `(?i:…)` groups spelled out, `\s`/`\S` as White_Space. */
function rustRegex(src: string, source: string): RegExp {
  let out = src.replace(/\(\?i:((?:[^()\\]|\\.)*)\)/g, (_m, body: string) => `(?:${body.replace(/\\.|[A-Za-z]/g, (c) => (c.length === 1 ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c))})`);
  out = out.replace(/\\s/g, '\\p{White_Space}').replace(/\\S/g, '\\P{White_Space}');
  try {
    return new RegExp(out, 'gu');
  } catch (e) {
    throw new TokenizerError(`${source}: split pattern ${JSON.stringify(src)} cannot be used here: ${(e as Error).message}`);
  }
}

/** The library's regex split: matches (and the text between them) become pieces; 'Removed' drops the matches. */
function splitRegex(p: Piece, re: RegExp, behavior: 'Isolated' | 'Removed'): Piece[] {
  const out: Piece[] = [];
  const sub = (a: number, b: number) => {
    if (b > a) out.push({ text: p.text.slice(a, b), origin: p.origin.slice(a, b), end: b < p.origin.length ? p.origin[b] : p.end });
  };
  let last = 0;
  re.lastIndex = 0;
  for (let m = re.exec(p.text); m; m = re.exec(p.text)) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    sub(last, m.index);
    if (behavior === 'Isolated') sub(m.index, m.index + m[0].length);
    last = m.index + m[0].length;
  }
  sub(last, p.text.length);
  return out;
}

function decoder(spec: any, source: string): (tokens: string[]) => { text: string; starts: number[] } {
  if (spec == null) return (tokens) => joinPieces(tokens.map((text) => ({ text, lead: 0 })));
  if (spec.type === 'WordPiece') {
    const prefix: string = spec.prefix ?? '##';
    if (spec.cleanup) throw new TokenizerError(`${source}: WordPiece decoder with cleanup is not supported`);
    return (tokens) =>
      joinPieces(tokens.map((t, i) =>
        i === 0 ? { text: t, lead: 0 } : t.startsWith(prefix) ? { text: t.slice(prefix.length), lead: 0 } : { text: ' ' + t, lead: 1 },
      ));
  }
  if (spec.type === 'ByteLevel') return byteLevelDecode;
  throw new TokenizerError(`${source}: decoder ${JSON.stringify(spec.type)} is not supported by the replay engine`);
}

function joinPieces(pieces: { text: string; lead: number }[]): { text: string; starts: number[] } {
  let text = '';
  const starts: number[] = [];
  for (const p of pieces) {
    starts.push(text.length + p.lead);
    text += p.text;
  }
  return { text, starts };
}

// ---- byte-level BPE (GPT-2's byte ↔ printable-character table) ----

const BYTE_TO_CHAR: string[] = (() => {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCharCode(keep.includes(b) ? b : 256 + n++);
  return out;
})();
const CHAR_TO_BYTE = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]));
const UTF8 = new TextEncoder();

/** A piece → its UTF-8 bytes as table characters; every character keeps the origin of the one it encodes. */
function byteLevelMap(p: Piece): Piece {
  let text = '';
  const origin: number[] = [];
  let i = 0;
  for (const ch of p.text) {
    for (const b of UTF8.encode(ch)) {
      text += BYTE_TO_CHAR[b];
      origin.push(p.origin[i]);
    }
    i += ch.length;
  }
  return { text, origin, end: p.end };
}

/** The library's ByteLevel decoder: table characters back to bytes (a token with other characters: its UTF-8), lossy UTF-8. */
function byteLevelDecode(tokens: string[]): { text: string; starts: number[] } {
  const bytes: number[] = [];
  const byteStarts: number[] = [];
  for (const t of tokens) {
    byteStarts.push(bytes.length);
    const mapped = Array.from(t, (c) => CHAR_TO_BYTE.get(c));
    if (mapped.every((b) => b !== undefined)) bytes.push(...(mapped as number[]));
    else bytes.push(...UTF8.encode(t));
  }
  const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(Uint8Array.from(bytes));
  // Byte offset → UTF-16 offset, walking the decoded characters (a replacement character stands for one bad byte).
  const at: number[] = new Array(bytes.length + 1).fill(text.length);
  let b = 0;
  let u = 0;
  for (const ch of text) {
    const n = ch === '\uFFFD' ? 1 : UTF8.encode(ch).length;
    for (let k = 0; k < n && b + k <= bytes.length; k++) at[b + k] = u;
    b += n;
    u += ch.length;
  }
  return { text, starts: byteStarts.map((x) => at[Math.min(x, bytes.length)]) };
}

function missingByte(b: number): never {
  throw new TokenizerError(`byte-fallback token <0x${b.toString(16).toUpperCase().padStart(2, '0')}> is not in the vocabulary`);
}

function bpeModel(model: any, vocab: Map<string, number>, unkId: number | undefined, source: string): (word: string) => number[] {
  if (model.dropout) throw new TokenizerError(`${source}: BPE dropout is not supported`);
  if (model.continuing_subword_prefix || model.end_of_word_suffix) throw new TokenizerError(`${source}: BPE subword prefixes/suffixes are not supported`);
  if (!Array.isArray(model.merges)) throw new TokenizerError(`${source}: BPE model without merges`);
  const ranks = new Map<string, number>();
  (model.merges as (string | [string, string])[]).forEach((m, r) => {
    const [a, b] = typeof m === 'string' ? (m.split(' ') as [string, string]) : m;
    ranks.set(`${a}\u0000${b}`, r);
  });
  const cache = new Map<string, number[]>();
  const byteFallback = !!model.byte_fallback;
  return (word) => {
    const hit = cache.get(word);
    if (hit) return hit;
    let ids: number[];
    if (model.ignore_merges && vocab.has(word)) ids = [vocab.get(word)!];
    else {
      const sym = Array.from(word);
      // Merge the best-ranked adjacent pair (leftmost on ties) until none is left: the library's order.
      for (;;) {
        let best = Infinity;
        let at = -1;
        for (let i = 0; i + 1 < sym.length; i++) {
          const r = ranks.get(`${sym[i]}\u0000${sym[i + 1]}`);
          if (r !== undefined && r < best) {
            best = r;
            at = i;
          }
        }
        if (at < 0) break;
        sym.splice(at, 2, sym[at] + sym[at + 1]);
      }
      ids = [];
      for (const s of sym) {
        const id = vocab.get(s);
        if (id !== undefined) ids.push(id);
        else if (byteFallback) for (const b of UTF8.encode(s)) ids.push(vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`) ?? unkId ?? missingByte(b));
        else if (unkId !== undefined) ids.push(unkId);
        else throw new TokenizerError(`${source}: ${JSON.stringify(s)} is not in the vocabulary and there is no unk token`);
      }
    }
    if (cache.size < 50_000) cache.set(word, ids);
    return ids;
  };
}
