// bench/notebook, real-editor case for a 300k-record rollouts file: the demo run's RL-2-OTC rollouts (real records:
// tokens, log-probs, rewards, meta; test/fixtures/demo-run) repeated with fresh ids up to N records, written once to
// .cache/bench/ (never committed), opened in code-server with the packaged extension as a user would (Quick Open →
// the paged browser, the file being far above the notebook's limits). Timed: open → first page drawn; a jump by id to
// a record near the end, and one by line, each until that record's view beside shows its header and reward — while
// the browser's index is still being built (how far it was is recorded); then how long the whole index took.
// Usage: COA_E2E_VSIX=<vsix> node --import tsx bench/notebook/huge.ts [--records 300000] [--generate-only] [--no-write]
// Needs the e2e setup (node scripts/setup-e2e.mjs) and a packaged vsix (node scripts/package-vsix.mjs --out …).
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { artifactsDir, openFile, repoRoot, startEditor, until, webviewFrame } from '../../test/e2e/harness';
import { demoRunFile } from '../../test/fixtures/demoRun';
import { writeResults } from '../results';
import { isWebviewContent, recordViewDrawn } from '../recordViewFrame';

const arg = (k: string, d: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : d);
const records = Number(arg('--records', '300000'));
const s = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);
const NAME = 'rollouts-huge.coa.jsonl';

