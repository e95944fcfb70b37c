// The server's per-run OTC-GRPO states are bounded (a cap with LRU eviction, an idle
// limit, DELETE), and a malformed run id in the URL is a 400, not a 500.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startEnvServer, type EnvServer } from '../../../src/env/server';
import { OtcStore } from '../../../src/env/otcStore';
import { OtcState } from '../../../src/core/rewards';
import { EXAMPLE_CORPUS, tempDir } from './helpers';
import { correctAfter } from './records';

async function call(srv: EnvServer, method: string, path: string, body?: unknown) {
  const res = await fetch(srv.url + path, {
    method,
    headers: { authorization: `Bearer ${srv.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

test('OtcStore: the least recently used run goes past the cap, an idle one after the limit', () => {
  let now = 0;
  const store = new OtcStore({ maxRuns: 2, idleMs: 1000, now: () => now });
  store.observe('a', { q: 3 });
  store.observe('b', {});
  assert.equal(store.get('a')?.get('q'), 3); // a is now the most recently used
  store.observe('c', {});
  assert.equal(store.size, 2);
  assert.equal(store.get('b'), undefined, 'b was the least recently used');
  assert.equal(store.get('a')?.get('q'), 3);
  assert.equal(store.evictions, 1);
  now += 600;
  store.get('a');
  now += 600; // c idle 1,200 ms, a idle 600 ms
  assert.equal(store.get('c'), undefined, 'c expired');
  assert.ok(store.get('a'));
  assert.equal(store.delete('a'), true);
  assert.equal(store.delete('a'), false);
  assert.equal(store.size, 0);
  assert.throws(() => new OtcStore({ maxRuns: 0 }), /positive integer/);
});

test('server: states bounded by --otc-max-runs over many runs; DELETE frees one; health reports the count', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), otcMaxRuns: 3 });
  t.after(() => srv.close());
  const q = 'What is the capital of France?';
  for (let i = 0; i < 40; i++) {
    const r = await call(srv, 'POST', '/v1/grade', {
      records: [correctAfter(`r${i}`, q, 1 + (i % 3))],
      scheme: 'otc-grpo',
      run: `run-${i}`,
    });
    assert.equal(r.status, 200);
  }
  const health = await call(srv, 'GET', '/v1/health');
  assert.equal(health.json.stats.otc_runs, 3);
  assert.equal(health.json.stats.otc_evictions, 37);
  assert.equal((await call(srv, 'GET', '/v1/runs/run-0/otc-state')).status, 404, 'the oldest run was evicted');
  const kept = await call(srv, 'GET', '/v1/runs/run-39/otc-state');
  assert.deepEqual(
    kept.json,
    (() => {
      const s = new OtcState();
      s.observe(q, 1 + (39 % 3));
      return s.toJSON();
    })(),
  );
  const del = await call(srv, 'DELETE', '/v1/runs/run-39/otc-state');
  assert.deepEqual([del.status, del.json], [200, { run: 'run-39', deleted: true }]);
  assert.equal((await call(srv, 'GET', '/v1/runs/run-39/otc-state')).status, 404);
  const again = await call(srv, 'DELETE', '/v1/runs/run-39/otc-state');
  assert.deepEqual([again.status, again.json.error.code], [404, 'unknown_run']);
  assert.equal((await call(srv, 'GET', '/v1/health')).json.stats.otc_runs, 2);
});

test('a run id that is not valid percent-encoding or not a valid name is a 400 naming `run`', async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx') });
  t.after(() => srv.close());
  for (const path of [
    '/v1/runs/%E0%A4%A/otc-state',
    '/v1/runs/%ZZ/otc-state',
    '/v1/runs/a..b/otc-state',
    '/v1/runs/a%2Fb/otc-state',
  ]) {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const r = await call(srv, method, path, method === 'PUT' ? { version: 1, min_tool_calls: {} } : undefined);
      assert.equal(r.status, 400, `${method} ${path}`);
      assert.equal(r.json.error.path, 'run');
    }
  }
  assert.equal((await call(srv, 'GET', '/v1/health')).json.stats.server_errors, 0);
});
