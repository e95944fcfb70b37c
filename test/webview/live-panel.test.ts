// The live panel page in headless Chromium: a recorded trainer event stream (test/fixtures/live-panel, from a real
// `coa_trainer train` run of pretrain + sft1) fed at 1,000 events/s for 30 s as the extension host would (batched
// postMessage); then grouping, overlays, alerts, rollouts, smoothing and the embedded initial state.
// COA_PANEL_STREAM_S shortens the stream for local iteration; the suite runs the full 30 s.
// The fixture was recorded with conftest.py's TINY config (pretrain and sft1: steps 20, log_every 1, sample_every 5):
//   PYTHONPATH=src/trainer .venv/bin/python -m coa_trainer train --stage pretrain --config tiny.json --run-dir /tmp/panelrec/run --max-steps 20
//   PYTHONPATH=src/trainer .venv/bin/python -m coa_trainer train --stage sft1 --config tiny.json --run-dir /tmp/panelrec/run --max-steps 20
// Screenshots: test-results/live-panel/*.png (git-ignored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS, ROOT, chartPoints, openPanel, shownCount } from './live-panel-harness';
import type { TrainerEvent } from '../../src/core/events';
import { parseEvent } from '../../src/core/events';

const FIXTURE = join(ROOT, 'test/fixtures/live-panel/tiny-pretrain-sft1.events.jsonl');
const RATE = 1000; // events per second
const SECONDS = Number(process.env.COA_PANEL_STREAM_S ?? 30);
const RUN = { key: 'file:///work/runs/tiny', label: 'tiny' };

function recorded(): TrainerEvent[] {
  return readFileSync(FIXTURE, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      const p = parseEvent(l);
      if (!p.ok) throw new Error(`${FIXTURE}:${i + 1}: ${p.error}`);
      return p.event;
    });
}

/** `n` events: the recording repeated; each repeat's stages get a suffix, so they follow the previous ones. */
function stream(n: number): TrainerEvent[] {
  const base = recorded();
  const span = base[base.length - 1].time - base[0].time + 1;
  const out: TrainerEvent[] = [];
  for (let k = 0; out.length < n; k++) {
    for (const e of base) {
      if (out.length === n) break;
      const copy = structuredClone(e) as TrainerEvent & { stage?: string };
      copy.time += k * span;
      if (k > 0 && copy.stage) copy.stage = `${copy.stage}-${k}`;
      out.push(copy);
    }
  }
  return out;
}

