// Aggregate statistics over scored trajectories: the columns of the papers' result tables.
import type { DialectName } from './dialects';
import type { RewardBreakdown } from './record';

export interface StatsRow {
  group: string;
  count: number;
  em: number;
  f1: number;
  /** TC: mean tool calls per trajectory. */
  tc: number;
  /** TP: Σ correct / Σ tool calls (OTC's tool productivity); null when no tool was called. */
  tp: number | null;
  format_error_rate: number;
}

export class StatsAccumulator {
  private readonly groups = new Map<string, { n: number; em: number; f1: number; calls: number; bad: number }>();

  add(b: RewardBreakdown, keys: { dialect: DialectName; stage?: string }): void {
    this.bump('all', b);
    this.bump(`dialect=${keys.dialect}`, b);
    if (keys.stage !== undefined) this.bump(`stage=${keys.stage}`, b);
  }

  private bump(key: string, b: RewardBreakdown): void {
    const g = this.groups.get(key) ?? { n: 0, em: 0, f1: 0, calls: 0, bad: 0 };
    g.n++;
    g.em += b.em;
    g.f1 += b.f1;
    g.calls += b.tool_calls;
    g.bad += b.format_ok ? 0 : 1;
    this.groups.set(key, g);
  }

  rows(): StatsRow[] {
    const order = (k: string) => (k === 'all' ? 0 : k.startsWith('dialect=') ? 1 : 2);
    return [...this.groups.entries()]
      .sort(([a], [b]) => order(a) - order(b) || a.localeCompare(b))
      .map(([group, g]) => ({
        group,
        count: g.n,
        em: g.em / g.n,
        f1: g.f1 / g.n,
        tc: g.calls / g.n,
        tp: g.calls > 0 ? g.em / g.calls : null,
        format_error_rate: g.bad / g.n,
      }));
  }
}

export function formatStatsTable(rows: StatsRow[]): string {
  const header = ['group', 'count', 'EM', 'F1', 'TC', 'TP', 'format err'];
  const body = rows.map((r) => [r.group, String(r.count), pct(r.em), pct(r.f1), r.tc.toFixed(2), r.tp === null ? '—' : r.tp.toFixed(3), pct(r.format_error_rate)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}