/** The file: the demo's 1,536 RL-2-OTC rollouts, copy k with ids `<id>-x<k>`; cached by record count. */
async function hugeFile(): Promise<{ path: string; ids: string[] }> {
  const base = demoRunFile('stages/rl2-otc/rollouts.coa.jsonl')
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim());
  const ids: string[] = [];
  for (let i = 0; i < records; i++)
    ids.push(`${(JSON.parse(base[i % base.length]) as { id: string }).id}-x${Math.floor(i / base.length)}`);
  const dir = join(repoRoot, '.cache', 'bench');
  const path = join(dir, `rollouts-${records}.coa.jsonl`);
  if (existsSync(path)) return { path, ids };
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.partial`;
  const out = createWriteStream(tmp);
  for (let i = 0; i < records; i++) {
    const line = base[i % base.length];
    // The id is the first key the trainer writes: replace its value only, keeping every other byte of the record.
    const m = /^\{"id": ?("(?:[^"\\]|\\.)*")/.exec(line);
    if (!m) throw new Error(`a demo rollout does not start with its id: ${line.slice(0, 80)}`);
    const copy = line.replace(m[1], JSON.stringify(ids[i]));
    if (!out.write(copy + '\n')) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  renameSync(tmp, path);
  return { path, ids };
}

/** Watches the next record view: its content frame, polled every 10 ms until its header (with `id`) and reward are drawn. */
function nextRecordView(page: Page, id: string, t0: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onFrame = (f: Frame) => {
      if (!isWebviewContent(f)) return;
      page.off('framenavigated', onFrame);
      recordViewDrawn(f, id, '.coa-reward').then(() => resolve(Date.now() - t0), reject);
    };
    page.on('framenavigated', onFrame);
  });
}

interface Jump {
  how: string;
  target: string;
  id: string;
  line: number;
  note: string;
  indexedAt: string;
  tab: number;
  drawn: number;
}

async function main(): Promise<void> {
  const g0 = Date.now();
  const { path, ids } = await hugeFile();
  const size = statSync(path).size;
  console.error(
    `file: ${path} (${(size / 1e6).toFixed(0)} MB, ${records.toLocaleString()} records) ready in ${s(Date.now() - g0)}`,
  );
  if (process.argv.includes('--generate-only')) return;
  const load0 = loadavg()[0];
  const ed = await startEditor({ name: 'bench-huge' });
  const jumps: Jump[] = [];
  let firstPage = 0;
  let tabMs = 0;
  let webviewMs = 0;
  let openedAt = 0;
  let indexed = 0;
  let indexNote = '';
  try {
    // The workspace holds a link to the cached file (a copy would cost as much as writing it).
    symlinkSync(path, join(ed.workspace, NAME));
    const t0 = Date.now();
    openedAt = t0;
    // The browser's content frame, polled every 10 ms from when it is attached until its first rows are drawn.
    let frameAt = 0;
    const rowsDrawn = new Promise<number>((resolve, reject) => {
      const onFrame = (f: Frame) => {
        if (!isWebviewContent(f)) return;
        ed.page.off('framenavigated', onFrame);
        frameAt = Date.now() - t0;
        f.waitForFunction(() => document.querySelector('#rows tr.row') !== null, undefined, {
          polling: 10,
          timeout: 120_000,
        }).then(() => resolve(Date.now() - t0), reject);
      };
      ed.page.on('framenavigated', onFrame);
    });
    await openFile(ed.page, NAME);
    tabMs = Date.now() - t0;
    firstPage = await rowsDrawn;
    webviewMs = frameAt;
    const browser = await webviewFrame(ed.page, async (f) => (await f.locator('#rows tr.row').count()) > 0, 120_000);
    const status = () => browser.locator('#status').innerText();
    console.error(`first page: ${s(firstPage)} (${await status()})`);
    const jump = async (how: string, target: string, id: string, line: number) => {
      const j0 = Date.now();
      const drawn = nextRecordView(ed.page, id, j0);
      await browser.locator('#jump').fill(target);
      await browser.locator('#jump').press('Enter');
      await ed.page
        .locator('.tabs-container .tab', { hasText: `${id}.coa.jsonl` })
        .first()
        .waitFor({ timeout: 120_000 });
      const tab = Date.now() - j0;
      const indexedAt = (await status()).replace(/^\s*·\s*/, '');
      const ms = await drawn;
      const note = await browser.locator('#jump-status').innerText();
      jumps.push({ how, target, id, line, note, indexedAt, tab, drawn: ms });
      console.error(
        `${how} ${target}: tab ${s(tab)}, reward drawn ${s(ms)}; index then: ${indexedAt}; page says: ${note}`,
      );
    };
    const nearEnd = records - 7;
    await jump('id', ids[nearEnd], ids[nearEnd], nearEnd + 1);
    const byLine = records - 1500;
    await jump('line', String(byLine + 1), ids[byLine], byLine + 1);
    // The whole index, waited for at most 4 minutes (the run must stay short): past that, how far it got is said.
    const complete = await until('the whole index', async () => /records indexed/.test(await status()), 240_000).then(
      () => true,
      () => false,
    );
    indexed = Date.now() - t0;
    indexNote = complete
      ? s(indexed)
      : `not complete after ${s(indexed)} (${(await status()).replace(/^\s*·\s*/, '')})`;
    console.error(`index: ${indexNote}`);
  } finally {
    await ed.close();
  }
  const load1 = loadavg()[0];
  // From the extension's log (kept by the harness): when it activated and when the browser read its first page.
  const logDir = join(artifactsDir, 'bench-huge-logs');
  const log = readdirSync(logDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('CoA Studio.log'))
    .map((f) => readFileSync(join(logDir, f), 'utf8'))
    .join('\n');
  const at = (re: RegExp) => {
    const m = new RegExp(`^(\\S+ \\S+) \\[info\\] ${re.source}`, 'm').exec(log);
    return m ? s(new Date(m[1].replace(' ', 'T')).getTime() - openedAt) : '?';
  };
  const trace = `extension activated ${at(/CoA Studio activated/)} after the open, the browser's first page read ${at(/trajectory browser: .* first page/)} after it`;
  const rows = jumps.map(
    (j) =>
      `| ${j.how} "${j.target}" (line ${j.line.toLocaleString()}) | ${s(j.tab)} | ${s(j.drawn)} | ${j.indexedAt} | ${j.note} |`,
  );
  const body = `Command: \`COA_E2E_VSIX=<vsix> node --import tsx bench/notebook/huge.ts --records ${records}\`${process.env.COA_BENCH_NOTE ? ` (${process.env.COA_BENCH_NOTE})` : ''}
Machine: linux x64, Node ${process.version}, ${cpus().length} cores shared with other work (load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end); code-server 4.139.1, headless Chromium, a 1,600 × 1,000 window.

A ${records.toLocaleString()}-record rollouts file (${(size / 1e6).toFixed(0)} MB): the demo run's 1,536 RL-2-OTC rollouts (real records
with tokens, log-probs, rewards and meta) repeated with fresh ids, generated into .cache/bench/ by the script. Opened
by Quick Open: the paged browser. First page = open (Ctrl+P, the name typed, its row clicked: VS Code's file search is part of it) → its first rows drawn (polled every 10 ms in its frame). Then, while the browser's index is still
being built, a jump (the jump box, Enter) by id to a record near the end and one by line: the record is found in the
file itself (browser/locate.ts) and opened beside in the record view; times until its tab and until its header and
reward breakdown are drawn (polled every 10 ms in the view's frame). Index complete = open → "N records indexed".

First page: ${s(firstPage)} (its tab ${s(tabMs)}; ${trace}; the browser's webview created ${s(webviewMs)} after it). Whole index: ${indexNote}.

| jump | record view tab | header + reward drawn | index at that moment | the browser says |
| --- | --- | --- | --- | --- |
${rows.join('\n')}`;
  console.log(body);
  if (!process.argv.includes('--no-write')) writeResults('bench/notebook (real editor, 300k-record rollouts)', body);
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
