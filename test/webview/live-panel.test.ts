// The live panel page in headless Chromium: a recorded trainer event stream (test/fixtures/live-panel, from a real
// `coa_trainer train` run of pretrain + sft1) fed at 1,000 events/s for 30 s as the extension host would (batched
// postMessage); the recorded demo pipeline (stage tabs, RL-2 / RL-2-OTC overlay, hover readout, results table,
// grouped alerts, filter, pins, rollouts of a clicked step); then grouping, runs overlaid, issues and resets.
// COA_PANEL_STREAM_S shortens the stream for local iteration; the suite runs the full 30 s.
// The fixture was recorded with conftest.py's TINY config (pretrain and sft1: steps 20, log_every 1, sample_every 5):
//   PYTHONPATH=src/trainer .venv/bin/python -m coa_trainer train --stage pretrain --config tiny.json --run-dir /tmp/panelrec/run --max-steps 20
//   PYTHONPATH=src/trainer .venv/bin/python -m coa_trainer train --stage sft1 --config tiny.json --run-dir /tmp/panelrec/run --max-steps 20
// Screenshots: test-results/live-panel/*.png (git-ignored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS, ROOT, chartPoints, openPanel, shownCount, waitForPoints } from './live-panel-harness';
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

/**
 * `n` events: each stage of the recording repeated in turn with its steps shifted, as one long stage (pretrain for
 * the first fifth, sft1 for the rest), so every point has its own step.
 */
function stream(n: number): TrainerEvent[] {
  const base = recorded();
  const stages = ['pretrain', 'sft1'];
  const out: TrainerEvent[] = [];
  stages.forEach((stage, si) => {
    const part = base.filter((e) => (e as { stage?: string }).stage === stage);
    const span = Math.max(...part.map((e) => (e as { step?: number }).step ?? 0));
    const until = si === stages.length - 1 ? n : Math.floor(n / 5);
    for (let k = 0; out.length < until; k++) {
      for (const e of part) {
        if (out.length === until) break;
        if (k > 0 && e.type === 'run_started') continue; // one stage, logged on
        const copy = structuredClone(e) as TrainerEvent & { step?: number };
        if (copy.step !== undefined) copy.step += k * span;
        out.push(copy);
      }
    }
  });
  return out;
}

test(`a recorded stream at ${RATE} events/s for ${SECONDS} s: none lost, charts updated, no console error`, {
  timeout: (SECONDS + 90) * 1000,
}, async (t) => {
  const total = RATE * SECONDS;
  const events = stream(total);
  const lossPoints = new Set(
    events
      .filter((e) => e.type === 'metrics' && e.stage === 'sft1' && 'loss' in e.values)
      .map((e) => (e as { step: number }).step),
  ).size;
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
    // Charts move while the stream is running: looked at when the feeder has sent a quarter, a half, three quarters.
    const seen: number[] = [];
    const canvases: string[] = [];
    for (let t = 1; t <= 3; t++) {
      await h.page.waitForFunction(
        (n) => (window as unknown as { __feed: { sent: number } }).__feed.sent >= n,
        Math.floor((total * t) / 4),
        { timeout: 60_000, polling: 100 },
      );
      // …and the panel has drawn what it received by then.
      await h.page.waitForFunction((n) => Number(document.body.dataset.received) >= n, Math.floor((total * t) / 4), {
        timeout: 10_000,
        polling: 50,
      });
      seen.push(await chartPoints(h.page, 'loss'));
      canvases.push(
        await h.page.locator('.chart[data-metric="loss"] canvas').evaluate((c) => (c as HTMLCanvasElement).toDataURL()),
      );
    }
    await h.page.waitForFunction(() => (window as unknown as { __feed: { done: boolean } }).__feed.done, undefined, {
      timeout: 60_000,
      polling: 100,
    });
    const sent = await h.page.evaluate(() => (window as unknown as { __feed: { sent: number } }).__feed.sent);
    assert.equal(sent, total);
    await h.page.waitForFunction((n) => document.body.dataset.received === String(n), total, {
      timeout: 10_000,
      polling: 100,
    });
    await waitForPoints(h.page, 'loss', lossPoints); // the charts show the last batch
    assert.equal(await shownCount(h.page), total, 'the count shown equals the count sent');
    assert.ok(seen[0] > 0 && seen[0] < seen[1] && seen[1] < seen[2], `loss chart grew during the stream: ${seen}`);
    assert.equal(new Set(canvases).size, 3, 'the loss chart was redrawn');
    assert.equal(
      await h.page.evaluate(() => document.body.dataset.tab),
      'sft1',
      'the panel follows the stage being trained',
    );
    assert.equal(await chartPoints(h.page, 'loss'), lossPoints);
    assert.equal(await h.page.locator('.tab[data-tab="results"]').count(), 1, 'evaluations went to the results tab');
    for (const metric of ['lr', 'grad_norm', 'tokens_per_s'])
      assert.ok((await chartPoints(h.page, metric)) > 0, metric);
    assert.ok((await h.page.locator('#samples li[data-id]').count()) > 0, 'sampled rollouts listed');
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-stream.png'), fullPage: false });
    const [renders, totalMs, maxMs] = ((await h.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0')
      .split(' ')
      .map(Number);
    t.diagnostic(
      `${total} events in ${SECONDS} s: ${renders} renders, mean ${(totalMs / renders).toFixed(1)} ms, max ${maxMs.toFixed(1)} ms; main-thread share ${((100 * totalMs) / (SECONDS * 1000)).toFixed(1)}%`,
    );
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});

const DEMO = join(ROOT, 'test/fixtures/live-panel/demo-pipeline.events.jsonl');
const DEMO_RUN = { key: 'file:///work/runs/demo', label: 'demo' };
const readEvents = (file: string): TrainerEvent[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const p = parseEvent(l);
      if (!p.ok) throw new Error(`${file}: ${p.error}`);
      return p.event;
    });
const alertEvent = (
  run: string,
  stage: string,
  step: number,
  kind: 'tool_call_explosion' | 'all_wrong_groups',
  message: string,
): TrainerEvent => ({ v: 1, time: 1, run, type: 'alert', stage, step, kind, severity: 'warning', message });
const posted = (page: import('playwright-core').Page) =>
  page.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted);

