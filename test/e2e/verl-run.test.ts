// Real-editor proof: a verl run CoA Studio did not start (test/fixtures/verl: a metrics file and rollout
// dumps written the way verl writes them) watched in code-server with the packaged extension — "CoA: Watch verl/TRL
// Run…" lists the metrics file found in the workspace, the panel draws verl's metrics with the core's alert, and a
// click on a step lists that step's dump rows, read by the host; the tool-health table is polled by the host from a
// real environment server whose retrieve URL is given; the Runs view lists the metrics file and opens it.
// Screenshots: .cache/artifacts/e2e/verl-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pickQuick, repoRoot, runCommand, startEditor, webviewFrame, type Editor } from './harness';
import { startEnvServer, type EnvServer } from '../../src/env/server';

const FIX = join(repoRoot, 'test', 'fixtures', 'verl');
const read = (p: string) => readFileSync(join(FIX, p), 'utf8');

let ed: Editor;
let env: EnvServer;
let envDir: string;
before(async () => {
  envDir = mkdtempSync(join(tmpdir(), 'coa-e2e-verl-env-'));
  env = await startEnvServer({
    corpus: join(repoRoot, 'examples/data/search-r1/corpus_example.jsonl'),
    indexDir: join(envDir, 'idx'),
  });
  ed = await startEditor({
    name: 'verl-run',
    files: {
      'experiments/search_r1/metrics.jsonl': read('metrics.jsonl'),
      'experiments/search_r1/rollouts/1.jsonl': read('rollouts/1.jsonl'),
      'experiments/search_r1/rollouts/2.jsonl': read('rollouts/2.jsonl'),
      'experiments/search_r1/rollouts/3.jsonl': read('rollouts/3.jsonl'),
    },
  });
});
after(async () => {
  await ed?.close();
  await env?.close();
  if (envDir) rmSync(envDir, { recursive: true, force: true });
});

test('Watch verl/TRL Run: the metrics file is found, charted with the alert, a step lists its dump rows', async () => {
  await runCommand(ed.page, 'CoA: Watch verl/TRL Run…');
  await pickQuick(ed.page, 'metrics.jsonl', 'CoA: Watch verl/TRL Run');
  // The retrieval URL verl's search tool would use (a caller segment): the host polls its tool health.
  const retrieveUrl = `${env.url}/t/${env.token}/verl-grpo/retrieve`;
  for (const queries of [['Evan Morris lobbyist'], ['zzqnothing']]) {
    await fetch(retrieveUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queries, topk: 3, return_scores: true }),
    });
  }
  await ed.page
    .locator('.quick-input-widget .quick-input-title', { hasText: 'Tool health' })
    .waitFor({ timeout: 60_000 });
  await ed.page.locator('.quick-input-widget input').fill(retrieveUrl);
  await ed.page.keyboard.press('Enter');
  const frame = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('.chart[data-metric="critic/score/mean"].drawn').count()) > 0,
    90_000,
  );
  assert.deepEqual(await frame.locator('#tabs .tab').allTextContents(), ['verl']);
  assert.equal(await frame.locator('.chart[data-metric="critic/score/mean"]').getAttribute('data-points'), '16');
  assert.deepEqual(await frame.locator('#alerts .alert-group .title').allTextContents(), ['1 × tool-call explosion']);
  const health = frame.locator('#tool-health tr[data-caller="verl-grpo"] td');
  await health.first().waitFor({ timeout: 30_000 });
  assert.deepEqual((await health.allTextContents()).slice(0, 5), ['verl-grpo', '2', '0 (0.0%)', '2', '1 (50.0%)']);
  await ed.shot('verl-panel');
  // Click step 2 on the score chart: the host reads rollouts/2.jsonl.
  const over = frame.locator('.chart[data-metric="critic/score/mean"] .u-over');
  const box = (await over.boundingBox())!;
  const list = frame.locator('#step-rollouts ul.step-rollouts');
  for (const x of [0.02, 0.05, 0.08, 0.1]) {
    await over.click({ position: { x: box.width * x, y: box.height * 0.5 } });
    if (
      await list.waitFor({ timeout: 10_000 }).then(
        () => true,
        () => false,
      )
    )
      break;
  }
  const step = Number(await list.getAttribute('data-step'));
  assert.ok([1, 2, 3].includes(step), `clicked step ${step}`);
  const ids = await list.locator('li[data-id]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id));
  assert.deepEqual(
    ids,
    Array.from({ length: 8 }, (_, i) => `verl-${step}-${i}`),
  );
  await ed.shot('verl-step-rollouts');
});

test('the Runs view lists the verl metrics file found in the workspace', async () => {
  await ed.page
    .locator(
      '.activitybar .action-item a[aria-label^="CoA Studio"], .activitybar .action-item[aria-label^="CoA Studio"]',
    )
    .first()
    .click();
  const row = ed.page.locator('.sidebar .monaco-list-row', { hasText: 'metrics' }).first();
  await row.waitFor({ timeout: 60_000 });
  assert.match((await row.textContent()) ?? '', /verl · experiments\/search_r1\/metrics\.jsonl/);
  await ed.shot('verl-runs-view');
});
