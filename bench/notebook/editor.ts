// bench/notebook, real-editor case: AutoCoA's own data (examples/data/autocoa/*.parquet converted by the core's
// verl converter, repeated with fresh ids up to N records) opened in code-server with the packaged extension, as a
// user would: Quick Open → the notebook (up to coaStudio.notebook.maxCells cells) or the paged browser above it.
// Per size: open → first page drawn, scroll, filter (Show Failures / the browser's failures box), how long
// "CoA: Train Stage" takes to show its picker when asked right after the open, and the extension host's longest
// stall meanwhile — measured by a probe extension (bench/notebook/probe) that shares the host's event loop.
// Usage: COA_E2E_VSIX=<vsix> node --import tsx bench/notebook/editor.ts [--sizes 3000,30000,300000]
//        [--notebook-max-cells N (raise the limit to time the notebook itself above it)] [--no-write]
//        COA_PROBE_PROFILE=<file.cpuprofile> also profiles the extension host from its start to the end of the filter.
// Needs the e2e setup (node scripts/setup-e2e.mjs) and a packaged vsix (node scripts/package-vsix.mjs --out …).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { importVerlParquet } from '../../src/core/importers/verl-parquet';
import { DEFAULT_MAX_CELLS } from '../../src/extension/providers/notebook/threshold';
import { openFile, repoRoot, startEditor, webviewFrame } from '../../test/e2e/harness';
import { writeResults } from '../results';

const arg = (k: string, d: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : d);
const sizes = arg('--sizes', '3000,30000,300000').split(',').map(Number);
const forcedCells = process.argv.includes('--notebook-max-cells') ? Number(arg('--notebook-max-cells', '0')) : null;

/** N records: AutoCoA's train + dev questions through the core's converter, repeated with fresh ids. */
async function dataset(n: number): Promise<string> {
  const base = [
    ...(await importVerlParquet(join(repoRoot, 'examples/data/autocoa/hotpotqa_train.parquet'))),
    ...(await importVerlParquet(join(repoRoot, 'examples/data/autocoa/hotpotqa_dev.parquet'))),
  ];
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = base[i % base.length];
    const copy = Math.floor(i / base.length);
    lines.push(JSON.stringify(copy ? { ...r, id: `${r.id}-${copy}` } : r));
  }
  return lines.join('\n') + '\n';
}

/** A probe vsix built from bench/notebook/probe with vsce (in a temp copy, so the repo stays clean). */
function probeVsix(dir: string): string {
  const src = join(__dirname, 'probe');
  for (const f of readdirSync(src)) copyFileSync(join(src, f), join(dir, f));
  const out = join(dir, 'probe.vsix');
  const vsce = join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce');
  const r = spawnSync(
    process.execPath,
    [vsce, 'package', '-o', out, '--allow-missing-repository', '--skip-license', '--no-dependencies'],
    { cwd: dir, encoding: 'utf8' },
  );
  if (r.status !== 0 || !existsSync(out)) throw new Error(`packaging the probe failed: ${r.stderr || r.stdout}`);
  return out;
}

/** Longest extension-host stall (ms) the probe saw between two epoch times. */
function longestStall(file: string, from: number, to: number): number {
  if (!existsSync(file)) return NaN;
  let max = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const { t, max: m } = JSON.parse(line) as { t: number; max: number };
    // A line covers the 250 ms before it, and a stall is only written once the loop is free again.
    if (t >= from && t <= to + 60_000) max = Math.max(max, m);
  }
  return max;
}

async function waitListed(page: Page, title: string): Promise<void> {
  for (let i = 0; i < 90; i++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    await page
      .locator('.quick-input-widget input')
      .fill(`>${title}`)
      .catch(() => {});
    const ok = await page
      .locator('.quick-input-list .monaco-list-row', { hasText: title })
      .first()
      .waitFor({ timeout: 5_000 })
      .then(
        () => true,
        () => false,
      );
    await page.keyboard.press('Escape');
    if (ok) return;
    await page.waitForTimeout(2000);
  }
  throw new Error(`"${title}" never listed`);
}

interface Row {
  records: number;
  mb: number;
  view: 'notebook' | 'browser';
  openMs: number;
  commandMs: number;
  scrollMs: number;
  filterMs: number;
  stallMs: number;
}