test('the demo pipeline: stage tabs, RL-2 and RL-2-OTC overlaid, hover readout, whole steps, results table, grouped alerts, filter, pins, rollouts of a step', {
  timeout: 90_000,
}, async () => {
  const events = readEvents(DEMO);
  const logged = (stage: string, step: number, name: string) =>
    (
      events.find((e) => e.type === 'metrics' && e.stage === stage && e.step === step) as
        | { values: Record<string, number> }
        | undefined
    )?.values[name];
  const h = await openPanel({ runs: [DEMO_RUN], events: { [DEMO_RUN.key]: events }, smoothing: 0.6 });
  try {
    await h.page.locator('.chart[data-metric="reward_mean"].drawn').waitFor({ timeout: 10_000 });
    // Tabs: one per stage family in pipeline order, the siblings together, the results table last; the panel opens on
    // the stage trained last.
    assert.deepEqual(await h.page.locator('#tabs .tab').allTextContents(), [
      'Pretrain',
      'SFT-1',
      'SFT-2',
      'SFT-3',
      'RL-1',
      'RL-2 · RL-2-OTC',
      'Results',
    ]);
    assert.equal(await h.page.locator('#tabs .tab[aria-selected="true"]').getAttribute('data-tab'), 'rl2');
    assert.match(
      (await h.page.locator('#tab-head .description[data-stage="rl2-otc"]').textContent()) ?? '',
      /Sibling of RL-2 from the same RL-1 result/,
    );
    // One legend entry per overlaid line.
    assert.deepEqual(await h.page.locator('#legend .legend-item b').allTextContents(), ['RL-2', 'RL-2-OTC']);
    // Whole-step ticks on the step axis.
    const xticks = ((await h.page.locator('.chart[data-metric="reward_mean"]').getAttribute('data-xticks')) ?? '')
      .split(' ')
      .map(Number);
    assert.ok(xticks.length >= 2 && xticks.every((v) => Number.isInteger(v)), `x ticks ${xticks}`);
    // Hover: the readout shows every line's value at the step under the pointer (the logged raw values).
    const over = (await h.page.locator('.chart[data-metric="reward_mean"] .u-over').boundingBox())!;
    await h.page.mouse.move(over.x + over.width * 0.5, over.y + over.height * 0.5);
    const readout = h.page.locator('.chart[data-metric="reward_mean"] .readout');
    await h.page.waitForFunction(
      () =>
        !/latest/.test(
          document.querySelector('.chart[data-metric="reward_mean"] .readout .step')?.textContent ?? 'latest',
        ),
      undefined,
      { timeout: 5000 },
    );
    const step = Number(await readout.getAttribute('data-step'));
    assert.ok(step > 1 && step < 64, `hovered step ${step}`);
    const raws = await readout
      .locator('.row[data-line]')
      .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.raw));
    assert.deepEqual(raws.map(Number), [logged('rl2', step, 'reward_mean'), logged('rl2-otc', step, 'reward_mean')]);
    // The other charts of the tab follow the same step (synchronised cursors).
    assert.equal(
      await h.page.locator('.chart[data-metric="reward_std"] .readout').getAttribute('data-step'),
      String(step),
    );
    // Clicking the step asks the host for its rollouts; the host's answer is listed; a row opens that rollout.
    await h.page.mouse.click(over.x + over.width * 0.5, over.y + over.height * 0.5);
    // The trainer writes rollouts every sample_every steps (the steps of its sample events): the nearest one is asked
    // (once the click has waited to be no double click).
    await h.page.waitForFunction(
      () => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'stepRollouts'),
      undefined,
      { timeout: 5000 },
    );
    const ask = (await posted(h.page)).find((m) => m.type === 'stepRollouts') as
      | { run: string; stage: string; step: number }
      | undefined;
    assert.ok(ask && ask.run === DEMO_RUN.key && ['rl2', 'rl2-otc'].includes(ask.stage), JSON.stringify(ask));
    const sampled = events
      .filter((e) => e.type === 'sample' && e.stage === ask.stage)
      .map((e) => (e as { step: number }).step);
    const nearest = sampled.reduce((a, b) => (Math.abs(b - step) < Math.abs(a - step) ? b : a));
    assert.equal(ask.step, nearest, `clicked ${step}, sampled steps ${sampled}`);
    const items = [0, 1, 2].map((i) => ({
      id: `q${i}-${nearest}-${i}`,
      line: 100 + i,
      question: `question ${i}`,
      reward: i === 1 ? 1 : 0,
      toolCalls: 2,
    }));
    await h.page.evaluate((msg) => window.postMessage(msg, '*'), {
      type: 'rollouts',
      run: ask.run,
      stage: ask.stage,
      step: nearest,
      items,
      total: 3,
    });
    await h.page.locator('#step-rollouts li[data-id]').first().waitFor({ timeout: 5000 });
    assert.equal(await h.page.locator('#step-rollouts li[data-id]').count(), 3);
    assert.match(
      (await h.page.locator('#step-rollouts h3').textContent()) ?? '',
      new RegExp(`step ${nearest} · 3 rollouts`),
    );
    await h.page.locator(`#step-rollouts li[data-id="q1-${nearest}-1"]`).click();
    const open = (await posted(h.page)).find((m) => m.type === 'openRollout');
    assert.deepEqual(
      open,
      { type: 'openRollout', ref: { run: ask.run, stage: ask.stage, file: 'rollouts', step: nearest, line: 101 } },
      'a reference: the rollouts of the step listed, the line',
    );
    // Alerts: grouped by kind with a count, marked on the charts at their steps.
    const alerts = [
      alertEvent('demo', 'rl2', 12, 'tool_call_explosion', 'TC 3.1 vs 1.4'),
      alertEvent('demo', 'rl2', 30, 'tool_call_explosion', 'TC 3.5 vs 1.4'),
      alertEvent('demo', 'rl2-otc', 20, 'tool_call_explosion', 'TC 3.0 vs 1.1'),
      alertEvent('demo', 'rl2', 40, 'all_wrong_groups', '62% of groups have no correct rollout'),
    ];
    await h.page.evaluate(({ run, events }) => window.postMessage({ type: 'events', run, events }, '*'), {
      run: DEMO_RUN.key,
      events: alerts,
    });
    await h.page.locator('#alerts .alert-group[data-kind="all_wrong_groups"]').waitFor({ timeout: 5000 });
    assert.deepEqual(await h.page.locator('#alerts .alert-group .title').allTextContents(), [
      '3 × tool-call explosion',
      '1 × all-wrong groups',
    ]);
    assert.doesNotMatch((await h.page.locator('#alerts').textContent()) ?? '', /more alerts/);
    await h.page.mouse.move(0, 0);
    await h.page.waitForFunction(
      () => document.querySelector('.chart[data-metric="reward_mean"]')?.getAttribute('data-alerts') === '4',
      undefined,
      { timeout: 5000 },
    );
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-demo-rl2.png') });
    // The legend hides and shows a line (in every chart of the tab and in the readout).
    await h.page.locator('#legend .legend-item[data-stage="rl2-otc"]').click();
    await h.page.locator('#legend .legend-item[data-stage="rl2-otc"][aria-pressed="false"]').waitFor({ timeout: 5000 });
    await h.page.locator('.chart[data-metric="reward_mean"].drawn').waitFor({ timeout: 5000 });
    assert.deepEqual(
      await h.page
        .locator('.chart[data-metric="reward_mean"] .readout .row[data-line]')
        .evaluateAll((r) => r.map((x) => (x as HTMLElement).dataset.line)),
      ['0'],
    );
    await h.page.locator('#legend .legend-item[data-stage="rl2-otc"]').click();
    await h.page.locator('.chart[data-metric="reward_mean"].drawn').waitFor({ timeout: 5000 });
    assert.equal(await h.page.locator('.chart[data-metric="reward_mean"] .readout .row[data-line]').count(), 2);
    // Filter: only matching charts stay; pins: a pinned chart moves to the top section and is remembered.
    await h.page.locator('#filter').fill('reward');
    const shown = await h.page
      .locator('#charts .chart:not([hidden])')
      .evaluateAll((n) => n.map((c) => (c as HTMLElement).dataset.metric));
    assert.ok(shown.length >= 2 && shown.every((m) => m!.includes('reward')), shown.join(' '));
    await h.page.locator('#filter').fill('');
    await h.page.locator('.chart[data-metric="tc"] .pin').click();
    assert.equal(await h.page.locator('[data-group="pinned"] .chart[data-metric="tc"]').count(), 1);
    const state = (await h.page.evaluate(() => (window as unknown as { __state: { pinned: string[] } }).__state)) as {
      pinned: string[];
    };
    assert.deepEqual(state.pinned, ['rl2\ntc']);
    // Results: the pipeline's settings as rows of a table with their measured values.
    await h.page.locator('.tab[data-tab="results"]').click();
    const rows = h.page.locator('#results-table tbody tr');
    assert.deepEqual(await rows.evaluateAll((r) => r.map((x) => (x as HTMLElement).dataset.stage)), [
      'no-tool',
      'workflow',
      'sft12',
      'sft-rl',
      'sft-rl-otc',
    ]);
    const results = JSON.parse(
      readFileSync(join(ROOT, 'test/fixtures/live-panel/demo-pipeline.results.json'), 'utf8'),
    ) as { rows: { setting: string; em: number }[] };
    for (const r of results.rows)
      assert.equal(
        await h.page.locator(`#results-table tr[data-stage="${r.setting}"] td[data-col="em"]`).textContent(),
        Number(r.em.toPrecision(4)).toString(),
        r.setting,
      );
    assert.equal(await h.page.locator('#stage-evals tbody tr').count(), 7);
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-demo-results.png') });
    // A second run compared: every line of the tab twice, labelled by run.
    await h.page.locator('.tab[data-tab="rl2"]').click();
    const b = { key: 'file:///work/runs/demo-b', label: 'demo-b' };
    await h.page.evaluate(
      ({ run, events }) => {
        window.postMessage({ type: 'addRun', run }, '*');
        window.postMessage({ type: 'events', run: run.key, events }, '*');
      },
      { run: b, events: events.filter((e) => e.type === 'metrics') },
    );
    await h.page.waitForFunction(() => document.querySelectorAll('#legend .legend-item').length === 4, undefined, {
      timeout: 5000,
    });
    assert.deepEqual(await h.page.locator('#legend .legend-item b').allTextContents(), [
      'demo · RL-2',
      'demo · RL-2-OTC',
      'demo-b · RL-2',
      'demo-b · RL-2-OTC',
    ]);
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});

