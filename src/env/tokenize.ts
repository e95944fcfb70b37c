// BM25 tokenisation, shared by index building and querying (they must agree, so it is versioned:
// an index built with another TOKENIZER_VERSION is rebuilt).
//
// 1. Lower-case.
// 2. Text with any non-ASCII character is NFKD-normalised and combining marks are dropped
//    ("Beyoncé" → "beyonce", "ﬁ" → "fi"); pure-ASCII text skips this (it is the common, fast path).
// 3. Tokens are maximal runs of Unicode letters and digits (\p{L}, \p{N}); everything else separates.
// 4. Lucene's English stop set (the 33 words Pyserini's default analyzer also drops) is removed,
//    and tokens longer than MAX_TOKEN_LENGTH characters are dropped (base64 blobs, URLs run together).
// No stemming (Pyserini's default adds Porter stemming; we keep surface forms: simpler, and exact
// entity names matter most for QA retrieval).

export const TOKENIZER_VERSION = 1;
export const MAX_TOKEN_LENGTH = 64;

export const STOPWORDS: ReadonlySet<string> = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

const NON_ASCII = /[^\x00-\x7f]/;
const MARKS = /\p{M}+/gu;
const WORD = /[\p{L}\p{N}]+/gu;

/** Normalise text the way both the index and queries see it (steps 1–2). */
export function normalize(text: string): string {
  let s = text.toLowerCase();
  if (NON_ASCII.test(s)) s = s.normalize('NFKD').replace(MARKS, '');
  return s;
}

/** Call `emit` for every token of `text`, in order (no array allocation on the hot path). */
export function forEachToken(text: string, emit: (token: string) => void): void {
  const s = normalize(text);
  WORD.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = WORD.exec(s)) !== null) {
    const t = m[0];
    if (t.length > MAX_TOKEN_LENGTH || STOPWORDS.has(t)) continue;
    emit(t);
  }
}

export function tokenize(text: string): string[] {
  const out: string[] = [];
  forEachToken(text, (t) => out.push(t));
  return out;
}
