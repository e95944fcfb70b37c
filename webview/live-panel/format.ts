// Number formatting for chart axes (no DOM).

/** Y tick labels with enough digits to tell neighbours apart (a learning rate decaying within 0.0029–0.003). */
export function tickLabels(splits: number[]): string[] {
  const step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : Math.abs(splits[0] ?? 1);
  const big = Math.max(...splits.map(Math.abs));
  if (big >= 1e5 || (big > 0 && big < 1e-4)) return splits.map((v) => (v === 0 ? '0' : v.toExponential(step > 0 ? Math.max(0, Math.min(6, Math.floor(Math.log10(big)) - Math.floor(Math.log10(step)))) : 2)));
  // The fewest decimals that write the tick step exactly (0.25 → 2, 5e-5 → 5).
  let decimals = step > 0 ? Math.max(0, -Math.floor(Math.log10(step))) : 2;
  while (decimals < 8 && Math.abs(Math.round(step * 10 ** decimals) - step * 10 ** decimals) > 1e-6) decimals++;
  return splits.map((v) => v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals }));
}

/** Y axis width in px for its tick labels: wide enough that a slowly decaying learning rate's digits are not cut. */
export function yAxisWidth(labels: string[] | null | undefined): number {
  const longest = Math.max(0, ...(labels ?? []).map((l) => l.length));
  return Math.max(44, Math.ceil(longest * 7 + 14));
}

/** Step axis increments: whole steps only (uPlot picks the smallest that leaves room between labels). */
export const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000, 50_000, 100_000];

/** A value in the hover readout / results table: 4 significant digits, exponent for the very small or large. */
export function formatValue(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  if (Number.isInteger(v)) return String(v);
  return Number(v.toPrecision(4)).toString();
}