async function measure(n: number, probe: string, work: string): Promise<Row> {
  const text = await dataset(n);
  const probeOut = join(work, `probe-${n}.jsonl`);
  rmSync(probeOut, { force: true });
  process.env.COA_PROBE_OUT = probeOut;
  const ed = await startEditor({
    name: `bench-notebook-${n}`,
    files: { 'questions.coa.jsonl': text },
    extraVsix: [probe],
    settings: forcedCells ? { 'coaStudio.notebook.maxCells': forcedCells } : {},
  });
  try {
    const page = ed.page;
    await waitListed(page, 'CoA: Train Stage');
    await page.waitForTimeout(3000); // let activation work settle: not what is measured
    const t0 = Date.now();
    await openFile(page, 'questions.coa.jsonl');
    // Asked for right away, while the file loads: how long until the extension host answers with its picker.
    const c0 = Date.now();
    // The new editor taking focus can close the palette before the command is picked: ask again (counted).
    for (let attempt = 1; ; attempt++) {
      try {
        await page.keyboard.press('F1');
        await page.locator('.quick-input-widget input').fill('>CoA: Train Stage', { timeout: 10_000 });
        await page
          .locator('.quick-input-list .monaco-list-row', { hasText: 'CoA: Train Stage' })
          .first()
          .waitFor({ timeout: 10_000 });
        await page.keyboard.press('Enter');
        await page
          .locator('.quick-input-widget .quick-input-title', { hasText: 'CoA: Train Stage (1/4)' })
          .waitFor({ timeout: attempt < 3 ? 60_000 : 600_000 });
        break;
      } catch (e) {
        if (attempt >= 3) throw e;
        await page.keyboard.press('Escape');
      }
    }
    const commandMs = Date.now() - c0;
    await page.keyboard.press('Escape');
    // First page: the notebook's Questions view, or the browser's first rows.
    const frame: Frame = await webviewFrame(
      page,
      async (f) =>
        (await f.getByText('Questions', { exact: true }).count()) > 0 || (await f.locator('tr.row').count()) > 0,
      600_000,
    );
    const view = (await frame.locator('tr.row').count()) > 0 ? 'browser' : 'notebook';
    const openMs = Date.now() - t0;
    await ed.shot('first-page');
    // Scroll: 40 wheel turns in the notebook until a question further down is drawn; 10 pages in the browser.
    const s0 = Date.now();
    if (view === 'notebook') {
      const box = await page.locator('.notebook-editor').first().boundingBox();
      await page.mouse.move((box?.x ?? 400) + 300, (box?.y ?? 200) + 300);
      for (let i = 0; i < 40; i++) await page.mouse.wheel(0, 2000);
      await frame
        .getByText(/^line \d{3,}$/)
        .first()
        .waitFor({ timeout: 600_000 });
    } else {
      for (let p = 2; p <= 11; p++) {
        await frame.locator('#next').click();
        await frame.locator('#pageinfo', { hasText: new RegExp(`page ${p}\\b`) }).waitFor({ timeout: 600_000 });
      }
    }
    const scrollMs = Date.now() - s0;
    await ed.shot('scrolled');
    // Filter: failures (none: these are questions).
    const f0 = Date.now();
    if (view === 'notebook') {
      await page.keyboard.press('F1');
      await page.locator('.quick-input-widget input').fill('>CoA: Show Failures');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'CoA: Show Failures' }).first().waitFor();
      await page.keyboard.press('Enter');
      await page.locator('.notification-toast', { hasText: 'no failures' }).first().waitFor({ timeout: 600_000 });
    } else {
      await frame.locator('#failures').check();
      // Questions are never failures: the answer is an empty page, "0 matching".
      await frame.locator('#pageinfo', { hasText: / 0 matching/ }).waitFor({ timeout: 600_000 });
    }
    const filterMs = Date.now() - f0;
    await ed.shot('filtered');
    const t1 = Date.now();
    await page.waitForTimeout(1500); // the probe writes every 250 ms
    const profile = process.env.COA_PROBE_PROFILE;
    if (profile) {
      writeFileSync(`${profile}.stop`, '');
      for (let i = 0; i < 60 && !existsSync(profile); i++) await page.waitForTimeout(500);
      rmSync(`${profile}.stop`, { force: true });
    }
    return {
      records: n,
      mb: Buffer.byteLength(text) / 1e6,
      view,
      openMs,
      commandMs,
      scrollMs,
      filterMs,
      stallMs: longestStall(probeOut, t0, t1),
    };
  } finally {
    await ed.close();
  }
}

const s = (ms: number) =>
  Number.isNaN(ms) ? 'n/a' : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'coa-bench-editor-'));
  const rows: Row[] = [];
  const load0 = loadavg()[0];
  try {
    const probe = probeVsix(work);
    for (const n of sizes) {
      const row = await measure(n, probe, work);
      console.error(
        `${n} records (${row.mb.toFixed(1)} MB): ${row.view}, open → first page ${s(row.openMs)}, Train Stage picker ${s(row.commandMs)}, scroll ${s(row.scrollMs)}, filter ${s(row.filterMs)}, longest extension-host stall ${s(row.stallMs)}`,
      );
      rows.push(row);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const load1 = loadavg()[0];
  const table = rows.map(
    (r) =>
      `| ${r.records.toLocaleString('en-US')} | ${r.mb.toFixed(1)} MB | ${r.view} | ${s(r.openMs)} | ${s(r.commandMs)} | ${s(r.scrollMs)} | ${s(r.filterMs)} | ${s(r.stallMs)} |`,
  );
  const body = `Command: \`COA_E2E_VSIX=<vsix> node --import tsx bench/notebook/editor.ts --sizes ${sizes.join(',')}${forcedCells ? ` --notebook-max-cells ${forcedCells}` : ''}\`
Machine: linux x64, Node ${process.version}, ${cpus().length} cores shared with other work (load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end); code-server ${'4.139.1'}, headless Chromium.

AutoCoA's HotpotQA questions (examples/data/autocoa/*.parquet through the core's verl converter, repeated with fresh
ids): prompt-only records, one notebook cell each. Open → first page = Quick Open click until the notebook's Questions
view or the browser's first rows are drawn. Train Stage = asked for right after the open; time until its picker shows
(the extension host answering while the file loads). Scroll = 40 wheel turns in the notebook until a question below
line 100 is drawn / 10 pages in the browser. Filter = Show Failures (a "no failures" message) / the browser's failures
box. Longest stall = the extension host's longest event-loop gap from the open to the end of the filter (probe
extension, bench/notebook/probe). ${forcedCells ? `\`coaStudio.notebook.maxCells\` raised to ${forcedCells.toLocaleString('en-US')} for this run.` : `Default limits (coaStudio.notebook.maxCells ${DEFAULT_MAX_CELLS.toLocaleString('en-US')}).`}

| records | file | opens in | open → first page | Train Stage picker | scroll | filter | longest extension-host stall |
| --- | --- | --- | --- | --- | --- | --- | --- |
${table.join('\n')}`;
  console.log(body);
  if (!process.argv.includes('--no-write'))
    writeResults(forcedCells ? 'bench/notebook (real editor, notebook forced)' : 'bench/notebook (real editor)', body);
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
