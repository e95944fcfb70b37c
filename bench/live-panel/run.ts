// bench/live-panel: what a big run costs the live panel. A generated run of 1,000 steps × 300 metric keys (one RL
// stage, an alert every 50 steps), measured three ways:
//   ingest (Node, no DOM): PanelModel.apply of every event, then chartData of every key of the tab;
//   open (headless Chromium, the webview test harness): navigation → the charts in view drawn, with the finished
//     run embedded in the page as the host opens it (the other charts are drawn when scrolled to);
//   stream: the same events posted in host-sized batches (100 events) as fast as the page takes them; wall time
//     until all are counted, the render passes' mean and max; then a tab switch to the results table and back to
//     the charts (rebuilt), and a filter keystroke, each until its frame is drawn; then every chart scrolled through
//     (all 300 plots exist) and 100 more steps streamed.
// Three repeats; the table shows each and the median. `node --import tsx bench/live-panel/run.ts [--no-write]`.
import { loadavg } from 'node:os';
import { PanelModel } from '../../webview/live-panel/model';
import type { TrainerEvent } from '../../src/core/events';
import { openPanel } from '../../test/webview/live-panel-harness';
import { writeResults } from '../results';

const STEPS = 1000;
const KEYS = 300;
const REPEATS = 3;
const RUN = { key: 'file:///bench/runs/big', label: 'big' };

/** 300 names spread over the panel's groups like a real trainer's (plus per-tool and per-hop breakdowns). */
function keyNames(): string[] {
  const base = [
    'loss',
    'reward_mean',
    'reward_std',
    'em',
    'f1',
    'tc',
    'tp',
    'kl',
    'entropy',
    'clip_frac',
    'grad_norm',
    'lr',
    'gen_tokens_per_s',
    'train_tokens_per_s',
    'tool_failure_rate',
    'malformed_call_rate',
    'truncation_ratio',
    'all_wrong_groups',
    'all_correct_groups',
    'step_s',
  ];
  const out = [...base];
  for (let i = 0; out.length < KEYS; i++)
    out.push(`${['tool', 'reward', 'em', 'kl', 'tokens', 'misc'][i % 6]}/part_${Math.floor(i / 6)}`);
  return out;
}

/** Metrics (+ progress, an alert every 50 steps) of steps first..first+count-1 of the RL stage. */
function extraSteps(first: number, count: number): TrainerEvent[] {
  const names = keyNames();
  const out: TrainerEvent[] = [];
  for (let step = first; step < first + count; step++) {
    const values: Record<string, number> = {};
    names.forEach((n, i) => (values[n] = Math.sin(step / 50 + i) + Math.random() * 0.05));
    out.push({ v: 1, time: step, run: 'big', type: 'metrics', stage: 'rl2', step, values });
    out.push({
      v: 1,
      time: step,
      run: 'big',
      type: 'progress',
      stage: 'rl2',
      step,
      total: STEPS,
      elapsed_s: step,
      eta_s: Math.max(0, STEPS - step),
    });
    if (step % 50 === 0)
      out.push({
        v: 1,
        time: step,
        run: 'big',
        type: 'alert',
        stage: 'rl2',
        step,
        kind: 'tool_call_explosion',
        severity: 'warning',
        message: `TC ${step}`,
      });
  }
  return out;
}

function events(): TrainerEvent[] {
  return [
    {
      v: 1,
      time: 0,
      run: 'big',
      type: 'run_started',
      stage: 'rl2',
      config: {},
      total_steps: STEPS,
      device: 'cpu',
      world_size: 1,
    },
    ...extraSteps(1, STEPS),
    {
      v: 1,
      time: STEPS,
      run: 'big',
      type: 'eval',
      stage: 'rl2',
      step: STEPS,
      split: 'dev',
      metrics: { em: 0.5, tc: 1.2 },
    },
  ];
}

function ingest(evs: TrainerEvent[]): { applyMs: number; chartDataMs: number } {
  const m = new PanelModel();
  m.addRun(RUN);
  const t0 = performance.now();
  for (let i = 0; i < evs.length; i += 100) m.apply(RUN.key, evs.slice(i, i + 100));
  const t1 = performance.now();
  const lines = m.lines('rl2');
  for (const name of m.metricsOf('rl2').keys()) m.chartData(lines, name, 0.6);
  return { applyMs: t1 - t0, chartDataMs: performance.now() - t1 };
}

