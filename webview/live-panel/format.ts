// Number formatting for chart axes (no DOM).
import type { XAxis } from './model';

/** Y tick labels with enough digits to tell neighbours apart (a learning rate decaying within 0.0029–0.003). */
export function tickLabels(splits: number[]): string[] {
  const step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : Math.abs(splits[0] ?? 1);
  const big = Math.max(...splits.map(Math.abs));
  if (big >= 1e5 || (big > 0 && big < 1e-4))
    return splits.map((v) =>
      v === 0
        ? '0'
        : v.toExponential(
            step > 0 ? Math.max(0, Math.min(6, Math.floor(Math.log10(big)) - Math.floor(Math.log10(step)))) : 2,
          ),
    );
  // The fewest decimals that write the tick step exactly (0.25 → 2, 5e-5 → 5).
  let decimals = step > 0 ? Math.max(0, -Math.floor(Math.log10(step))) : 2;
  while (decimals < 8 && Math.abs(Math.round(step * 10 ** decimals) - step * 10 ** decimals) > 1e-6) decimals++;
  return splits.map((v) =>
    v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals }),
  );
}

/** Log-scale tick labels: each value as itself (0.001, 10, 5e+6), not with the decimals of a linear step. */
export function logTickLabels(splits: (number | null)[]): string[] {
  return splits.map((v) =>
    v === null ? '' : v >= 1e-3 && v < 1e5 ? String(Number(v.toPrecision(6))) : v.toExponential(0),
  );
}

/** Y axis width in px for its tick labels: wide enough that a slowly decaying learning rate's digits are not cut. */
export function yAxisWidth(labels: string[] | null | undefined): number {
  const longest = Math.max(0, ...(labels ?? []).map((l) => l.length));
  return Math.max(44, Math.ceil(longest * 7 + 14));
}

/** Step axis increments: whole steps only (uPlot picks the smallest that leaves room between labels). */
export const STEP_INCRS = [
  1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000, 50_000, 100_000,
];

/** A value in the hover readout / results table: 4 significant digits, exponent for the very small or large. */
export function formatValue(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  if (Number.isInteger(v)) return String(v);
  return Number(v.toPrecision(4)).toString();
}

/**
 * At most about `count` round tick values covering [min, max] (steps of 1, 2, 2.5 or 5 × 10^k), always a short
 * finite array: uPlot's own splitter loops `val += incr` and, when no increment of its table fits the range (one
 * far beyond 1e16, a zero-height plot), is handed incr 0 and grows an array until "Invalid array length".
 */
export function niceTicks(min: number, max: number, count: number, integer = false): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  const n = Math.max(1, Math.min(50, Math.floor(count)));
  if (max === min) return [min];
  const raw = (max - min) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const first = Math.ceil(min / step - 1e-9);
  const out: number[] = [];
  for (let k = first; k * step <= max + step * 1e-9 && out.length <= n + 1; k++) {
    const v = k * step;
    // Print-friendly: 0.30000000000000004 → 0.3 (the digits of the step, plus a few).
    out.push(Number(v.toPrecision(12)));
  }
  // Steps too small for doubles (a range of 1e-30 around 1e17): the ends, at least.
  return out.length ? out : [min, max];
}

/** Log-scale ticks: the powers of 10 in [min, max] (min > 0); with few decades, 2 and 5 times them too. */
export function logTicks(min: number, max: number, count: number): number[] {
  if (!(min > 0) || !(max > 0) || !Number.isFinite(min) || !Number.isFinite(max)) return [];
  const lo = Math.floor(Math.log10(min));
  const hi = Math.ceil(Math.log10(max));
  const decades = Math.max(1, hi - lo);
  const every = Math.max(1, Math.ceil(decades / Math.max(1, count)));
  const mults = decades * 3 <= count ? [1, 2, 5] : [1];
  const out: number[] = [];
  for (let e = lo; e <= hi; e += every)
    for (const m of mults) {
      const v = Number((m * 10 ** e).toPrecision(12));
      if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
    }
  return out.length ? out : [min, max];
}

/** A y range that uPlot can draw: finite, of non-zero height (a constant series gets ±10 % of its value, or ±1). */
export function safeRange(min: number | null, max: number | null, log: boolean): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return log ? [1, 10] : [0, 1];
  if (log) {
    const lo = 10 ** Math.floor(Math.log10(min));
    const hi = 10 ** Math.ceil(Math.log10(max));
    return hi > lo ? [lo, hi] : [lo / 10, hi * 10];
  }
  const span = max - min;
  const mid = (max + min) / 2;
  // Equal, or different only by float noise: draw it as the constant it is.
  if (span <= Math.abs(mid) * 1e-12 || span === 0) {
    const pad = mid === 0 ? 1 : Math.abs(mid) * 0.1;
    return [mid - pad, mid + pad];
  }
  const pad = span * 0.1;
  return [min >= 0 && min - pad < 0 ? 0 : min - pad, max + pad];
}

/** The x axis's title on a chart. */
export function axisLabel(axis: XAxis): string {
  return axis === 'step' ? 'step' : axis === 'relative' ? 'time since the stage started' : 'time of day';
}

/** Time axis increments in seconds: clock-friendly (15 s, 1 min, 5 min, 1 h, …), never a decimal 20 or 50 s. */
const TIME_INCRS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800,
  2_592_000,
];

/** At most about `count` ticks over [min, max] seconds at a clock-friendly increment; short and finite always. */
export function timeTicks(min: number, max: number, count: number): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  if (max === min) return [min];
  const n = Math.max(1, Math.min(50, Math.floor(count)));
  const step = TIME_INCRS.find((s) => (max - min) / s <= n) ?? Math.ceil((max - min) / n / 86_400) * 86_400;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + 1e-9 && out.length <= n + 1; v += step) out.push(v);
  return out.length ? out : [min, max];
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * Labels of time-axis values: a duration (`1:05`, `1:02:03`) for seconds since the stage started, the local time of
 * day (`14:05`, `14:05:30` when a tick falls between minutes) for the wall clock. `precise`: the readout's form,
 * seconds always and the date for the wall clock.
 */
export function timeLabels(values: number[], axis: XAxis, precise = false): string[] {
  if (axis === 'relative') {
    return values.map((v) => {
      const t = Math.round(Math.abs(v));
      const h = Math.floor(t / 3600);
      const m = Math.floor((t % 3600) / 60);
      return `${v < 0 ? '−' : ''}${h ? `${h}:${pad(m)}` : m}:${pad(t % 60)}`;
    });
  }
  const seconds = precise || values.some((v) => Math.round(v) % 60 !== 0);
  return values.map((v) => {
    const d = new Date(v * 1000);
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? `:${pad(d.getSeconds())}` : ''}`;
    return precise ? `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}` : time;
  });
}
