// bench/validate: `coa validate` throughput and peak memory on a generated trajectory JSONL (default 100 MB).
// Usage: node --import tsx bench/validate/run.ts [--mb 100]
// Generation runs in a child process first, so the measured process only validates.
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { runValidate } from '../../src/cli/validate';
import { writeResults } from '../results';

const mbArg = process.argv.indexOf('--mb');
const targetMb = mbArg > 0 ? Number(process.argv[mbArg + 1]) : 100;
const work = join(__dirname, '../.work');
const file = join(work, `trajectories-${targetMb}mb.coa.jsonl`);

async function generate(): Promise<void> {
  mkdirSync(work, { recursive: true });
  const out = createWriteStream(file);
  const doc = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(12);
  let bytes = 0;
  for (let i = 0; bytes < targetMb * 1e6; i++) {
    const steps = i % 4;
    let response = '';
    for (let s = 0; s < steps; s++)
      response += `<think>step ${s} of ${i}</think>\n<search>query ${i} ${s}</search>\n<observation>Doc 1(Title: "T${i}") ${doc}</observation>\n`;
    response +=
      i % 10 === 7 ? `<think>oops <answer>a${i}</answer>` : `<think>done</think>\n<answer>answer ${i % 97}</answer>`;
    const line =
      JSON.stringify({
        id: `r${i}`,
        question: `question ${i}?`,
        golden_answers: [`answer ${i % 89}`],
        response,
        meta: { stage: 'rl2', step: i >> 6, sample: i & 63 },
      }) + '\n';
    bytes += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

async function main(): Promise<void> {
  if (process.argv.includes('--generate-only')) return generate();
  if (!existsSync(file)) {
    const g = spawnSync(
      process.execPath,
      ['--import', 'tsx', __filename, '--mb', String(targetMb), '--generate-only'],
      { stdio: 'inherit' },
    );
    if (g.status !== 0) throw new Error('generation failed');
  }
  const size = statSync(file).size;
  let diagnostics = 0;
  const log = console.log;
  const err = console.error;
  console.log = () => void diagnostics++;
  console.error = () => {};
  const rssBefore = process.memoryUsage().rss;
  const t0 = process.hrtime.bigint();
  await runValidate({ positional: [file], flags: {} });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log = log;
  console.error = err;
  const peakMb = process.resourceUsage().maxRSS / 1024;
  const mbps = size / 1e6 / seconds;
  const row = `| ${(size / 1e6).toFixed(1)} MB | ${seconds.toFixed(2)} s | ${mbps.toFixed(1)} MB/s | ${diagnostics} | ${peakMb.toFixed(0)} MB (RSS at start ${(rssBefore / 1e6).toFixed(0)} MB) |`;
  console.log(row);
  writeResults(
    'bench/validate',
    [
      `Command: \`node --import tsx bench/validate/run.ts --mb ${targetMb}\` (in-process \`coa validate\`: streaming read, schema, format rules, column mapping).`,
      `Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${require('node:os').cpus().length} cores.`,
      '',
      '| file | time | throughput | diagnostics printed | peak RSS |',
      '| --- | --- | --- | --- | --- |',
      row,
    ].join('\n'),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