/** Metrics the RL stages emit (and one nobody has heard of) at a few steps. */
function rlEvents(run: string, shift: number): TrainerEvent[] {
  const names = [
    'reward_mean',
    'em',
    'f1',
    'tc',
    'tp',
    'tool_failure_rate',
    'malformed_call_rate',
    'truncation_ratio',
    'all_correct_groups',
    'all_wrong_groups',
    'kl',
    'entropy',
    'clip_frac',
    'grad_norm',
    'gen_tokens_per_s',
    'train_tokens_per_s',
    'brand_new_metric',
  ];
  const out: TrainerEvent[] = [
    {
      v: 1,
      time: 1,
      run,
      type: 'run_started',
      stage: 'rl1',
      config: {},
      total_steps: 10,
      device: 'cpu',
      world_size: 1,
    },
  ];
  for (let step = 1; step <= 10; step++) {
    out.push({
      v: 1,
      time: 1 + step,
      run,
      type: 'metrics',
      stage: 'rl1',
      step,
      values: Object.fromEntries(
        names.map((n, i) => [n, step === 4 && n === 'kl' ? null : Math.sin(step + i + shift)]),
      ),
    });
  }
  out.push({
    v: 1,
    time: 20,
    run,
    type: 'alert',
    stage: 'rl1',
    step: 7,
    kind: 'all_wrong_groups',
    severity: 'warning',
    message: '62% of groups have no correct rollout',
  });
  out.push({
    v: 1,
    time: 21,
    run,
    type: 'sample',
    stage: 'rl1',
    step: 8,
    record: {
      id: `rl1-8-${run}`,
      question: 'who founded zizuvun?',
      golden_answers: ['morun'],
      response: '<think>search it</think><search>zizuvun founder</search>',
      dialect: 'coa',
    },
  });
  return out;
}