test(`a recorded stream at ${RATE} events/s for ${SECONDS} s: none lost, charts updated, no console error`, { timeout: (SECONDS + 90) * 1000 }, async (t) => {
  const total = RATE * SECONDS;
  const events = stream(total);
  const lossPoints = events.filter((e) => e.type === 'metrics' && 'loss' in e.values).length;
  const evalPoints = events.filter((e) => e.type === 'eval' && 'em' in e.metrics).length;
  const h = await openPanel({ runs: [RUN], events: {}, smoothing: 0 });
  try {
    assert.equal(await shownCount(h.page), 0);
    // The feeder runs in the page like the host's message channel: catch-up ticks keep the rate at 1 event/ms.
    await h.page.evaluate(
      ({ events, run, rate }) => {
        const w = window as unknown as { __feed: { sent: number; done: boolean } };
        w.__feed = { sent: 0, done: false };
        const start = performance.now();
        const timer = setInterval(() => {
          const due = Math.min(events.length, Math.floor(((performance.now() - start) * rate) / 1000));
          if (due > w.__feed.sent) {
            window.postMessage({ type: 'events', run, events: events.slice(w.__feed.sent, due) }, '*');
            w.__feed.sent = due;
          }
          if (w.__feed.sent === events.length) {
            clearInterval(timer);
            w.__feed.done = true;
          }
        }, 50);
      },
      { events, run: RUN.key, rate: RATE },
    );
    // Charts move while the stream is running.
    const seen: number[] = [];
    const canvases: string[] = [];
    for (let t = 1; t <= 3; t++) {
      await h.page.waitForTimeout((SECONDS * 1000) / 4);
      seen.push(await chartPoints(h.page, 'loss'));
      canvases.push(await h.page.locator('.chart[data-metric="loss"] canvas').evaluate((c) => (c as HTMLCanvasElement).toDataURL()));
    }
    await h.page.waitForFunction(() => (window as unknown as { __feed: { done: boolean } }).__feed.done, undefined, { timeout: 60_000, polling: 100 });
    const sent = await h.page.evaluate(() => (window as unknown as { __feed: { sent: number } }).__feed.sent);
    assert.equal(sent, total);
    await h.page.waitForFunction((n) => document.body.dataset.received === String(n), total, { timeout: 10_000, polling: 100 });
    await h.page.waitForTimeout(400); // one more render period, so the charts show the last batch
    assert.equal(await shownCount(h.page), total, 'the count shown equals the count sent');
    assert.ok(seen[0] > 0 && seen[0] < seen[1] && seen[1] < seen[2], `loss chart grew during the stream: ${seen}`);
    assert.equal(new Set(canvases).size, 3, 'the loss chart was redrawn');
    assert.equal(await chartPoints(h.page, 'loss'), lossPoints);
    assert.equal(await chartPoints(h.page, 'eval/dev/em'), evalPoints);
    for (const metric of ['lr', 'grad_norm', 'tokens_per_s']) assert.ok((await chartPoints(h.page, metric)) > 0, metric);
    assert.ok((await h.page.locator('#samples li[data-id]').count()) > 0, 'sampled rollouts listed');
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-stream.png'), fullPage: false });
    const [renders, totalMs, maxMs] = ((await h.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0').split(' ').map(Number);
    t.diagnostic(`${total} events in ${SECONDS} s: ${renders} renders, mean ${(totalMs / renders).toFixed(1)} ms, max ${maxMs.toFixed(1)} ms; main-thread share ${((100 * totalMs) / (SECONDS * 1000)).toFixed(1)}%`);
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});

/** Metrics the RL stages emit (and one nobody has heard of) at a few steps. */
function rlEvents(run: string, shift: number): TrainerEvent[] {
  const names = ['reward_mean', 'em', 'f1', 'tc', 'tp', 'tool_failure_rate', 'malformed_call_rate', 'truncation_ratio', 'all_correct_groups', 'all_wrong_groups', 'kl', 'entropy', 'clip_frac', 'grad_norm', 'gen_tokens_per_s', 'train_tokens_per_s', 'brand_new_metric'];
  const out: TrainerEvent[] = [{ v: 1, time: 1, run, type: 'run_started', stage: 'rl1', config: {}, total_steps: 10, device: 'cpu', world_size: 1 }];
  for (let step = 1; step <= 10; step++) {
    out.push({ v: 1, time: 1 + step, run, type: 'metrics', stage: 'rl1', step, values: Object.fromEntries(names.map((n, i) => [n, step === 4 && n === 'kl' ? null : Math.sin(step + i + shift)])) });
  }
  out.push({ v: 1, time: 20, run, type: 'alert', stage: 'rl1', step: 7, kind: 'all_wrong_groups', severity: 'warning', message: '62% of groups have no correct rollout' });
  out.push({
    v: 1,
    time: 21,
    run,
    type: 'sample',
    stage: 'rl1',
    step: 8,
    record: { id: `rl1-8-${run}`, question: 'who founded zizuvun?', golden_answers: ['morun'], response: '<think>search it</think><search>zizuvun founder</search>', dialect: 'coa' },
  });
  return out;
}

test('RL metrics grouped by name, unknown ones under Other, runs overlaid, alert banner with step, rollout click, smoothing saved', { timeout: 60_000 }, async () => {
  const a = { key: 'file:///runs/a', label: 'a' };
  const b = { key: 'file:///runs/b', label: 'b' };
  const initialEvents = rlEvents('a', 0);
  const h = await openPanel({ runs: [a], events: { [a.key]: initialEvents }, smoothing: 0.6 });
  try {
    // The embedded initial state is drawn without any message.
    assert.equal(await shownCount(h.page), initialEvents.length);
    const groupOf = async (metric: string) => h.page.locator(`.chart[data-metric="${metric}"]`).evaluate((n) => n.closest('[data-group]')?.getAttribute('data-group'));
    const expected: Record<string, string> = {
      reward_mean: 'loss', em: 'quality', f1: 'quality', tc: 'agent', tp: 'agent', tool_failure_rate: 'agent', malformed_call_rate: 'agent',
      truncation_ratio: 'agent', all_correct_groups: 'agent', all_wrong_groups: 'agent', kl: 'policy', entropy: 'policy', clip_frac: 'policy',
      grad_norm: 'policy', gen_tokens_per_s: 'throughput', train_tokens_per_s: 'throughput', brand_new_metric: 'other',
    };
    for (const [metric, group] of Object.entries(expected)) assert.equal(await groupOf(metric), group, metric);
    assert.equal(await chartPoints(h.page, 'kl'), 10);
    // The alert, as a banner naming its step.
    const banner = h.page.locator('#alerts .banner[data-kind="all_wrong_groups"]');
    assert.match((await banner.textContent()) ?? '', /rl1 step 7.*all_wrong_groups.*62% of groups/);
    // A second run overlaid: each chart gets a series per run.
    await h.page.evaluate(({ run, events }) => {
      window.postMessage({ type: 'addRun', run }, '*');
      window.postMessage({ type: 'events', run: run.key, events }, '*');
    }, { run: b, events: rlEvents('b', 1) });
    await h.page.waitForFunction((n) => document.body.dataset.received === String(n), initialEvents.length * 2, { timeout: 5000 });
    await h.page.waitForTimeout(400);
    assert.equal(await h.page.locator('#runs .run').count(), 2);
    assert.equal(await h.page.locator('.chart[data-metric="reward_mean"] .u-legend .u-series').count(), 3); // step + 2 runs
    // Clicking a rollout asks the host to open it.
    await h.page.locator('#samples li[data-id="rl1-8-b"]').click();
    const posted = await h.page.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted);
    const open = posted.find((m) => m.type === 'openSample') as { run: string; stage: string; step: number; id: string; record: { id: string } } | undefined;
    assert.deepEqual(open && { run: open.run, stage: open.stage, step: open.step, id: open.id, rid: open.record.id }, { run: b.key, stage: 'rl1', step: 8, id: 'rl1-8-b', rid: 'rl1-8-b' });
    // The state kept for a window reload: runs and smoothing.
    const state = await h.page.evaluate(() => (window as unknown as { __state: unknown }).__state);
    assert.deepEqual(state, { runs: [a, b], smoothing: 0.6 });
    // A reset (file truncated) replaces the run's data.
    await h.page.evaluate(({ key, events }) => window.postMessage({ type: 'events', run: key, events, reset: true }, '*'), { key: a.key, events: rlEvents('a', 2).slice(0, 4) });
    await h.page.waitForTimeout(500);
    assert.equal(await chartPoints(h.page, 'kl'), 10); // b still has 10 steps on the same x
    // Malformed lines the host skipped: the first three in full, the rest counted.
    const issues = [1, 2, 3, 4, 5].map((line) => ({ file: '/runs/a/events.jsonl', line, column: 7, message: 'invalid JSON' }));
    await h.page.evaluate((msg) => window.postMessage(msg, '*'), { type: 'issues', run: a.key, issues });
    await h.page.locator('#issues .more').waitFor({ timeout: 5000 });
    assert.equal(await h.page.locator('#issues .banner').count(), 3);
    assert.match((await h.page.locator('#issues .banner').first().textContent()) ?? '', /\/runs\/a\/events\.jsonl:1:7: invalid JSON/);
    assert.match((await h.page.locator('#issues .more').textContent()) ?? '', /^2 more malformed events/);
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-rl-overlay.png') });
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});
