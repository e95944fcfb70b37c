// Real-editor proof of the RL engineer's loop, on a whole demo pipeline run's own files
// (test/fixtures/demo-run: RL-2 and RL-2-OTC rollouts of 1,536 records each, the RL-2-OTC checkpoint), in code-server:
// the live panel at 1,600 px lays its charts in columns and survives resizes; a click on a reward chart point lists
// that step's rollouts and one opens in the record view — steps as cells, the reward breakdown, token overlays with
// their legend — without the whole file as a notebook and without an Untitled copy; a step edited there and forked
// regenerates the rest with the stage's checkpoint, the fork beside the original with both rewards; the browser opens
// records beside it (and Problems leads back to them); its text search finds a name among AutoCoA's 2,936 test
// questions (converted from the parquet). Screenshots:
// .cache/artifacts/e2e/rl-loop-*.png; timings printed as diagnostics (bench/live-panel measures them).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Frame } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { pickQuick, repoRoot, runCommand, startEditor, until, webviewFrame, type Editor } from './harness';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { demoRun } from '../fixtures/demoRun';

const RUN = 'demo-issue33';
let ed: Editor;
let panel: Frame;

before(async () => {
  ed = await startEditor({ name: 'rl-loop' });
  // The whole run as the pipeline left it: RL-2-OTC's final/ model, no ONNX export yet (the first fork makes it).
  demoRun(join(ed.workspace, 'runs', RUN));
  // AutoCoA's test parquet converted by the CLI before Quick Open first lists the workspace: a file written later
  // reaches Quick Open only through the file watcher, which a loaded machine can hold back past any wait.
  execFileSync(
    process.execPath,
    [
      join(repoRoot, 'dist/cli.js'),
      'convert',
      '--from',
      'verl-parquet',
      join(repoRoot, 'examples/data/autocoa/all_test.parquet'),
      '-o',
      join(ed.workspace, 'all_test.coa.jsonl'),
    ],
    { stdio: 'ignore' },
  );
});
after(async () => {
  await ed?.close();
});

/** Per drawn chart: its box and plot widths, its position, and how many coloured (line) pixels its canvas holds. */
const chartState = () =>
  panel.$$eval('.chart.drawn', (boxes) =>
    boxes.map((b) => {
      const box = b as HTMLElement;
      const canvas = box.querySelector('canvas') as HTMLCanvasElement;
      const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let coloured = 0; // lines are saturated theme colours; axes, grid and background are grey
      for (let i = 0; i < px.length; i += 4)
        if (px[i + 3] > 100 && Math.max(px[i], px[i + 1], px[i + 2]) - Math.min(px[i], px[i + 1], px[i + 2]) > 80)
          coloured++;
      return {
        metric: box.dataset.metric!,
        group: box.dataset.group!,
        left: Math.round(box.getBoundingClientRect().left),
        box: box.clientWidth,
        plot: canvas.getBoundingClientRect().width,
        coloured,
      };
    }),
  );

/** In the panel's page: every chart's plot is as wide as its box allows (asserted below, with details). */
const plotsFollowBoxes = () =>
  Array.from(document.querySelectorAll<HTMLElement>('.chart.drawn')).every((box) => {
    const canvas = box.querySelector('canvas');
    return canvas && Math.abs(canvas.getBoundingClientRect().width - Math.max(200, box.clientWidth - 10)) <= 1;
  });

/** In the panel's page: each chart whose box is in view has its plot made and drawn. */
const chartsInViewDrawn = () =>
  Array.from(document.querySelectorAll<HTMLElement>('.chart')).every((box) => {
    const r = box.getBoundingClientRect();
    return (
      r.bottom < 0 || r.top > window.innerHeight || (box.classList.contains('drawn') && box.querySelector('canvas'))
    );
  });

