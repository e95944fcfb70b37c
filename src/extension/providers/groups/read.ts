// One step's records of a rollouts file, read at their offsets through its line index (src/core/lineIndex.ts; the
// file's lines parsed when it has none): the file may be large. No `vscode` import.
import { StepIndex } from '../../../core/lineIndex';
import { parseRecordLine } from '../../../core/jsonl';
import type { TrajectoryRecord } from '../../../core/record';

/** The records of `step`, each with its 1-based line, in file order. */
export async function recordsOfStep(file: string, step: number): Promise<{ record: TrajectoryRecord; line: number }[]> {
  const rows = await new StepIndex(file).rowsOf(step);
  return rows.flatMap((r) => {
    const e = parseRecordLine(r.text, r.line + 1, r.offset, r.length);
    return e.record?.meta?.step === step ? [{ record: e.record, line: r.line + 1 }] : [];
  });
}
