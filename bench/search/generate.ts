// A synthetic FlashRAG corpus for the search benchmark: passages of ~100 words drawn from a Zipfian
// vocabulary of 200k made-up words (Wikipedia-like: a few words in most passages, a long tail of rare
// ones), each with a two-word title. Passage i is a pure function of (seed, i), so queries can be made
// from any passage without reading the file back.
import { openSync, writeSync, closeSync, renameSync } from 'node:fs';
import { makeRandom } from '../../src/env/random';

const VOCAB = 200_000;
const WORDS_PER_PASSAGE = 100;
const SYLLABLES = 'ka ri to mu se na lo pe vi da ro gu fe zi ha mo ne bu li sa te ko ya wu ti ma de po'.split(' ');

/** Word r: syllables spelling r in base 30, plus a tail letter so every rank gives a distinct word. */
function word(r: number): string {
  let s = '';
  let x = r + 30;
  while (x > 0) {
    s += SYLLABLES[x % SYLLABLES.length];
    x = Math.floor(x / SYLLABLES.length);
  }
  return s + 'nqxz'[r % 4];
}

export class SyntheticCorpus {
  private readonly words: string[];
  private readonly cdf: Float64Array;

  constructor(readonly seed = 1) {
    this.words = Array.from({ length: VOCAB }, (_, r) => word(r));
    // Zipf–Mandelbrot weights 1/(r + 2.7): frequent words are in most passages, rare ones in few.
    this.cdf = new Float64Array(VOCAB);
    let sum = 0;
    for (let r = 0; r < VOCAB; r++) this.cdf[r] = sum += 1 / (r + 2.7);
    for (let r = 0; r < VOCAB; r++) this.cdf[r] /= sum;
  }

  private draw(u: number): string {
    let lo = 0;
    let hi = VOCAB - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return this.words[lo];
  }

  /** Title words come from the rarer half of the vocabulary, as entity names do. */
  passage(i: number): { id: string; title: string; words: string[] } {
    const rnd = makeRandom(this.seed * 1_000_003 + i);
    const t1 = this.words[VOCAB / 2 + Math.floor(rnd() * (VOCAB / 2))];
    const t2 = this.words[1000 + Math.floor(rnd() * (VOCAB - 1000))];
    const title = `${cap(t1)} ${cap(t2)}`;
    const n = WORDS_PER_PASSAGE - 20 + Math.floor(rnd() * 40);
    const words = [t1, t2];
    for (let k = 0; k < n; k++) words.push(this.draw(rnd()));
    return { id: String(i), title, words };
  }

  line(i: number): string {
    const p = this.passage(i);
    return JSON.stringify({ id: p.id, contents: `"${p.title}"\n${p.words.join(' ')}.` });
  }

  /** A query aimed at passage `target`: its title and three words of its text. */
  query(target: number, salt = 0): string {
    const p = this.passage(target);
    const rnd = makeRandom(this.seed * 7919 + target * 31 + salt);
    const pick = () => p.words[2 + Math.floor(rnd() * (p.words.length - 2))];
    return [p.title, pick(), pick(), pick()].join(' ');
  }

  /**
   * Five words drawn from the text of passage `target` (not its title): with the Zipfian vocabulary these
   * are mostly common words, the case where early termination cannot lean on a rare term.
   */
  commonQuery(target: number, salt = 0): string {
    const p = this.passage(target);
    const rnd = makeRandom(this.seed * 104_729 + target * 17 + salt);
    return Array.from({ length: 5 }, () => p.words[2 + Math.floor(rnd() * (p.words.length - 2))]).join(' ');
  }

  /** Write passages 0..n-1 (temp file + rename, so an interrupted run leaves no half corpus). */
  write(file: string, n: number, onProgress?: (done: number) => void): void {
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = openSync(tmp, 'w');
    let buf: string[] = [];
    let size = 0;
    for (let i = 0; i < n; i++) {
      const l = this.line(i);
      buf.push(l);
      size += l.length;
      if (size > 4 << 20) {
        writeSync(fd, buf.join('\n') + '\n');
        buf = [];
        size = 0;
        onProgress?.(i + 1);
      }
    }
    if (buf.length) writeSync(fd, buf.join('\n') + '\n');
    closeSync(fd);
    renameSync(tmp, file);
  }
}

function cap(w: string): string {
  return w[0].toUpperCase() + w.slice(1);
}
