// Real-editor proof of the run signals, on real run files: the whole demo pipeline run
// (test/fixtures/demo-run) and a small run the trainer trained, evaluated greedily and exported
// (test/unit/replay/evalRun.ts). In code-server with the packaged extension:
// - a rollout file's format errors are in Problems while it is open and gone when its tab closes, and the finished
//   run it belongs to is not painted red in the Runs view;
// - a notebook cell's problem names its record (id and line);
// - Train Stage proposes the previous stage's result first;
// - opening a parquet offers "Convert to Trajectories…", which writes the questions as *.coa.jsonl and opens them;
// - replaying a stored greedy evaluation record with its checkpoint (settings read from the run directory, the
//   run's own environment server started on its corpus) saves a trajectory equal to it token for token.
// Screenshots: .cache/artifacts/e2e/signals-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openFile, pickQuick, repoRoot, runCommand, startEditor, until, webviewFrame, type Editor } from './harness';
import { demoRun, demoRunFile } from '../fixtures/demoRun';
import { evalRun } from '../unit/replay/evalRun';

const DEMO = 'demo-issue33';
const EVAL = 'eval-run';
let ed: Editor;

/** The first 40 RL-2 rollouts of the demo run, with the format errors among them (real records, as written). */
function someRollouts(): { text: string; errors: { id: string; line: number }[] } {
  const lines = demoRunFile('stages/rl2/rollouts.coa.jsonl').toString('utf8').split('\n').filter(Boolean);
  const withError = lines.findIndex(
    (l) => (JSON.parse(l) as { reward?: { format_ok?: boolean } }).reward?.format_ok === false,
  );
  assert.ok(withError >= 0, 'the demo rollouts hold a record with format errors');
  const picked = [...lines.slice(0, 39), lines[withError]];
  const errors = picked.flatMap((l, i) => {
    const r = JSON.parse(l) as { id: string; reward?: { format_ok?: boolean } };
    return r.reward?.format_ok === false ? [{ id: r.id, line: i + 1 }] : [];
  });
  return { text: picked.join('\n') + '\n', errors };
}

const rollouts = someRollouts();

before(async () => {
  const run = evalRun(); // built by the unit suite's replay test (cached), or here
  ed = await startEditor({
    name: 'signals',
    files: { 'errors.coa.jsonl': rollouts.text },
    settings: { 'coaStudio.replay.checkpoint': `runs/${EVAL}/stages/sft2/onnx/model.onnx` },
  });
  demoRun(join(ed.workspace, 'runs', DEMO));
  // The same RL-2 rollouts as plain JSONL under the run's folder: a text editor, checked by the language server.
  copyFileSync(
    join(ed.workspace, 'runs', DEMO, 'stages/rl2/rollouts.coa.jsonl'),
    join(ed.workspace, 'runs', DEMO, 'stages/rl2/rollouts.jsonl'),
  );
  cpSync(run.runDir, join(ed.workspace, 'runs', EVAL), { recursive: true });
  copyFileSync(
    join(repoRoot, 'examples/data/autocoa/hotpotqa_dev.parquet'),
    join(ed.workspace, 'hotpotqa_dev.parquet'),
  );
});
after(async () => {
  await ed?.close();
});

const problemsLabel = async () => {
  const el = ed.page.locator('[id="status.problems"]');
  return (await el.getAttribute('aria-label')) ?? (await el.innerText());
};
const errorCount = async () =>
  Number(/Errors?: (\d+)/.exec(await problemsLabel())?.[1] ?? (/No Problems/i.test(await problemsLabel()) ? 0 : NaN));