test('the live panel of a whole pipeline run at 1,600 px: charts in columns; Ctrl+B twice leaves every chart drawn, constant ones too', async (t) => {
  await runCommand(ed.page, 'CoA: Open Live Training Panel');
  await pickQuick(ed.page, RUN);
  panel = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('.chart[data-metric="reward_mean"].drawn').count()) > 0,
    90_000,
  );
  const errors: string[] = [];
  ed.page.on(
    'console',
    (m) => m.type() === 'error' && /uPlot|RangeError|live-panel|Invalid array/i.test(m.text()) && errors.push(m.text()),
  );
  const before = await chartState();
  const columns = new Set(before.map((c) => c.left)).size;
  t.diagnostic(`1,600 px window: ${columns} chart columns, charts ${before[0].box} px wide`);
  assert.ok(columns >= 2, `${columns} column(s) of charts at 1,600 px`);
  await ed.shot('panel-1600');
  // Ctrl+B twice (the side bar hidden, then shown again), twice over: the panel is resized each time — once the
  // side bar has toggled and the panel's charts have followed the new width.
  const sidebar = ed.page.locator('.part.sidebar');
  const width = () => panel.evaluate(() => document.documentElement.clientWidth);
  for (let i = 0; i < 4; i++) {
    const [shown, before] = [await sidebar.isVisible(), await width()];
    await ed.page.keyboard.press('Control+B');
    await sidebar.waitFor({ state: shown ? 'hidden' : 'visible', timeout: 10_000 });
    await until('the live panel resized', async () => (await width()) !== before, 10_000);
    await panel.waitForFunction(plotsFollowBoxes, undefined, { timeout: 10_000 }).catch(() => undefined);
  }
  // Scroll through the tab so every chart is made and drawn (plots exist only for boxes in view).
  for (let y = 0; y < 20_000; y += 700) {
    await panel.evaluate((to) => window.scrollTo(0, to), y);
    await panel.waitForFunction(chartsInViewDrawn, undefined, { timeout: 10_000, polling: 50 }).catch(() => undefined);
  }
  await panel.waitForFunction(plotsFollowBoxes, undefined, { timeout: 10_000 }).catch(() => undefined);
  const after = await chartState();
  for (const c of after) {
    assert.ok(
      Math.abs(c.plot - Math.max(200, c.box - 10)) <= 1,
      `${c.metric}: a ${c.plot} px plot in a ${c.box} px box`,
    );
    assert.ok(c.coloured > 20, `${c.metric} is drawn after the resizes (${c.coloured} coloured px)`);
  }
  for (const constant of ['tool_failure_rate', 'clip_frac'])
    assert.ok(
      after.some((c) => c.metric === constant),
      `${constant} (constant) was drawn`,
    );
  await panel.evaluate(() => window.scrollTo(0, 0));
  await ed.shot('panel-after-resizes');
  assert.deepEqual(errors, []);
});

test('a chart point of a 1,536-record run opens one rollout in the record view: steps, reward, overlays and legend', async (t) => {
  const over = panel.locator('.chart[data-metric="reward_mean"] .u-over');
  const box = (await over.boundingBox())!;
  await over.click({ position: { x: box.width * 0.6, y: box.height * 0.5 } });
  const list = panel.locator('#step-rollouts ul.step-rollouts');
  await list.waitFor({ timeout: 30_000 });
  const stage = (await list.getAttribute('data-stage'))!;
  const step = Number(await list.getAttribute('data-step'));
  const first = list.locator('li[data-id]').first();
  const id = (await first.getAttribute('data-id'))!;
  t.diagnostic(
    `clicked ${stage} step ${step}: ${await list.locator('li[data-id]').count()} rollouts listed, opening ${id}`,
  );
  await ed.shot('step-rollouts');
  const t0 = Date.now();
  await first.click();
  // The record view: a tab named after the record, its header cell, its reward output drawn by our renderer.
  await ed.page.locator('.tabs-container .tab', { hasText: `${id}.coa.jsonl` }).waitFor({ timeout: 30_000 });
  await ed.page.locator('.notebook-editor .code-cell-row').first().waitFor({ timeout: 30_000 });
  const reward = await webviewFrame(ed.page, async (f) => (await f.locator('.coa-reward').count()) > 0, 30_000);
  const opened = Date.now() - t0;
  t.diagnostic(`click → record view with its reward drawn: ${opened} ms`);
  assert.match(await reward.locator('.coa-reward').first().innerText(), /reward/i);
  // Overlays: the log-prob heat map is on (a record with tokens), its legend on the first step cell's status line.
  const legend = ed.page
    .locator('.notebook-editor .cell-statusbar-container', { hasText: /Overlays: log-prob/ })
    .first();
  await legend.waitFor({ timeout: 30_000 });
  // Decorations follow once the cell editors have settled (tokens/overlays.ts): wait for the first, then count.
  const tokens = ed.page.locator('.notebook-editor .cell-editor-part .view-overlays .cdr');
  const decorated = await tokens
    .first()
    .waitFor({ timeout: 30_000 })
    .then(
      () => tokens.count(),
      () => 0,
    );
  await ed.shot('rollout-record-view');
  assert.ok(decorated > 0, 'step cells carry token decorations');
  // One record, not the file: the header says which line of which file; no Untitled document, nothing dirty.
  // (Markdown cells are drawn in the notebook's webview, with the outputs.)
  assert.equal(
    await reward.getByText(new RegExp(`line [\\d,]+ of runs/${RUN}/stages/${stage}/rollouts\\.coa\\.jsonl`)).count(),
    1,
  );
  assert.equal(await ed.page.locator('.tabs-container .tab', { hasText: /Untitled/ }).count(), 0);
  assert.equal(await ed.page.locator('.tabs-container .tab.dirty').count(), 0);
  assert.deepEqual(
    ed.consoleErrors.filter((e) => /byteLength|_createOutputCreationMessage|coa/i.test(e)),
    [],
  );
});

