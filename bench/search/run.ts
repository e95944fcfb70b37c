// bench/search: our BM25 (src/env) vs minisearch on the same generated corpus and queries, top-3.
// Usage: node --import tsx bench/search/run.ts [--size 1000000] [--shared-size 100000] [--queries 2000] [--ms-queries 300]
// Each engine runs in its own child process (no shared heap or GC); results go to bench/RESULTS.md.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cpus, totalmem } from 'node:os';
import { Agent, request } from 'node:http';
import MiniSearch from 'minisearch';
import { SyntheticCorpus } from './generate';
import { Retriever } from '../../src/env/retriever';
import { readCorpus } from '../../src/env/corpus';
import { startEnvServer } from '../../src/env/server';
import { writeResults } from '../results';

const WORK = join(__dirname, '..', '.work', 'search');
const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SEED = 1;
const corpusFile = (n: number) => join(WORK, `corpus-${n}-s${SEED}.jsonl`);

interface Latency {
  qps: number;
  p50_ms: number;
  p99_ms: number;
  hit_at_1: number;
}

function queriesFor(n: number, count: number): { q: string; target: string }[] {
  const c = new SyntheticCorpus(SEED);
  return Array.from({ length: count }, (_, i) => {
    const target = Math.floor(((i + 0.5) / count) * n);
    return { q: c.query(target, i), target: String(target) };
  });
}

/** Sequential single-query latency; warm-up queries (other targets) are not timed. */
function timeQueries(search: (q: string) => string | undefined, qs: { q: string; target: string }[], warm: { q: string }[]): Latency {
  for (const w of warm) search(w.q);
  const lat: number[] = [];
  let hits = 0;
  const t0 = performance.now();
  for (const { q, target } of qs) {
    const s = performance.now();
    const top = search(q);
    lat.push(performance.now() - s);
    if (top === target) hits++;
  }
  const total = performance.now() - t0;
  lat.sort((a, b) => a - b);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  return { qps: (qs.length / total) * 1000, p50_ms: pct(0.5), p99_ms: pct(0.99), hit_at_1: hits / qs.length };
}

const rssMb = () => process.memoryUsage().rss / 2 ** 20;

const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

/** Build from scratch in its own process, so the query phase below measures a fresh load. */
async function phaseOursBuild(n: number): Promise<unknown> {
  const file = corpusFile(n);
  const dir = join(WORK, `ours-index-${n}`);
  rmSync(dir, { recursive: true, force: true });
  const t0 = performance.now();
  const built = await Retriever.open(file, { indexDir: dir });
  const buildS = (performance.now() - t0) / 1000;
  built.close();
  return { build_s: buildS, rss_after_build_mb: rssMb(), peak_rss_build_mb: peakRssMb() };
}