test("a rollout file's problems go when its tab closes, and never paint the finished run red in the Runs view", async () => {
  await openFile(ed.page, 'rollouts.jsonl');
  const open = await until(
    "the rollout file's format errors in Problems",
    async () => ((await errorCount()) > 0 ? errorCount() : false),
    90_000,
  );
  // A row's problem decoration: a decoration class on its label, or a badge ("9+") drawn as ::after content.
  const decorationOf = (el: Element) =>
    Array.from(el.querySelectorAll('*'))
      .map((e) => `${getComputedStyle(e, '::after').content}|${e.className}`)
      .filter((s) => /\d/.test(s.split('|')[0]) || /monaco-decoration/.test(s))
      .join(' ; ');
  // First the control: VS Code does decorate the Explorer's folder holding the file, so the problems' decorations
  // are known to the workbench before the Runs view is looked at (a decoration there would be drawn by then too).
  await ed.page.keyboard.press('Control+Shift+E');
  const folder = ed.page.locator('.explorer-folders-view .monaco-list-row', { hasText: /^runs$/ }).first();
  await folder.waitFor({ timeout: 30_000 });
  await until(
    "the Explorer's problem decoration on runs/",
    async () => (await folder.evaluate(decorationOf)) !== '',
    30_000,
  );
  // The Runs view: the run is ok, and no problem decoration (colour, "9+" badge) reaches its row.
  await ed.page
    .locator(
      '.activitybar .action-item a[aria-label^="CoA Studio"], .activitybar .action-item[aria-label^="CoA Studio"]',
    )
    .first()
    .click();
  const row = ed.page.locator('.sidebar .monaco-list-row', { hasText: DEMO }).first();
  await row.waitFor({ timeout: 60_000 });
  await row.locator('.monaco-icon-label').first().waitFor({ timeout: 10_000 });
  await ed.shot('signals-runs-view');
  const decoration = await row.evaluate(decorationOf);
  assert.equal(decoration, '', `the run row carries a problem decoration: ${decoration}`);
  assert.match(await row.innerText(), /ok/);
  // Close the tab: its problems leave, even though VS Code keeps the document open behind the scenes.
  await ed.page.locator('.tabs-container .tab', { hasText: 'rollouts.jsonl' }).first().click();
  await ed.page.keyboard.press('Control+W');
  await until('Problems to be empty after closing the file', async () => (await errorCount()) === 0, 60_000);
  await ed.shot('signals-closed-no-problems');
  assert.ok(open > 0);
});

test('a notebook cell\'s problem names its record: id and line, not only "Ln 1, Col 1"', async () => {
  await openFile(ed.page, 'errors.coa.jsonl');
  await ed.page.locator('.notebook-editor .code-cell-row').first().waitFor({ timeout: 60_000 });
  await until("the notebook's format errors in Problems", async () => (await errorCount()) > 0, 60_000);
  await ed.page.keyboard.press('Control+Shift+M');
  const panel = ed.page.locator('.markers-panel');
  await panel.locator('.monaco-list-row').first().waitFor({ timeout: 30_000 });
  await ed.shot('signals-notebook-problems');
  const text = await panel.innerText();
  for (const { id, line } of rollouts.errors)
    assert.ok(text.includes(`${id} (line ${line}): `), `no problem names ${id} (line ${line}):\n${text}`);
  await ed.page.keyboard.press('Control+Shift+M');
});

test("Train Stage proposes the previous stage's result first (SFT-3 → the run's SFT-2 model)", async () => {
  await runCommand(ed.page, 'CoA: Train Stage');
  await pickQuick(ed.page, 'SFT-3', 'CoA: Train Stage (1/4)');
  await pickQuick(ed.page, 'Embedded default config', 'CoA: Train Stage (2/4)');
  await pickQuick(ed.page, 'Embedded default model', 'CoA: Train Stage (3/4)');
  await ed.page
    .locator('.quick-input-widget .quick-input-title', { hasText: 'CoA: Train Stage (4/4)' })
    .waitFor({ timeout: 30_000 });
  const rows = ed.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
  await rows.first().waitFor({ timeout: 30_000 });
  await ed.shot('signals-train-stage-checkpoint');
  const first = await rows.first().innerText();
  await ed.page.keyboard.press('Escape');
  assert.match(first, new RegExp(`${EVAL} / sft2 final`));
  assert.match(first, /the SFT-2 result SFT-3 starts from/);
});

