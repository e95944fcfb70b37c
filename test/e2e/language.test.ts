// Real-editor proof of the language features: a .coa file in code-server with the packaged extension — tag names in
// distinct token colours, a format error squiggled and counted in Problems (the count the `coa` CLI reports for
// the same file), and the reward breakdown on hover. The folder is open in Restricted Mode (not trusted): viewing
// works there, and training, asked for from the walkthrough, says why it cannot run and how to trust the folder.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  openFile,
  pickQuick,
  repoFiles,
  repoRoot,
  runCommand,
  startEditor,
  until,
  waitLanguage,
  type Editor,
} from './harness';

// A format error the core reports: a search after the answer (COA008 content after the answer, COA005 no observation).
const BAD =
  '<think>Search first.</think>\n<search>Herman Wouk</search>\n<observation>Doc 1(Title: "Herman Wouk") an author.</observation>\n<answer>Herman Wouk</answer>\n<search>after the answer</search>\n';

/** Errors the CLI reports for the same text: the editor's Problems count must equal it. */
function cliErrorCount(text: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'coa-e2e-cli-'));
  writeFileSync(join(dir, 'bad.coa'), text);
  const r = spawnSync(process.execPath, [join(repoRoot, 'bin', 'coa.js'), 'validate', join(dir, 'bad.coa')], {
    encoding: 'utf8',
  });
  return (r.stdout.match(/: error COA\d+/g) ?? []).length;
}

let ed: Editor;
before(async () => {
  ed = await startEditor({
    name: 'language',
    files: { ...repoFiles('examples/episode.coa'), 'bad.coa': BAD },
    untrusted: true,
  });
});
after(async () => ed?.close());

/** Computed colour of the first rendered token whose text is exactly `text` in the active editor. */
async function tokenColour(text: string): Promise<string | null> {
  return ed.page.evaluate((t) => {
    const editor = document.querySelector('.editor-group-container.active .monaco-editor .view-lines');
    for (const span of Array.from(editor?.querySelectorAll('.view-line span span') ?? [])) {
      if ((span.textContent ?? '').replace(/\u00a0/g, ' ').trim() === t) return getComputedStyle(span).color;
    }
    return null;
  }, text);
}

test('a .coa file gets the CoA language and per-kind tag colours', async () => {
  await openFile(ed.page, 'episode.coa');
  await waitLanguage(ed.page, 'CoA Trajectory');
  const paint = async () => {
    const colours: Record<string, string | null> = {};
    for (const t of ['think', 'search', 'observation', 'answer']) colours[t] = await tokenColour(t);
    const plain = await ed.page.evaluate(() => {
      const el = document.querySelector('.editor-group-container.active .monaco-editor .view-lines');
      return el ? getComputedStyle(el).color : null;
    });
    return { colours, plain, distinct: new Set(Object.values(colours)) };
  };
  // The grammar paints first, semantic tokens from the language server may repaint after it: wait until the tags
  // carry per-kind colours (what is asserted below), then assert on that paint.
  const painted = async () => {
    const p = await paint();
    return Object.values(p.colours).every(Boolean) && p.distinct.size >= 3 && !p.distinct.has(p.plain) ? p : undefined;
  };
  const { colours, plain, distinct } = await until('per-kind tag colours in episode.coa', painted, 30_000).catch(paint);
  await ed.shot('episode-tokens');
  for (const [t, c] of Object.entries(colours)) assert.ok(c, `no rendered token "${t}" in episode.coa`);
  assert.ok(distinct.size >= 3, `tag names should carry distinct colours per kind, got ${JSON.stringify(colours)}`);
  assert.ok(!distinct.has(plain), `tag colours should differ from plain text ${plain}: ${JSON.stringify(colours)}`);
});