test("★ fork: the last thought edited in the record view, the rest regenerated with the stage's checkpoint; original and fork side by side with both rewards", async (t) => {
  // The record view of the previous test: q0488-40-0 answered "panis" (golden "gubre"), reward 0. Its last thought
  // says so; edit it to "gubre" and fork from there.
  const think = ed.page.locator('.notebook-editor .code-cell-row', { hasText: 'vaman born in panis' }).first();
  // The word selected and replaced (retyping the tags, the editor would auto-close them a second time).
  const text = '<think> vaman born in panis . </think>';
  await think.locator('.view-line', { hasText: 'vaman born in panis' }).click();
  await ed.page.keyboard.press('Home');
  for (let i = 0; i < text.indexOf('panis'); i++) await ed.page.keyboard.press('ArrowRight');
  for (let i = 0; i < 'panis'.length; i++) await ed.page.keyboard.press('Shift+ArrowRight');
  await ed.page.keyboard.insertText('gubre');
  await ed.page
    .locator('.notebook-editor .code-cell-row .view-line', { hasText: /born\sin\sgubre\s\.\s*<\/think>/ })
    .waitFor({ timeout: 10_000 });
  await ed.page.locator('.tabs-container .tab.dirty', { hasText: '.coa.jsonl' }).first().waitFor({ timeout: 10_000 });
  const t0 = Date.now();
  await runCommand(ed.page, 'CoA: Fork Trajectory from This Step');
  // The stage has no ONNX export yet: the fork exports it inside its own progress, asks nothing and leaves no
  // "exported" message to close (it used to wait, with the fork, until that message was dismissed).
  const note = ed.page.locator('.notification-toast', { hasText: /#fork-\d+ — reward/ }).first();
  await note.waitFor({ timeout: 240_000 });
  const message = await note.innerText();
  t.diagnostic(`first fork (ONNX export included) in ${Date.now() - t0} ms: ${message.replace(/\s+/g, ' ')}`);
  assert.match(message, /q0488-40-0#fork-3 — reward 0 \(otc-grpo\) → 1 \(otc-grpo\); answer "panis" → "gubre"/);
  assert.ok(
    existsSync(join(ed.workspace, 'runs', RUN, 'stages/rl2-otc/onnx/model.onnx')),
    'the stage exported where the Runs view exports it',
  );
  assert.equal(
    await ed.page.locator('.notification-toast', { hasText: /exported|Export and Fork/ }).count(),
    0,
    'no export question or message to dismiss',
  );
  // The fork's record view opened beside the original (its own tab), with its reward drawn; the original reverted.
  await ed.page
    .locator('.tabs-container .tab', { hasText: 'q0488-40-0#fork-3.coa.jsonl' })
    .waitFor({ timeout: 30_000 });
  const rewards = await webviewFrame(
    ed.page,
    async (f) =>
      (await f.locator('.coa-reward').count()) > 0 && (await f.getByText(/fork_of|q0488-40-0#fork-3/).count()) > 0,
    60_000,
  );
  assert.ok(await rewards.locator('.coa-reward').count());
  assert.equal(
    await rewards.getByText(/Fork of q0488-40-0 from step 4 \(think, edited\) — its reward 0 \(otc-grpo\)/).count(),
    1,
    "the fork's header names the original's reward",
  );
  await until(
    'the original reverted (no dirty tab)',
    async () => (await ed.page.locator('.tabs-container .tab.dirty').count()) === 0,
    10_000,
  ).catch(() => undefined);
  await ed.shot('fork-side-by-side');
  assert.equal(await ed.page.locator('.tabs-container .tab.dirty').count(), 0, 'the original is back to what it was');
  // …and shows it: its thought reads "panis" again (only the fork says "gubre").
  await ed.page
    .locator('.notebook-editor .code-cell-row .view-line', { hasText: /vaman\sborn\sin\spanis\s\./ })
    .first()
    .waitFor({ timeout: 10_000 });
  const groups = await ed.page.locator('.editor-group-container').count();
  assert.ok(groups >= 3, `live panel, original and fork in ${groups} groups`);
  // The fork is a record of its own, beside the rollouts it came from.
  const forks = readFileSync(join(ed.workspace, 'runs', RUN, 'stages/rl2-otc/rollouts.forks.coa.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(forks.length, 1);
  assert.deepEqual(
    [forks[0].id, forks[0].meta.fork_of, forks[0].meta.fork_edited, forks[0].reward.total],
    ['q0488-40-0#fork-3', 'q0488-40-0', true, 1],
  );
  assert.ok(forks[0].meta.given_tokens > 0);
});

test("a replay of the fork's record runs with the checkpoint the fork exported: no checkpoint asked for", async (t) => {
  // The fork's record view is the active editor: select one of its step cells and replay it.
  await ed.page.locator('.tabs-container .tab', { hasText: 'q0488-40-0#fork-3.coa.jsonl' }).first().click();
  await ed.page.locator('.notebook-editor .code-cell-row', { hasText: 'born in gubre' }).last().click();
  const t0 = Date.now();
  await runCommand(ed.page, 'CoA: Replay with Checkpoint');
  const progress = ed.page.locator('.notification-toast', { hasText: /Replaying with checkpoint/ }).first();
  await progress.waitFor({ timeout: 30_000 }).catch(() => undefined);
  // Before, replay asked for a model.onnx in a file dialog (a quick input in code-server) though the fork had just
  // exported the stage's checkpoint.
  await progress.waitFor({ state: 'hidden', timeout: 120_000 });
  assert.equal(
    await ed.page
      .locator('.quick-input-widget', { hasText: /Exported checkpoint|model\.onnx/ })
      .filter({ visible: true })
      .count(),
    0,
    'no checkpoint asked for',
  );
  const view = await webviewFrame(ed.page, async (f) => (await f.getByText(/#replay-env/).count()) > 0, 60_000);
  t.diagnostic(`replay of the fork: ${Date.now() - t0} ms`);
  assert.ok(await view.getByText(/#replay-env/).count());
  await ed.shot('fork-replayed');
  // The replay's cells are unsaved edits of the fork's view: drop them (a later Close All would stop at "Save?").
  await runCommand(ed.page, 'View: Revert and Close Editor');
  await ed.page
    .locator('.tabs-container .tab', { hasText: 'q0488-40-0#fork-3.coa.jsonl' })
    .waitFor({ state: 'hidden', timeout: 15_000 });
});

/** Until the record views' token decorations have stopped changing for 2 s (some, if any cell has tokens). */
async function decorationsSettled(): Promise<void> {
  const tokens = ed.page.locator('.notebook-editor .cell-editor-part .view-overlays .cdr');
  let last = -1;
  let since = Date.now();
  await until(
    'the token decorations settled',
    async () => {
      const n = await tokens.count();
      if (n !== last) [last, since] = [n, Date.now()];
      return n > 0 && Date.now() - since >= 2_000;
    },
    30_000,
  ).catch(() => undefined); // a record without tokens has none to wait for
}

/** Quick Open on a path (several files share the name), Enter on its first match. */
async function quickOpen(path: string): Promise<void> {
  await ed.page.keyboard.press('Escape');
  await ed.page.keyboard.press('Control+P');
  const input = ed.page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 30_000 });
  await input.fill(path);
  await ed.page
    .locator('.quick-input-list .monaco-list-row', { hasText: path.split('/').pop()! })
    .first()
    .waitFor({ timeout: 60_000 });
  // Enter opens the focused row: once the filtered list focuses the file in that folder (several share its name).
  const focused = path
    .split('/')
    .slice(-2)
    .reduce(
      (row, part) => row.filter({ hasText: part }),
      ed.page.locator('.quick-input-list .monaco-list-row.focused'),
    );
  await focused.waitFor({ timeout: 10_000 }).catch(() => undefined);
  await ed.page.keyboard.press('Enter');
}

test('the browser of a 1,536-record rollouts file shows the stored rewards and opens a record beside it; its format errors in Problems lead back to the record view and leave with its tab', async (t) => {
  await ed.page.keyboard.press('Control+K');
  await ed.page.keyboard.press('Control+W'); // close every editor: a clean layout
  await quickOpen('rl2-otc/rollouts.coa.jsonl');
  // 1,536 records make more cells than coaStudio.notebook.maxCells: the file stays in the browser.
  const browser = await webviewFrame(ed.page, async (f) => (await f.locator('#rows tr.row').count()) > 0, 120_000);
  await browser.locator('#status', { hasText: /1,536 records indexed/ }).waitFor({ timeout: 60_000 });
  await browser.locator('#jump').fill('q0118-5-74');
  await browser.locator('#jump').press('Enter');
  await ed.page.locator('.tabs-container .tab', { hasText: 'q0118-5-74.coa.jsonl' }).waitFor({ timeout: 30_000 });
  assert.equal(
    await browser.locator('#rows tr.sel td:nth-child(2)').textContent(),
    'q0118-5-74',
    'the record is selected in the browser',
  );
  assert.ok(
    await browser.locator('#rows tr.sel').evaluate((tr) => {
      const r = tr.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= innerHeight;
    }),
    'the jump scrolled its row into view',
  );
  // Rewards as the run stored them, under its scheme: the next record answered right with more calls than its
  // group's fewest, 0.866 under OTC-GRPO (recomputed with em it read 1).
  assert.equal(await browser.locator('thead th').nth(2).textContent(), 'reward (otc-grpo, stored)');
  assert.equal(
    await browser.locator('#rows tr.row', { hasText: 'q0118-5-75' }).locator('td').nth(2).textContent(),
    '0.866',
  );
  assert.equal(
    await ed.page.locator('.tabs-container .tab', { hasText: /^rollouts\.coa\.jsonl/ }).count(),
    1,
    'the browser stays open beside it',
  );
  // Its format errors (repeated answers) are in Problems, on its cells; a click there shows the record view's cell.
  await ed.page.keyboard.press('Control+Shift+M');
  const problem = ed.page.locator('.markers-panel .monaco-list-row', { hasText: /COA00[23]/ }).first();
  await problem.waitFor({ timeout: 30_000 });
  await ed.shot('browser-record-problems');
  await problem.click();
  await ed.page.keyboard.press('Enter');
  await ed.page
    .locator('.tabs-container .tab.active', { hasText: 'q0118-5-74.coa.jsonl' })
    .first()
    .waitFor({ timeout: 15_000 });
  // The record view is the active editor, on one of its step cells (the status bar counts its cells).
  await ed.page
    .locator('.part.statusbar .statusbar-item', { hasText: /Cell [2-9] of \d+/ })
    .first()
    .waitFor({ timeout: 15_000 });
  // Its cells' token decorations land before its tab is closed: they follow a cell editor once it has lasted a moment
  // (tokens/overlays.ts), and a close within that moment races the window's teardown of the editor, which the
  // extension hears of only afterwards. What the last test checks is that nothing goes to editors once closed.
  await decorationsSettled();
  // Its tab closed, its problems leave Problems at once (VS Code keeps the notebook open for 40 s to minutes more).
  await ed.page.keyboard.press('Control+W');
  await ed.page
    .locator('.tabs-container .tab', { hasText: 'q0118-5-74.coa.jsonl' })
    .waitFor({ state: 'hidden', timeout: 15_000 });
  const t0 = Date.now();
  await until(
    "the closed record view's problems gone from Problems",
    async () => (await ed.page.locator('.markers-panel .monaco-list-row', { hasText: /COA00[23]/ }).count()) === 0,
    15_000,
  );
  t.diagnostic(`record view closed → its problems gone in ${Date.now() - t0} ms`);
});

test('AutoCoA\'s 2,936-row test parquet, converted: the browser\'s text search (Ctrl+F) finds "Drogo" and opens its question beside', async (t) => {
  await quickOpen('all_test.coa.jsonl');
  const browser = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('body[data-kind="questions"] #rows tr.row').count()) > 0,
    120_000,
  );
  assert.deepEqual(await browser.locator('thead th').allInnerTexts(), [
    'line',
    'id',
    'question',
    'golden answers',
    'source',
  ]);
  // Ctrl+F with the focus in the browser (on its status line: a row click would open a record).
  await browser.locator('#status').click();
  await ed.page.keyboard.press('Control+F');
  await browser.locator('#search:focus').waitFor({ timeout: 10_000 });
  const t0 = Date.now();
  await ed.page.keyboard.type('Drogo');
  await ed.page.keyboard.press('Enter');
  const status = browser.locator('#search-status[data-running="false"]', { hasText: 'Drogo' });
  await status.waitFor({ timeout: 60_000 });
  t.diagnostic(`search "Drogo" in 2,935 questions: ${Date.now() - t0} ms (typing included)`);
  assert.equal(await status.textContent(), '1 record with “Drogo”');
  await browser.locator('#rows tr.row').first().waitFor({ timeout: 10_000 });
  assert.equal(await browser.locator('#rows tr.row').count(), 1);
  assert.match((await browser.locator('#rows tr.row td').nth(2).textContent()) ?? '', /Drogo Of Champagne/);
  await ed.shot('browser-search-drogo');
  await browser.locator('#rows tr.row').first().click();
  await ed.page.locator('.tabs-container .tab', { hasText: 'dev_4468.coa.jsonl' }).waitFor({ timeout: 30_000 });
  // The record view's header (a Markdown cell, drawn in the notebook's webview; the browser has no headings).
  const view = await webviewFrame(
    ed.page,
    async (f) => (await f.locator('h3', { hasText: 'dev_4468' }).count()) > 0,
    60_000,
  );
  assert.ok(await view.getByText(/Drogo Of Champagne/).count(), 'its question in the header');
  assert.ok(await view.getByText(/Pepin of Herstal/).count(), 'its golden answer in the header');
  assert.ok(await view.getByText(/line 17 of all_test\.coa\.jsonl/).count(), 'its line of the file');
  await ed.shot('browser-search-record');
});

test('after every editor of the session closed, the extension host logged no "Illegal argument: TextEditor" (decorations sent to closed editors)', async () => {
  const warnings = () =>
    readdirSync(ed.logsDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('exthost.log'))
      .flatMap((f) => readFileSync(join(ed.logsDir, f), 'utf8').split('\n'))
      .filter((l) => l.includes('Illegal argument: TextEditor'));
  await ed.page.keyboard.press('Escape');
  await runCommand(ed.page, 'View: Close All Editors');
  await until('every editor closed', async () => (await ed.page.locator('.tabs-container .tab').count()) === 0, 30_000);
  // Nothing announces that the window has handled the last decoration calls: watch the log for a few seconds.
  const found = await until('a warning', () => warnings().length > 0 && warnings(), 5_000).catch(() => []);
  assert.deepEqual(found, []);
});
