// Checks an events file the way the editor reads it, for tests in other languages (the TRL GRPO run of
// src/trainer/tests/test_trl_integration.py): every line through the protocol's validator (src/core/events.ts
// parseEvent, as the event tail does), then the live panel page in headless Chromium with those events, until the
// named metrics' charts are drawn. Prints one JSON object: {"events", "tabs", "charts": {metric: points}, "alerts",
// "errors"}; exits 1 on a malformed line, a chart never drawn, or a page error.
// Usage: node --import tsx test/webview/check-events-file.ts <events.jsonl> <metric,metric,…>
import { readFileSync } from 'node:fs';
import { parseEvent, type TrainerEvent } from '../../src/core/events';
import { openPanel } from './live-panel-harness';

async function main(): Promise<number> {
  const [file, metricList] = process.argv.slice(2);
  if (!file || !metricList) {
    console.error('usage: check-events-file.ts <events.jsonl> <metric,metric,…>');
    return 2;
  }
  const events: TrainerEvent[] = [];
  const bad: string[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (!line.trim()) return;
      const p = parseEvent(line);
      if (p.ok) events.push(p.event);
      else bad.push(`${file}:${i + 1}: ${p.error}`);
    });
  if (bad.length) {
    console.log(JSON.stringify({ events: events.length, malformed: bad }));
    return 1;
  }
  const run = { key: 'file:///trl-run', label: 'trl-run' };
  const h = await openPanel({ runs: [run], events: { [run.key]: events }, smoothing: 0 });
  const charts: Record<string, number> = {};
  try {
    for (const metric of metricList.split(',')) {
      const chart = h.page.locator(`.chart[data-metric="${metric}"]`);
      await chart.waitFor({ timeout: 15_000 });
      await chart.scrollIntoViewIfNeeded();
      await h.page.waitForFunction(
        (m) => Number(document.querySelector(`.chart[data-metric="${m}"]`)?.getAttribute('data-points')) > 0,
        metric,
        { timeout: 15_000 },
      );
      charts[metric] = Number(await chart.getAttribute('data-points'));
    }
    const tabs = await h.page.locator('#tabs .tab').allTextContents();
    const alerts = await h.page.locator('#alerts .alert-group .title').allTextContents();
    console.log(JSON.stringify({ events: events.length, tabs, charts, alerts, errors: h.errors }));
    return h.errors.length ? 1 : 0;
  } catch (e) {
    console.log(JSON.stringify({ events: events.length, charts, errors: [...h.errors, String(e)] }));
    return 1;
  } finally {
    await h.close();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
