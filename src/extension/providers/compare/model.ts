// "Compare runs", the pure part: two rollout files (or two checkpoints' replays) → one row per question with each
// side's trajectories, their reward breakdowns (src/core/rewards.ts, each file scored as a whole, so OTC-GRPO's
// per-question minimum is that file's) and the difference B − A, per step and over a window of steps
// (./aggregate.ts). No `vscode` import.
import { iterateJsonlText } from '../../../core/jsonl';
import type { Scheme, TrajectoryRecord } from '../../../core/record';
import { type RewardParams, describeFormula, scoreRecords } from '../../../core/rewards';
import { defaultWindow, means, stepTable, summarize, windowRows, type CompareRow, type Sample, type StepRow, type StepWindow, type Summary } from './aggregate';

export type { CompareRow, Means, Sample, Side, StepRow, StepWindow, Summary } from './aggregate';

export interface CompareModel {
  scheme: Scheme;
  formula: string;
  a: { label: string; records: number; invalid: { line: number; message: string }[] };
  b: { label: string; records: number; invalid: { line: number; message: string }[] };
  /** Every question with every sample of each side, all steps (the page re-windows these). */
  all: CompareRow[];
  /** Mean reward per step of each side (empty when the records carry no meta.step). */
  steps: StepRow[];
  /** The window `rows` and `summary` cover: the last step both runs have, or all records. */
  window: StepWindow;
  rows: CompareRow[];
  summary: Summary;
}

/** Questions are matched by their text with whitespace and case folded (ids differ between runs). */
export function questionKey(q: string): string {
  return q.trim().replace(/\s+/g, ' ').toLowerCase();
}

function readSide(text: string, label: string, scheme: Scheme, params: RewardParams) {
  const records: { r: TrajectoryRecord; line: number }[] = [];
  const invalid: { line: number; message: string }[] = [];
  for (const e of iterateJsonlText(text)) {
    if (e.record) records.push({ r: e.record, line: e.line });
    else if (e.problem) invalid.push({ line: e.line, message: `${label}:${e.line}:${e.problem.column}: ${e.problem.code} ${e.problem.message}` });
  }
  const scored = scoreRecords(records.map((x) => x.r), scheme, params);
  const byQ = new Map<string, { question: string; golden: string[]; samples: Sample[] }>();
  records.forEach(({ r, line }, i) => {
    const k = questionKey(r.question);
    const g = byQ.get(k) ?? { question: r.question, golden: r.golden_answers ?? [], samples: [] };
    g.samples.push({ id: r.id, line, step: typeof r.meta?.step === 'number' ? r.meta.step : null, response: r.response, breakdown: scored[i] });
    byQ.set(k, g);
  });
  return { byQ, info: { label, records: records.length, invalid } };
}

export function compareRuns(a: { text: string; label: string }, b: { text: string; label: string }, scheme: Scheme = 'em', params: RewardParams = {}): CompareModel {
  const A = readSide(a.text, a.label, scheme, params);
  const B = readSide(b.text, b.label, scheme, params);
  const keys = [...new Set([...A.byQ.keys(), ...B.byQ.keys()])];
  const side = (g?: { samples: Sample[] }) => (g ? { samples: g.samples, mean: means(g.samples.map((x) => x.breakdown)) } : null);
  const all = windowRows(keys.map((k) => {
    const x = A.byQ.get(k);
    const y = B.byQ.get(k);
    return { question: (x ?? y)!.question, golden: (x ?? y)!.golden, a: side(x), b: side(y), delta: null };
  }), { kind: 'all' });
  const steps = stepTable(all);
  const window = defaultWindow(steps);
  const rows = windowRows(all, window);
  return { scheme, formula: describeFormula(scheme, params), a: A.info, b: B.info, all, steps, window, rows, summary: summarize(rows) };
}
