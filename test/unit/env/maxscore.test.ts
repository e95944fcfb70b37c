// The compressed postings codec and the pruned search: block-max MaxScore must return exactly what
// exhaustive scoring returns (same passages, same order, bit-identical scores) on random corpora and
// queries, including exact ties (duplicate passages), which go to the lower passage number.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Retriever } from '../../../src/env/retriever';
import { Grow } from '../../../src/env/grow';
import { bitsFor, packBits, unpackDocs, unpackOne } from '../../../src/env/postings';
import { makeRandom } from '../../../src/env/random';
import { tempDir, referenceScorer } from './helpers';

test('codec: bit-packed gaps and tfs round-trip at every width 0..31 and block size 1..128', () => {
  const rnd = makeRandom(5);
  for (let bits = 0; bits <= 31; bits++) {
    for (const n of [1, 2, 31, 32, 33, 64, 127, 128]) {
      const vals = new Uint32Array(n);
      const max = bits === 0 ? 0 : 2 ** bits - 1;
      for (let i = 0; i < n; i++) vals[i] = i === 0 ? max : Math.floor(rnd() * (max + 1));
      assert.equal(bitsFor(Math.max(...vals)), bits);
      const out = new Grow(Uint32Array, 4);
      out.push(0xdeadbeef); // the run starts mid-array
      packBits(vals, n, bits, out);
      assert.equal(out.length, 1 + Math.ceil((n * bits) / 32));
      if (n % 2) out.push(0xffffffff); // a following word (as in the index) for odd sizes: decoders must not read it in
      const words = out.trimmed();
      for (let i = 0; i < n; i++) assert.equal(unpackOne(words, 1, bits, i), vals[i] + 1);
      // As gaps: passage numbers are running sums of (gap + 1) from prev.
      if (bits <= 20) {
        const docs = new Int32Array(n + 3);
        unpackDocs(words, 1, bits, n, 10, docs, 3);
        let prev = 10;
        for (let i = 0; i < n; i++) assert.equal(docs[3 + i], (prev += vals[i] + 1));
      }
    }
  }
});

/** Random corpus with a Zipf-like vocabulary, duplicated passages (exact ties) and a few very long ones. */
function writeRandomCorpus(
  dir: string,
  n: number,
  vocab: number,
  seed: number,
): { file: string; docs: string[]; word: () => string } {
  const rnd = makeRandom(seed);
  const word = () => `t${Math.floor(vocab * rnd() ** 2.5)}`;
  const docs: string[] = [];
  for (let i = 0; i < n; i++) {
    if (i > 0 && rnd() < 0.2) {
      docs.push(docs[Math.floor(rnd() * i)]); // an exact duplicate of an earlier passage: same score for every query
      continue;
    }
    const len = rnd() < 0.01 ? 300 + Math.floor(rnd() * 700) : 3 + Math.floor(rnd() * 30);
    docs.push(`"T"\n${Array.from({ length: len }, word).join(' ')}`);
  }
  const file = join(dir, `random-${seed}.jsonl`);
  writeFileSync(file, docs.map((c, i) => JSON.stringify({ id: `p${i}`, contents: c })).join('\n') + '\n');
  return { file, docs, word };
}

for (const [n, vocab, seed] of [
  [12_000, 3000, 1], // common terms span many blocks and windows wider than the 4096-passage score array
  [700, 25, 2], // tiny vocabulary: massive ties
  [5000, 600, 3],
] as const) {
  test(`pruned search equals exhaustive scoring exactly (${n} passages, vocabulary ${vocab})`, async (t) => {
    const dir = tempDir(t);
    const { file, docs, word } = writeRandomCorpus(dir, n, vocab, seed);
    const r = await Retriever.open(file, { indexDir: join(dir, 'idx') });
    t.after(() => r.close());
    const oracle = referenceScorer(docs);
    const rnd = makeRandom(100 + seed);
    let ties = 0;
    for (let q = 0; q < 120; q++) {
      const terms = Array.from({ length: 1 + Math.floor(rnd() * 8) }, word);
      if (q % 7 === 0) terms.push(terms[0]); // a repeated query term counts twice
      if (q % 11 === 0) terms.push('absentword');
      const query = terms.join(' ');
      for (const k of [1, 3, 10, 50]) {
        const got = r.index.search(query, k);
        const want = r.index.searchExhaustive(query, k);
        assert.deepEqual(got, want, `${query} k=${k}`);
        for (let i = 1; i < got.length; i++) {
          assert.ok(
            got[i - 1].score > got[i].score || (got[i - 1].score === got[i].score && got[i - 1].doc < got[i].doc),
            'order: score desc, then passage asc',
          );
          if (got[i - 1].score === got[i].score) ties++;
        }
      }
      // Exhaustive scoring itself is textbook BM25 (up to float32 length norms and 2^-24 rounding per term).
      const want = oracle(query);
      for (const h of r.index.searchExhaustive(query, 5)) {
        assert.ok(Math.abs(h.score - want[h.doc]) < 1e-6, `${query}: passage ${h.doc} ${h.score} vs ${want[h.doc]}`);
      }
    }
    assert.ok(ties > 0, 'the corpus must produce exact ties');
  });
}
