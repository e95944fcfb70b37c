// bench/search: our BM25 (src/env) against Lucene itself, same corpus, same queries, same run.
// Usage: node --import tsx bench/search/run.ts [--size 1000000] [--rounds 5] [--title 2048] [--common 1024]
//        [--threads <cores>] [--no-lucene] [--reuse-index]
// --reuse-index keeps indexes (and their build figures) from an earlier run with the same --size.
// Both engines are built from scratch here, then run as long-lived child processes (engine-host.ts and
// lucene/LuceneBench.java, one line protocol) that receive the same query files; every measurement is
// taken in interleaved rounds (the two engines alternate, first one changing every round) and reported
// as min / median over rounds. Lucene is skipped, with a printed reason, when no JDK/Maven is present.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { Agent, request } from 'node:http';
import { SyntheticCorpus } from './generate';
import { buildLucene } from './lucene';
import { Retriever } from '../../src/env/retriever';
import { readIndexHeader } from '../../src/env/index-file';
import { writeResults } from '../results';

const WORK = join(__dirname, '..', '.work', 'search');
const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SEED = 1;
const K = 3;
const corpusFile = (n: number) => join(WORK, `corpus-${n}-s${SEED}.jsonl`);
const MiB = 2 ** 20;

/** A child engine speaking one JSON line per command. */
class Host {
  private lines: AsyncIterator<string>;
  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    child.on(
      'exit',
      (code, signal) =>
        !this.stopping && (code !== 0 || signal) && console.error(`${name} exited with ${signal ?? `code ${code}`}`),
    );
  }
  /** End the child if it has not exited by itself (and close its stdin). */
  private stopping = false;
  stop(): void {
    this.stopping = true;
    this.child.stdin?.end();
    if (this.child.exitCode === null) this.child.kill();
  }
  async next(): Promise<any> {
    const r = await this.lines.next();
    if (r.done) throw new Error(`${this.name} closed its output`);
    return JSON.parse(r.value);
  }
  async cmd(line: string): Promise<any> {
    this.child.stdin!.write(`${line}\n`);
    const r = await this.next();
    if (r.error) throw new Error(`${this.name}: ${r.error}`);
    return r;
  }
}

