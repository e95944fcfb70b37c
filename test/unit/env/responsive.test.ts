// The server stays responsive under heavy requests: search and grade work runs in
// worker threads, so /v1/health is answered while that work is still running, and work that outlives
// --timeout-ms is answered 504 and abandoned (its thread replaced) instead of finishing late with a 200.
// Assertions are about order and behaviour, never about wall-clock thresholds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startEnvServer } from '../../../src/env/server';
import { SearchPool } from '../../../src/env/search-pool';
import { Retriever } from '../../../src/env/retriever';
import { EXAMPLE_CORPUS, send, tempDir } from './helpers';
import { correctAfter } from './records';

/** A grade request that takes the grader seconds (thousands of long multi-call trajectories). */
function heavyGrade(n = 6000): string {
  const records = Array.from({ length: n }, (_, i) => correctAfter(`r${i}`, `question ${i % 500}`, 12));
  return JSON.stringify({ records, scheme: 'otc-grpo', run: 'heavy-run' });
}

/** 256 queries of 10,000 characters: tokenising them alone is real work. */
function heavySearch(): string {
  const q = 'cathedral highway corps film game lobbyist pavia morris '.repeat(200).slice(0, 9_990);
  return JSON.stringify({ queries: Array.from({ length: 256 }, (_, i) => `${q} ${i}`), top_k: 10 });
}

const settle = () => new Promise((r) => setTimeout(r, 100));

test('health is answered while heavy searches and a heavy grade are still running', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), workers: 2 });
  t.after(() => srv.close());
  const heavy = [
    send(srv, 'POST', '/v1/grade', heavyGrade()),
    send(srv, 'POST', '/v1/tools/search', heavySearch()),
    send(srv, 'POST', '/v1/tools/search', heavySearch()),
  ];
  await Promise.all(heavy.map((h) => h.flushed));
  await settle(); // let the server take in the bodies and start on them
  const health = await send(srv, 'GET', '/v1/health').done;
  assert.equal(health.status, 200);
  const results = await Promise.all(heavy.map((h) => h.done));
  for (const r of results) {
    assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 200));
    assert.ok(health.order < r.order, 'health must be answered before the heavy requests finish');
  }
  // The heavy work was real and complete.
  assert.equal(results[0].json.breakdowns.length, 6000);
  assert.equal(results[0].json.breakdowns[0].optimal_tool_calls, 12);
  assert.equal(results[1].json.results.length, 256);
  assert.equal(results[1].json.observations.length, 256);
  assert.ok(results[1].json.results[0].length > 0);
});

test('work past --timeout-ms is answered 504, its worker replaced, and the server keeps serving', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), workers: 1, timeoutMs: 200 });
  t.after(() => srv.close());
  const slow = send(srv, 'POST', '/v1/grade', heavyGrade(20_000));
  const r = await slow.done;
  assert.equal(r.status, 504);
  assert.equal(r.json.error.code, 'timeout');
  const h = await send(srv, 'GET', '/v1/health').done;
  assert.ok(h.json.stats.timeouts >= 1);
  // The server keeps serving once the replacement thread is up (booting it may itself outlast 200 ms under
  // tsx on a loaded machine: those answers are 504s too, never anything else).
  let s = await send(srv, 'POST', '/v1/tools/search', JSON.stringify({ queries: ['Pavia Cathedral dome'], top_k: 2 }))
    .done;
  for (let tries = 0; s.status === 504 && tries < 100; tries++) {
    assert.equal(s.json.error.code, 'timeout');
    await settle();
    s = await send(srv, 'POST', '/v1/tools/search', JSON.stringify({ queries: ['Pavia Cathedral dome'], top_k: 2 }))
      .done;
  }
  assert.equal(s.status, 200);
  assert.equal(s.json.results[0].length, 2);
  const state = await send(srv, 'GET', '/v1/runs/heavy-run/otc-state').done;
  assert.equal(state.status, 404);
});

