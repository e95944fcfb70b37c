// bench/lsp: the language server on a generated 100 MB / 50k-record trajectory file.
// Usage: node --import tsx bench/lsp/run.ts [--mb 100] [--records 50000]
// 1. time to full diagnostics: TrajectoryService (JSON + schema + every format rule) side by side in the same run
//    with vscode-json-languageservice parsing + validating each line against the record's JSON schema;
//    also end to end over stdio (didOpen → publishDiagnostics) with dist/server.js; the in-process pair is timed
//    twice (cold, then warm), in wall-clock and in CPU time (on a shared machine the CPU ratio is the stable one);
// 2. one-line-edit re-validation latency (in-process and over stdio); 3. hover p50/p99.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { getLanguageService, TextDocument } from 'vscode-json-languageservice';
import { RecordSchema } from '../../src/core/record';
import { TrajectoryService } from '../../src/server/service';
import { parseSettings } from '../../src/server/settings';
import { counters } from '../../src/server/analysis';
import { ensureBuilt, LspClient } from '../../test/unit/server/lsp-client';
import { writeResults } from '../results';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const targetMb = arg('--mb', 100);
const recordCount = arg('--records', 50_000);
const work = join(__dirname, '../.work');
const file = join(work, `lsp-${targetMb}mb-${recordCount}.coa.jsonl`);
const URI = 'file:///bench/trajectories.coa.jsonl';

