// The retrieval protocol of Search-R1 and verl's search tool against the real server: clients written to the
// published request shapes — Search-R1 search_r1/search/retrieval_server.py `QueryRequest` and its client
// search_r1/llm_agent/generation.py `_batch_search` (PeterGriffinJin/Search-R1 a14dc3a4), verl
// verl/tools/utils/search_r1_like_utils.py `call_search_api` (volcengine/verl b178a3cd) — with the token in the URL
// path (they send no Authorization header), plus tool health per caller.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEnvServer, type EnvServer } from '../../../src/env/server';
import { Retriever } from '../../../src/env/retriever';
import { EXAMPLE_CORPUS } from './helpers';

let server: EnvServer;
let reference: Retriever;
let dir: string;
let base: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'coa-retrieve-'));
  server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(dir, 'idx') });
  reference = await Retriever.open(EXAMPLE_CORPUS, { indexDir: join(dir, 'idx') });
  base = `${server.url}/t/${encodeURIComponent(server.token)}`;
});
after(async () => {
  reference.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const corpus = readFileSync(EXAMPLE_CORPUS, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { id: string; contents: string });

/** Search-R1's client: `requests.post(search_url, json=payload).json()` — JSON body, no auth header. */
async function searchR1Client(url: string, queries: string[], topk: number) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ queries, topk, return_scores: true }),
  });
  return { status: res.status, json: (await res.json()) as any };
}

/** Search-R1's `_passages2string`: reads document.contents, first line the title. */
function passages2string(result: { document: { contents: string } }[]): string {
  return result
    .map((d, i) => {
      const [title, ...rest] = d.document.contents.split('\n');
      return `Doc ${i + 1}(Title: ${title}) ${rest.join('\n')}\n`;
    })
    .join('');
}

test('Search-R1 request shape with return_scores: one list per query of {document: {id, contents}, score}', async () => {
  const queries = ['Who wrote Hamlet', 'capital city', 'nothingmatcheszzq'];
  const r = await searchR1Client(`${base}/retrieve`, queries, 2);
  assert.equal(r.status, 200);
  assert.deepEqual(Object.keys(r.json), ['result']);
  assert.equal(r.json.result.length, 3);
  for (const [i, q] of queries.entries()) {
    const want = reference.search(q, 2);
    assert.deepEqual(
      r.json.result[i],
      want.map((h) => ({ document: { id: h.id, contents: h.contents }, score: h.score })),
    );
    for (const item of r.json.result[i])
      assert.equal(item.document.contents, corpus.find((p) => p.id === item.document.id)!.contents);
  }
  assert.deepEqual(r.json.result[2], []);
  assert.match(passages2string(r.json.result[0]), /^Doc 1\(Title: "/);
});

test('without return_scores the inner items are the documents; topk missing or null falls back to 3', async () => {
  for (const body of [
    { queries: ['film director'] },
    { queries: ['film director'], topk: null, return_scores: false },
    { queries: ['film director'], topk: 0 },
  ]) {
    const res = await fetch(`${base}/retrieve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, JSON.stringify(body));
    const json = (await res.json()) as any;
    assert.deepEqual(json.result, [
      reference.search('film director', 3).map((h) => ({ id: h.id, contents: h.contents })),
    ]);
  }
});

test("verl's search tool request (Content-Type + Accept, return_scores true) and a caller segment", async () => {
  const res = await fetch(`${base}/verl-run-1/retrieve`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ queries: ['Evan Morris lobbyist'], topk: 3, return_scores: true }),
  });
  assert.equal(res.status, 200);
  const json = (await res.json()) as any;
  assert.equal(json.result[0][0].document.id, reference.search('Evan Morris lobbyist', 3)[0].id);
});

test('the token in the path is checked; the retrieve endpoint also takes the bearer header; bad bodies are 400s', async () => {
  for (const url of [
    `${server.url}/t/wrong/retrieve`,
    `${server.url}/t//retrieve`,
    `${server.url}/retrieve`,
    `${server.url}/t/${server.token}x/retrieve`,
  ]) {
    const r = await searchR1Client(url, ['x'], 1);
    assert.equal(r.status, 401, url);
    assert.equal(r.json.error.code, 'unauthorized');
  }
  const withHeader = await fetch(`${server.url}/retrieve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token}` },
    body: JSON.stringify({ queries: ['Evan Morris lobbyist'], topk: 1 }),
  });
  assert.equal(withHeader.status, 200);
  // Any endpoint accepts the path token.
  const health = await fetch(`${base}/v1/health`);
  assert.equal(health.status, 200);
  const bad = await fetch(`${base}/retrieve`, { method: 'POST', body: JSON.stringify({ queries: 'Hamlet' }) });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as any).error.path, 'queries');
});

test('tool health per caller: calls, failures, queries, empty results, latency quantiles', async () => {
  const caller = 'health-probe';
  await searchR1Client(`${base}/${caller}/retrieve`, ['Evan Morris lobbyist', 'zzqnothing'], 2);
  await searchR1Client(`${base}/${caller}/retrieve`, ['zzqnothing'], 2);
  await fetch(`${base}/${caller}/retrieve`, { method: 'POST', body: '{"queries": 5}' });
  const res = await fetch(`${base}/v1/tool-health`);
  assert.equal(res.status, 200);
  const h = ((await res.json()) as any).callers[caller];
  assert.equal(h.calls, 3);
  assert.equal(h.failures, 1);
  assert.equal(h.queries, 3);
  assert.equal(h.empty_results, 2);
  assert.ok(h.latency_ms.p50 > 0 && h.latency_ms.p99 >= h.latency_ms.p50);
  assert.match(h.last_error, /^invalid_request/);
  // Another caller is counted apart; unauthenticated calls are not counted at all.
  await searchR1Client(`${server.url}/t/nope/${caller}/retrieve`, ['Evan Morris lobbyist'], 1);
  const again = ((await (await fetch(`${base}/v1/tool-health`)).json()) as any).callers;
  assert.equal(again[caller].calls, 3);
});
