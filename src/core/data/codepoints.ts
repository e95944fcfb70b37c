// JavaScript strings index UTF-16 units; Python (the trainer) indexes code points. Offsets handed to the trainer
// are converted here so `response[start:end]` in Python is the same text as `response.slice(start, end)` here.
const SURROGATE = /[\uD800-\uDFFF]/;

/** A function from UTF-16 offsets of `text` to code-point offsets (identity when the text has no astral chars). */
export function codePointIndexer(text: string): (utf16: number) => number {
  if (!SURROGATE.test(text)) return (i) => i;
  // before[i] = code points in text[0, i). A low surrogate after a high one does not start a code point.
  const before = new Uint32Array(text.length + 1);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    before[i] = n;
    const c = text.charCodeAt(i);
    const pairedLow = c >= 0xdc00 && c <= 0xdfff && i > 0 && isHigh(text.charCodeAt(i - 1));
    if (!pairedLow) n++;
  }
  before[text.length] = n;
  return (i) => before[i];
}

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
