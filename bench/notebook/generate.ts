// Rollout-like trajectory files of a given size for the notebook/browser benchmarks (run.ts, record.ts).
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/** Records like a rollout file: 0–3 searches with ~700-char observations, some format errors, stages and steps. */
export async function generate(path: string, mb: number): Promise<number> {
  const out = createWriteStream(path);
  const doc = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(12);
  let bytes = 0;
  let i = 0;
  for (; bytes < mb * 1e6; i++) {
    let response = '';
    for (let s = 0; s < i % 4; s++)
      response += `<think>step ${s} of ${i}</think>\n<search>query ${i} ${s}</search>\n<observation>Doc 1(Title: "T${i}") ${doc}</observation>\n`;
    response +=
      i % 10 === 7 ? `<think>oops <answer>a${i}</answer>` : `<think>done</think>\n<answer>answer ${i % 97}</answer>`;
    const line =
      JSON.stringify({
        id: `r${i}`,
        question: `question ${i}?`,
        golden_answers: [`answer ${i % 89}`],
        response,
        meta: { stage: i % 3 ? 'rl2' : 'rl1', step: i >> 6, sample: i & 63 },
      }) + '\n';
    bytes += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return i;
}
