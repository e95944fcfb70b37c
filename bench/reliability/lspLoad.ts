// The language server under heavy load: an 18 MB trajectory file with ~6,667 diagnostics, 1,000 quick edits sent
// at once as a fast typist's editor does, then a hover — over stdio with the built dist/server.js; and a `.coa` with
// 40,000 unclosed <think> (diagnostics in-process).
import { mkdirSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuilt, LspClient } from '../../test/unit/server/lsp-client';
import { TrajectoryService } from '../../src/server/service';

const WORK = join(__dirname, '../.work');
const URI = 'file:///bench/burst.coa.jsonl';

/** ~18 MB, 20,000 records; every third has an unclosed <think> (one COA001 each: ~6,667 diagnostics). */
function file18mb(): string {
  const file = join(WORK, 'lsp-burst-18mb-v2.coa.jsonl');
  if (existsSync(file)) return readFileSync(file, 'utf8');
  mkdirSync(WORK, { recursive: true });
  const filler = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(7);
  const lines: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    const think = i % 3 === 0 ? `<think>step ${i} ${filler}` : `<think>step ${i} ${filler}</think>`;
    const response = `${think}\n<search>query ${i}</search>\n<observation>Doc 1(Title: "T${i}") ${filler}</observation>\n<answer>answer ${i % 13}</answer>`;
    lines.push(
      JSON.stringify({ id: `r${i}`, question: `question ${i >> 3}?`, golden_answers: [`answer ${i % 11}`], response }),
    );
  }
  const text = lines.join('\n') + '\n';
  writeFileSync(file, text);
  return text;
}

/** Problems in the generated file: one unclosed <think> in every third record. */
export const BURST_FILE_PROBLEMS = Math.ceil(20_000 / 3);

export interface LspFigure {
  mb: number;
  /** Published on open (a server that caps them publishes fewer than BURST_FILE_PROBLEMS). */
  diagnostics: number;
  openMs: number;
  hoverMs: number;
  publishes: number;
  publishedMb: number;
  settledMs: number;
}

