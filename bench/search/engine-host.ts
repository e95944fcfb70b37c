// Our side of bench/search, as a long-lived child process speaking the same line protocol as
// lucene/LuceneBench.java (`load`, `single`, `batch`, `topk`, `quit`; one JSON line per command), plus
// `http` (start the environment server in this process) and `exact` (pruned vs exhaustive top-k).
// Usage: node --import tsx bench/search/engine-host.ts <corpus> <indexDir> <workers>
import { createInterface } from 'node:readline';
import { readFileSync, writeFileSync } from 'node:fs';
import { Retriever } from '../../src/env/retriever';
import { SearchPool, sliceBatch } from '../../src/env/search-pool';
import { startEnvServer, type EnvServer } from '../../src/env/server';

const BATCH = 64;
const [corpus, indexDir, workersArg] = process.argv.slice(2);
const workers = Number(workersArg);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const r = await Retriever.open(corpus, { indexDir });
  const loadS = (performance.now() - t0) / 1000;
  const pool = new SearchPool(r, workers);
  await pool.ready(); // every worker thread up, so the first round does not pay for starting them
  const sets = new Map<string, string[]>();
  let server: EnvServer | null = null;
  const out = (x: unknown) => process.stdout.write(`${JSON.stringify(x)}\n`);
  out({
    ready: true,
    docs: r.passages,
    source: r.info.source,
    load_s: loadS,
    rss_mb: process.memoryUsage().rss / 2 ** 20,
  });

  for await (const line of createInterface({ input: process.stdin })) {
    const [cmd, ...a] = line.trim().split(' ');
    if (cmd === 'load') {
      sets.set(
        a[0],
        readFileSync(a[0], 'utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      out({ n: sets.get(a[0])!.length });
    } else if (cmd === 'single') {
      const qs = sets.get(a[0])!;
      const k = Number(a[1]);
      const lat: number[] = [];
      let sink = 0;
      const s0 = performance.now();
      for (const q of qs) {
        const s = performance.now();
        sink += r.index.search(q, k).length;
        lat.push(performance.now() - s);
      }
      const total = performance.now() - s0;
      lat.sort((x, y) => x - y);
      out({ qps: (qs.length / total) * 1000, p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99), hits: sink });
    } else if (cmd === 'batch') {
      const qs = sets.get(a[0])!;
      const k = Number(a[1]);
      const threads = Number(a[2]);
      const batches = Math.floor(qs.length / BATCH);
      const lat: number[] = [];
      let sink = 0;
      const s0 = performance.now();
      for (let b = 0; b < batches; b++) {
        const s = performance.now();
        const part = qs.slice(b * BATCH, (b + 1) * BATCH);
        if (threads === 1) {
          for (const q of part) sink += r.index.search(q, k).length;
        } else {
          // Sliced over the worker threads as the server does.
          const res = await Promise.all(
            sliceBatch(part, threads).map((queries) =>
              pool.run<{ docs: Int32Array }>({ kind: 'search-docs', queries, topK: k }),
            ),
          );
          for (const x of res) sink += x.docs.filter((d) => d >= 0).length;
        }
        lat.push(performance.now() - s);
      }
      const total = performance.now() - s0;
      lat.sort((x, y) => x - y);
      out({
        qps: ((batches * BATCH) / total) * 1000,
        batch_p50_ms: pct(lat, 0.5),
        batch_p99_ms: pct(lat, 0.99),
        hits: sink,
      });
    } else if (cmd === 'topk') {
      const qs = sets.get(a[0])!;
      const k = Number(a[1]);
      writeFileSync(
        a[2],
        qs
          .map((q) =>
            r
              .search(q, k)
              .map((h) => h.id)
              .join('\t'),
          )
          .join('\n') + '\n',
      );
      out({ n: qs.length });
    } else if (cmd === 'exact') {
      // The pruned search against exhaustive scoring of every posting: same passages, bit-identical scores.
      const qs = sets.get(a[0])!;
      const k = Number(a[1]);
      let same = 0;
      for (const q of qs)
        if (JSON.stringify(r.index.search(q, k)) === JSON.stringify(r.index.searchExhaustive(q, k))) same++;
      out({ n: qs.length, identical: same });
    } else if (cmd === 'http') {
      server ??= await startEnvServer({ corpus, indexDir, workers });
      out({ url: server.url, token: server.token });
    } else if (cmd === 'rss') {
      out({ rss_mb: process.memoryUsage().rss / 2 ** 20, peak_rss_mb: process.resourceUsage().maxRSS / 1024 });
    } else if (cmd === 'quit') {
      await server?.close();
      await pool.close();
      r.close();
      out({ bye: true });
      process.exit(0); // stdin may stay open: leave now
    } else out({ error: `unknown command ${cmd}` });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
