// Runs CoA Studio did not start, in the live panel page (headless Chromium): a verl metrics file read through the
// verl adapter exactly as the extension host reads it (src/core/verl/runTail.ts), its charts grouped by verl's
// namespaces and the core's tool-call-explosion alert; the tool-health table fed from a real environment server's
// GET /v1/tool-health after Search-R1-style /retrieve calls. (The TRL side: src/trainer/tests/test_trl_integration.py
// runs GRPOTrainer and checks its events file with test/webview/check-events-file.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ARTIFACTS, ROOT, chartPoints, openPanel } from './live-panel-harness';
import { verlTail } from '../../src/core/verl/runTail';
import { startEnvServer } from '../../src/env/server';
import { toolHealthUrlOf } from '../../src/env/toolHealth';

const FIX = join(ROOT, 'test/fixtures/verl');

test('a verl metrics file: charts per verl namespace, the tool-call explosion alert, tool health from the env server', {
  timeout: 90_000,
}, async (t) => {
  const run = { key: 'file:///work/verl/search-r1-grpo.jsonl', label: 'search-r1-grpo', engine: 'verl' as const };
  const batch = await verlTail(join(FIX, 'metrics.jsonl'), {
    rolloutDir: join(FIX, 'rollouts'),
    run: run.label,
  }).read();
  assert.deepEqual(batch.issues, []);
  const h = await openPanel({ runs: [run], events: { [run.key]: batch.events }, smoothing: 0 });
  t.after(() => h.close());
  await h.page.locator('.chart[data-metric="critic/score/mean"]').waitFor({ timeout: 10_000 });
  assert.deepEqual(await h.page.locator('#tabs .tab').allTextContents(), ['verl']);
  const groupOf = (metric: string) =>
    h.page
      .locator(`.chart[data-metric="${metric}"]`)
      .evaluate((n) => n.closest('section[data-group]')?.getAttribute('data-group'));
  for (const [metric, group] of Object.entries({
    'critic/score/mean': 'loss',
    'actor/entropy': 'policy',
    'response_length/mean': 'length',
    'tool_call_counts/mean': 'agent',
    'num_turns/mean': 'agent',
    'perf/throughput': 'throughput',
    'coa/all_wrong_groups': 'agent',
  })) {
    assert.equal(await groupOf(metric), group, metric);
  }
  for (const metric of ['critic/score/mean', 'tool_call_counts/mean']) {
    await h.page.locator(`.chart[data-metric="${metric}"]`).scrollIntoViewIfNeeded();
    await h.page.waitForFunction(
      (m) => Number(document.querySelector(`.chart[data-metric="${m}"]`)?.getAttribute('data-points')) === 16,
      metric,
      { timeout: 10_000 },
    );
    assert.equal(await chartPoints(h.page, metric), 16);
  }
  assert.deepEqual(await h.page.locator('#alerts .alert-group .title').allTextContents(), ['1 × tool-call explosion']);

  // Tool health: a real server, Search-R1-style calls under a caller name, the host's poll answer posted to the page.
  const dir = mkdtempSync(join(tmpdir(), 'coa-ext-runs-'));
  const server = await startEnvServer({
    corpus: join(ROOT, 'examples/data/search-r1/corpus_example.jsonl'),
    indexDir: join(dir, 'idx'),
  });
  t.after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const retrieveUrl = `${server.url}/t/${server.token}/verl-grpo/retrieve`;
  for (const queries of [['Evan Morris lobbyist'], ['zzqnothing', 'Evan Morris']]) {
    await fetch(retrieveUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queries, topk: 3, return_scores: true }),
    });
  }
  await fetch(retrieveUrl, { method: 'POST', body: 'not json' });
  const healthUrl = toolHealthUrlOf(retrieveUrl)!;
  const health = (await (await fetch(healthUrl)).json()) as { callers: Record<string, unknown> };
  await h.page.evaluate(({ run, callers }) => window.postMessage({ type: 'toolHealth', run, callers }, '*'), {
    run: run.key,
    callers: health.callers,
  });
  const row = h.page.locator('#tool-health tr[data-caller="verl-grpo"] td');
  await row.first().waitFor({ timeout: 5000 });
  const cells = await row.allTextContents();
  assert.deepEqual(cells.slice(0, 5), ['verl-grpo', '3', '1 (33.3%)', '3', '1 (33.3%)']);
  assert.match(cells[5], /ms$/);
  await h.page.screenshot({ path: join(ARTIFACTS, 'verl-run.png'), fullPage: true });
  assert.deepEqual(h.errors, []);
});

test('tool-health URLs: only loopback servers with a path token', () => {
  assert.equal(toolHealthUrlOf('http://127.0.0.1:8000/t/abc/retrieve'), 'http://127.0.0.1:8000/t/abc/v1/tool-health');
  assert.equal(
    toolHealthUrlOf('http://localhost:8000/t/abc/verl/retrieve'),
    'http://localhost:8000/t/abc/v1/tool-health',
  );
  assert.equal(toolHealthUrlOf('http://example.com/t/abc/retrieve'), undefined);
  assert.equal(toolHealthUrlOf('http://127.0.0.1:8000/retrieve'), undefined);
  assert.equal(toolHealthUrlOf('not a url'), undefined);
});
