// bench/notebook (record view, text search): the extension-host side of opening one record of a big file and of the
// browser's text search, per file size. Record = the line read (at the offset the browser's index or the live
// panel's scan gives, and by a scan from the top when none is known) and decoded into its notebook (steps, reward);
// search = the browser worker's stream over the whole file (search.ts) for a rare word (one hit) and a common one,
// with the time to its first hit. Files: the demo run's RL-2-OTC rollouts (test/fixtures/demo-run, 1,536 records)
// and rollout-like files generated at the sizes asked (bench/notebook/run.ts's generator).
// Usage: node --import tsx bench/notebook/record.ts [--sizes 10,100,500] [--no-write]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLineAt } from '../../src/extension/providers/notebook/recordFile';
import { textToNotebook } from '../../src/extension/providers/notebook/codec';
import { searchFile } from '../../src/extension/providers/browser/search';
import { demoRun } from '../../test/fixtures/demoRun';
import { generate } from './generate';
import { writeResults } from '../results';

const arg = (k: string, d: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : d);
const sizes = arg('--sizes', '10,100,500').split(',').map(Number);
const s = (ms: number) =>
  ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`;

/** Median of `n` runs of `f` (ms). */
async function median(n: number, f: () => Promise<unknown>): Promise<number> {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b)[Math.floor(n / 2)];
}

async function measure(label: string, path: string, records: number, common: string): Promise<string> {
  const size = statSync(path).size;
  const line = records - 3; // near the end: the worst case for a scan
  const at = await readLineAt(path, line);
  const hinted = await median(5, () => readLineAt(path, line, at));
  const scanned = await median(3, () => readLineAt(path, line));
  const text = at.bytes.toString('utf8') + at.eol;
  // A rare text: the question of that record (its group's other samples ask it too).
  const rare = (JSON.parse(at.bytes.toString('utf8')) as { question: string }).question;
  const decode = await median(5, async () =>
    textToNotebook(text, { scheme: 'em', within: { line, file: 'x.coa.jsonl' } }),
  );
  const search = async (word: string) => {
    let first = 0;
    let hits = 0;
    const t0 = performance.now();
    await searchFile(
      path,
      word,
      (h) => {
        if (h.length && !first) first = performance.now() - t0;
        hits += h.length;
      },
      { everyMs: 0 },
    );
    const all = performance.now() - t0;
    return { all, first, hits };
  };
  const r = await search(rare);
  const c = await search(common);
  const row = `| ${label} | ${(size / 1e6).toFixed(1)} MB | ${records.toLocaleString('en')} | ${s(hinted)} | ${s(scanned)} | ${s(decode)} | "${rare}": ${r.hits.toLocaleString('en')} hit${r.hits === 1 ? '' : 's'}, ${s(r.all)} (${(size / 1e6 / (r.all / 1000)).toFixed(0)} MB/s) | "${common}": ${c.hits.toLocaleString('en')} hits, first ${s(c.first)}, all ${s(c.all)} |`;
  console.error(row);
  return row;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coa-bench-record-'));
  const rows: string[] = [];
  try {
    demoRun(join(dir, 'demo'));
    rows.push(
      await measure('demo RL-2-OTC rollouts', join(dir, 'demo/stages/rl2-otc/rollouts.coa.jsonl'), 1536, 'born'),
    );
    for (const mb of sizes) {
      const path = join(dir, `t${mb}.coa.jsonl`);
      const records = await generate(path, mb);
      // The common word is in every observation.
      rows.push(await measure(`generated ${mb} MB`, path, records, 'consectetur'));
      rmSync(path, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const body = `Command: \`node --import tsx bench/notebook/record.ts --sizes ${sizes.join(',')}\`
Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores (shared with other work).

The extension-host side of a record view (recordFile.ts, codec.ts) and of the browser's text search (search.ts), on
the demo run's real rollouts and on generated rollout-like files. Record read = the line 3 from the end, at the byte
offset the browser's index or the live panel's listing gives (median of 5), and by a scan from the top when none is
known (median of 3: Problems, a bare \`coaStudio.openRecord\`); decode = its notebook cells and reward (median of 5).
Search = the worker's stream over the whole file (case-insensitive; a line is parsed only when its raw text holds
the text): that record's question (rare), and a word in nearly every record (time to the first hit: when the page's
count starts).
What the editor adds on top (opening the notebook editor and its webview) is in *bench/live-panel (real editor)*.

| file | size | records | record read at offset | record read by scan | decode (cells + reward) | search: a question | search: a common word |
| --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}`;
  console.log(body);
  if (!process.argv.includes('--no-write')) writeResults('bench/notebook (record view, search)', body);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