test('a format error is squiggled and counted in Problems like the CLI counts it', async () => {
  const expected = cliErrorCount(BAD);
  assert.ok(expected > 0, 'the CLI should report errors for the bad trajectory');
  await openFile(ed.page, 'bad.coa');
  await waitLanguage(ed.page, 'CoA Trajectory');
  const squiggle = ed.page.locator('.editor-group-container.active .monaco-editor .squiggly-error').first();
  await squiggle.waitFor({ state: 'attached', timeout: 60_000 });
  const problems = ed.page.locator('[id="status.problems"]');
  const read = async () => (await problems.getAttribute('aria-label')) ?? (await problems.innerText());
  const label = await until(
    `Problems to count ${expected} errors`,
    async () => {
      const l = await read();
      return new RegExp(`Errors?: ${expected}\\b`).test(l) && l;
    },
    30_000,
  ).catch(read);
  await ed.page.keyboard.press('Control+Shift+M');
  await ed.page.locator('.markers-panel .monaco-list-row').first().waitFor({ timeout: 30_000 });
  await ed.shot('bad-problems');
  const errors = Number((label.match(/Errors?: (\d+)/) ?? [])[1] ?? NaN);
  assert.equal(errors, expected, `Problems status (${label}) should count the ${expected} errors the CLI reports`);
  const panelText = await ed.page.locator('.markers-panel').innerText();
  assert.match(panelText, /COA008/, 'the Problems panel lists the format rule code');
});

test('hovering the answer shows the reward breakdown', async () => {
  await openFile(ed.page, 'episode.coa');
  await waitLanguage(ed.page, 'CoA Trajectory');
  await ed.page.keyboard.press('Escape');
  // The answer's content token on the last line.
  const target = ed.page
    .locator('.editor-group-container.active .view-lines .view-line span span', { hasText: 'Herman' })
    .last();
  await target.waitFor({ timeout: 30_000 });
  const hover = ed.page.locator('.monaco-hover', { hasText: 'Reward of' }).first();
  for (let i = 0; i < 5 && !(await hover.isVisible()); i++) {
    await target.hover({ position: { x: 5, y: 5 } });
    await hover.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => {});
  }
  await ed.shot('episode-hover');
  const text = await hover.innerText();
  assert.match(text, /Reward of/);
  assert.match(text, /total/);
  assert.match(text, /format/);
});

test('Restricted Mode: the walkthrough\'s "Run the Embedded Demo" says training needs a trusted workspace and how to trust it; nothing starts', async () => {
  await ed.page
    .locator('.statusbar-item', { hasText: /Restricted Mode/ })
    .first()
    .waitFor({ timeout: 30_000 });
  await runCommand(ed.page, 'Welcome: Open Walkthrough');
  await pickQuick(ed.page, 'Get Started with CoA Studio');
  const demo = ed.page.locator('.gettingStartedContainer .getting-started-step', { hasText: 'Run the demo' }).first();
  await demo.waitFor({ timeout: 60_000 });
  await demo.click();
  const button = ed.page
    .locator('.gettingStartedContainer')
    .getByText('Run the Embedded Demo', { exact: true })
    .first();
  await button.waitFor({ timeout: 30_000 });
  await button.click();
  const toast = ed.page.locator('.notification-toast', { hasText: 'needs a trusted workspace' }).first();
  await toast.waitFor({ timeout: 30_000 });
  await ed.shot('restricted-demo');
  const text = await toast.innerText();
  assert.match(text, /Training needs a trusted workspace, and this folder is open in Restricted Mode/);
  assert.ok(
    await toast.getByRole('button', { name: 'Manage Workspace Trust' }).count(),
    'the message offers to manage trust',
  );
  assert.ok(!existsSync(join(ed.workspace, 'runs')), 'no run was started');
  // The training commands are still in the palette (they vanished in Restricted Mode).
  await runCommand(ed.page, 'CoA: Train Stage');
  await ed.page
    .locator('.notification-toast', { hasText: /Training needs a trusted workspace/ })
    .nth(1)
    .waitFor({ timeout: 30_000 })
    .catch(() => undefined);
  assert.ok(!existsSync(join(ed.workspace, 'runs')));
});