test('RL metrics grouped by name, unknown ones under Other, runs overlaid, alert group with step, sampled rollout click, smoothing saved', {
  timeout: 60_000,
}, async () => {
  const a = { key: 'file:///runs/a', label: 'a' };
  const b = { key: 'file:///runs/b', label: 'b' };
  const initialEvents = rlEvents('a', 0);
  const h = await openPanel({ runs: [a], events: { [a.key]: initialEvents }, smoothing: 0.6 });
  try {
    // The embedded initial state is drawn without any message.
    assert.equal(await shownCount(h.page), initialEvents.length);
    const groupOf = async (metric: string) =>
      h.page
        .locator(`.chart[data-metric="${metric}"]`)
        .evaluate((n) => n.closest('section[data-group]')?.getAttribute('data-group'));
    const expected: Record<string, string> = {
      reward_mean: 'loss',
      em: 'quality',
      f1: 'quality',
      tc: 'agent',
      tp: 'agent',
      tool_failure_rate: 'agent',
      malformed_call_rate: 'agent',
      truncation_ratio: 'agent',
      all_correct_groups: 'agent',
      all_wrong_groups: 'agent',
      kl: 'policy',
      entropy: 'policy',
      clip_frac: 'policy',
      grad_norm: 'policy',
      gen_tokens_per_s: 'throughput',
      train_tokens_per_s: 'throughput',
      brand_new_metric: 'other',
    };
    for (const [metric, group] of Object.entries(expected)) assert.equal(await groupOf(metric), group, metric);
    assert.equal(await chartPoints(h.page, 'kl'), 10);
    // The alert, as a group naming its stage and step.
    const group = h.page.locator('#alerts .alert-group[data-kind="all_wrong_groups"]');
    assert.match((await group.textContent()) ?? '', /1 × all-wrong groups.*62% of groups.*RL-1 step 7/);
    // A second run overlaid: one legend entry per run.
    await h.page.evaluate(
      ({ run, events }) => {
        window.postMessage({ type: 'addRun', run }, '*');
        window.postMessage({ type: 'events', run: run.key, events }, '*');
      },
      { run: b, events: rlEvents('b', 1) },
    );
    await h.page.waitForFunction((n) => document.body.dataset.received === String(n), initialEvents.length * 2, {
      timeout: 5000,
    });
    await h.page.locator('#legend .legend-item').nth(1).waitFor({ timeout: 5000 });
    assert.equal(await h.page.locator('#runs .run').count(), 2);
    assert.deepEqual(await h.page.locator('#legend .legend-item b').allTextContents(), ['a · RL-1', 'b · RL-1']);
    assert.match((await group.textContent()) ?? '', /^2 × all-wrong groups/);
    // Clicking a sampled rollout asks the host to open it.
    await h.page.locator('#samples li[data-id="rl1-8-b"]').click();
    const open = (await posted(h.page)).find((m) => m.type === 'openSample');
    assert.deepEqual(
      open,
      { type: 'openSample', run: b.key, stage: 'rl1', step: 8, id: 'rl1-8-b' },
      'the sample by step and id, never the record',
    );
    // The state kept for a window reload: runs and smoothing.
    const state = await h.page.evaluate(() => (window as unknown as { __state: unknown }).__state);
    assert.deepEqual(state, { runs: [a, b], smoothing: 0.6, pinned: [] });
    // A reset (file truncated) replaces the run's data.
    const received = Number(await h.page.evaluate(() => document.body.dataset.received));
    await h.page.evaluate(
      ({ key, events }) => window.postMessage({ type: 'events', run: key, events, reset: true }, '*'),
      { key: a.key, events: rlEvents('a', 2).slice(0, 4) },
    );
    await h.page.waitForFunction((n) => document.body.dataset.received === String(n), received + 4, { timeout: 5000 });
    assert.equal(await chartPoints(h.page, 'kl'), 10); // b still has 10 steps on the same x
    // Malformed lines the host skipped: the first three in full, the rest counted.
    const issues = [1, 2, 3, 4, 5].map((line) => ({
      file: '/runs/a/events.jsonl',
      line,
      column: 7,
      message: 'invalid JSON',
    }));
    await h.page.evaluate((msg) => window.postMessage(msg, '*'), { type: 'issues', run: a.key, issues });
    await h.page.locator('#issues .more').waitFor({ timeout: 5000 });
    assert.equal(await h.page.locator('#issues .banner').count(), 3);
    assert.match(
      (await h.page.locator('#issues .banner').first().textContent()) ?? '',
      /\/runs\/a\/events\.jsonl:1:7: invalid JSON/,
    );
    assert.match((await h.page.locator('#issues .more').textContent()) ?? '', /^2 more malformed events/);
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-rl-overlay.png') });
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});

/** A stage whose metrics are the awkward ones: constant, zero, empty, a single point, float noise, huge, tiny, negative. */
function awkwardEvents(run: string): TrainerEvent[] {
  const out: TrainerEvent[] = [
    {
      v: 1,
      time: 1,
      run,
      type: 'run_started',
      stage: 'sft1',
      config: {},
      total_steps: 30,
      device: 'cpu',
      world_size: 1,
    },
  ];
  for (let s = 1; s <= 30; s++) {
    const values: Record<string, number | null> = {
      loss: 2 * Math.exp(-s / 4) + 1e-4,
      constant: 0.5,
      zero: 0,
      empty: null,
      one_point: s === 7 ? 3 : null,
      lr_noise: s % 2 ? 0.0002 : 0.00019999999999999998,
      huge: s % 2 ? 1e300 : 3e300,
      tiny: 1e-30 * s,
      negative: -3 - s / 10,
      big_constant: 1e17,
    };
    out.push({ v: 1, time: 1 + s, run, type: 'metrics', stage: 'sft1', step: s, values });
  }
  return out;
}

test('every chart survives resizes (constant, empty, huge, float-noise series): responsive columns, plots as wide as their boxes, log scale, continuous smoothing', {
  timeout: 90_000,
}, async () => {
  const run = { key: 'file:///runs/awkward', label: 'awkward' };
  const events = awkwardEvents('awkward');
  const h = await openPanel({ runs: [run], events: { [run.key]: events }, smoothing: 0.6 });
  try {
    const metrics = Object.keys((events[1] as { values: Record<string, unknown> }).values);
    // Tall enough that every chart is in view (plots are made only for boxes in view).
    const layout = async (width: number) => {
      await h.page.setViewportSize({ width, height: 3200 });
      await h.page.waitForFunction((n) => document.querySelectorAll('.chart.drawn').length === n, metrics.length, {
        timeout: 10_000,
      });
      // Resize observers, then uPlot's redraw: every plot as wide as its box (what is asserted below, with details).
      await h.page
        .waitForFunction(
          () =>
            Array.from(document.querySelectorAll<HTMLElement>('.chart')).every((box) => {
              const canvas = box.querySelector('canvas');
              return (
                canvas && Math.abs(canvas.getBoundingClientRect().width - Math.max(200, box.clientWidth - 10)) <= 1
              );
            }),
          undefined,
          { timeout: 5000, polling: 50 },
        )
        .catch(() => undefined);
      return h.page.$$eval('.chart', (boxes) =>
        boxes.map((b) => {
          const box = b as HTMLElement;
          const canvas = box.querySelector('canvas') as HTMLCanvasElement | null;
          return {
            metric: box.dataset.metric!,
            left: Math.round(box.getBoundingClientRect().left),
            box: box.clientWidth,
            plot: canvas ? canvas.getBoundingClientRect().width : 0,
            grid: (box.parentElement as HTMLElement).clientWidth,
          };
        }),
      );
    };
    for (const width of [1600, 700, 360, 2600, 1000, 1600, 480, 1600]) {
      const boxes = await layout(width);
      const columns = new Set(boxes.map((b) => b.left)).size;
      const grid = boxes[0].grid;
      // Columns of at least 340 px (gap 8), never more than 4.
      const expected = Math.min(4, Math.max(1, Math.floor((grid + 8) / (340 + 8))));
      assert.equal(columns, Math.min(expected, metrics.length), `${width} px: ${columns} columns in a ${grid} px grid`);
      if (width === 1600) assert.ok(columns >= 2, `at 1,600 px the charts sit in ${columns} columns`);
      for (const b of boxes)
        assert.ok(
          Math.abs(b.plot - Math.max(200, b.box - 10)) <= 1,
          `${width} px: ${b.metric}'s plot is ${b.plot} px in a ${b.box} px box`,
        );
      assert.deepEqual(h.errors, [], `no error at ${width} px`);
    }
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-awkward-resized.png') });
    // Every chart drew its line after all that: pixels of the line's colour (#3794ff) in the plot.
    const drawn = await h.page.$$eval('.chart', (boxes) =>
      Object.fromEntries(
        boxes.map((b) => {
          const canvas = b.querySelector('canvas') as HTMLCanvasElement;
          const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
          let blue = 0;
          for (let i = 0; i < px.length; i += 4)
            if (Math.abs(px[i] - 0x37) < 40 && Math.abs(px[i + 1] - 0x94) < 40 && px[i + 2] > 200) blue++;
          return [(b as HTMLElement).dataset.metric!, blue];
        }),
      ),
    );
    for (const m of metrics.filter((x) => x !== 'empty'))
      assert.ok(drawn[m] > 20, `${m}: its line is drawn (${drawn[m]} px)`);
    assert.ok(drawn.empty < 5, 'the empty series draws nothing');
    // Log scale, per chart: the loss over four decades gets power-of-ten ticks; the state is kept.
    const linearTicks = await h.page.getAttribute('.chart[data-metric="loss"]', 'data-yticks');
    await h.page.click('.chart[data-metric="loss"] .log');
    await h.page.waitForSelector('.chart[data-metric="loss"][data-scale="log"].drawn canvas');
    await h.page.waitForFunction(
      (before) => document.querySelector('.chart[data-metric="loss"]')?.getAttribute('data-yticks') !== before,
      linearTicks,
      { timeout: 5000 },
    );
    const ticks = ((await h.page.getAttribute('.chart[data-metric="loss"]', 'data-yticks')) ?? '')
      .split(' ')
      .map(Number);
    assert.ok(
      ticks.length >= 2 &&
        ticks.every((t) => Math.abs(Math.log10(t) - Math.round(Math.log10(t))) < 1e-9 || /^[125]/.test(String(t))),
      `log ticks ${ticks}`,
    );
    assert.deepEqual(
      (
        (await h.page.evaluate(() => (window as unknown as { __state: { log?: string[] } }).__state)) as {
          log?: string[];
        }
      ).log,
      ['sft1\nloss'],
    );
    // A chart with nothing above zero says so on a log scale instead of drawing nothing silently.
    await h.page.click('.chart[data-metric="zero"] .log');
    await h.page
      .locator('.chart[data-metric="zero"] .readout', { hasText: 'no value above 0' })
      .waitFor({ timeout: 5000 });
    // Smoothing is continuous: 0.87 is a value no list offered; the readout's smoothed value is the debiased EMA.
    const before = await h.page.textContent('.chart[data-metric="loss"] .readout .v');
    await h.page.$eval('#smoothing', (el) => {
      const input = el as HTMLInputElement;
      input.value = '0.87';
      input.dispatchEvent(new Event('input'));
      input.dispatchEvent(new Event('change'));
    });
    await h.page.waitForFunction(
      (b) => document.querySelector('.chart[data-metric="loss"] .readout .v')?.textContent !== b,
      before,
      { timeout: 5000 },
    );
    assert.equal(await h.page.textContent('#smoothing-value'), '0.87');
    const losses = events.slice(1).map((e) => (e as { values: Record<string, number> }).values.loss);
    let ema = 0;
    losses.forEach((v) => (ema = 0.87 * ema + 0.13 * v));
    const expected = ema / (1 - 0.87 ** losses.length);
    assert.equal(
      await h.page.textContent('.chart[data-metric="loss"] .readout .v'),
      Number(expected.toPrecision(4)).toString(),
    );
    assert.equal(
      (
        (await h.page.evaluate(() => (window as unknown as { __state: { smoothing: number } }).__state)) as {
          smoothing: number;
        }
      ).smoothing,
      0.87,
    );
    await h.page.setViewportSize({ width: 1600, height: 1000 });
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-awkward-log.png') });
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});

test("x-range zoom shared by the tab's charts and kept as data arrives; relative and wall-clock time axes; system metrics beside the charts; a log scale says what it leaves out", {
  timeout: 90_000,
}, async () => {
  const events = readEvents(DEMO);
  const h = await openPanel({ runs: [DEMO_RUN], events: { [DEMO_RUN.key]: events }, smoothing: 0.6 });
  const zoomOf = (metric: string) => h.page.locator(`.chart[data-metric="${metric}"]`).getAttribute('data-zoom');
  const post = (evs: unknown[]) =>
    h.page.evaluate((m) => window.postMessage(m, '*'), { type: 'events', run: DEMO_RUN.key, events: evs });
  const last = events[events.length - 1].time;
  try {
    await h.page.locator('.chart[data-metric="reward_mean"].drawn').waitFor({ timeout: 10_000 });
    // Drag across a third of the reward chart: every drawn chart of the tab shows that step range.
    const over = (await h.page.locator('.chart[data-metric="reward_mean"] .u-over').boundingBox())!;
    await h.page.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
    await h.page.mouse.down();
    await h.page.mouse.move(over.x + over.width * 0.6, over.y + over.height / 2, { steps: 8 });
    await h.page.mouse.up();
    await h.page.locator('#zoom-reset:not([hidden])').waitFor({ timeout: 5000 });
    const zoom = ((await zoomOf('reward_mean')) ?? '').split(' ').map(Number);
    assert.ok(zoom.length === 2 && zoom[0] > 10 && zoom[1] < 50 && zoom[1] > zoom[0], `zoomed to steps ${zoom}`);
    assert.equal(await zoomOf('reward_std'), zoom.join(' '), 'the other charts follow');
    assert.match(
      (await h.page.textContent('#zoom-reset')) ?? '',
      new RegExp(`step ${Math.round(zoom[0])}–${Math.round(zoom[1])}`),
    );
    assert.ok(
      !(await h.page.locator('#step-rollouts ul.step-rollouts').count()),
      'the end of a drag lists no rollouts',
    );
    const xticks = ((await h.page.getAttribute('.chart[data-metric="reward_mean"]', 'data-xticks')) ?? '')
      .split(' ')
      .map(Number);
    assert.ok(
      xticks.every((t) => t >= zoom[0] && t <= zoom[1]),
      `ticks ${xticks} inside the range`,
    );
    // A live run: new steps arrive; the range stays (uPlot alone would fit every point again).
    const points = Number(await h.page.getAttribute('.chart[data-metric="reward_mean"]', 'data-points'));
    await post([
      {
        v: 1,
        time: last + 1,
        run: 'demo',
        type: 'metrics',
        stage: 'rl2',
        step: 65,
        values: { reward_mean: 0.5, reward_std: 0.1 },
      },
    ]);
    await h.page.waitForFunction(
      (n) => Number(document.querySelector<HTMLElement>('.chart[data-metric="reward_mean"]')?.dataset.points) > n,
      points,
      { timeout: 5000 },
    );
    assert.equal(await zoomOf('reward_mean'), zoom.join(' '));
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-zoomed.png') });
    // A double click shows everything again.
    await h.page.mouse.dblclick(over.x + over.width * 0.5, over.y + over.height / 2);
    await h.page.locator('#zoom-reset[hidden]').waitFor({ state: 'attached', timeout: 5000 });
    assert.equal(await zoomOf('reward_mean'), '');
    await h.page.waitForTimeout(400); // longer than a click waits for its second: nothing may follow
    assert.match(
      (await h.page.textContent('#step-rollouts')) ?? '',
      /^Click a step/,
      'a double click lists no rollouts',
    );
    // Relative time: seconds since each stage started, ticks as durations; the readout names the time and the step.
    await h.page.selectOption('#x-axis', 'relative');
    await h.page.waitForFunction(
      () =>
        /time since the stage started/.test(
          document.querySelector('.chart[data-metric="reward_mean"]')?.textContent ?? '',
        ) || !!document.querySelector('.chart[data-metric="reward_mean"].drawn'),
      undefined,
      { timeout: 5000 },
    );
    await h.page.locator('.chart[data-metric="reward_mean"].drawn').waitFor({ timeout: 5000 });
    const relTicks = ((await h.page.getAttribute('.chart[data-metric="reward_mean"]', 'data-xticks')) ?? '')
      .split(' ')
      .map(Number);
    assert.ok(relTicks.length >= 2 && relTicks.every((t) => t >= 0 && t % 1 === 0), `relative ticks ${relTicks}`);
    assert.match(
      (await h.page.textContent('.chart[data-metric="reward_mean"] .readout .step')) ?? '',
      /^latest · \d+:\d\d(:\d\d)? · step 65$/,
    );
    assert.equal(
      (
        (await h.page.evaluate(() => (window as unknown as { __state: { xAxis?: string } }).__state)) as {
          xAxis?: string;
        }
      ).xAxis,
      'relative',
    );
    await h.page.screenshot({ path: join(ARTIFACTS, 'live-panel-relative-time.png') });
    // Wall clock: the time of day.
    await h.page.selectOption('#x-axis', 'wall');
    await h.page.locator('.chart[data-metric="reward_mean"].drawn').waitFor({ timeout: 5000 });
    assert.match(
      (await h.page.textContent('.chart[data-metric="reward_mean"] .readout .step')) ?? '',
      /^latest · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/,
    );
    await h.page.selectOption('#x-axis', 'step');
    // System metrics the trainer logs (src/core/metrics.ts SYSTEM_METRICS) get their own group.
    await post([
      {
        v: 1,
        time: last + 2,
        run: 'demo',
        type: 'metrics',
        stage: 'rl2',
        step: 66,
        values: { 'system/cpu_percent': 180, 'system/rss_gb': 1.4, drift: -0.5 },
      },
      {
        v: 1,
        time: last + 3,
        run: 'demo',
        type: 'metrics',
        stage: 'rl2',
        step: 67,
        values: { 'system/cpu_percent': 95, 'system/rss_gb': 1.5, drift: 0.2 },
      },
    ]);
    await h.page
      .locator('section.group[data-group="system"]:not([hidden]) .chart[data-metric="system/cpu_percent"]')
      .waitFor({ timeout: 5000 });
    assert.equal(await h.page.textContent('section.group[data-group="system"] h3'), 'System: CPU, GPU, memory');
    // Log scale on a metric with a value ≤ 0: drawn without it, and the readout says so.
    const drift = h.page.locator('.chart[data-metric="drift"]');
    await drift.scrollIntoViewIfNeeded();
    await drift.locator('.log').click();
    await drift
      .locator('.readout .log-dropped', { hasText: '1 value ≤ 0 not drawn on the log scale' })
      .waitFor({ timeout: 5000 });
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});