function ensureCorpus(n: number): number {
  mkdirSync(WORK, { recursive: true });
  const file = corpusFile(n);
  if (!existsSync(file)) {
    const t = performance.now();
    new SyntheticCorpus(SEED).write(file, n, (done) => process.stderr.write(`\rgenerating ${n}: ${done}`));
    process.stderr.write(`\rgenerated ${n} passages in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
  }
  return statSync(file).size / MiB;
}

/** Our build, in its own process (fresh heap; peak RSS of the build alone). */
async function phaseBuild(n: number): Promise<void> {
  const dir = join(WORK, `ours-index-${n}`);
  rmSync(dir, { recursive: true, force: true });
  const t0 = performance.now();
  const r = await Retriever.open(corpusFile(n), { indexDir: dir });
  const buildS = (performance.now() - t0) / 1000;
  r.close();
  console.log(JSON.stringify({ build_s: buildS, peak_rss_mb: process.resourceUsage().maxRSS / 1024 }));
}

function writeQueries(name: string, qs: string[]): string {
  const file = join(WORK, `queries-${name}.txt`);
  writeFileSync(file, qs.map((q) => q.replace(/\s+/g, ' ')).join('\n') + '\n');
  return file;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** HTTP load against our server: `inFlight` concurrent clients, `perRequest` queries per request. */
async function httpRound(
  url: string,
  token: string,
  qs: string[],
  perRequest: number,
  inFlight: number,
): Promise<{ qps: number; p50_ms: number; p99_ms: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const post = (queries: string[]) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ queries, top_k: K, dialect: 'search-r1' });
      const req = request(
        `${url}/v1/tools/search`,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            res.statusCode === 200
              ? resolve(void JSON.parse(Buffer.concat(chunks).toString('utf8')))
              : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const reqs: string[][] = [];
  for (let i = 0; i + perRequest <= qs.length; i += perRequest) reqs.push(qs.slice(i, i + perRequest));
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < reqs.length) {
        const q = reqs[next++];
        const s = performance.now();
        await post(q);
        lat.push(performance.now() - s);
      }
    }),
  );
  const total = performance.now() - t0;
  agent.destroy();
  lat.sort((a, b) => a - b);
  return {
    qps: ((reqs.length * perRequest) / total) * 1000,
    p50_ms: lat[Math.floor(lat.length / 2)],
    p99_ms: lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))],
  };
}

async function main(): Promise<void> {
  if (process.argv.includes('--phase')) return phaseBuild(arg('n', 0));
  const size = arg('size', 1_000_000);
  const rounds = arg('rounds', 5);
  const nTitle = arg('title', 2048);
  const nCommon = arg('common', 1024);
  const threads = arg('threads', availableParallelism());
  const load0 = loadavg();
  const started = new Date();
  const corpusMb = ensureCorpus(size);
  const file = corpusFile(size);

  // ---- builds (ours, then Lucene), each in its own process
  const reuse = process.argv.includes('--reuse-index');
  const saved = (name: string) => join(WORK, `build-${name}-${size}.json`);
  const oursDir = join(WORK, `ours-index-${size}`);
  let oursBuild: any;
  if (reuse && existsSync(saved('ours')) && readIndexHeader(oursDir))
    oursBuild = JSON.parse(readFileSync(saved('ours'), 'utf8'));
  else {
    console.error(`building ours @ ${size}…`);
    const b = spawnSync(
      process.execPath,
      ['--max-old-space-size=8192', '--import', 'tsx', __filename, '--phase', 'build', '--n', String(size)],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    if (b.status !== 0) throw new Error(`our build failed (exit ${b.status})`);
    oursBuild = { ...JSON.parse(b.stdout.trim().split('\n').at(-1)!), loadavg: loadavg() };
    writeFileSync(saved('ours'), JSON.stringify(oursBuild));
  }
  const header = readIndexHeader(oursDir)!;
  const oursBytes = statSync(join(oursDir, 'bm25.idx')).size;
  // Passage locators (byte offset + length per passage) play the part of Lucene's stored ids: not inverted index.
  const oursInverted = oursBytes - header.sections.docOffsets[1] - header.sections.docBytes[1];

  const lucene = process.argv.includes('--no-lucene') ? { skipped: '--no-lucene given' } : buildLucene();
  let luceneBuild: any = null;
  const luceneDir = join(WORK, `lucene-index-${size}`);
  if ('skipped' in lucene) console.error(`Lucene skipped: ${lucene.skipped}`);
  else if (reuse && existsSync(saved('lucene')) && existsSync(luceneDir))
    luceneBuild = JSON.parse(readFileSync(saved('lucene'), 'utf8'));
  else {
    console.error(`building Lucene ${lucene.version} @ ${size}…`);
    rmSync(luceneDir, { recursive: true, force: true });
    const r = spawnSync(
      lucene.java,
      ['-Xms2g', '-Xmx2g', '-cp', lucene.classpath, 'LuceneBench', 'index', file, luceneDir],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    if (r.status !== 0) throw new Error(`Lucene index build failed (exit ${r.status})`);
    luceneBuild = { ...JSON.parse(r.stdout.trim().split('\n').at(-1)!), loadavg: loadavg() };
    writeFileSync(saved('lucene'), JSON.stringify(luceneBuild));
  }

  // ---- queries: title + three text words (the old set), and five words of passage text; warm-up sets use other passages
  const c = new SyntheticCorpus(SEED);
  const target = (i: number, count: number, shift = 0) => Math.floor(((i + 0.5 + shift) / count) * size) % size;
  const files = {
    title: writeQueries(
      'title',
      Array.from({ length: nTitle }, (_, i) => c.query(target(i, nTitle), i)),
    ),
    common: writeQueries(
      'common',
      Array.from({ length: nCommon }, (_, i) => c.commonQuery(target(i, nCommon), i)),
    ),
    warmTitle: writeQueries(
      'warm-title',
      Array.from({ length: 1024 }, (_, i) => c.query(target(i, 1024, 0.37), 10_000 + i)),
    ),
    warmCommon: writeQueries(
      'warm-common',
      Array.from({ length: 1024 }, (_, i) => c.commonQuery(target(i, 1024, 0.37), 10_000 + i)),
    ),
  };

  // ---- engines up
  const ours = new Host(
    'ours',
    spawn(
      process.execPath,
      [
        '--max-old-space-size=4096',
        '--import',
        'tsx',
        join(__dirname, 'engine-host.ts'),
        file,
        oursDir,
        String(threads),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    ),
  );
  const oursReady = await ours.next();
  const hosts = [ours];
  let luc: Host | null = null;
  if (!('skipped' in lucene)) {
    luc = new Host(
      'lucene',
      spawn(lucene.java, ['-Xms1g', '-Xmx1g', '-cp', lucene.classpath, 'LuceneBench', 'serve', luceneDir], {
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    await luc.next();
    hosts.push(luc);
  }
  for (const h of hosts) for (const f of Object.values(files)) await h.cmd(`load ${f}`);
  console.error('warming up…');
  for (let w = 0; w < 2; w++) {
    for (const h of hosts) {
      for (const f of [files.warmTitle, files.warmCommon]) {
        await h.cmd(`single ${f} ${K}`);
        await h.cmd(`batch ${f} ${K} 1`);
        await h.cmd(`batch ${f} ${K} ${threads}`);
      }
    }
  }

  // ---- exactness and agreement
  const exact = {
    title: await ours.cmd(`exact ${files.title} ${K}`),
    common: await ours.cmd(`exact ${files.common} ${K}`),
  };
  let agreement: { top1: number; top3: number; n: number } | null = null;
  if (luc) {
    const a = join(WORK, 'top-ours.tsv');
    const l = join(WORK, 'top-lucene.tsv');
    await ours.cmd(`topk ${files.title} ${K} ${a}`);
    await luc.cmd(`topk ${files.title} ${K} ${l}`);
    const A = readFileSync(a, 'utf8').split('\n');
    const L = readFileSync(l, 'utf8').split('\n');
    let top1 = 0;
    let top3 = 0;
    for (let i = 0; i < nTitle; i++) {
      if (A[i].split('\t')[0] === L[i].split('\t')[0]) top1++;
      if (A[i] === L[i]) top3++;
    }
    agreement = { top1, top3, n: nTitle };
  }

  // ---- interleaved rounds
  const measures: { key: string; cmd: string }[] = [
    { key: 'single title', cmd: `single ${files.title} ${K}` },
    { key: 'single common', cmd: `single ${files.common} ${K}` },
    { key: 'batch64 1 thread title', cmd: `batch ${files.title} ${K} 1` },
    { key: 'batch64 1 thread common', cmd: `batch ${files.common} ${K} 1` },
    { key: `batch64 ${threads} threads title`, cmd: `batch ${files.title} ${K} ${threads}` },
    { key: `batch64 ${threads} threads common`, cmd: `batch ${files.common} ${K} ${threads}` },
  ];
  const res: Record<string, Record<string, any[]>> = { ours: {}, lucene: {}, http: {} };
  const { url, token } = await ours.cmd('http');
  const titleQs = readFileSync(files.title, 'utf8').trim().split('\n');
  await httpRound(url, token, titleQs.slice(0, 256), 1, 8); // warm the server's workers
  for (let r = 0; r < rounds; r++) {
    console.error(`round ${r + 1}/${rounds}…`);
    for (const m of measures) {
      const order = r % 2 === 0 ? hosts : [...hosts].reverse();
      for (const h of order) (res[h.name][m.key] ??= []).push(await h.cmd(m.cmd));
    }
    (res.http['1 query/request, 8 in flight'] ??= []).push(await httpRound(url, token, titleQs, 1, 8));
    (res.http['64 queries/request, 1 in flight'] ??= []).push(await httpRound(url, token, titleQs, 64, 1));
  }
  const oursRss = await ours.cmd('rss');
  const lucRss = luc ? await luc.cmd('rss') : null;
  for (const h of hosts) await h.cmd('quit').catch(() => {});
  for (const h of hosts) h.stop();
  const load1 = loadavg();

  // ---- report
  const f = (x: number, d = 0) => x.toFixed(d);
  const stat = (xs: any[], key: string) => ({
    min: Math.min(...xs.map((x) => x[key])),
    med: median(xs.map((x) => x[key])),
    max: Math.max(...xs.map((x) => x[key])),
  });
  const rows: string[] = [];
  const ratios: string[] = [];
  for (const m of measures) {
    const o = res.ours[m.key];
    const l = res.lucene[m.key];
    const lat = m.key.startsWith('single') ? ['p50_ms', 'p99_ms'] : ['batch_p50_ms', 'batch_p99_ms'];
    const cell = (xs: any[] | undefined) =>
      xs
        ? `${f(stat(xs, 'qps').med)} (${f(stat(xs, 'qps').min)}–${f(stat(xs, 'qps').max)}) | ${f(stat(xs, lat[0]).med, 3)} | ${f(stat(xs, lat[1]).med, 3)}`
        : 'n/a | n/a | n/a';
    const ratio = l ? stat(o, 'qps').med / stat(l, 'qps').med : NaN;
    rows.push(`| ${m.key} | ${cell(o)} | ${cell(l)} | ${l ? `${f(ratio, 2)}×` : 'n/a'} |`);
    if (l)
      ratios.push(
        `${m.key}: ${f(ratio, 2)}× Lucene's queries/s (median of rounds), p99 ${f(stat(o, lat[1]).med, 3)} vs ${f(stat(l, lat[1]).med, 3)} ms`,
      );
  }
  const httpRows = Object.entries(res.http).map(
    ([k, xs]) =>
      `| ${k} | ${f(stat(xs, 'qps').med)} (${f(stat(xs, 'qps').min)}–${f(stat(xs, 'qps').max)}) | ${f(stat(xs, 'p50_ms').med, 2)} | ${f(stat(xs, 'p99_ms').med, 2)} |`,
  );
  const cmd = `node --import tsx bench/search/run.ts --size ${size} --rounds ${rounds} --title ${nTitle} --common ${nCommon} --threads ${threads}${reuse ? ' --reuse-index' : ''}`;
  const lv = luceneBuild;
  const body = [
    `Command: \`${cmd}\``,
    `Machine: ${process.platform} ${process.arch}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${f(totalmem() / 2 ** 30)} GiB, Node ${process.version}${'skipped' in lucene ? '' : `, Java ${lucene.javaVersion}, Lucene ${lucene.version}`}.`,
    `Load average (1/5/15 min) at start ${load0.map((x) => f(x, 2)).join(' / ')}, at end ${load1.map((x) => f(x, 2)).join(' / ')} — the machine is shared; compare ratios taken in this same run, not absolute figures across runs.`,
    `Started ${started.toISOString()}.`,
    '',
    `Corpus: bench/search/generate.ts, seed ${SEED}: ${size.toLocaleString('en')} FlashRAG passages (${f(corpusMb)} MiB), ~100 words each from a Zipfian`,
    'vocabulary of 200k made-up words, plus a two-word title. Query sets (same files for both engines): **title** =',
    `title + three words of a target passage (${nTitle}), **common** = five words drawn from a target passage's text, mostly`,
    `common words (${nCommon}). Top-${K}. Both engines: k1 0.9, b 0.4; Lucene's analyzer mirrors src/env/tokenize.ts (letter/digit`,
    'runs, lower-case, ASCII folding, the same 33 stopwords, tokens > 64 chars dropped, no stemming), postings with docs + freqs',
    '(no positions), one segment (forceMerge(1)), IndexSearcher.search(BooleanQuery of SHOULD TermQuerys, k), no executor.',
    `Ours: Bm25Index.search in-process (single, batch on 1 thread) and the SearchPool of ${threads} worker threads sharing the index`,
    `(batch on ${threads} threads: a batch of 64 cut into ${4 * threads} slices of ${Math.ceil(64 / (4 * threads))} handed to free workers, as the server does); Lucene: a fixed pool of ${threads} threads, one task per query.`,
    `Each engine is warmed up on other queries first; then ${rounds} rounds, engines alternating (who goes first flips each round).`,
    `Cells: queries/s median (min–max over rounds) | p50 | p99 in ms (per query; per batch of 64 for batches), medians over rounds.`,
    '',
    `| measurement | ours q/s | ours p50 | ours p99 | Lucene q/s | Lucene p50 | Lucene p99 | ours ÷ Lucene |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    ...ratios.map((r) => `- ${r}`),
    '',
    `Exact top-${K}: pruned search identical to exhaustive scoring (same passages, bit-identical scores) on ${exact.title.identical}/${exact.title.n} title and ${exact.common.identical}/${exact.common.n} common queries.`,
    agreement
      ? `Agreement with Lucene (title queries): same top-1 passage on ${agreement.top1}/${agreement.n}, same top-${K} list on ${agreement.top3}/${agreement.n} (Lucene stores document lengths in one byte, so its scores differ slightly).`
      : '',
    '',
    '| index | build | peak RSS building | file size | inverted index | RSS serving |',
    '| --- | --- | --- | --- | --- | --- |',
    `| ours (bm25.idx, format 3) | ${f(oursBuild.build_s, 1)} s (1 thread) | ${f(oursBuild.peak_rss_mb)} MiB | ${f(oursBytes / MiB, 1)} MiB | ${f(oursInverted / MiB, 1)} MiB | ${f(oursRss.rss_mb)} MiB (index read once into shared memory; ${threads} workers) |`,
    lv
      ? `| Lucene ${'skipped' in lucene ? '' : lucene.version} | ${f(lv.build_s, 1)} s (1 indexing thread, incl. forceMerge) | ${f(lv.peak_rss_mb)} MiB (JVM -Xmx2g) | ${f(lv.bytes / MiB, 1)} MiB | ${f(lv.inverted_bytes / MiB, 1)} MiB (.doc ${f(lv.by_ext.doc / MiB, 1)}, .tim/.tip ${f(((lv.by_ext.tim ?? 0) + (lv.by_ext.tip ?? 0)) / MiB, 1)}, norms ${f(((lv.by_ext.nvd ?? 0) + (lv.by_ext.nvm ?? 0)) / MiB, 1)}) | ${f(lucRss.rss_mb)} MiB (mmap pages counted) |`
      : `| Lucene | skipped: ${'skipped' in lucene ? lucene.skipped : ''} | | | | |`,
    '',
    lv
      ? `Index size ratio (inverted index): ${f(oursInverted / lv.inverted_bytes, 2)}× Lucene's. Ours loads in ${f(oursReady.load_s, 2)} s.`
      : '',
    `Load average during the builds (1/5/15 min): ours ${(oursBuild.loadavg ?? []).map((x: number) => f(x, 2)).join(' / ')}${lv ? `, Lucene ${(lv.loadavg ?? []).map((x: number) => f(x, 2)).join(' / ')}` : ''}.`,
    '',
    `Ours over HTTP (\`POST /v1/tools/search\`, search-r1 observations with passage text, node:http keep-alive client in the`,
    `orchestrator process, server in the engine process with ${threads} workers), title queries:`,
    '',
    '| load | queries/s median (min–max) | p50 ms per request | p99 ms per request |',
    '| --- | --- | --- | --- |',
    ...httpRows,
  ]
    .filter((l, i, a) => !(l === '' && a[i - 1] === ''))
    .join('\n');
  writeResults('bench/search', body);
  console.log(body);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
