// bench/integrations: runs CoA Studio did not start, at verl's sizes.
//   metrics: a verl `file`-logger file of 1,000 steps × 300 keys written as FileLogger writes it (compact JSON lines
//     {"step", "data"}; verl/utils/tracking.py, volcengine/verl b178a3cd), read by the host's verl adapter
//     (src/core/verl/runTail.ts, with a rollout dump every 10 steps for the alert signals) — whole-file read, then
//     the file written live (10 steps per 100 ms, far faster than any real verl step) while followEvents tails it:
//     lag from a line's write to its event; then the live panel page (headless Chromium, the webview test harness)
//     opened with the finished run embedded until the charts in view are drawn, and the events streamed into an
//     empty page in host-sized batches until all are counted.
//   dump: a 10,000-record verl rollout dump (Search-R1-like rows as _dump_generations writes them): the trajectory
//     browser's first page (50 records, read from the head while nothing else runs), its full index, and the
//     notebook decode of the whole file (all cells: what VS Code gets when the file is under the large-file limit).
// `node --import tsx bench/integrations/run.ts [--no-write]`. Files go to a temp directory, deleted afterwards.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { followEvents } from '../../src/core/eventTail';
import type { TrainerEvent } from '../../src/core/events';
import { verlTail } from '../../src/core/verl/runTail';
import { buildIndex, firstRecords } from '../../src/extension/providers/browser/indexer';
import { decodeNotebook } from '../../src/extension/providers/notebook/codec';
import { openPanel } from '../../test/webview/live-panel-harness';
import { writeResults } from '../results';

const STEPS = 1000;
const KEYS = 300;
const DUMP_RECORDS = 10_000;
const RUN = { key: 'file:///bench/verl/exp.jsonl', label: 'exp', engine: 'verl' as const };

const VERL_NAMES = [
  'actor/entropy',
  'actor/pg_loss',
  'actor/pg_clipfrac',
  'actor/ppo_kl',
  'actor/kl_loss',
  'actor/grad_norm',
  'actor/lr',
  'critic/score/mean',
  'critic/score/max',
  'critic/score/min',
  'critic/rewards/mean',
  'critic/advantages/mean',
  'critic/returns/mean',
  'response_length/mean',
  'response_length/max',
  'response_length/clip_ratio',
  'prompt_length/mean',
  'num_turns/mean',
  'num_turns/max',
  'tool_call_counts/mean',
  'tool_call_counts/max',
  'timing_s/gen',
  'timing_s/update_actor',
  'timing_s/step',
  'perf/throughput',
  'perf/mfu/actor',
  'perf/max_memory_allocated_gb',
  'training/global_step',
];

function metricsLine(step: number): string {
  const data: Record<string, number> = {};
  VERL_NAMES.forEach((n, i) => (data[n] = Math.sin(step / 40 + i) + 1.5));
  for (let i = 0; Object.keys(data).length < KEYS; i++)
    data[`${['actor', 'critic', 'timing_s', 'perf', 'agent_loop', 'val-aux/nq'][i % 6]}/part_${Math.floor(i / 6)}`] =
      Math.cos(step / 30 + i);
  return JSON.stringify({ step, data }) + '\n';
}

const DOC = 'Evan Morris was a lobbyist for Genentech and its parent corporation Roche in Washington, D.C. '.repeat(4);
function dumpRow(i: number, step: number): string {
  const q = `question ${i >> 3}?`;
  let out = `<think>looking up ${q}</think>\n`;
  for (let s = 0; s < i % 3; s++)
    out += `<search> query ${i} ${s} </search>\n\n<information>Doc 1(Title: "T${i}") ${DOC}\n</information>\n\n`;
  out +=
    i % 10 === 7 ? `<think>oops <answer> a${i} </answer>` : `<think>done</think>\n<answer> answer ${i % 13} </answer>`;
  const input = `system\nYou are a helpful assistant.\nuser\nAnswer the given question. Question: ${q}\nassistant\n`;
  return JSON.stringify({
    input,
    output: out,
    gts: { target: [`answer ${i % 11}`] },
    score: i % 11 === i % 13 ? 1.0 : 0.0,
    step,
    acc: i % 11 === i % 13 ? 1 : 0,
  });
}

function writeDump(path: string, n: number, step: number): void {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(dumpRow(i, step));
  writeFileSync(path, lines.join('\n') + '\n'); // _dump_generations: "\n".join(lines) + "\n"
}

const quantile = (xs: number[], q: number) =>
  xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)];
const f = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

