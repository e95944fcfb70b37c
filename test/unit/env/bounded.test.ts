// The environment server bounded in memory by bytes, in reply size, and strict about OTC state. A cap that counts
// runs, not bytes, lets 1.2M-question OTC-GRPO states exhaust the heap after a few dozen runs; a 16 KB tool-health
// ring per caller name taken from the URL grows without bound (60k names → 1 GB, a 12.7 MB reply); an unbounded
// maximal search answers 244 MB; PUT otc-state rejects unknown keys. Behaviour only; figures are bench/reliability's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startEnvServer, type EnvServer } from '../../../src/env/server';
import { entryBytes, OtcStore, RUN_BYTES, stateBytes, StateTooLarge } from '../../../src/env/otcStore';
import { OtcState } from '../../../src/core/rewards';
import { REPORTED_CALLERS, ToolHealth, TOOL_HEALTH_MAX_BYTES } from '../../../src/env/toolHealth';
import { EXAMPLE_CORPUS, tempDir } from './helpers';
import { correctAfter } from './records';

async function call(srv: EnvServer, method: string, path: string, body?: unknown) {
  const res = await fetch(srv.url + path, {
    method,
    headers: { authorization: `Bearer ${srv.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

/** A state of `n` questions `<prefix> question number i?` with minima i % 5. */
function bigState(n: number, prefix = 'q'): { version: 1; min_tool_calls: Record<string, number> } {
  const min_tool_calls: Record<string, number> = {};
  for (let i = 0; i < n; i++) min_tool_calls[`${prefix} question number ${i}?`] = i % 5;
  return { version: 1, min_tool_calls };
}

test('OtcStore: runs are evicted by bytes (least recently used first), a state over the whole budget is refused', () => {
  const one = stateBytes(Object.keys(bigState(1000).min_tool_calls));
  assert.equal(one, RUN_BYTES + Object.keys(bigState(1000).min_tool_calls).reduce((n, q) => n + entryBytes(q), 0));
  assert.ok(entryBytes('ж'.repeat(10)) > entryBytes('é'.repeat(10)), 'two bytes a character past U+00FF');
  const store = new OtcStore({ maxBytes: Math.floor(2.5 * one), maxRuns: 100 });
  const put = (run: string) => store.set(run, OtcState.fromJSON(bigState(1000, run)), one);
  put('a');
  put('b');
  assert.ok(store.get('a')); // a is now the most recently used
  put('c');
  assert.equal(store.size, 2, 'a third state of that size does not fit');
  assert.equal(store.get('b'), undefined, 'b, the least recently used, went');
  assert.ok(store.get('a') && store.get('c'));
  assert.equal(store.bytes, 2 * one);
  assert.throws(() => store.set('huge', new OtcState(), 3 * one), StateTooLarge);
  assert.equal(store.bytes, 2 * one, 'a refused state changes nothing');
  // Grades grow a run: new questions cost bytes, known ones do not; growth past the budget evicts others first.
  store.observe('c', { 'c question number 1?': 0 });
  assert.equal(store.bytes, 2 * one, 'a known question');
  const fresh = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`new question ${i}`, 1]));
  store.observe('c', fresh);
  assert.equal(store.get('a'), undefined, 'a made room for c');
  assert.ok(store.bytes <= store.maxBytes);
  assert.equal(store.get('c')?.get('new question 599'), 1);
  assert.equal(store.delete('c'), true);
  assert.equal(store.bytes, 0);
});

test('server: OTC states stay within --otc-max-mb; an oversized or misspelt state is a clear error; health counts bytes', async (t) => {
  const dir = tempDir(t);
  const budget = 200_000;
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), otcMaxBytes: budget });
  t.after(() => srv.close());
  for (let i = 0; i < 12; i++) {
    const r = await call(srv, 'PUT', `/v1/runs/run-${i}/otc-state`, bigState(1000, `r${i}`));
    assert.deepEqual([r.status, r.json], [200, { run: `run-${i}`, questions: 1000 }]);
  }
  const h = (await call(srv, 'GET', '/v1/health')).json.stats;
  assert.ok(h.otc_bytes <= budget && h.otc_bytes > 0, `otc_bytes ${h.otc_bytes}`);
  assert.ok(h.otc_runs >= 1 && h.otc_runs < 12, `otc_runs ${h.otc_runs}`);
  assert.equal(h.otc_evictions, 12 - h.otc_runs);
  assert.equal((await call(srv, 'GET', '/v1/runs/run-0/otc-state')).status, 404, 'the oldest was evicted');
  const last = await call(srv, 'GET', '/v1/runs/run-11/otc-state');
  assert.deepEqual(last.json, bigState(1000, 'r11'));

  const huge = await call(srv, 'PUT', '/v1/runs/huge/otc-state', bigState(5000));
  assert.equal(huge.status, 413);
  assert.equal(huge.json.error.code, 'state_too_large');
  assert.match(huge.json.error.message, /more than the server's whole OTC budget of 200000 bytes \(--otc-max-mb\)/);
  assert.equal((await call(srv, 'GET', '/v1/runs/huge/otc-state')).status, 404);

  const extra = await call(srv, 'PUT', '/v1/runs/x/otc-state', {
    version: 1,
    min_tool_calls: { q: 1 },
    min_toolcalls: { q: 0 },
  });
  assert.deepEqual(
    [extra.status, extra.json.error.code, extra.json.error.path],
    [400, 'invalid_request', 'min_toolcalls'],
  );
  const bad = await call(srv, 'PUT', '/v1/runs/x/otc-state', { version: 1, min_tool_calls: { q: -1 } });
  assert.deepEqual([bad.status, bad.json.error.path], [400, 'min_tool_calls.q']);
  const notJson = await call(srv, 'PUT', '/v1/runs/x/otc-state', '{"version": 1,');
  assert.deepEqual([notJson.status, notJson.json.error.code], [400, 'bad_json']);
  assert.equal((await call(srv, 'GET', '/v1/runs/x/otc-state')).status, 404, 'nothing kept from refused states');

  // Grades still read and grow a run's state through the state thread.
  const q = 'What is the capital of France?';
  for (const calls of [3, 1, 2])
    assert.equal(
      (await call(srv, 'POST', '/v1/grade', { records: [correctAfter('a', q, calls)], scheme: 'otc-grpo', run: 'g' }))
        .status,
      200,
    );
  assert.equal((await call(srv, 'GET', '/v1/runs/g/otc-state')).json.min_tool_calls[q], 1);
  assert.equal((await call(srv, 'GET', '/v1/health')).json.stats.server_errors, 0);
});

test('ToolHealth: 20,000 caller names stay within the byte budget; the reply lists the most recent callers', () => {
  let now = 0;
  const th = new ToolHealth(() => now);
  for (let i = 0; i < 20_000; i++) {
    const done = th.start(`/caller-${i}/retrieve`)!;
    now += 1;
    done(false, null, 'method_not_allowed: GET not allowed on /retrieve; use POST');
  }
  assert.ok(th.memoryBytes <= TOOL_HEALTH_MAX_BYTES, `${th.memoryBytes} bytes`);
  const snap = th.snapshot();
  const names = Object.keys(snap.callers);
  assert.equal(names.length, REPORTED_CALLERS);
  assert.ok(names.includes('caller-19999') && !names.includes('caller-0'));
  assert.ok(snap.callers_evicted > 0);
  assert.equal(names.length + snap.callers_omitted + snap.callers_evicted, 20_000);
  // A busy caller keeps its full latency window and its numbers.
  for (let k = 0; k < 3000; k++) {
    const done = th.start('/v1/tools/search')!;
    now += 2;
    done(true, null, undefined, { queries: 2, empty: 1 });
  }
  const search = th.snapshot().callers.search;
  assert.deepEqual([search.calls, search.queries, search.empty_results, search.latency_ms.p50], [3000, 6000, 3000, 2]);
  assert.ok(th.memoryBytes <= TOOL_HEALTH_MAX_BYTES);
});

test('server: an answer past --max-reply-bytes is refused with reply_too_large (search, retrieve, large bodies too)', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({
    corpus: EXAMPLE_CORPUS,
    indexDir: join(dir, 'idx'),
    maxReplyBytes: 20_000,
    workers: 2,
  });
  t.after(() => srv.close());
  const queries = Array.from({ length: 40 }, (_, i) => `film game cathedral highway ${i}`);
  const small = await call(srv, 'POST', '/v1/tools/search', { queries: queries.slice(0, 1), top_k: 1 });
  assert.equal(small.status, 200);
  const padded = (body: object) => JSON.stringify(body) + ' '.repeat(70 * 1024); // over 64 KiB: parsed by a worker
  for (const [path, body] of [
    ['/v1/tools/search', JSON.stringify({ queries, top_k: 10 })],
    ['/v1/tools/search', padded({ queries, top_k: 10 })],
    ['/retrieve', JSON.stringify({ queries, topk: 10 })],
    ['/retrieve', padded({ queries, topk: 10, return_scores: true })],
  ] as const) {
    const r = await call(srv, 'POST', path, body);
    assert.equal(r.status, 400, `${path} ${body.length}`);
    assert.equal(r.json.error.code, 'reply_too_large');
    assert.match(r.json.error.message, /reply limit of 20000 bytes \(--max-reply-bytes\): ask for fewer queries/);
  }
  assert.equal((await call(srv, 'GET', '/v1/health')).json.stats.server_errors, 0);
});