interface BrowserFigures {
  openMs: number;
  htmlMs: number;
  parsedMs: number;
  firstRenderMs: number;
  streamMs: number;
  renders: number;
  renderMeanMs: number;
  renderMaxMs: number;
  resultsTabMs: number;
  tabSwitchMs: number;
  filterMs: number;
  plots: number;
  moreRenders: number;
  moreMeanMs: number;
  heapMb: number;
}

async function browser(evs: TrainerEvent[]): Promise<BrowserFigures> {
  // Open: the finished run embedded in the page, as the host does.
  const opened = await openPanel({ runs: [RUN], events: { [RUN.key]: evs }, smoothing: 0.6 });
  let openMs = 0;
  let firstRenderMs = 0;
  let htmlMs = 0;
  let parsedMs = 0;
  try {
    await opened.page.locator('.chart[data-metric="loss"].drawn').waitFor({ timeout: 60_000 });
    await opened.page.waitForTimeout(300);
    openMs = Number(await opened.page.evaluate(() => document.body.dataset.plottedAt));
    [htmlMs, parsedMs] = await opened.page.evaluate(() => {
      const n = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
      return [n.responseEnd, n.domInteractive];
    });
    firstRenderMs = Number(
      ((await opened.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0').split(' ')[1],
    );
    if (opened.errors.length) throw new Error(opened.errors.join('\n'));
  } finally {
    await opened.close();
  }
  // Stream: an empty page fed in host-sized batches.
  const h = await openPanel({ runs: [RUN], events: {}, smoothing: 0.6 });
  try {
    const streamMs = await h.page.evaluate(
      ({ events, run }) =>
        new Promise<number>((resolve) => {
          const start = performance.now();
          for (let i = 0; i < events.length; i += 100)
            window.postMessage({ type: 'events', run, events: events.slice(i, i + 100) }, '*');
          // No named helpers in page code: tsx would wrap them in a `__name` the page does not have.
          const poll = setInterval(() => {
            if (document.body.dataset.received !== String(events.length)) return;
            clearInterval(poll);
            resolve(performance.now() - start);
          }, 5);
        }),
      { events: evs, run: RUN.key },
    );
    await h.page.locator('.chart[data-metric="loss"].drawn').waitFor({ timeout: 60_000 });
    await h.page.waitForTimeout(600);
    const [renders, totalMs, maxMs] = ((await h.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0')
      .split(' ')
      .map(Number);
    // A tab switch (to the results table and back to the charts) and a filter keystroke, each until its frame is drawn.
    const timed = (action: string) =>
      h.page.evaluate(
        (what) =>
          new Promise<number>((resolve) => {
            const t = performance.now();
            if (what !== 'filter') (document.querySelector(`.tab[data-tab="${what}"]`) as HTMLElement | null)?.click();
            else {
              const input = document.getElementById('filter') as HTMLInputElement;
              input.value = 'reward';
              input.dispatchEvent(new Event('input'));
            }
            // Until the frame is drawn: a task after the next animation frame runs after its layout, observers, paint.
            requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t), 0));
          }),
        action,
      );
    const resultsTabMs = await timed('results');
    const tabSwitchMs = await timed('rl2');
    const filterMs = await timed('filter');
    // Every chart drawn once (scrolled through to the bottom and back), then 100 more steps streamed: only the
    // plots in view are updated.
    await h.page.locator('#filter').fill('');
    await h.page.waitForTimeout(300);
    await h.page.evaluate(async () => {
      for (let y = 0; y < document.body.scrollHeight; y += 800) {
        window.scrollTo(0, y);
        await new Promise((r) => setTimeout(r, 30));
      }
      window.scrollTo(0, 0);
    });
    await h.page.waitForTimeout(500);
    const plots = await h.page.locator('.chart.drawn').count();
    const before = ((await h.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0').split(' ').map(Number);
    const more = extraSteps(STEPS + 1, 100);
    await h.page.evaluate(
      ({ events, run, total }) =>
        new Promise<void>((resolve) => {
          for (let i = 0; i < events.length; i += 10)
            window.postMessage({ type: 'events', run, events: events.slice(i, i + 10) }, '*');
          const poll = setInterval(() => {
            if (document.body.dataset.received !== String(total)) return;
            clearInterval(poll);
            resolve();
          }, 5);
        }),
      { events: more, run: RUN.key, total: evs.length + more.length },
    );
    await h.page.waitForTimeout(600);
    const afterStats = ((await h.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0').split(' ').map(Number);
    const moreRenders = afterStats[0] - before[0];
    const moreMeanMs = (afterStats[1] - before[1]) / Math.max(1, moreRenders);
    const heapMb = await h.page.evaluate(
      () => ((performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0) / 2 ** 20,
    );
    if (h.errors.length) throw new Error(h.errors.join('\n'));
    return {
      openMs,
      htmlMs,
      parsedMs,
      firstRenderMs,
      streamMs,
      renders,
      renderMeanMs: totalMs / Math.max(1, renders),
      renderMaxMs: maxMs,
      resultsTabMs,
      tabSwitchMs,
      filterMs,
      plots,
      moreRenders,
      moreMeanMs,
      heapMb,
    };
  } finally {
    await h.close();
  }
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

async function main(): Promise<void> {
  const load = loadavg()[0];
  const evs = events();
  const metricsEvents = evs.filter((e) => e.type === 'metrics').length;
  const rows: (ReturnType<typeof ingest> & BrowserFigures)[] = [];
  for (let r = 0; r < REPEATS; r++) {
    const row = { ...ingest(evs), ...(await browser(evs)) };
    rows.push(row);
    console.log(
      `run ${r + 1}: ${JSON.stringify(Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(f(v))])))}`,
    );
  }
  const cols: [keyof (typeof rows)[number], string][] = [
    ['applyMs', 'ingest: model.apply (ms)'],
    ['chartDataMs', 'ingest: chart data, 300 keys (ms)'],
    ['openMs', 'open finished run: navigation → charts in view drawn (ms)'],
    ['htmlMs', '… page HTML (run embedded) received at (ms)'],
    ['parsedMs', '… page parsed, its script run (JSON.parse + ingest) at (ms)'],
    ['firstRenderMs', '… first render pass took (ms)'],
    ['streamMs', 'stream all events → counted (ms)'],
    ['renders', 'render passes during the stream'],
    ['renderMeanMs', 'render pass mean (ms)'],
    ['renderMaxMs', 'render pass max (ms)'],
    ['resultsTabMs', 'switch to the Results tab → frame drawn (ms)'],
    ['tabSwitchMs', 'switch back to the charts tab (rebuilt) → frame drawn (ms)'],
    ['filterMs', 'filter keystroke → frame drawn (ms)'],
    ['plots', 'plots after scrolling through every chart'],
    ['moreRenders', '… then 100 more steps streamed: render passes'],
    ['moreMeanMs', '… render pass mean (ms)'],
    ['heapMb', 'JS heap at the end (MB)'],
  ];
  const body = [
    `A generated run: one RL stage of ${STEPS.toLocaleString('en-US')} steps × ${KEYS} metric keys = ${metricsEvents} metrics events, ${evs.length} events in all (${(JSON.stringify(evs).length / 2 ** 20).toFixed(1)} MB as JSON), an alert every 50 steps. Headless Chromium (Debian) through the webview test harness; Node ${process.version}; ${REPEATS} repeats on a shared 2-core machine, 1-minute load average ${load.toFixed(1)} at the start (figures vary with the load).`,
    '',
    `| | ${rows.map((_, i) => `run ${i + 1}`).join(' | ')} | median |`,
    `| --- | ${rows.map(() => '---:').join(' | ')} | ---: |`,
    ...cols.map(
      ([k, label]) => `| ${label} | ${rows.map((r) => f(r[k])).join(' | ')} | ${f(median(rows.map((r) => r[k])))} |`,
    ),
    '',
    'Command: `node --import tsx bench/live-panel/run.ts` (or `npm run bench live-panel`).',
  ].join('\n');
  console.log(body);
  if (!process.argv.includes('--no-write')) writeResults('live-panel', body);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