/** Deterministic records of about targetMb/recordCount bytes each; 1 in 10 has format errors, groups of 8 share a question. */
function generate(): void {
  mkdirSync(work, { recursive: true });
  const per = (targetMb * 1e6) / recordCount;
  const lines: string[] = [];
  for (let i = 0; i < recordCount; i++) {
    const steps = i % 3;
    let response = '';
    for (let s = 0; s < steps; s++)
      response += `<think>step ${s} of ${i}</think>\n<search>query ${i} ${s}</search>\n<observation>Doc 1(Title: "T${i}") DOC</observation>\n`;
    response +=
      i % 10 === 7
        ? `<think>oops <answer>a${i % 13}</answer>`
        : `<think>done</think>\n<answer>answer ${i % 13}</answer>`;
    const base = {
      id: `r${i}`,
      question: `question ${i >> 3}?`,
      golden_answers: [`answer ${i % 11}`],
      response,
      meta: { stage: 'rl2', step: i >> 6, sample: i & 63 },
    };
    const pad = Math.max(0, per - JSON.stringify(base).length - 1);
    const filler = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '
      .repeat(Math.ceil(pad / 57 / Math.max(1, steps)))
      .slice(0, Math.floor(pad / Math.max(1, steps)));
    base.response = steps ? response.replaceAll('DOC', filler) : response;
    if (!steps) (base as Record<string, unknown>).note = filler.length ? 'x'.repeat(Math.max(0, pad - 10)) : '';
    lines.push(JSON.stringify(base));
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
/** CPU time of this process (all its threads, GC helpers included) since c0, in ms: on a shared machine this is
 * the work done, while wall time also counts the time other processes held the cores. */
const cpuMs = (c0: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));

/** Same pseudo-random positions every run. */
function rng(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}

async function jsonService(text: string): Promise<{ ms: number; cpu: number; diagnostics: number }> {
  const schema = z.toJSONSchema(RecordSchema) as object;
  const ls = getLanguageService({});
  ls.configure({
    validate: true,
    allowComments: false,
    schemas: [{ uri: 'coa://record.schema.json', fileMatch: ['*.json'], schema }],
  });
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  let diagnostics = 0;
  // JSONL is not one JSON document: validate every line as one, as a JSONL-aware JSON extension would.
  let start = 0;
  let n = 0;
  while (start < text.length) {
    let nl = text.indexOf('\n', start);
    if (nl < 0) nl = text.length;
    const line = text.slice(start, nl);
    start = nl + 1;
    if (!line.trim()) continue;
    const doc = TextDocument.create(`file:///bench/line${n++}.json`, 'json', 1, line);
    const parsed = ls.parseJSONDocument(doc);
    diagnostics += (await ls.doValidation(doc, parsed, { schemaValidation: 'error' }, schema as never)).length;
  }
  return { ms: ms(t0), cpu: cpuMs(c0), diagnostics };
}

async function main(): Promise<void> {
  if (!existsSync(file)) generate();
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const records = lines.filter((l) => l.trim()).length;
  console.log(`file: ${(text.length / 1e6).toFixed(1)} MB, ${records} records`);

  // Warm both sides up (JIT, schema compilation) on the first 500 lines, so neither pays for it in the timing.
  const head = lines.slice(0, 500).join('\n');
  const warm = new TrajectoryService();
  warm.open('file:///warm.coa.jsonl', 'coa-jsonl', 1, head);
  warm.diagnose('file:///warm.coa.jsonl');
  await jsonService(head);

  // 1a. In-process full diagnostics.
  const service = new TrajectoryService();
  let t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  service.open(URI, 'coa-jsonl', 1, text);
  const diags = service.diagnose(URI);
  const oursMs = ms(t0);
  const oursCpu = cpuMs(c0);
  console.log(`ours: ${f(oursMs)} ms (cpu ${f(oursCpu)} ms), ${diags.length} diagnostics`);

  // 1b. vscode-json-languageservice on the same text.
  const json = await jsonService(text);
  console.log(`vscode-json-languageservice: ${f(json.ms)} ms (cpu ${f(json.cpu)} ms), ${json.diagnostics} diagnostics`);
  console.log(`ratio: wall ${(oursMs / json.ms).toFixed(3)}, cpu ${(oursCpu / json.cpu).toFixed(3)}`);

  // 1c. Both again, in the same order, on fresh instances: the first pair pays for what the 500-line warm-up does
  // not cover (optimising compilers finishing, the heap growing to the file's size), the second shows both warm.
  t0 = process.hrtime.bigint();
  const c1 = process.cpuUsage();
  const again = new TrajectoryService();
  again.open(URI, 'coa-jsonl', 1, text);
  const againDiags = again.diagnose(URI).length;
  const warmOursMs = ms(t0);
  const warmOursCpu = cpuMs(c1);
  again.close(URI);
  const warmJson = await jsonService(text);
  console.log(
    `warm: ours ${f(warmOursMs)} ms (cpu ${f(warmOursCpu)}), json ${f(warmJson.ms)} ms (cpu ${f(warmJson.cpu)}); ratio wall ${(warmOursMs / warmJson.ms).toFixed(3)}, cpu ${(warmOursCpu / warmJson.cpu).toFixed(3)}`,
  );

  // 2a. One-line edits in-process: toggle one character inside a random record's response, then re-diagnose.
  const rand = rng(7);
  const editMs: number[] = [];
  const editCpu: number[] = [];
  let version = 2;
  const before = counters.lineChecks;
  for (let k = 0; k < 300; k++) {
    const line = Math.floor(rand() * (lines.length - 1));
    const col = lines[line].lastIndexOf('<answer>') + 8;
    const t = process.hrtime.bigint();
    const c = process.cpuUsage();
    service.change(URI, version++, [
      { range: { start: { line, character: col }, end: { line, character: col + 1 } }, text: k % 2 ? 't' : 'T' },
    ]);
    service.diagnose(URI);
    editMs.push(ms(t));
    editCpu.push(cpuMs(c));
  }
  const checksPerEdit = (counters.lineChecks - before) / 300;
  console.log(
    `edit: p50 ${f(pct(editMs, 50))} ms, p99 ${f(pct(editMs, 99))} ms (cpu p99 ${f(pct(editCpu, 99))} ms), ${checksPerEdit} line checks per edit`,
  );

  // 3. Hovers on random answers (first hover on a line computes its geometry), under EM and OTC-GRPO.
  const hover = async (scheme: 'em' | 'otc-grpo') => {
    service.setSettings(parseSettings({ rewardScheme: scheme }));
    service.diagnose(URI);
    const out: number[] = [];
    const cpu: number[] = [];
    for (let k = 0; k < 1000; k++) {
      const line = Math.floor(rand() * (lines.length - 1));
      const col = lines[line].lastIndexOf('</answer>') - 2;
      const t = process.hrtime.bigint();
      const c = process.cpuUsage();
      const h = await service.hover(URI, { line, character: col });
      out.push(ms(t));
      cpu.push(cpuMs(c));
      if (!h) throw new Error(`no hover on line ${line}`);
    }
    return { out, cpu };
  };
  const { out: hEm, cpu: hEmCpu } = await hover('em');
  const { out: hGrpo, cpu: hGrpoCpu } = await hover('otc-grpo');
  console.log(
    `hover em: p50 ${f(pct(hEm, 50))} p99 ${f(pct(hEm, 99))} (cpu p99 ${f(pct(hEmCpu, 99))}); otc-grpo: p50 ${f(pct(hGrpo, 50))} p99 ${f(pct(hGrpo, 99))} (cpu p99 ${f(pct(hGrpoCpu, 99))})`,
  );
  service.close(URI);

  // 1c/2b. End to end over stdio.
  ensureBuilt();
  const c = new LspClient({});
  await c.initialize();
  let mark = c.notifications.length;
  t0 = process.hrtime.bigint();
  c.notify('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'coa-jsonl', version: 1, text } });
  const first = await c.diagnostics(URI, mark);
  const stdioOpenMs = ms(t0);
  const stdioEdit: number[] = [];
  for (let k = 0; k < 100; k++) {
    const line = Math.floor(rand() * (lines.length - 1));
    const col = lines[line].lastIndexOf('<answer>') + 8;
    mark = c.notifications.length;
    const t = process.hrtime.bigint();
    c.notify('textDocument/didChange', {
      textDocument: { uri: URI, version: version++ },
      contentChanges: [
        { range: { start: { line, character: col }, end: { line, character: col + 1 } }, text: k % 2 ? 't' : 'T' },
      ],
    });
    await c.diagnostics(URI, mark);
    stdioEdit.push(ms(t));
  }
  const stdioHover: number[] = [];
  for (let k = 0; k < 300; k++) {
    const line = Math.floor(rand() * (lines.length - 1));
    const t = process.hrtime.bigint();
    await c.request('textDocument/hover', {
      textDocument: { uri: URI },
      position: { line, character: lines[line].lastIndexOf('</answer>') - 2 },
    });
    stdioHover.push(ms(t));
  }
  await c.shutdown();
  console.log(
    `stdio: open→diagnostics ${f(stdioOpenMs)} ms (${first.params.diagnostics.length}); edit p50 ${f(pct(stdioEdit, 50))} p99 ${f(pct(stdioEdit, 99))}; hover p50 ${f(pct(stdioHover, 50))} p99 ${f(pct(stdioHover, 99))}`,
  );

  const ratio = oursMs / json.ms;
  const cpuRatio = oursCpu / json.cpu;
  const ok = (b: boolean) => (b ? 'met' : '**missed**');
  writeResults(
    'bench/lsp',
    [
      `Command: \`node scripts/build.mjs && node --import tsx bench/lsp/run.ts --mb ${targetMb} --records ${recordCount}\``,
      `File: ${(text.length / 1e6).toFixed(1)} MB, ${records} records (1 in 10 with format errors, 8 records per question). Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores (shared).`,
      '',
      '| measure | value | target |',
      '| --- | --- | --- |',
      `| full diagnostics, TrajectoryService in-process (JSON, schema, all format rules, duplicate ids) | ${f(oursMs)} ms (CPU ${f(oursCpu)} ms), ${diags.length} diagnostics | |`,
      `| full diagnostics, vscode-json-languageservice (parse + validate each line against z.toJSONSchema(RecordSchema)) | ${f(json.ms)} ms (CPU ${f(json.cpu)} ms), ${json.diagnostics} diagnostics | |`,
      `| ratio ours / JSON service, wall clock | ${ratio.toFixed(3)}× | ≤ 0.2× ${ok(ratio <= 0.2)} |`,
      `| ratio ours / JSON service, CPU time | ${cpuRatio.toFixed(3)}× | |`,
      `| second pair, both warm: ours / JSON service | ${f(warmOursMs)} ms (CPU ${f(warmOursCpu)} ms, ${againDiags} diagnostics) / ${f(warmJson.ms)} ms (CPU ${f(warmJson.cpu)} ms) = ${(warmOursMs / warmJson.ms).toFixed(3)}× wall, ${(warmOursCpu / warmJson.cpu).toFixed(3)}× CPU | |`,
      `| full diagnostics over stdio (didOpen → publishDiagnostics, dist/server.js) | ${f(stdioOpenMs)} ms | |`,
      `| one-line edit → all diagnostics, in-process (300 edits) | p50 ${f(pct(editMs, 50))} ms, p99 ${f(pct(editMs, 99))} ms (CPU p99 ${f(pct(editCpu, 99))} ms), ${checksPerEdit} line checks/edit | ≤ 20 ms ${ok(pct(editMs, 99) <= 20)} |`,
      `| one-line edit over stdio (didChange → publishDiagnostics, 100 edits) | p50 ${f(pct(stdioEdit, 50))} ms, p99 ${f(pct(stdioEdit, 99))} ms | |`,
      `| hover on an answer, EM, in-process (1000) | p50 ${f(pct(hEm, 50))} ms, p99 ${f(pct(hEm, 99))} ms (CPU p99 ${f(pct(hEmCpu, 99))} ms) | ≤ 10 ms ${ok(pct(hEm, 99) <= 10)} |`,
      `| hover on an answer, OTC-GRPO (groups by question), in-process (1000) | p50 ${f(pct(hGrpo, 50))} ms, p99 ${f(pct(hGrpo, 99))} ms (CPU p99 ${f(pct(hGrpoCpu, 99))} ms) | ≤ 10 ms ${ok(pct(hGrpo, 99) <= 10)} |`,
      `| hover over stdio, EM (300) | p50 ${f(pct(stdioHover, 50))} ms, p99 ${f(pct(stdioHover, 99))} ms | |`,
      '',
      `Load average when the run ended: ${loadavg()
        .map((x) => x.toFixed(1))
        .join(
          ', ',
        )} on ${cpus().length} cores; CPU time is the process's own (all threads), wall time also counts waiting for a core.`,
      'Both sides are warmed up on the first 500 lines first. The JSON service checks the schema only; the server also runs every format rule and maps each diagnostic into the JSON string.',
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