test('a parquet opened in the editor offers Convert to Trajectories, which writes its questions as *.coa.jsonl and opens them', async () => {
  await openFile(ed.page, 'hotpotqa_dev.parquet');
  const toast = ed.page.locator('.notification-toast', { hasText: 'hotpotqa_dev.parquet looks like' }).first();
  await toast.waitFor({ timeout: 60_000 });
  await ed.shot('signals-parquet-offer');
  await toast.getByRole('button', { name: 'Convert to Trajectories…' }).click();
  await pickQuick(ed.page, 'verl / AutoCoA / Search-R1 parquet', 'CoA: Convert to Trajectories (1/2)');
  // The save dialog (code-server's simple dialog) proposes <name>.coa.jsonl beside the input: accept it.
  const input = ed.page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 30_000 });
  await until(
    'the proposed output name',
    async () => (await input.inputValue()).endsWith('hotpotqa_dev.coa.jsonl'),
    30_000,
  );
  await ed.page.keyboard.press('Enter');
  const done = ed.page.locator('.notification-toast', { hasText: 'records written to hotpotqa_dev.coa.jsonl' }).first();
  await done.waitFor({ timeout: 60_000 });
  assert.match(await done.innerText(), /400 records written/);
  // The result opens by itself, as the notebook of its 400 questions (it used to wait for a click on "Open").
  await ed.page
    .locator('.tabs-container .tab.active', { hasText: 'hotpotqa_dev.coa.jsonl' })
    .waitFor({ timeout: 60_000 });
  await webviewFrame(ed.page, async (f) => (await f.getByText(/400 questions/).count()) > 0, 60_000);
  await ed.shot('signals-converted');
  const out = join(ed.workspace, 'hotpotqa_dev.coa.jsonl');
  assert.ok(existsSync(out));
  const lines = readFileSync(out, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { response: string; golden_answers?: string[] });
  assert.equal(lines.length, 400);
  assert.ok(lines.every((r) => r.response === '' && r.golden_answers?.length));
});

test('a stored greedy evaluation record replayed with its checkpoint saves the same trajectory, token for token', async (t) => {
  const evalFile = `runs/${EVAL}/eval/sft2-agent-dev.jsonl`;
  const stored = readFileSync(join(ed.workspace, evalFile), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map(
      (l) =>
        JSON.parse(l) as { id: string; response: string; tokens: { ids: number[] }; reward: { tool_calls: number } },
    );
  // The first record that searched: its action cell is the first cell with that text (the cell to select).
  const action = (r: (typeof stored)[number]) => /<search>[^<]*<\/search>/.exec(r.response)?.[0];
  const target = stored.find((r) => r.reward.tool_calls > 0)!;
  assert.ok(target, 'an evaluation record with a search');
  await runCommand(ed.page, 'View: Close All Editors');
  await openFile(ed.page, 'sft2-agent-dev.jsonl');
  await runCommand(ed.page, 'CoA: Open as Trajectory Notebook');
  // Markdown (header) cells are drawn in the notebook's webview: select the record through its action cell.
  // Notebook editors are drawn in overlays outside the editor groups, and a closed one's may stay in the DOM: find
  // the cell by its text, scroll with the wheel over the editor area.
  const cell = ed.page
    .locator('.notebook-editor .code-cell-row', { hasText: action(target)!.replace(/ +/g, ' ').slice(0, 40) })
    .first();
  await ed.page.locator('.notebook-editor .code-cell-row', { hasText: '<think>' }).first().waitFor({ timeout: 60_000 });
  // Cells are drawn as they scroll into view.
  const area = (await ed.page.locator('.part.editor').boundingBox())!;
  await ed.page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
  await until(
    "the record's action cell in view",
    async () => (await cell.isVisible()) || void (await ed.page.mouse.wheel(0, 300)),
    30_000,
  );
  // Select it (the notebook's overlay takes pointer events: click where the cell is drawn).
  const box = (await cell.boundingBox())!;
  await ed.page.mouse.click(box.x + box.width / 2, box.y + Math.min(box.height / 2, 20));
  const t0 = Date.now();
  await runCommand(ed.page, 'CoA: Replay with Checkpoint');
  // Saved once the replay is done: until then a save writes the running replay's header line without tokens.
  const saved = await until(
    'the replay saved as a line of the file',
    async () => {
      await ed.page.locator('.tabs-container .tab.active').first().click();
      await ed.page.keyboard.press('Control+S');
      await ed.page
        .locator('.tabs-container .tab.active.dirty')
        .waitFor({ state: 'hidden', timeout: 10_000 })
        .catch(() => undefined);
      const lines = readFileSync(join(ed.workspace, evalFile), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id: string; tokens?: { ids: number[] } });
      return lines.find((l) => l.id === `${target.id}#replay-env` && l.tokens);
    },
    180_000,
  );
  t.diagnostic(
    `replay of ${target.id} (${target.reward.tool_calls} search) with the run's environment server, saved: ${Date.now() - t0} ms`,
  );
  await ed.shot('signals-replayed');
  assert.deepEqual(saved.tokens!.ids, target.tokens.ids, "the replayed ids are the evaluation's");
});
