// EnvClient against the real server: every method, typed errors, and retries on transient failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createServer, connect, type Socket } from 'node:net';
import { startEnvServer } from '../../../src/env/server';
import { EnvClient, EnvError } from '../../../src/env/client';
import {
  GradeRequestSchema,
  GradeResponseSchema,
  SearchRequestSchema,
  type GradeRequest,
  type GradeResponse,
  type SearchRequest,
} from '../../../src/env/protocol';
import { scoreRecords } from '../../../src/core/rewards';
import { EXAMPLE_CORPUS, tempDir } from './helpers';
import { RECORDS, correctAfter } from './records';

test('EnvClient: health, tools, search, grade, OTC state export/import', async (t) => {
  const dir = tempDir(t);
  const server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx') });
  t.after(() => server.close());
  const client = new EnvClient({ url: `${server.url}/`, token: server.token });

  assert.equal((await client.health()).passages, 10);
  assert.deepEqual(
    (await client.tools()).map((x) => x.name),
    ['search'],
  );
  const s = await client.search({ queries: ['Airborne Corps Soviet'], top_k: 1 });
  assert.equal(s.results[0][0].id, '9');
  assert.ok(s.observations[0].startsWith('\n[1] 4th Airborne Corps (Soviet Union)\n'), 'server default dialect is coa');

  const g = await client.grade({ records: RECORDS, scheme: 'f1' });
  assert.deepEqual(g.breakdowns, scoreRecords(RECORDS, 'f1'));

  await client.grade({ records: [correctAfter('a', 'Q?', 2)], scheme: 'otc-grpo', run: 'ckpt' });
  const state = await client.exportOtcState('ckpt');
  assert.deepEqual(state, { version: 1, min_tool_calls: { 'Q?': 2 } });
  assert.deepEqual(await client.importOtcState('copy', state), { run: 'copy', questions: 1 });
  assert.deepEqual(await client.exportOtcState('copy'), state);
});

test("EnvClient: its request and answer types are the protocol schemas' own (what a client may send, the server accepts)", () => {
  const search: SearchRequest = { queries: ['q'] }; // top_k left to the server's default
  assert.equal(SearchRequestSchema.parse(search).top_k, 3);
  // @ts-expect-error: a key the strict schema refuses is a type error too
  const misspelt: SearchRequest = { queries: ['q'], topk: 2 };
  assert.throws(() => SearchRequestSchema.parse(misspelt), /topk/);
  const grade: GradeRequest = { records: RECORDS, scheme: 'f1', run: 'ckpt' };
  assert.deepEqual(
    GradeRequestSchema.parse(grade).records.map((r) => r.id),
    RECORDS.map((r) => r.id),
  );
  const answer: GradeResponse = { breakdowns: scoreRecords(RECORDS, 'f1') };
  assert.deepEqual(GradeResponseSchema.parse(answer), answer);
});

test('EnvClient: server errors arrive as EnvError with code, status and path', async (t) => {
  const dir = tempDir(t);
  const server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx') });
  t.after(() => server.close());
  const client = new EnvClient({ url: server.url, token: server.token });
  await assert.rejects(client.search({ queries: ['x'], top_k: -1 }), (e: unknown) => {
    assert.ok(e instanceof EnvError);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'invalid_request');
    assert.equal(e.path, 'top_k');
    return true;
  });
  await assert.rejects(new EnvClient({ url: server.url, token: 'nope' }).health(), {
    name: 'EnvError',
    code: 'unauthorized',
    status: 401,
  });
  await assert.rejects(client.exportOtcState('absent'), { code: 'unknown_run', status: 404 });
  // Nothing listens on the port after close: a network error, not a hang.
  const closed = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx') });
  await closed.close();
  await assert.rejects(new EnvClient({ url: closed.url, token: closed.token }).health(), {
    code: 'network',
    status: 0,
  });
});

test('EnvClient: retries 503s, then reports the last one', async (t) => {
  const dir = tempDir(t);
  const server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), faultRate: 1 });
  t.after(() => server.close());
  const client = new EnvClient({ url: server.url, token: server.token, retries: 2 });
  await assert.rejects(client.search({ queries: ['x'] }), { code: 'injected_fault', status: 503 });
  assert.equal(server.stats().injected_faults, 3, 'one attempt plus two retries');
  // 4xx are not retried (auth is checked before faults are injected).
  await assert.rejects(new EnvClient({ url: server.url, token: 'wrong', retries: 5 }).health(), { status: 401 });
  assert.equal(server.stats().client_errors, 1);
});

test('EnvClient: client-side timeout is an explicit error', async (t) => {
  const dir = tempDir(t);
  const server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), latencyMs: 2000 });
  t.after(() => server.close());
  const client = new EnvClient({ url: server.url, token: server.token, timeoutMs: 100 });
  await assert.rejects(client.search({ queries: ['x'] }), { code: 'client_timeout', status: 0 });
});

test('EnvClient: one kept-alive connection for many calls, and a new one when the server dropped it', async (t) => {
  const dir = tempDir(t);
  const server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx') });
  // A TCP relay in front of the server counts connections and can drop them all.
  const open = new Set<Socket>();
  let connections = 0;
  const relay = createServer((inbound) => {
    connections++;
    const outbound = connect(server.port, '127.0.0.1');
    open.add(inbound);
    inbound.on('close', () => open.delete(inbound));
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  const port = (relay.address() as { port: number }).port;
  const client = new EnvClient({ url: `http://127.0.0.1:${port}`, token: server.token });
  t.after(async () => {
    client.close();
    relay.close();
    for (const s of open) s.destroy();
    await server.close();
  });
  for (let i = 0; i < 10; i++)
    assert.equal((await client.search({ queries: ['Evan Morris'], top_k: 1 })).results[0][0].id, '0');
  await client.health();
  assert.equal(connections, 1, 'eleven sequential calls share one connection');
  for (const s of open) s.destroy(); // the server side goes away while the client keeps the socket
  await new Promise((r) => setTimeout(r, 50));
  assert.equal((await client.health()).passages, 10);
  assert.equal(connections, 2);
  await assert.rejects(new EnvClient({ url: 'https://127.0.0.1:1', token: 'x' }).health(), {
    code: 'bad_url',
    status: 0,
  });
});
