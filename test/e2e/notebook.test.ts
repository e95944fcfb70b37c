// Real-editor proof: a *.coa.jsonl file opens as the trajectory notebook in code-server — a header cell
// per record, step cells in the `coa` language with highlighted tags, and the reward output drawn by our notebook
// renderer with the same total the `coa score` CLI computes for that record.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFile, repoFiles, repoRoot, startEditor, until, webviewFrame, type Editor } from './harness';

const FILE = 'examples/trajectories.coa.jsonl';

/** The CLI's reward of each record under the default scheme (em), in file order. */
function cliRewards(): { id: string; total: number }[] {
  const out = join(mkdtempSync(join(tmpdir(), 'coa-e2e-score-')), 'scored.coa.jsonl');
  const r = spawnSync(
    process.execPath,
    [join(repoRoot, 'bin', 'coa.js'), 'score', join(repoRoot, FILE), '--scheme', 'em', '-o', out],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `coa score failed: ${r.stderr}`);
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const rec = JSON.parse(l);
      return { id: rec.id, total: rec.reward.total };
    });
}

let ed: Editor;
before(async () => {
  ed = await startEditor({ name: 'notebook', files: repoFiles(FILE) });
});
after(async () => ed?.close());

test('a .coa.jsonl file opens as a trajectory notebook with highlighted step cells', async () => {
  await openFile(ed.page, 'trajectories.coa.jsonl');
  const notebook = ed.page.locator('.notebook-editor').first();
  await notebook.waitFor({ timeout: 90_000 });
  const codeCells = ed.page.locator('.notebook-editor .code-cell-row');
  await codeCells.first().waitFor({ timeout: 60_000 });
  // Step cells are in the coa language: the cell's language label and the grammar's per-kind colours.
  const lang = ed.page.locator('.notebook-editor .cell-statusbar-container', { hasText: 'CoA Trajectory' }).first();
  await lang.waitFor({ timeout: 60_000 });
  const paint = () =>
    ed.page.evaluate(() => {
      const out: Record<string, string> = {};
      for (const span of Array.from(
        document.querySelectorAll('.notebook-editor .code-cell-row .view-lines .view-line span span'),
      )) {
        const t = (span.textContent ?? '').replace(/\u00a0/g, ' ').trim();
        if (['think', 'search', 'answer', 'observation'].includes(t) && !out[t]) out[t] = getComputedStyle(span).color;
      }
      const body = document.querySelector('.notebook-editor .code-cell-row .view-lines');
      return { tags: out, plain: body ? getComputedStyle(body).color : '' };
    });
  // The cells' grammar paints once the coa language is attached: wait for coloured tags (asserted below).
  const coloured = async () => {
    const p = await paint();
    const kinds = new Set(Object.values(p.tags));
    return Object.keys(p.tags).length >= 2 && kinds.size >= 2 && !kinds.has(p.plain) ? p : undefined;
  };
  const colours = await until('coloured tags in the step cells', coloured, 30_000).catch(paint);
  await ed.shot('cells');
  assert.ok(Object.keys(colours.tags).length >= 2, `expected tag tokens in step cells, got ${JSON.stringify(colours)}`);
  const distinct = new Set(Object.values(colours.tags));
  assert.ok(distinct.size >= 2, `tag kinds should be coloured differently: ${JSON.stringify(colours)}`);
  assert.ok(!distinct.has(colours.plain), `tags should not have the plain text colour: ${JSON.stringify(colours)}`);
});

test("header cells and the reward output render, with the CLI's reward", async () => {
  const expected = cliRewards();
  // Markdown header cells and outputs are drawn in the notebook's webview.
  const frame = await webviewFrame(ed.page, async (f) => (await f.locator('.coa-reward').count()) > 0);
  const first = frame.locator('.coa-reward').first();
  await first.waitFor({ timeout: 30_000 });
  // Markdown previews sit in shadow roots: a locator (which pierces them), not body.innerText.
  const header = frame.getByText(expected[0].id, { exact: true }).first();
  const headerShown = await header.waitFor({ timeout: 30_000 }).then(
    () => true,
    () => false,
  );
  await ed.shot('reward');
  assert.ok(headerShown, `the first record's header cell (id ${expected[0].id}) should be rendered`);
  const totalText = await first.locator('.coa-total').innerText();
  const shown = Number((totalText.match(/reward (-?[\d.]+)/) ?? [])[1]);
  assert.ok(
    Math.abs(shown - expected[0].total) < 1e-3,
    `reward output "${totalText}" should equal coa score's ${expected[0].total} for ${expected[0].id}`,
  );
  assert.match(await first.innerText(), /EM/);
  assert.match(await first.innerText(), /format/);
});
