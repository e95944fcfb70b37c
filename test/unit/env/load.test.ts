// Bounded loopback load test: 1,000 concurrent search requests against a server injecting 20% faults.
// Every request must be answered (200) or fail explicitly (503 injected_fault); counts add up on both
// sides and nothing hangs (each request carries an abort deadline; the test has an overall timeout).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startEnvServer } from '../../../src/env/server';
import { tempDir, writeKnownCorpus } from './helpers';

const N = 1000;

test('1,000 concurrent searches with 20% injected faults: all answered or failed explicitly', {
  timeout: 60_000,
}, async (t) => {
  const dir = tempDir(t);
  const { file, facts } = writeKnownCorpus(dir, 3000);
  const server = await startEnvServer({ corpus: file, indexDir: join(dir, 'idx'), faultRate: 0.2, faultSeed: 42 });
  t.after(() => server.close());
  const heapBefore = process.memoryUsage().heapUsed;

  const outcomes = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const fact = facts[(i * 7) % facts.length];
      try {
        const res = await fetch(`${server.url}/v1/tools/search`, {
          method: 'POST',
          headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ queries: [`river ${fact.word}`], top_k: 3 }),
          signal: AbortSignal.timeout(30_000),
        });
        const body = (await res.json()) as any;
        if (res.status === 200) return body.results[0][0]?.id === fact.id ? 'ok' : 'wrong';
        return `${res.status}:${body.error?.code}`;
      } catch (e) {
        return `threw:${(e as Error).name}`;
      }
    }),
  );

  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  t.diagnostic(
    `outcomes ${JSON.stringify(counts)}; heap growth ${((process.memoryUsage().heapUsed - heapBefore) / 2 ** 20).toFixed(1)} MiB`,
  );
  assert.deepEqual(Object.keys(counts).sort(), ['503:injected_fault', 'ok'], JSON.stringify(counts));
  assert.equal(counts.ok + counts['503:injected_fault'], N);
  // 20% of 1,000 with a fixed seed; the band is ±5 sigma, so it only fails if injection is broken.
  assert.ok(counts['503:injected_fault'] > 140 && counts['503:injected_fault'] < 260, JSON.stringify(counts));

  const stats = server.stats();
  assert.equal(stats.injected_faults, counts['503:injected_fault']);
  assert.equal(stats.requests, N);
  assert.equal(stats.ok, counts.ok);
  assert.equal(stats.queries, counts.ok);
  assert.equal(stats.server_errors, counts['503:injected_fault']);
  assert.equal(stats.timeouts, 0);
});
