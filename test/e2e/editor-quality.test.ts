// Real-editor proof (editor side), in code-server with the packaged extension:
// - a 3,000-record verl parquet converted by the core (`coa convert`) opens within a stated time — in the paged
//   browser, as 3,000 cells is above coaStudio.notebook.maxCells — and "CoA: Train Stage" answers meanwhile;
// - questions are data: a Questions view (notebook) / line (browser), no squiggles, no failures;
// - step cells wrap (a long observation and the stray-tag squiggle stay on screen);
// - token overlays and their hover in notebook cells; rewards under the record's own run's scheme; "no golden answers";
// - the Runs view shows finished evaluations as finished; the walkthrough opens.
// Screenshots: .cache/artifacts/e2e/quality-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFile, pickQuick, repoRoot, runCommand, startEditor, until, webviewFrame, type Editor } from './harness';

const RECORDS = 3000;
/** Stated limit for open → first record shown (the measured figure is printed; bench/notebook has the series). */
const OPEN_LIMIT_S = 60;

/** The first `n` rows of one of AutoCoA's HotpotQA parquets, converted by the core's converter (`coa convert`). */
function convertedQuestions(parquet: string, n: number): string {
  const out = join(mkdtempSync(join(tmpdir(), 'coa-e2e-convert-')), 'hotpotqa.coa.jsonl');
  const r = spawnSync(
    process.execPath,
    [
      join(repoRoot, 'bin', 'coa.js'),
      'convert',
      '--from',
      'verl-parquet',
      join(repoRoot, 'examples/data/autocoa', parquet),
      '-o',
      out,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const lines = readFileSync(out, 'utf8').split('\n').filter(Boolean);
  assert.ok(lines.length >= n);
  return lines.slice(0, n).join('\n') + '\n';
}

/** Real RL-2 rollouts (tokens with offsets, autocoa rewards stored by the run), a long observation with a stray
 * closing tag at its end, and a record without golden answers. */
function rollouts(): string {
  const real = readFileSync(join(repoRoot, 'test/fixtures/live-panel/rl2.rollouts.coa.jsonl'), 'utf8')
    .trim()
    .split('\n');
  const doc =
    'Jaws is a 1975 American thriller film directed by Steven Spielberg, based on the 1974 novel by Peter Benchley. '.repeat(
      12,
    );
  const long = {
    id: 'long-observation',
    question: 'who wrote jaws?',
    golden_answers: ['Peter Benchley'],
    response: `<think>search it</think>\n<search>jaws novel author</search>\n<observation>${doc}</observation>\n<think>found</think></think>\n<answer>Peter Benchley</answer>`,
  };
  const nogold = {
    id: 'no-golden',
    question: 'an open question',
    response: '<think>guess</think>\n<answer>maybe</answer>',
  };
  return [...real, JSON.stringify(long), JSON.stringify(nogold)].join('\n') + '\n';
}

const RUN = 'demo-20261124-190603';
let ed: Editor;
before(async () => {
  ed = await startEditor({
    name: 'quality',
    files: {
      'hotpotqa.coa.jsonl': convertedQuestions('hotpotqa_train.parquet', RECORDS),
      'hotpotqa_dev.coa.jsonl': convertedQuestions('hotpotqa_dev.parquet', 400),
      'rollouts.coa.jsonl': rollouts(),
      [`runs/${RUN}/events.jsonl`]: readFileSync(
        join(repoRoot, 'test/fixtures/live-panel/demo-pipeline.events.jsonl'),
        'utf8',
      ),
    },
  });
});
after(async () => {
  await ed?.close();
});

/** Waits until the command palette lists a command (enablement keys set: the extension is active). */
async function waitListed(title: string, timeout = 180_000): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    await ed.page.keyboard.press('Escape');
    await ed.page.keyboard.press('F1');
    await ed.page
      .locator('.quick-input-widget input')
      .fill(`>${title}`)
      .catch(() => {});
    const ok = await ed.page
      .locator('.quick-input-list .monaco-list-row', { hasText: title })
      .first()
      .waitFor({ timeout: 5_000 })
      .then(
        () => true,
        () => false,
      );
    await ed.page.keyboard.press('Escape');
    if (ok) return;
    // Not listed within 5 s: the extension is still activating. Ask again.
    if (Date.now() > deadline) throw new Error(`"${title}" never listed`);
  }
}

