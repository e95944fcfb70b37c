// One step's records of a rollouts file, read line by line (the file may be large): lines that cannot be that
// step's are skipped before parsing. No `vscode` import.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseRecordLine } from '../../../core/jsonl';
import type { TrajectoryRecord } from '../../../core/record';

export async function recordsOfStep(file: string, step: number): Promise<{ record: TrajectoryRecord; line: number }[]> {
  const out: { record: TrajectoryRecord; line: number }[] = [];
  const needles = [`"step": ${step},`, `"step":${step},`, `"step": ${step}}`, `"step":${step}}`];
  let line = 0;
  for await (const row of createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity })) {
    line++;
    if (!needles.some((n) => row.includes(n))) continue;
    const e = parseRecordLine(row, line);
    if (e.record?.meta?.step === step) out.push({ record: e.record, line });
  }
  return out;
}