async function phaseOurs(n: number, nq: number): Promise<unknown> {
  const file = corpusFile(n);
  const dir = join(WORK, `ours-index-${n}`);
  const t1 = performance.now();
  const r = await Retriever.open(file, { indexDir: dir });
  const loadS = (performance.now() - t1) / 1000;
  if (r.info.source !== 'loaded') throw new Error('second open did not load the saved index');
  const qs = queriesFor(n, nq);
  const warm = queriesFor(n, 200).map((x, i) => ({ q: `${x.q} w${i}` }));
  const engine = timeQueries((q) => {
    const h = r.index.search(q, 3)[0];
    return h === undefined ? undefined : String(h.doc); // generated ids equal passage numbers
  }, qs, warm);
  const withText = timeQueries((q) => r.search(q, 3)[0]?.id, qs, []);
  // End to end over HTTP: one query per request, 8 in flight (a trainer's rollout workers). The
  // client runs in this same process with node:http keep-alive (lighter than fetch), so the figure
  // includes client-side cost too.
  const server = await startEnvServer({ corpus: file, indexDir: dir });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const post = (q: string) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ queries: [q], top_k: 3, dialect: 'search-r1' });
      const req = request(`${server.url}/v1/tools/search`, { method: 'POST', agent, headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
          else resolve(void JSON.parse(Buffer.concat(chunks).toString('utf8')));
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  const lat: number[] = [];
  let next = 0;
  for (const w of warm.slice(0, 50)) await post(w.q);
  const h0 = performance.now();
  const worker = async () => {
    while (next < qs.length) {
      const { q } = qs[next++];
      const s = performance.now();
      await post(q);
      lat.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  const httpTotal = performance.now() - h0;
  agent.destroy();
  await server.close();
  lat.sort((a, b) => a - b);
  return {
    passages: r.passages,
    terms: r.index.terms,
    postings: r.index.postings,
    load_s: loadS,
    index_mb: statSync(join(dir, 'bm25.idx')).size / 2 ** 20,
    rss_loaded_mb: rssMb(),
    peak_rss_mb: peakRssMb(),
    engine,
    with_text: withText,
    http: { qps: (qs.length / httpTotal) * 1000, p50_ms: lat[Math.floor(lat.length / 2)], p99_ms: lat[Math.floor(lat.length * 0.99)] },
  };
}

async function phaseMinisearch(n: number, nq: number): Promise<unknown> {
  const file = corpusFile(n);
  const t0 = performance.now();
  // Defaults: BM25-like scoring, OR of terms, no prefix/fuzzy; only the id is kept per document.
  const ms = new MiniSearch({ fields: ['contents'], idField: 'id' });
  for await (const row of readCorpus(file, () => {})) ms.add(row.passage);
  const buildS = (performance.now() - t0) / 1000;
  const buildRss = rssMb();
  const buildPeak = peakRssMb();
  let serialized: number | null = null;
  try {
    serialized = JSON.stringify(ms).length / 2 ** 20;
  } catch {
    serialized = null; // larger than V8's maximum string length
  }
  const qs = queriesFor(n, nq);
  const warm = queriesFor(n, 20).map((x, i) => ({ q: `${x.q} w${i}` }));
  const engine = timeQueries((q) => ms.search(q).slice(0, 3)[0]?.id as string | undefined, qs, warm);
  return { passages: ms.documentCount, build_s: buildS, index_mb: serialized, rss_after_build_mb: buildRss, peak_rss_build_mb: buildPeak, peak_rss_mb: peakRssMb(), engine };
}

function runPhase(phase: string, n: number, nq: number, heapMb: number): any {
  const r = spawnSync(process.execPath, [`--max-old-space-size=${heapMb}`, '--import', 'tsx', __filename, '--phase', phase, '--n', String(n), '--nq', String(nq)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`${phase} ${n} failed (exit ${r.status})`);
  const last = r.stdout.trim().split('\n').at(-1)!;
  return JSON.parse(last);
}

function ensureCorpus(n: number): number {
  mkdirSync(WORK, { recursive: true });
  const file = corpusFile(n);
  if (!existsSync(file)) {
    const t = performance.now();
    new SyntheticCorpus(SEED).write(file, n, (done) => process.stderr.write(`\rgenerating ${n}: ${done}`));
    process.stderr.write(`\rgenerated ${n} passages in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
  }
  return statSync(file).size / 2 ** 20;
}

const f = (x: number, d = 1) => x.toFixed(d);
const fmtLat = (l: Latency) => `${f(l.qps, 0)} | ${f(l.p50_ms, 3)} | ${f(l.p99_ms, 3)} | ${f(l.hit_at_1 * 100)}%`;

async function main(): Promise<void> {
  const phase = process.argv[process.argv.indexOf('--phase') + 1];
  if (process.argv.includes('--phase')) {
    const n = arg('n', 0);
    const nq = arg('nq', 0);
    const out = phase === 'ours-build' ? await phaseOursBuild(n) : phase === 'ours' ? await phaseOurs(n, nq) : await phaseMinisearch(n, nq);
    console.log(JSON.stringify(out));
    return;
  }
  const size = arg('size', 1_000_000);
  const shared = arg('shared-size', 100_000);
  const nq = arg('queries', 2000);
  const msq = arg('ms-queries', 300);
  const sharedMb = ensureCorpus(shared);
  const bigMb = ensureCorpus(size);
  console.error(`ours @ ${shared}…`);
  const oursShared = { ...runPhase('ours-build', shared, 0, 4096), ...runPhase('ours', shared, msq, 4096) };
  console.error(`minisearch @ ${shared}…`);
  const ms = runPhase('minisearch', shared, msq, 16384);
  console.error(`ours @ ${size}…`);
  const oursBig = { ...runPhase('ours-build', size, 0, 8192), ...runPhase('ours', size, nq, 8192) };
  const cmd = `node --import tsx bench/search/run.ts --size ${size} --shared-size ${shared} --queries ${nq} --ms-queries ${msq}`;
  const row = (name: string, r: any) =>
    `| ${name} | ${r.passages.toLocaleString('en')} | ${f(r.build_s)} s | ${r.index_mb === null ? 'n/a' : `${f(r.index_mb)} MB`} | ${f(r.peak_rss_build_mb, 0)} MB | ${f(r.peak_rss_mb, 0)} MB | ${fmtLat(r.engine)} |`;
  const body = [
    `Command: \`${cmd}\``,
    `Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores (shared; single-threaded search).`,
    '',
    `Corpus: generated FlashRAG-format passages (bench/search/generate.ts, seed ${SEED}): ~100 words each from a Zipfian`,
    `vocabulary of 200k made-up words, plus a two-word title; ${shared.toLocaleString('en')} passages = ${f(sharedMb)} MB, ${size.toLocaleString('en')} = ${f(bigMb)} MB.`,
    'Queries: title + three words of a target passage (so a few rare and several very common terms); top-3; timed one at',
    'a time after a warm-up; hit@1 = target passage ranked first. minisearch 7.2 defaults (OR, BM25-style scoring, no',
    'prefix/fuzzy) over the `contents` field; its index size is its JSON serialisation; ours is the `bm25.idx` file.',
    `Side by side at ${shared.toLocaleString('en')} passages: there minisearch already takes ${f(ms.build_s, 0)} s to build, peaks at ${f(ms.peak_rss_mb / 1024, 2)} GB RSS and`,
    `needs ${f(ms.engine.p50_ms, 0)} ms per query (p50). Scaled linearly to ${size.toLocaleString('en')}: ~${f((ms.peak_rss_mb / 1024) * (size / shared), 0)} GB (this machine has ${f(totalmem() / 2 ** 30, 0)} GB),`,
    `~${f((ms.build_s * size) / shared / 60, 0)} min of build and ~${f((ms.engine.p50_ms * size) / shared / 1000, 1)} s per query, which does not fit a few-minutes run on 2 cores, so at ${size.toLocaleString('en')} ours runs alone.`,
    '',
    '| engine | passages | build | index size | peak RSS building | peak RSS querying | queries/s | p50 ms | p99 ms | hit@1 |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    row('minisearch', ms),
    row('coa BM25', oursShared),
    row('coa BM25', oursBig),
    '',
    `Speed-up at ${shared.toLocaleString('en')}: ${f(oursShared.engine.qps / ms.engine.qps, 0)}× minisearch's queries/s (target ≥ 3×); p99 at ${size.toLocaleString('en')}: ${f(oursBig.engine.p99_ms, 2)} ms (target ≤ 20 ms).`,
    '',
    `At ${size.toLocaleString('en')} passages (${oursBig.terms.toLocaleString('en')} terms, ${oursBig.postings.toLocaleString('en')} postings):`,
    `- built in ${f(oursBig.build_s, 0)} s (peak RSS ${f(oursBig.peak_rss_build_mb, 0)} MB, one thread); the saved index reloads in a fresh process in ${f(oursBig.load_s, 2)} s (RSS of that process after its query and HTTP runs: ${f(oursBig.rss_loaded_mb, 0)} MB);`,
    `- with passage text read back from the corpus (Retriever.search): ${f(oursBig.with_text.qps, 0)} queries/s, p50 ${f(oursBig.with_text.p50_ms, 3)} ms, p99 ${f(oursBig.with_text.p99_ms, 3)} ms;`,
    `- over HTTP (\`POST /v1/tools/search\`, one query per request, 8 in flight, search-r1 observations): ${f(oursBig.http.qps, 0)} requests/s, p50 ${f(oursBig.http.p50_ms, 2)} ms, p99 ${f(oursBig.http.p99_ms, 2)} ms.`,
  ].join('\n');
  writeResults('bench/search', body);
  console.log(body);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
