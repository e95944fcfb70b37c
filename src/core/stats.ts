// Aggregate statistics over scored trajectories: the columns of the papers' result tables. EM, F1 and TP need golden
// answers: they are averaged over the trajectories that have some (`graded`) and are null — "n/a" — when none has,
// so a file of unlabelled rollouts does not read as "EM 0.0 %".
import type { DialectName } from './dialects';
import type { RewardBreakdown } from './record';

export interface StatsRow {
  group: string;
  count: number;
  /** Trajectories with golden answers: EM, F1 and TP are over these. */
  graded: number;
  em: number | null;
  f1: number | null;
  /** TC: mean tool calls per trajectory. */
  tc: number;
  /** TP: Σ correct / Σ tool calls over the graded trajectories (OTC's tool productivity); null when none called one. */
  tp: number | null;
  format_error_rate: number;
}

interface Sums {
  n: number;
  graded: number;
  em: number;
  f1: number;
  calls: number;
  gradedCalls: number;
  bad: number;
}

export class StatsAccumulator {
  private readonly groups = new Map<string, Sums>();

  /** `graded`: the trajectory has golden answers (its EM and F1 mean something). */
  add(b: RewardBreakdown, keys: { dialect: DialectName; stage?: string }, graded = true): void {
    this.bump('all', b, graded);
    this.bump(`dialect=${keys.dialect}`, b, graded);
    if (keys.stage !== undefined) this.bump(`stage=${keys.stage}`, b, graded);
  }

  private bump(key: string, b: RewardBreakdown, graded: boolean): void {
    const g = this.groups.get(key) ?? { n: 0, graded: 0, em: 0, f1: 0, calls: 0, gradedCalls: 0, bad: 0 };
    g.n++;
    g.calls += b.tool_calls;
    g.bad += b.format_ok ? 0 : 1;
    if (graded) {
      g.graded++;
      g.em += b.em;
      g.f1 += b.f1;
      g.gradedCalls += b.tool_calls;
    }
    this.groups.set(key, g);
  }

  rows(): StatsRow[] {
    const order = (k: string) => (k === 'all' ? 0 : k.startsWith('dialect=') ? 1 : 2);
    return [...this.groups.entries()]
      .sort(([a], [b]) => order(a) - order(b) || a.localeCompare(b))
      .map(([group, g]) => ({
        group,
        count: g.n,
        graded: g.graded,
        em: g.graded ? g.em / g.graded : null,
        f1: g.graded ? g.f1 / g.graded : null,
        tc: g.calls / g.n,
        tp: g.gradedCalls > 0 ? g.em / g.gradedCalls : null,
        format_error_rate: g.bad / g.n,
      }));
  }
}

export function formatStatsTable(rows: StatsRow[]): string {
  const header = ['group', 'count', 'EM', 'F1', 'TC', 'TP', 'format err'];
  const body = rows.map((r) => [
    r.group,
    String(r.count),
    pct(r.em),
    pct(r.f1),
    r.tc.toFixed(2),
    r.tp === null ? '—' : r.tp.toFixed(3),
    pct(r.format_error_rate),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

function pct(x: number | null): string {
  return x === null ? 'n/a' : `${(100 * x).toFixed(1)}%`;
}