export async function editBurst(edits = 1000): Promise<LspFigure> {
  ensureBuilt();
  const text = file18mb();
  const lines = text.split('\n');
  const c = new LspClient({});
  try {
    await c.initialize();
    let mark = c.notifications.length;
    let t0 = performance.now();
    c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'coa-jsonl', version: 1, text } });
    const first = await c.waitFor(
      (m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === URI,
      120_000,
      mark,
    );
    const openMs = performance.now() - t0;
    mark = c.notifications.length;
    // Toggle a character in one answer, 1,000 times, everything written at once; then ask for a hover.
    const line = 1;
    const col = lines[line].lastIndexOf('answer ') + 7;
    let version = 1;
    for (let k = 0; k < edits; k++) {
      c.notify('textDocument/didChange', {
        textDocument: { uri: URI, version: ++version },
        contentChanges: [
          { range: { start: { line, character: col }, end: { line, character: col + 1 } }, text: k % 2 ? '1' : '9' },
        ],
      });
    }
    t0 = performance.now();
    await c.request(
      'textDocument/hover',
      { textDocument: { uri: URI }, position: { line: 4, character: lines[4].lastIndexOf('</answer>') - 2 } },
      600_000,
    );
    const hoverMs = performance.now() - t0;
    // The burst's publishes: until one carries the last version (a server that sends no version: until 2 s quiet).
    const isPublish = (m: { method?: string; params?: any }) =>
      m.method === 'textDocument/publishDiagnostics' && m.params.uri === URI;
    let quietSince = performance.now();
    let seen = 0;
    for (;;) {
      const got = c.notifications.slice(mark).filter(isPublish);
      if (got.some((m) => m.params.version === version)) break;
      if (got.length !== seen) {
        seen = got.length;
        quietSince = performance.now();
      }
      if (performance.now() - quietSince > 2000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const settledMs = performance.now() - t0;
    const published = c.notifications.slice(mark).filter(isPublish);
    const publishedMb = published.reduce((n, m) => n + JSON.stringify(m).length, 0) / 1e6;
    const fig = {
      mb: text.length / 1e6,
      diagnostics: first.params.diagnostics.length,
      openMs,
      hoverMs,
      publishes: published.length,
      publishedMb,
      settledMs,
    };
    console.log(
      `lsp: ${fig.mb.toFixed(1)} MB, ${fig.diagnostics} diagnostics published on open (${openMs.toFixed(0)} ms); after ${edits} edits: hover ${hoverMs.toFixed(0)} ms, ${fig.publishes} publishes, ${publishedMb.toFixed(1)} MB sent`,
    );
    return fig;
  } finally {
    await c.shutdown();
  }
}

/** Diagnostics of a `.coa` with `n` unclosed <think> (each with its quick fix), in-process, ms. */
export function unclosedTags(n = 40_000): { kb: number; ms: number; diagnostics: number } {
  const text = '<think> x '.repeat(n) + '<answer>a</answer>';
  const s = new TrajectoryService();
  s.open('file:///bench/unclosed.coa', 'coa', 1, text);
  const t0 = performance.now();
  const d = s.diagnose('file:///bench/unclosed.coa');
  const fig = { kb: text.length / 1e3, ms: performance.now() - t0, diagnostics: d.length };
  console.log(
    `lsp: .coa with ${n} unclosed <think> (${fig.kb.toFixed(0)} KB): ${fig.ms.toFixed(0)} ms, ${fig.diagnostics} diagnostics`,
  );
  return fig;
}

/** CPU time (user + system) a process has used so far, ms — what a figure costs whatever else holds the cores. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100 on Linux)
}

/**
 * A 32 MB trajectory file opened in the language server of `root` (its dist/server.js): ms to its first diagnostics,
 * then `edits` single edits each waited for (its diagnostics of that version, or 2 s of quiet for a server that sends
 * no version), their p50 / p99 / max in ms; beside each, the server's own CPU time, which other work on a shared
 * machine does not inflate.
 */
export async function open32mb(
  root: string,
  edits = 30,
): Promise<{
  mb: number;
  firstMs: number;
  firstCpuMs: number;
  editP50: number;
  editP99: number;
  editMax: number;
  editCpuP99: number;
}> {
  const base = file18mb();
  const twice = base + base.replace(/"id":"r/g, '"id":"s'); // ~36 MB of distinct records
  const text = twice.slice(0, twice.lastIndexOf('\n', 32e6) + 1);
  const uri = 'file:///bench/open32.coa.jsonl';
  const c = new LspClient({}, join(root, 'dist/server.js'));
  const isPublish = (m: { method?: string; params?: any }) =>
    m.method === 'textDocument/publishDiagnostics' && m.params.uri === uri;
  try {
    await c.initialize();
    let mark = c.notifications.length;
    const pid = c.proc.pid!;
    let t0 = performance.now();
    let cpu0 = cpuMs(pid);
    c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'coa-jsonl', version: 1, text } });
    await c.waitFor(isPublish, 600_000, mark);
    const firstMs = performance.now() - t0;
    const firstCpuMs = cpuMs(pid) - cpu0;
    const lines = text.split('\n', 3);
    const col = lines[1].lastIndexOf('answer ') + 7;
    const ms: number[] = [];
    const cpu: number[] = [];
    for (let k = 0, version = 1; k < edits; k++) {
      mark = c.notifications.length;
      version++;
      t0 = performance.now();
      cpu0 = cpuMs(pid);
      c.notify('textDocument/didChange', {
        textDocument: { uri, version },
        contentChanges: [
          {
            range: { start: { line: 1, character: col }, end: { line: 1, character: col + 1 } },
            text: k % 2 ? '1' : '9',
          },
        ],
      });
      const v = version;
      await c.waitFor((m) => isPublish(m) && (m.params.version === v || m.params.version === undefined), 120_000, mark);
      ms.push(performance.now() - t0);
      cpu.push(cpuMs(pid) - cpu0);
    }
    const q = (xs: number[], p: number) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
    };
    const fig = {
      mb: text.length / 1e6,
      firstMs,
      firstCpuMs,
      editP50: q(ms, 50),
      editP99: q(ms, 99),
      editMax: Math.max(...ms),
      editCpuP99: q(cpu, 99),
    };
    console.log(
      `lsp ${root}: ${fig.mb.toFixed(1)} MB opened, first diagnostics ${firstMs.toFixed(0)} ms (${firstCpuMs.toFixed(0)} ms CPU); ${edits} edits p50 ${fig.editP50.toFixed(0)} p99 ${fig.editP99.toFixed(0)} ms (CPU p99 ${fig.editCpuP99.toFixed(0)} ms)`,
    );
    return fig;
  } finally {
    await c.shutdown();
  }
}
