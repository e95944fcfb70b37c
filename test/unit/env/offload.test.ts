// Large JSON bodies of /retrieve, /v1/alerts and PUT …/otc-state are parsed by worker threads: on the server's event
// loop a 31.5 MB body blocks /v1/health for seconds (a 1.2M-question PUT 9 s), and with --timeout-ms 500 the 504
// comes after 3.8 s. So health is answered while they are parsed, the timeout fires while the work still runs, and a
// PUT that timed out is never kept. Assertions are about order and
// outcome, never wall-clock thresholds (bench/reliability measures the latencies).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { startEnvServer } from '../../../src/env/server';
import { joinParts, readBody } from '../../../src/env/http';
import { EXAMPLE_CORPUS, send, tempDir } from './helpers';

/** About `mb` MB of JSON around a long array: parsing it is real work (what an attacker or a runaway client sends). */
function hugeBody(prefix: string, suffix: string, mb: number): Buffer {
  const n = Math.floor((mb * 1e6) / 4);
  return Buffer.from(`${prefix}[${Array(n).fill('"x"').join(',')}]${suffix}`);
}

/** An OTC state of `n` questions (1.2M questions: 27 MB of JSON, under the 32 MiB body limit). */
function stateBody(n: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"question ${i}?":${i % 7}`);
  return Buffer.from(`{"version":1,"min_tool_calls":{${parts.join(',')}}}`);
}

for (const [path, prefix, suffix] of [
  ['/retrieve', '{"queries":', '}'],
  ['/v1/alerts', '{"step":1,"values":{"tc":', '}}'],
] as const) {
  test(`health is answered while a 31.5 MB ${path} body is parsed`, async (t) => {
    const dir = tempDir(t);
    const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), workers: 1 });
    t.after(() => srv.close());
    const big = send(srv, 'POST', path, hugeBody(prefix, suffix, 31.5));
    await big.flushed;
    const health = await send(srv, 'GET', '/v1/health').done;
    const r = await big.done;
    assert.equal(health.status, 200);
    assert.ok(health.order < r.order, 'health waited for the large body to be parsed');
    if (path === '/retrieve') {
      assert.deepEqual([r.status, r.json.error.code, r.json.error.path], [400, 'invalid_request', 'queries']);
    } else {
      assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
      assert.deepEqual(r.json.alerts, []);
    }
  });
}

test('a 600k-question PUT otc-state: health answered meanwhile, 504 at --timeout-ms while it is parsed, never kept', {
  timeout: 120_000,
}, async (t) => {
  const dir = tempDir(t);
  const srv = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), timeoutMs: 500 });
  t.after(() => srv.close());
  const put = send(srv, 'PUT', '/v1/runs/big/otc-state', stateBody(600_000));
  await put.flushed;
  const health = await send(srv, 'GET', '/v1/health').done;
  const r = await put.done;
  assert.equal(health.status, 200);
  assert.deepEqual([r.status, r.json.error.code], [504, 'timeout'], 'the timeout fired while the state was parsed');
  assert.ok(health.order < r.order, 'health waited behind the PUT');
  // Once the state thread is through with the timed-out PUT, the run has no state: a 504 never leaves one behind.
  // (Until then a read of any state waits behind the parse, and times out too.)
  let after = await send(srv, 'GET', '/v1/runs/big/otc-state').done;
  while (after.status === 504) after = await send(srv, 'GET', '/v1/runs/big/otc-state').done;
  assert.equal(after.status, 404);
  const h = await send(srv, 'GET', '/v1/health').done;
  assert.ok(h.json.stats.timeouts >= 1);
  assert.equal(h.json.stats.otc_runs, 0);
  // The server goes on: a state that is parsed in time is kept.
  const ok = await send(srv, 'PUT', '/v1/runs/big/otc-state', stateBody(1000)).done;
  assert.deepEqual([ok.status, ok.json], [200, { run: 'big', questions: 1000 }]);
});

test('readBody: declared, chunked and over-limit bodies; a large body moves to a worker as its own chunks, joined there', async (t) => {
  const got: { body?: Buffer; error?: string }[] = [];
  const server = createServer((req, res) => {
    readBody(req, 4_000_000).then(
      (body) => {
        // What a worker thread gets: chunks whose memory moves with them (each owns its whole buffer), joined there.
        const { parts, transfer } = body.movable();
        assert.equal(transfer.length, parts.length);
        for (const p of parts) assert.equal(p.byteLength, p.buffer.byteLength);
        got.push({ body: joinParts(parts) });
        res.end('ok');
      },
      (e: Error) => (got.push({ error: e.message }), res.end('no')),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  const post = (body: Buffer, chunked = false) =>
    new Promise<void>((resolve) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent: false,
          headers: chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': body.length },
        },
        (res) => (res.resume(), res.on('end', resolve)),
      );
      req.on('error', () => resolve());
      for (let i = 0; i < body.length; i += 100_000) req.write(body.subarray(i, i + 100_000));
      req.end();
    });
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));
  for (const [n, chunked] of [
    [500_000, false],
    [3_000_000, false],
    [3_000_000, true],
    [0, false],
  ] as const) {
    await post(bytes(n), chunked);
    const r = got.pop()!;
    assert.ok(r.body, r.error);
    assert.ok(r.body.equals(bytes(n)), `${n} bytes${chunked ? ', chunked' : ''}`);
  }
  await post(bytes(5_000_000), true);
  assert.match(got.pop()!.error ?? '', /request body exceeds 4000000 bytes/);
});
