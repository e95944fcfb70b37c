// GRPO groups of a rollouts file: the G samples a step drew for one question (meta.step, meta.group), side by side
// with their reward components and the advantage each was trained with (the one the trainer stored in
// tokens.advantages), and which groups had all-equal rewards — zero advantages, compute spent for no gradient (the
// trainer's zero_variance_groups metric counts the same groups: test/conformance/groups.json, both languages).
import { storedAdvantage } from './diff/read';
import type { RewardBreakdown, TrajectoryRecord } from './record';

export interface GroupSample {
  id: string;
  /** 1-based line in the file. */
  line: number;
  sample: number | null;
  response: string;
  dialect: string | null;
  reward: RewardBreakdown | null;
  advantage: number | null;
}

export interface Group {
  step: number;
  group: string;
  question: string;
  golden: string[];
  samples: GroupSample[];
  /** Every sample got the same reward total (no sample has none). */
  zeroVariance: boolean;
  /** Rewards' mean and population standard deviation (what GRPO normalises by). */
  mean: number | null;
  std: number | null;
}

export interface StepGroups {
  step: number;
  groups: Group[];
  /** Share of groups with zero variance (null: no group has rewards). */
  zeroVarianceShare: number | null;
}

/** Whether a group's rewards are all equal: GRPO gives each sample an advantage of 0. */
export function zeroVariance(totals: readonly number[]): boolean {
  return totals.length > 0 && totals.every((t) => t === totals[0]);
}

/** Records of one step grouped by meta.group (records without a step or a group are left out), in file order. */
export function groupsOfStep(records: readonly { record: TrajectoryRecord; line: number }[], step: number): StepGroups {
  const by = new Map<string, Group>();
  for (const { record: r, line } of records) {
    const m = r.meta ?? {};
    if (m.step !== step || m.group === undefined) continue;
    const key = String(m.group);
    let g = by.get(key);
    if (!g)
      by.set(
        key,
        (g = {
          step,
          group: key,
          question: r.question,
          golden: r.golden_answers ?? [],
          samples: [],
          zeroVariance: false,
          mean: null,
          std: null,
        }),
      );
    g.samples.push({
      id: r.id,
      line,
      sample: typeof m.sample === 'number' ? m.sample : null,
      response: r.response,
      dialect: r.dialect ?? null,
      reward: r.reward ?? null,
      advantage: storedAdvantage(r),
    });
  }
  const groups = [...by.values()];
  let rated = 0;
  let zero = 0;
  for (const g of groups) {
    if (g.samples.some((s) => !s.reward)) continue;
    const totals = g.samples.map((s) => s.reward!.total);
    g.mean = totals.reduce((a, b) => a + b, 0) / totals.length;
    g.std = Math.sqrt(totals.reduce((a, b) => a + (b - g.mean!) ** 2, 0) / totals.length);
    g.zeroVariance = zeroVariance(totals);
    rated++;
    if (g.zeroVariance) zero++;
  }
  return { step, groups, zeroVarianceShare: rated ? zero / rated : null };
}