test('pool: a cancelled running task is abandoned, its thread replaced, and the pool keeps working', async (t) => {
  const dir = tempDir(t);
  const retriever = await Retriever.open(EXAMPLE_CORPUS, { indexDir: join(dir, 'idx') });
  const pool = new SearchPool(retriever, 1);
  t.after(async () => (await pool.close(), retriever.close()));
  await pool.ready(); // so the grade below is running (not queued) when it is cancelled
  const abort = new AbortController();
  const body = new TextEncoder().encode(heavyGrade());
  let doneAt = 0;
  let gone!: () => void;
  const threadGone = new Promise<void>((r) => (gone = r));
  const slow = pool.run(
    { kind: 'grade', body: [body] },
    {
      signal: abort.signal,
      onState: async () => ({ version: 1, min_tool_calls: {} }),
      onDone: () => ((doneAt = performance.now()), gone()),
    },
  );
  const queued = pool.run({ kind: 'search', queries: ['Pavia Cathedral dome'], topK: 1, dialect: 'coa' });
  abort.abort(new Error('cancelled by the test'));
  await assert.rejects(slow, /cancelled by the test/);
  assert.equal(pool.recycled, 1);
  // The task's onDone waits for its abandoned thread to exit (its memory is held until then), not for the rejection.
  assert.equal(doneAt, 0, 'not done when the promise is rejected');
  await threadGone;
  assert.ok(doneAt > 0);
  // The task queued behind it runs on the fresh thread.
  const r = (await queued) as { results: Uint8Array };
  assert.equal(
    JSON.parse(`[${Buffer.from(r.results).toString('utf8')}]`)[0][0].title,
    retriever.search('Pavia Cathedral dome', 1)[0].title,
  );
});

test('pool: a task cancelled while its thread is still starting is dropped without recycling', async (t) => {
  const dir = tempDir(t);
  const retriever = await Retriever.open(EXAMPLE_CORPUS, { indexDir: join(dir, 'idx') });
  const pool = new SearchPool(retriever, 1);
  t.after(async () => (await pool.close(), retriever.close()));
  const abort = new AbortController();
  const dropped = pool.run({ kind: 'search', queries: ['Pavia'], topK: 1, dialect: 'coa' }, { signal: abort.signal });
  abort.abort(new Error('gone'));
  await assert.rejects(dropped, /gone/);
  const r = (await pool.run({ kind: 'search', queries: ['Pavia Cathedral dome'], topK: 1, dialect: 'coa' })) as {
    results: Uint8Array;
  };
  assert.equal(JSON.parse(`[${Buffer.from(r.results).toString('utf8')}]`)[0].length, 1);
  assert.equal(pool.recycled, 0);
});

test('a batch is spread over the workers and answered in request order', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), workers: 3 });
  t.after(() => srv.close());
  const queries = [
    'Pavia Cathedral dome',
    'Evan Morris',
    'highway',
    'nothingmatcheshere',
    'film game',
    'Soviet corps',
    'Horatio Hale',
  ];
  const batch = await send(srv, 'POST', '/v1/tools/search', JSON.stringify({ queries, top_k: 2 })).done;
  assert.equal(batch.status, 200);
  for (const [i, q] of queries.entries()) {
    const one = await send(srv, 'POST', '/v1/tools/search', JSON.stringify({ queries: [q], top_k: 2 })).done;
    assert.deepEqual(batch.json.results[i], one.json.results[0], q);
    assert.equal(batch.json.observations[i], one.json.observations[0], q);
  }
});

test('concurrent OTC-GRPO grades of one run are serialised: each sees the other, in one order or the other', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), workers: 2 });
  t.after(() => srv.close());
  // Bulk records (other questions) make both grades run at the same time on the two workers.
  const bulk = (tag: string) =>
    Array.from({ length: 3000 }, (_, i) => correctAfter(`${tag}${i}`, `bulk ${tag} ${i % 300}`, 6));
  const a = [correctAfter('a1', 'Q1', 2), correctAfter('a2', 'Q2', 5), ...bulk('a')];
  const b = [correctAfter('b1', 'Q1', 4), correctAfter('b2', 'Q2', 1), ...bulk('b')];
  const grade = (records: unknown[]) =>
    send(srv, 'POST', '/v1/grade', JSON.stringify({ records, scheme: 'otc-grpo', run: 'shared' }));
  const [ra, rb] = await Promise.all([grade(a).done, grade(b).done]);
  assert.equal(ra.status, 200);
  assert.equal(rb.status, 200);
  const seen = (r: any) => [r.json.breakdowns[0].optimal_tool_calls, r.json.breakdowns[1].optimal_tool_calls];
  const aFirst = seen(ra).join() === '2,5' && seen(rb).join() === '2,1';
  const bFirst = seen(rb).join() === '4,1' && seen(ra).join() === '2,1';
  assert.ok(aFirst || bFirst, `a saw ${seen(ra)}, b saw ${seen(rb)}: neither saw the other`);
  const state = await send(srv, 'GET', '/v1/runs/shared/otc-state').done;
  assert.equal(state.json.min_tool_calls.Q1, 2);
  assert.equal(state.json.min_tool_calls.Q2, 1);
});
