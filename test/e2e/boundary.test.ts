// Real-editor proof of the Search Boundary panel on a whole pipeline run's real files: the demo run
// (test/fixtures/demo-run) with the report the trainer's meter wrote on its RL-2-OTC checkpoint
// (eval/boundary-rl2-otc-test.json, `python -m coa_trainer boundary`). In code-server with the packaged extension:
// the command finds the run's report, the panel shows the classes with their counts, the rates and TC against the
// minimum, the benchmark's truth, and the questions; a class in the legend filters them and a question opens on the
// trajectories that decided its class. Screenshot: .cache/artifacts/e2e/boundary-panel.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCommand, startEditor, webviewFrame, type Editor } from './harness';
import { demoRun, demoRunFile } from '../fixtures/demoRun';

const RUN = 'demo-issue33';
const report = JSON.parse(demoRunFile('eval/boundary-rl2-otc-test.json').toString('utf8')) as {
  summary: { questions: number; classes: Record<string, number> };
  rows: { id: string; class: string }[];
};
let ed: Editor;

before(async () => {
  ed = await startEditor({ name: 'boundary', files: {} });
  demoRun(join(ed.workspace, 'runs', RUN));
});
after(async () => {
  await ed?.close();
});

test("the run's search boundary report in its panel: classes, rates, truth, questions filtered by class", async () => {
  await runCommand(ed.page, 'CoA: Show Search Boundary…');
  const frame = await webviewFrame(ed.page, async (f) => (await f.locator('#class-bar').count()) > 0, 90_000);
  const legend = await frame.locator('#class-legend button').allTextContents();
  for (const [cls, n] of Object.entries(report.summary.classes))
    assert.ok(
      legend.some((l) => l.startsWith(`${cls} ${n} (`)),
      `${cls} ${n} in ${legend.join(' | ')}`,
    );
  assert.match(await frame.locator('#summary').innerText(), /over-search rate/);
  assert.match(await frame.locator('#truth').innerText(), /classes agree/);
  assert.equal(await frame.locator('#rows details').count(), report.summary.questions);
  // A class in the legend keeps that class's questions only.
  const needed = report.rows.filter((r) => r.class === 'needed-search');
  await frame.locator('#class-legend button[data-class="needed-search"]').click();
  assert.deepEqual(
    await frame.locator('#rows details').evaluateAll((ds) => ds.map((d) => (d as HTMLElement).dataset.id)),
    needed.map((r) => r.id),
  );
  assert.match(
    (await frame.locator('#row-count').textContent()) ?? '',
    new RegExp(`^${needed.length} of ${report.summary.questions} questions`),
  );
  // A question opens on its trajectories: with search refused, with search, and the fewest searches found.
  await frame.locator('#rows details summary').first().click();
  const opened = frame.locator('#rows details[open]');
  await opened.locator('pre').first().waitFor({ timeout: 10_000 });
  assert.deepEqual(await opened.locator('h4').allTextContents(), [
    'search refused',
    'with search',
    'fewest searches found',
  ]);
  assert.match(await opened.locator('pre').nth(1).innerText(), /<search>/);
  await ed.shot('boundary-panel');
});
