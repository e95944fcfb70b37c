// Shared by the env tests: temp dirs, a generated corpus with known answers, and a reference BM25.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeRandom } from '../../../src/env/random';
import { tokenize } from '../../../src/env/tokenize';
import type { EnvServer } from '../../../src/env/server';

export const EXAMPLE_CORPUS = join(__dirname, '../../../examples/data/search-r1/corpus_example.jsonl');

export function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'coa-env-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface KnownCorpus {
  file: string;
  /** For passage i: a word that occurs only there, and its id. */
  facts: { id: string; word: string; title: string }[];
}

const FILLER = 'river mountain city king queen battle music album film river city church school station island'.split(
  ' ',
);

/**
 * `n` passages `{"id": "p<i>", "contents": "\"Entity <i>\"\n…"}`, each with filler words and one unique
 * made-up word, so a query for that word has exactly one right answer.
 */
export function writeKnownCorpus(dir: string, n: number, seed = 7): KnownCorpus {
  const rnd = makeRandom(seed);
  const facts: KnownCorpus['facts'] = [];
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const word = `zq${i.toString(36)}x`;
    const title = `Entity ${i}`;
    const filler = Array.from({ length: 20 + Math.floor(rnd() * 30) }, () => FILLER[Math.floor(rnd() * FILLER.length)]);
    filler.splice(Math.floor(rnd() * filler.length), 0, word);
    lines.push(JSON.stringify({ id: `p${i}`, contents: `"${title}"\n${filler.join(' ')}.` }));
    facts.push({ id: `p${i}`, word, title });
  }
  const file = join(dir, 'known.jsonl');
  writeFileSync(file, lines.join('\n') + '\n');
  return { file, facts };
}

/** Passages of words w0…w399 with skewed frequencies (w0 common, w399 rare): every df from 1 to most. */
export function writeSkewedCorpus(
  dir: string,
  n: number,
  seed = 11,
): { file: string; word: (rnd: () => number) => string } {
  const rnd = makeRandom(seed);
  const word = (r: () => number) => `w${Math.floor(400 * r() ** 3)}`;
  const lines = Array.from({ length: n }, (_, i) => {
    const words = Array.from({ length: 5 + Math.floor(rnd() * 40) }, () => word(rnd));
    return JSON.stringify({ id: `p${i}`, contents: `"T${i}"\n${words.join(' ')}` });
  });
  const file = join(dir, 'skewed.jsonl');
  writeFileSync(file, lines.join('\n') + '\n');
  return { file, word };
}

/** Textbook Lucene BM25 over token lists: the independent oracle the index is checked against. */
export function referenceBm25(docs: string[], query: string, k1 = 0.9, b = 0.4): number[] {
  return referenceScorer(docs, k1, b)(query);
}

/** The same oracle with the corpus tokenised once, for many queries. */
export function referenceScorer(docs: string[], k1 = 0.9, b = 0.4): (query: string) => number[] {
  const tfs = docs.map((d) => {
    const m = new Map<string, number>();
    for (const t of tokenize(d)) m.set(t, (m.get(t) ?? 0) + 1);
    return m;
  });
  const lens = docs.map((d) => tokenize(d).length);
  const N = docs.length;
  const avgdl = lens.reduce((s, l) => s + l, 0) / N;
  return (query) => {
    const q = tokenize(query);
    const dfs = q.map((t) => tfs.filter((m) => m.has(t)).length);
    return tfs.map((tf, i) => {
      let score = 0;
      for (let j = 0; j < q.length; j++) {
        const df = dfs[j];
        const f = tf.get(q[j]) ?? 0;
        if (df === 0 || f === 0) continue;
        const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
        score += (idf * f) / (f + k1 * (1 - b + (b * lens[i]) / avgdl));
      }
      return score;
    });
  };
}

/** A request in flight: `flushed` once its whole body is on the socket; `done` with the answer and its finishing order. */
export interface Sent {
  flushed: Promise<void>;
  done: Promise<{ status: number; json: any; order: number }>;
}

let finished = 0;

/** A request on a connection of its own, for tests that compare which of several answers came first. */
export function send(srv: EnvServer, method: string, path: string, body?: string | Buffer): Sent {
  let flushed!: () => void;
  const f = new Promise<void>((r) => (flushed = r));
  const done = new Promise<{ status: number; json: any; order: number }>((resolve, reject) => {
    const req = request(
      `${srv.url}${path}`,
      { method, agent: false, headers: { authorization: `Bearer ${srv.token}`, 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            order: ++finished,
          }),
        );
      },
    );
    req.on('error', reject);
    req.on('finish', () => flushed());
    req.end(body);
  });
  return { flushed: f, done };
}