async function main(): Promise<void> {
  const load = loadavg()[0];
  const dir = mkdtempSync(join(tmpdir(), 'coa-bench-integrations-'));
  try {
    const dumps = join(dir, 'rollouts');
    mkdirSync(dumps);
    for (let step = 10; step <= STEPS; step += 10) writeDump(join(dumps, `${step}.jsonl`), 64, step); // batch of 64
    const metrics = join(dir, 'exp.jsonl');
    const text = Array.from({ length: STEPS }, (_, i) => metricsLine(i + 1)).join('');
    writeFileSync(metrics, text);
    const mb = statSync(metrics).size / 2 ** 20;

    // Whole-file read by the adapter.
    let t = performance.now();
    const all = await verlTail(metrics, { rolloutDir: dumps }).read();
    const readMs = performance.now() - t;
    if (all.issues.length) throw new Error(JSON.stringify(all.issues[0]));
    const events: TrainerEvent[] = all.events;

    // Live: written 10 steps per 100 ms while followed (fs.watch + 500 ms poll, as the panel does).
    const live = join(dir, 'live.jsonl');
    writeFileSync(live, '');
    const written = new Map<number, number>();
    const lags: number[] = [];
    let got = 0;
    const follower = followEvents(verlTail(live, { rolloutDir: dumps }), {
      onBatch: (b) => {
        const now = performance.now();
        for (const e of b.events)
          if (e.type === 'metrics') {
            lags.push(now - written.get(e.step)!);
            got++;
          }
      },
    });
    const lines = text.split('\n').filter(Boolean);
    t = performance.now();
    for (let i = 0; i < lines.length; i += 10) {
      for (let k = i; k < Math.min(i + 10, lines.length); k++) {
        written.set(k + 1, performance.now());
        appendFileSync(live, lines[k] + '\n');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const deadline = performance.now() + 10_000;
    while (got < STEPS && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const liveMs = performance.now() - t;
    follower.dispose();

    // The page: open with the finished run embedded, and stream into an empty page.
    const opened = await openPanel({ runs: [RUN], events: { [RUN.key]: events }, smoothing: 0.6 });
    let openMs = 0;
    try {
      await opened.page.locator('.chart[data-metric="critic/score/mean"].drawn').waitFor({ timeout: 60_000 });
      await opened.page.waitForTimeout(300);
      openMs = Number(await opened.page.evaluate(() => document.body.dataset.plottedAt));
      if (opened.errors.length) throw new Error(opened.errors.join('\n'));
    } finally {
      await opened.close();
    }
    const h = await openPanel({ runs: [RUN], events: {}, smoothing: 0.6 });
    let streamMs = 0;
    let renders: number[] = [];
    try {
      streamMs = await h.page.evaluate(
        ({ events, run }) =>
          new Promise<number>((resolve) => {
            const start = performance.now();
            for (let i = 0; i < events.length; i += 100)
              window.postMessage({ type: 'events', run, events: events.slice(i, i + 100) }, '*');
            const poll = setInterval(() => {
              if (document.body.dataset.received !== String(events.length)) return;
              clearInterval(poll);
              resolve(performance.now() - start);
            }, 5);
          }),
        { events, run: RUN.key },
      );
      await h.page.locator('.chart[data-metric="critic/score/mean"].drawn').waitFor({ timeout: 60_000 });
      await h.page.waitForTimeout(600);
      renders = ((await h.page.evaluate(() => document.body.dataset.renders)) ?? '0 0 0').split(' ').map(Number);
      if (h.errors.length) throw new Error(h.errors.join('\n'));
    } finally {
      await h.close();
    }

    // A 10k-record dump.
    const dump = join(dir, '1000.jsonl');
    writeDump(dump, DUMP_RECORDS, 1000);
    const dumpMb = statSync(dump).size / 2 ** 20;
    t = performance.now();
    const page = await firstRecords(dump, 50, { scheme: 'em' });
    const firstPageMs = performance.now() - t;
    if (page.length !== 50 || page.some((r) => r.error)) throw new Error('first page: not 50 records');
    t = performance.now();
    let indexed = 0;
    await buildIndex(dump, (rows) => (indexed += rows.length), { scheme: 'em' });
    const indexMs = performance.now() - t;
    t = performance.now();
    const nb = decodeNotebook(readFileSync(dump), { scheme: 'em' });
    const notebookMs = performance.now() - t;

    const alerts = events.filter((e) => e.type === 'alert').length;
    const body = [
      `verl metrics file: ${STEPS.toLocaleString('en-US')} steps × ${KEYS} keys, ${mb.toFixed(1)} MB, a 64-row rollout dump every 10 steps; ${events.length} protocol events (${alerts} alerts). Dump: ${DUMP_RECORDS.toLocaleString('en-US')} rows, ${dumpMb.toFixed(1)} MB. Headless Chromium (Debian) through the webview test harness; Node ${process.version}; one run on a shared 2-core machine, 1-minute load average ${load.toFixed(1)} at the start (figures vary with the load).`,
      '',
      '| measure | value |',
      '| --- | ---: |',
      `| adapter: whole metrics file → events (ms) | ${f(readMs)} |`,
      `| live: ${STEPS} steps written 10 per 100 ms, all delivered | ${got === STEPS ? 'yes' : `no (${got})`} in ${f(liveMs)} ms |`,
      `| live: lag write → event, p50 / p99 (ms) | ${f(quantile(lags, 0.5))} / ${f(quantile(lags, 0.99))} |`,
      `| page: open finished run → charts in view drawn (ms) | ${f(openMs)} |`,
      `| page: stream all events → counted (ms) | ${f(streamMs)} |`,
      `| page: render passes during the stream, mean / max (ms) | ${renders[0]} passes, ${f(renders[1] / Math.max(1, renders[0]))} / ${f(renders[2])} |`,
      `| dump: trajectory browser first page, 50 records (ms) | ${f(firstPageMs)} |`,
      `| dump: browser full index, ${indexed.toLocaleString('en-US')} records (ms) | ${f(indexMs)} |`,
      `| dump: notebook decode of the whole file, ${nb.cells.length.toLocaleString('en-US')} cells (ms) | ${f(notebookMs)} |`,
      '',
      'Command: `node --import tsx bench/integrations/run.ts`.',
    ].join('\n');
    console.log(body);
    if (!process.argv.includes('--no-write')) writeResults('bench/integrations', body);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
