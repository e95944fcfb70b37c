// The real server on a random loopback port, called over HTTP: auth, search on the example corpus
// with each dialect's observation layout, the error contract, and the grader against src/core.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEnvServer, type EnvServer } from '../../../src/env/server';
import { OtcState, scoreRecords } from '../../../src/core/rewards';
import { SCHEMES } from '../../../src/core/record';
import { EXAMPLE_CORPUS, tempDir } from './helpers';
import { RECORDS, correctAfter } from './records';

let server: EnvServer;
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'coa-env-server-'));
  server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx'), dialect: 'search-r1' });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(
  method: string,
  path: string,
  body?: unknown,
  opts: { token?: string | null; raw?: string; srv?: EnvServer } = {},
) {
  const srv = opts.srv ?? server;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const token = opts.token === undefined ? srv.token : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(srv.url + path, {
    method,
    headers,
    body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const corpusLines = readFileSync(EXAMPLE_CORPUS, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { id: string; contents: string });
const byId = (id: string) => corpusLines.find((p) => p.id === id)!;

test('binds loopback only and prints a usable token', () => {
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.ok(server.token.length >= 32);
});

test('every endpoint refuses requests without the right token', async () => {
  for (const [method, path] of [
    ['GET', '/v1/health'],
    ['GET', '/v1/tools'],
    ['POST', '/v1/tools/search'],
    ['POST', '/v1/grade'],
    ['GET', '/v1/runs/r/otc-state'],
    ['GET', '/nope'],
  ]) {
    for (const token of [null, 'wrong-token', `${server.token}x`]) {
      const r = await call(method, path, method === 'GET' ? undefined : { queries: ['x'] }, { token });
      assert.equal(r.status, 401, `${method} ${path} with ${token}`);
      assert.equal(r.json.error.code, 'unauthorized');
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
    }
  }
});

test('health and tool listing', async () => {
  const h = await call('GET', '/v1/health');
  assert.equal(h.status, 200);
  assert.equal(h.json.status, 'ok');
  assert.equal(h.json.passages, 10);
  assert.equal(typeof h.json.uptime_s, 'number');
  const t = await call('GET', '/v1/tools');
  assert.equal(t.json.tools.length, 1);
  assert.equal(t.json.tools[0].name, 'search');
  assert.equal(t.json.tools[0].parameters.type, 'object');
  assert.deepEqual(t.json.tools[0].parameters.required, ['query']);
});

test('search ranks the example corpus sensibly', async () => {
  const cases: [string, string[]][] = [
    ['Evan Morris lobbyist Genentech Roche', ['0']],
    ['Horatio Hale Algonkin vocabulary', ['1']],
    ['Dibba Portuguese fort Habsburg', ['2']],
    ['Iowa Highway 17 route', ['6']],
    ['E.T. Atari cartridges video game', ['7']],
    ['4th Airborne Corps Red Army', ['9']],
    ['Ao Oni film Takeshi', ['3', '8']],
    ['Pavia Cathedral', ['4', '5']],
  ];
  const r = await call('POST', '/v1/tools/search', { queries: cases.map((c) => c[0]), top_k: 3 });
  assert.equal(r.status, 200);
  assert.equal(r.json.results.length, cases.length);
  cases.forEach(([q, want], i) => {
    const got = r.json.results[i].map((h: any) => h.id);
    assert.deepEqual([...got.slice(0, want.length)].sort(), want, q);
    const scores = r.json.results[i].map((h: any) => h.score);
    assert.deepEqual(
      scores,
      [...scores].sort((a: number, b: number) => b - a),
      `${q}: best first`,
    );
    for (const hit of r.json.results[i]) assert.equal(hit.contents, byId(hit.id).contents);
  });
  assert.equal(r.json.results[0][0].title, 'Evan Morris');
});

test('observations: Search-R1 _passages2string layout byte for byte, and the other dialects', async () => {
  const q = { queries: ['Pavia Cathedral dome', 'zzzz-no-match'], top_k: 2 };
  const r1 = await call('POST', '/v1/tools/search', q); // server default dialect: search-r1
  const hits = r1.json.results[0].map((h: any) => byId(h.id).contents as string);
  const expected = hits
    .map((c: string, i: number) => `Doc ${i + 1}(Title: ${c.split('\n')[0]}) ${c.split('\n').slice(1).join('\n')}\n`)
    .join('');
  assert.equal(r1.json.observations[0], expected);
  assert.ok(r1.json.observations[0].startsWith('Doc 1(Title: "Pavia Cathedral") '));
  assert.equal(r1.json.observations[1], '');
  assert.deepEqual(r1.json.results[1], []);

  const auto = await call('POST', '/v1/tools/search', { ...q, dialect: 'autocoa' });
  assert.equal(auto.json.observations[0], ` result 1: ${hits[0]}\nresult 2: ${hits[1]} `);
  const one = await call('POST', '/v1/tools/search', { queries: ['Evan Morris'], top_k: 1, dialect: 'autocoa' });
  assert.equal(one.json.observations[0], ` ${byId('0').contents} `);

  const coa = await call('POST', '/v1/tools/search', { ...q, dialect: 'coa' });
  const text = (c: string) => c.split('\n').slice(1).join('\n');
  assert.equal(
    coa.json.observations[0],
    `\n[1] Pavia Cathedral\n${text(hits[0])}\n\n[2] Pavia Cathedral\n${text(hits[1])}\n`,
  );
  assert.equal(coa.json.observations[1], '\nNo results.\n');

  const hermes = await call('POST', '/v1/tools/search', { ...q, dialect: 'hermes' });
  const body = JSON.parse(hermes.json.observations[0]);
  assert.equal(body.name, 'search');
  assert.deepEqual(
    body.content.map((c: any) => c.id),
    r1.json.results[0].map((h: any) => h.id),
  );
  assert.equal(body.content[0].text, text(hits[0]));
  assert.ok(hermes.json.observations[0].startsWith('\n{') && hermes.json.observations[0].endsWith('}\n'));
});

test('top_k defaults to 3 and empty query lists are fine (Search-R1 sends them)', async () => {
  const r = await call('POST', '/v1/tools/search', { queries: ['cathedral highway corps film game lobbyist'] });
  assert.equal(r.json.results[0].length, 3);
  const empty = await call('POST', '/v1/tools/search', { queries: [] });
  assert.deepEqual(empty.json, { results: [], observations: [] });
});

test('bad requests get 400 with the offending path, never a crash', async () => {
  const cases: [unknown, string | undefined, string, string?][] = [
    [undefined, undefined, 'bad_json', '{"queries": ['],
    [undefined, undefined, 'bad_json', ''],
    [{}, 'queries', 'invalid_request'],
    [{ queries: 'one string' }, 'queries', 'invalid_request'],
    [{ queries: ['ok', 7] }, 'queries[1]', 'invalid_request'],
    [{ queries: ['x'], top_k: 0 }, 'top_k', 'invalid_request'],
    [{ queries: ['x'], top_k: 2.5 }, 'top_k', 'invalid_request'],
    [{ queries: ['x'], topk: 3 }, 'topk', 'invalid_request'],
    [{ queries: ['x'], dialect: 'react' }, 'dialect', 'invalid_request'],
    [[1, 2], '', 'invalid_request'],
  ];
  for (const [body, path, code, raw] of cases) {
    const r = await call('POST', '/v1/tools/search', body, { raw });
    assert.equal(r.status, 400, JSON.stringify(body ?? raw));
    assert.equal(r.json.error.code, code);
    assert.equal(r.json.error.path, path, JSON.stringify(body ?? raw));
    assert.ok(r.json.error.message.length > 10);
  }
  const g = await call('POST', '/v1/grade', { records: [{ id: 'a', question: 'q' }], scheme: 'em' });
  assert.equal(g.status, 400);
  assert.equal(g.json.error.path, 'records[0].response');
  const s = await call('POST', '/v1/grade', { records: [], scheme: 'bleu' });
  assert.equal(s.json.error.path, 'scheme');
  const p = await call('POST', '/v1/grade', { records: [], scheme: 'otc-ppo', params: { c: -1 } });
  assert.equal(p.json.error.path, 'params.c');
  const run = await call('POST', '/v1/grade', { records: [], scheme: 'em', run: '../etc' });
  assert.equal(run.json.error.path, 'run');
  const h = await call('GET', '/v1/health');
  assert.equal(h.json.stats.server_errors, 0);
});

test('unknown endpoints 404, wrong methods 405 with Allow', async () => {
  const nf = await call('GET', '/v1/nothing');
  assert.equal(nf.status, 404);
  assert.equal(nf.json.error.code, 'not_found');
  const m = await call('GET', '/v1/tools/search');
  assert.equal(m.status, 405);
  assert.equal(m.json.error.code, 'method_not_allowed');
  assert.equal(m.headers.get('allow'), 'POST');
  const d = await call('PATCH', '/v1/runs/r/otc-state');
  assert.equal(d.status, 405);
  assert.equal(d.headers.get('allow'), 'GET, PUT, DELETE');
});

test('grader output equals scoreRecords for every scheme', async () => {
  for (const scheme of SCHEMES) {
    for (const params of [undefined, { c: 2, alpha: 0.5, format_penalty: false }]) {
      const r = await call('POST', '/v1/grade', { records: RECORDS, scheme, params });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.deepEqual(
        r.json.breakdowns,
        scoreRecords(RECORDS, scheme, params ?? {}),
        `${scheme} ${JSON.stringify(params)}`,
      );
    }
  }
  // Not vacuous: right, wrong and malformed answers are told apart.
  const em = (await call('POST', '/v1/grade', { records: RECORDS, scheme: 'em' })).json.breakdowns.map(
    (b: any) => b.total,
  );
  assert.deepEqual(em, [1, 1, 1, 0, 0]);
});

test('OTC-GRPO running minimum per run: kept across calls, exported and imported', async () => {
  const q = 'What is the capital of France?';
  const local = new OtcState();
  const b1 = await call('POST', '/v1/grade', { records: [correctAfter('a', q, 3)], scheme: 'otc-grpo', run: 'run-1' });
  assert.deepEqual(b1.json.breakdowns, scoreRecords([correctAfter('a', q, 3)], 'otc-grpo', {}, local));
  const b2 = await call('POST', '/v1/grade', {
    records: [correctAfter('b', q, 2), correctAfter('c', q, 4)],
    scheme: 'otc-grpo',
    run: 'run-1',
  });
  assert.deepEqual(
    b2.json.breakdowns,
    scoreRecords([correctAfter('b', q, 2), correctAfter('c', q, 4)], 'otc-grpo', {}, local),
  );
  const b3 = await call('POST', '/v1/grade', { records: [correctAfter('d', q, 5)], scheme: 'otc-grpo', run: 'run-1' });
  assert.equal(b3.json.breakdowns[0].optimal_tool_calls, 2, 'the minimum of earlier calls is remembered');
  scoreRecords([correctAfter('d', q, 5)], 'otc-grpo', {}, local);

  // Another run starts fresh.
  const other = await call('POST', '/v1/grade', {
    records: [correctAfter('e', q, 5)],
    scheme: 'otc-grpo',
    run: 'run-2',
  });
  assert.equal(other.json.breakdowns[0].optimal_tool_calls, 5);

  const exported = await call('GET', '/v1/runs/run-1/otc-state');
  assert.equal(exported.status, 200);
  assert.deepEqual(exported.json, local.toJSON());
  const put = await call('PUT', '/v1/runs/restored/otc-state', exported.json);
  assert.deepEqual(put.json, { run: 'restored', questions: 1 });
  const resumed = await call('POST', '/v1/grade', {
    records: [correctAfter('f', q, 4)],
    scheme: 'otc-grpo',
    run: 'restored',
  });
  assert.equal(resumed.json.breakdowns[0].optimal_tool_calls, 2);

  const missing = await call('GET', '/v1/runs/never-graded/otc-state');
  assert.equal(missing.status, 404);
  assert.equal(missing.json.error.code, 'unknown_run');
  const bad = await call('PUT', '/v1/runs/x/otc-state', { version: 1, min_tool_calls: { [q]: -1 } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.path, `min_tool_calls.${q}`);
});

test('body limit 413, injected faults 503, timeouts 504 — all as JSON errors', async (t) => {
  const d = tempDir(t);
  const small = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(d, 'i1'), maxBodyBytes: 1024 });
  t.after(() => small.close());
  const big = await call('POST', '/v1/tools/search', { queries: ['x'.repeat(2000)] }, { srv: small });
  assert.equal(big.status, 413);
  assert.equal(big.json.error.code, 'body_too_large');
  const ok = await call('POST', '/v1/tools/search', { queries: ['Evan Morris'] }, { srv: small });
  assert.equal(ok.status, 200);

  const faulty = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(d, 'i1'), faultRate: 1 });
  t.after(() => faulty.close());
  const f = await call('POST', '/v1/tools/search', { queries: ['x'] }, { srv: faulty });
  assert.equal(f.status, 503);
  assert.equal(f.json.error.code, 'injected_fault');
  const g = await call('POST', '/v1/grade', { records: [], scheme: 'em' }, { srv: faulty });
  assert.equal(g.status, 503);
  assert.equal((await call('GET', '/v1/health', undefined, { srv: faulty })).status, 200, 'health is never faulted');

  const slow = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(d, 'i1'), latencyMs: 300, timeoutMs: 50 });
  t.after(() => slow.close());
  const s = await call('POST', '/v1/tools/search', { queries: ['x'] }, { srv: slow });
  assert.equal(s.status, 504);
  assert.equal(s.json.error.code, 'timeout');
  assert.equal(slow.stats().timeouts, 1);
});