/** Scrolls the active notebook with the mouse wheel until `target` exists (the notebook list is virtual). */
async function scrollNotebookTo(target: { count(): Promise<number> }, timeout = 90_000): Promise<void> {
  const box = await ed.page.locator('.notebook-editor').first().boundingBox();
  await ed.page.mouse.move((box?.x ?? 400) + (box?.width ?? 800) / 2, (box?.y ?? 200) + (box?.height ?? 600) / 2);
  await until(
    'the target cell, scrolling down',
    async () => (await target.count()) > 0 || void (await ed.page.mouse.wheel(0, 4000)),
    timeout,
  );
}

/** Waits until `target` stops moving (a scroll has been drawn): two reads of its box, one poll apart, agree. */
async function settled(
  target: { boundingBox(): Promise<{ x: number; y: number } | null> },
  timeout = 10_000,
): Promise<void> {
  let last = '';
  await until(
    'the scroll to settle',
    async () => {
      const now = JSON.stringify(await target.boundingBox());
      const same = now === last;
      last = now;
      return same;
    },
    timeout,
  ).catch(() => undefined);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

test(`a ${RECORDS.toLocaleString('en-US')}-record converted verl parquet opens at once in the paged browser; Train Stage answers while it loads`, async () => {
  // Let the extension finish activating first (its commands are listed once it is up): not what is measured.
  await waitListed('CoA: Train Stage');
  const t0 = Date.now();
  await openFile(ed.page, 'hotpotqa.coa.jsonl');
  // While the file opens: a command served by the extension host opens its picker.
  const c0 = Date.now();
  // (The palette can be caught closing the Quick Open list on this loaded machine: one retry.)
  await runCommand(ed.page, 'CoA: Train Stage').catch(() => runCommand(ed.page, 'CoA: Train Stage'));
  await ed.page
    .locator('.quick-input-widget .quick-input-title', { hasText: 'CoA: Train Stage (1/4)' })
    .waitFor({ timeout: 120_000 });
  const commandMs = Date.now() - c0;
  await ed.shot('quality-train-stage-while-loading');
  await ed.page.keyboard.press('Escape');
  // 3,000 cells is above coaStudio.notebook.maxCells: the browser, its first page and the questions line.
  const frame = await webviewFrame(ed.page, async (f) => (await f.locator('tr.row').count()) > 0, 180_000);
  const openMs = Date.now() - t0;
  const line = frame.locator('#questions');
  await line.filter({ hasText: /3,000 questions/ }).waitFor({ timeout: 120_000 });
  await ed.shot('quality-questions-browser');
  console.log(
    `open → first page ${seconds(openMs)} (browser); Train Stage picker ${seconds(commandMs)} after it was asked for, while the file opened`,
  );
  assert.ok(openMs < OPEN_LIMIT_S * 1000, `open took ${seconds(openMs)} (limit ${OPEN_LIMIT_S} s)`);
  assert.match(await line.innerText(), /golden answers on 3,000 \(100 %\) · sources: HotpotQA 3,000/);
  // A question set's columns: its questions, golden answers and sources (no reward columns of "—").
  assert.deepEqual(await frame.locator('thead th').allInnerTexts(), [
    'line',
    'id',
    'question',
    'golden answers',
    'source',
  ]);
  // The failures box: none (questions have not failed).
  await frame.locator('#failures').check();
  await frame.locator('#pageinfo', { hasText: / 0 matching/ }).waitFor({ timeout: 60_000 });
  await ed.shot('quality-questions-browser-no-failures');
});

test('400 questions (the dev parquet, converted) open as a notebook: the Questions view, one cell each, no squiggles', async () => {
  await openFile(ed.page, 'hotpotqa_dev.coa.jsonl');
  const frame = await webviewFrame(
    ed.page,
    async (f) => (await f.getByText('Questions', { exact: true }).count()) > 0,
    180_000,
  );
  const view =
    (await frame
      .getByText(/questions \(no responses yet\)/)
      .first()
      .textContent()) ?? '';
  await ed.shot('quality-questions-notebook');
  assert.match(view, /400 questions/);
  assert.match(view, /golden answers on 400 \(100 %\)/);
  assert.match(view, /sources: HotpotQA 400/);
  assert.equal(await ed.page.locator('.notebook-editor .squiggly-error').count(), 0);
  assert.equal(await ed.page.locator('.notebook-editor .code-cell-row').count(), 0, 'a question has no step cell');
  // Scrolling stays responsive: 40 wheel turns down, then the questions there are drawn.
  const s0 = Date.now();
  const box = await ed.page.locator('.notebook-editor').first().boundingBox();
  await ed.page.mouse.move((box?.x ?? 400) + 300, (box?.y ?? 200) + 300);
  // 40 turns, drawn within 5 s; on a loaded machine the first 40 once left no question past line 99 drawn after
  // 60 s (probably turns that landed while the list was still laying out): turn again, 40 at a time, and say how
  // many turns it took.
  const far = frame.getByText(/^line \d{3,}$/).first();
  let turns = 0;
  do {
    if (Date.now() - s0 > 180_000) throw new Error(`no question past line 99 drawn after ${turns} wheel turns`);
    for (let i = 0; i < 40; i++, turns++) await ed.page.mouse.wheel(0, 2000);
  } while (
    !(await far.waitFor({ timeout: 5_000 }).then(
      () => true,
      () => false,
    ))
  );
  console.log(`scroll ${turns} wheel turns (400 questions) until drawn ${seconds(Date.now() - s0)}`);
  await ed.shot('quality-questions-scrolled');
});

test('Show Failures on a questions notebook says there are none (fast, no blank notebook)', async () => {
  const t0 = Date.now();
  await runCommand(ed.page, 'CoA: Show Failures');
  const toast = ed.page.locator('.notification-toast', { hasText: 'no failures' }).first();
  await toast.waitFor({ timeout: 60_000 });
  console.log(`Show Failures answered in ${seconds(Date.now() - t0)}`);
  await ed.shot('quality-show-failures-none');
  assert.match(await toast.innerText(), /no failures .* in hotpotqa_dev\.coa\.jsonl/);
});

test('rollouts: rewards under the run\'s own scheme, "no golden answers", wrapped step cells', async () => {
  await openFile(ed.page, 'rollouts.coa.jsonl');
  const frame = await webviewFrame(ed.page, async (f) => (await f.locator('.coa-reward').count()) > 0);
  await frame.locator('.coa-reward').first().waitFor({ timeout: 60_000 });
  const first = await frame.locator('.coa-reward').first().innerText();
  assert.match(first, /· autocoa/, 'recomputed with the scheme its run stored');
  assert.match(first, /stored by its run/);
  assert.match(first, /recomputed with em/, 'the configured scheme is offered');
  await ed.shot('quality-stored-reward');
  const nogold = frame.locator('.coa-reward', { hasText: 'no golden answers' });
  // The long observation wraps: its cell shows several visual lines for one text line, the squiggle on screen.
  // The notebook list is virtual: go to its end (the last two records) so their cells exist.
  const cell = ed.page.locator('.notebook-editor .code-cell-row', { hasText: 'Jaws is a 1975' }).first();
  await scrollNotebookTo(ed.page.locator('.notebook-editor .code-cell-row', { hasText: 'Jaws is a 1975' }));
  // Bring it (and the stray-tag cell after it) up the screen.
  for (let i = 0; i < 12; i++) {
    const b = await cell.boundingBox();
    if (b && b.y < 350) break;
    // Over the cell's own editor (wheel over an output's webview is not always passed on to the list).
    if (b) await ed.page.mouse.move(b.x + 200, Math.min(b.y + 20, 950));
    await ed.page.mouse.wheel(0, 300);
    await settled(cell);
  }
  // Wrapped once laid out at the editor's width: several visual lines (asserted below, with what was drawn).
  await until(
    'the long observation drawn wrapped',
    async () => (await cell.locator('.view-line').count()) >= 2,
    10_000,
  ).catch(() => undefined);
  // Wrapped: the ~1,330-character line is drawn as several visual lines of screen width, the first one starting
  // with the tag and the second continuing the same text.
  const lines = await cell.locator('.view-line').allTextContents();
  await ed.shot('quality-wrapped-cells');
  assert.ok(
    lines.length >= 2 &&
      lines[0].startsWith('<observation>Jaws') &&
      lines[0].length < 300 &&
      /^\S/.test(lines[1].replace(/\u00a0/g, ' ')),
    `a long observation wraps: ${JSON.stringify(lines.map((l) => l.slice(0, 60) + '… ' + l.length))}`,
  );
  // The stray </think> after "found" is squiggled in the cell below the observation, on screen (not off to the right).
  const top = (await cell.boundingBox())?.y ?? 0;
  type Box = { x: number; y: number; width: number; height: number };
  const squiggleBelow = async (): Promise<Box | undefined> => {
    const boxes = await Promise.all(
      (await ed.page.locator('.notebook-editor .code-cell-row .squiggly-error').all()).map((l) => l.boundingBox()),
    );
    return boxes.find((b): b is Box => !!b && b.y > top && b.y < 1000);
  };
  const box = await until('the stray-tag squiggle below the observation', squiggleBelow, 30_000).catch(() => undefined);
  assert.ok(box && box.x + box.width <= 1600, `the stray-tag squiggle is on screen (${JSON.stringify(box)})`);
  await ed.shot('quality-wrapped-squiggle');
  // The last record (no golden answers): its output is drawn, shown once scrolled to.
  await nogold.first().waitFor({ state: 'attached', timeout: 60_000 });
  assert.match((await nogold.first().textContent()) ?? '', /not measured \(no golden answers\)/);
  const last = await cell.boundingBox();
  if (last) await ed.page.mouse.move(last.x + 200, Math.min(Math.max(last.y + 20, 150), 950));
  for (let i = 0; i < 8; i++) await ed.page.mouse.wheel(0, 400);
  await settled(ed.page.locator('.notebook-editor .code-cell-row').last());
  await ed.shot('quality-no-golden');
});

test('token overlays in notebook cells, with the hover of the text editor', async () => {
  // Back to the top: the first rollout's step cells.
  for (let i = 0; i < 30; i++) await ed.page.mouse.wheel(0, -4000);
  await settled(ed.page.locator('.notebook-editor .code-cell-row').first());
  await runCommand(ed.page, 'CoA: Toggle Token Overlay: Log-prob Heat Map');
  assert.equal(await ed.page.locator('.notification-toast', { hasText: 'nothing to overlay' }).count(), 0);
  // Decorations land in the step cells' editors (inline background colours from the heat map).
  // Inline decorations are drawn as their own elements (class ced-…) in the cell editor's layers.
  const decorated = ed.page.locator('.notebook-editor .code-cell-row [class*="ced-"]').first();
  const found = await decorated.waitFor({ timeout: 60_000 }).then(
    () => true,
    () => false,
  );
  if (!found) {
    await ed.shot('quality-token-overlay-missing');
    const classes = await ed.page.evaluate(() =>
      [
        ...new Set(
          Array.from(document.querySelectorAll('.notebook-editor .code-cell-row [class]')).map((e) =>
            String(e.className),
          ),
        ),
      ].slice(0, 60),
    );
    assert.fail(`no decorated token in the visible cells; span classes: ${JSON.stringify(classes)}`);
  }
  await ed.shot('quality-token-overlay');
  // Hover a decorated token on screen (every token of these rollouts has a log-prob).
  const marks = ed.page.locator('.notebook-editor .code-cell-row [class*="ced-"]');
  let target: { x: number; y: number; width: number; height: number } | null = null;
  for (let i = 0; i < (await marks.count()) && !target; i++) {
    const b = await marks.nth(i).boundingBox();
    if (b && b.width > 4 && b.y > 150 && b.y < 900) target = b;
  }
  assert.ok(target, 'a decorated token on screen');
  const hover = ed.page.locator('.monaco-hover', { hasText: 'log-prob' }).first();
  // The hover shows once the mouse rests on the token; while it has not, the mouse is nudged a pixel every 2 s.
  const [cx, cy] = [target.x + target.width / 2, target.y + target.height / 2];
  await ed.page.mouse.move(cx, cy);
  let polls = 0;
  const nudge = async () => (++polls % 20 === 0 ? ed.page.mouse.move(cx + ((polls / 20) % 2), cy) : undefined);
  await until('the token hover', async () => (await hover.isVisible()) || void (await nudge()), 30_000).catch(
    async (e) => {
      await ed.shot('quality-token-hover-missing');
      throw e;
    },
  );
  const text = await hover.innerText();
  await ed.shot('quality-token-hover');
  assert.match(text, /token \d+/);
  assert.match(text, /advantage/);
  await runCommand(ed.page, 'CoA: Toggle Token Overlay: Log-prob Heat Map');
});

test("Runs view: the pipeline's evaluations are finished, not pending", async () => {
  await ed.page
    .locator(
      '.activitybar .action-item a[aria-label^="CoA Studio"], .activitybar .action-item[aria-label^="CoA Studio"]',
    )
    .first()
    .click();
  const run = ed.page.locator('.sidebar .monaco-list-row', { hasText: RUN }).first();
  await run.waitFor({ timeout: 60_000 });
  await run.click();
  await ed.page.keyboard.press('ArrowRight');
  const evalRow = ed.page.locator('.sidebar .monaco-list-row', { hasText: 'SFT + RL (OTC)' }).first();
  await evalRow.waitFor({ timeout: 30_000 });
  await ed.shot('quality-runs-evaluations');
  const rows = await ed.page.locator('.sidebar .monaco-list-row').allInnerTexts();
  assert.ok(!rows.some((r) => /pending/.test(r)), `no stage pending: ${rows.join(' | ')}`);
  assert.match(await evalRow.innerText(), /ok/);
});

test('the walkthrough: run the demo, watch the panel, open rollouts, open a trajectory, train a stage', async () => {
  await runCommand(ed.page, 'Welcome: Open Walkthrough');
  await pickQuick(ed.page, 'Get Started with CoA Studio');
  const steps = ed.page.locator('.gettingStartedContainer .getting-started-step');
  await ed.page
    .locator('.gettingStartedContainer', { hasText: 'Get Started with CoA Studio' })
    .first()
    .waitFor({ timeout: 60_000 });
  const titles = ['Run the demo', 'Open a trajectory', 'Train a stage', 'Watch the live panel', 'Open rollouts'];
  const read = async () => (await steps.allInnerTexts()).join('\n');
  const text = await until(
    "the walkthrough's steps drawn",
    async () => {
      const t = await read();
      return titles.every((x) => t.includes(x)) && t;
    },
    30_000,
  ).catch(read);
  await ed.shot('quality-walkthrough');
  for (const title of titles) assert.match(text, new RegExp(title));
});
