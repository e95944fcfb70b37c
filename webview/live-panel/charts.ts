// The charts of one tab (one stage family): a box per metric, grouped by kind, pinned ones first, in a responsive
// grid (CSS: 1 column when narrow, up to 4 when wide; each plot as wide as its box, resized with it). Each chart draws
// every line of the tab (run × sibling stage) twice: the raw values faint, the smoothed ones solid. Axes: step within
// the stage (whole steps only) and the metric, linear or log (per chart). Hovering shows every line's value at that
// step under the title; alerts are marked on the step axis; clicking a step asks the host for the rollouts written at
// it. A uPlot is created only when its box scrolls into view and updated only while in view, so a run with hundreds
// of metrics costs the plots on screen. Ticks and ranges are ours (format.ts), always finite: uPlot's own splitter
// can loop forever on ranges its increment table does not cover ("RangeError: Invalid array length").
import uPlot from 'uplot';
import {
  GROUPS,
  matchesFilter,
  readout,
  type ChartData,
  type GroupId,
  type Line,
  type PanelModel,
  type XAxis,
} from './model';
import {
  STEP_INCRS,
  axisLabel,
  formatValue,
  logTickLabels,
  logTicks,
  niceTicks,
  safeRange,
  tickLabels,
  timeLabels,
  timeTicks,
  yAxisWidth,
} from './format';
import { cssVar, el, icon, lineColour, withAlpha } from './dom';

export interface ChartsHost {
  model: PanelModel;
  smoothing(): number;
  pinned: Set<string>;
  onPin(tab: string, name: string): void;
  /** A step of a line was clicked. */
  onStep(line: Line, step: number): void;
  /** Lines whose steps have rollouts to list (RL stages, stages that sampled). */
  clickable(line: Line): boolean;
  /** Lines the user hid by clicking their legend entry. */
  hidden(line: Line): boolean;
  /** Charts drawn on a log y scale, as `<tab>\n<metric>`. */
  logScale: Set<string>;
  onLog(tab: string, name: string): void;
  /** The x axis of every chart: step, time since the stage started, or wall clock. */
  axis(): XAxis;
  /** The x range every chart of the tab shows (a drag on any chart sets it), or null: everything. */
  zoom(): [number, number] | null;
  onZoom(range: [number, number] | null): void;
}

interface ChartBox {
  name: string;
  box: HTMLElement;
  readout: HTMLElement;
  /** The plot's width now (follows the box's). */
  width: number;
  plot?: uPlot;
  data?: ChartData;
  /** In or near the viewport (only those plots are updated as data arrives; the others when they come back). */
  visible: boolean;
  /** Data arrived while the plot was out of view. */
  stale: boolean;
}

const HEIGHT = 190;
const RAW_ALPHA = 0.3;
/** Box padding + border (style.css .chart): the plot is the box's content width. */
const BOX_CHROME = 10;
const MIN_PLOT_WIDTH = 200;
/** How long a click on a chart waits for a second one (a double click resets the zoom instead of listing rollouts). */
const DOUBLE_CLICK_MS = 250;

export class TabCharts {
  readonly charts = new Map<string, ChartBox>();
  readonly lines: Line[];
  private readonly pinnedGrid: HTMLElement;
  private readonly pinnedSection: HTMLElement;
  private readonly groups = new Map<GroupId, { section: HTMLElement; grid: HTMLElement }>();
  private readonly observer: IntersectionObserver;
  private readonly resize: ResizeObserver;
  private filter = '';
  private readonly emptyNote: HTMLElement;

  constructor(
    private readonly root: HTMLElement,
    private readonly host: ChartsHost,
    readonly tab: string,
  ) {
    this.lines = host.model.lines(tab);
    this.pinnedGrid = el('div', { class: 'grid' });
    this.pinnedSection = el(
      'section',
      { class: 'group', 'data-group': 'pinned', hidden: '' },
      el('h3', {}, icon('pinned'), ' Pinned'),
      this.pinnedGrid,
    );
    this.emptyNote = el('p', { class: 'empty', hidden: '' }, 'No chart matches the filter.');
    root.replaceChildren(this.pinnedSection);
    for (const g of GROUPS) {
      const grid = el('div', { class: 'grid' });
      const section = el('section', { class: 'group', 'data-group': g.id, hidden: '' }, el('h3', {}, g.title), grid);
      root.append(section);
      this.groups.set(g.id, { section, grid });
    }
    root.append(this.emptyNote);
    this.observer = new IntersectionObserver(
      (entries) => {
        for (const e of entries) {
          const c = this.charts.get((e.target as HTMLElement).dataset.metric!);
          if (!c) continue;
          c.visible = e.isIntersecting;
          if (!c.visible) continue;
          if (!c.plot) this.ensurePlot(c.name);
          else if (c.stale) this.update(c);
        }
        // When the latest charts scrolled into view were drawn, in ms since the page started (bench/live-panel reads it).
        document.body.dataset.plottedAt = performance.now().toFixed(1);
      },
      { rootMargin: '300px' },
    );
    // Each plot follows its box's width (the grid's columns change with the panel's width); only a width change
    // resizes: heights change with every filter keystroke and new chart.
    this.resize = new ResizeObserver((entries) => {
      for (const e of entries) {
        const c = this.charts.get((e.target as HTMLElement).dataset.metric!);
        if (!c) continue;
        const w = plotWidth(c.box);
        if (w === null || w === c.width) continue;
        c.width = w;
        c.plot?.setSize({ width: w, height: HEIGHT });
      }
    });
    this.sync();
  }

  /** Adds boxes for metrics new to the tab and refreshes the data of the plots that exist. */
  sync(): void {
    for (const [name, group] of this.host.model.metricsOf(this.tab)) {
      let c = this.charts.get(name);
      if (!c) {
        c = this.makeBox(name, group);
        this.charts.set(name, c);
      } else if (c.plot && c.visible) this.update(c);
      else if (c.plot) c.stale = true;
      c.box.dataset.points = String(
        c.plot && c.visible && c.data ? c.data.x.length : this.host.model.chartSteps(this.lines, name),
      );
    }
    this.applyFilter(this.filter);
  }

  private makeBox(name: string, group: GroupId): ChartBox {
    const pinned = this.host.pinned.has(`${this.tab}\n${name}`);
    const pin = el(
      'button',
      {
        class: 'icon-button pin',
        title: pinned ? 'Unpin' : 'Pin to the top',
        'aria-label': `${pinned ? 'Unpin' : 'Pin'} ${name}`,
        'aria-pressed': String(pinned),
      },
      icon(pinned ? 'pinned' : 'pin'),
    );
    pin.addEventListener('click', () => this.host.onPin(this.tab, name));
    const log = this.isLog(name);
    const logButton = el(
      'button',
      {
        class: 'icon-button log',
        title: log ? 'Linear y scale' : 'Log y scale',
        'aria-label': `Log scale for ${name}`,
        'aria-pressed': String(log),
      },
      'log',
    );
    logButton.addEventListener('click', () => this.host.onLog(this.tab, name));
    const readoutEl = el('div', { class: 'readout', 'aria-live': 'off' });
    const box = el(
      'div',
      {
        class: 'chart',
        'data-metric': name,
        'data-group': group,
        'data-points': '0',
        'data-scale': log ? 'log' : 'linear',
      },
      el('div', { class: 'chart-title' }, el('span', { class: 'name', title: name }, name), logButton, pin),
      readoutEl,
    );
    box.style.minHeight = `${HEIGHT + 36}px`; // CSSOM: the page's CSP has no 'unsafe-inline'
    (pinned ? this.pinnedGrid : this.groups.get(group)!.grid).append(box);
    this.observer.observe(box);
    this.resize.observe(box);
    return { name, box, readout: readoutEl, width: 0, visible: false, stale: false };
  }

  private isLog(name: string): boolean {
    return this.host.logScale.has(`${this.tab}\n${name}`);
  }

  /** A chart switched between linear and log y: its plot is made again (the scale is part of its options). */
  setLog(name: string, log: boolean): void {
    const c = this.charts.get(name);
    if (!c) return;
    const button = c.box.querySelector('.log')!;
    button.setAttribute('aria-pressed', String(log));
    button.setAttribute('title', log ? 'Linear y scale' : 'Log y scale');
    c.box.dataset.scale = log ? 'log' : 'linear';
    c.plot?.destroy();
    c.plot = undefined;
    if (c.visible) this.ensurePlot(name);
  }

  /** New smoothing: every plot's data again (only those in view now; the others when they come back). */
  resmooth(): void {
    for (const c of this.charts.values()) {
      if (c.plot && c.visible) this.update(c);
      else if (c.plot) c.stale = true;
    }
  }

  /** Moves a chart between the pinned section and its group. */
  setPinned(name: string, pinned: boolean): void {
    const c = this.charts.get(name);
    if (!c) return;
    const grid = pinned ? this.pinnedGrid : this.groups.get(c.box.dataset.group as GroupId)!.grid;
    grid.prepend(c.box);
    const button = c.box.querySelector('.pin')!;
    button.replaceChildren(icon(pinned ? 'pinned' : 'pin'));
    button.setAttribute('aria-pressed', String(pinned));
    button.setAttribute('title', pinned ? 'Unpin' : 'Pin to the top');
    this.applyFilter(this.filter);
  }

  applyFilter(filter: string): void {
    this.filter = filter;
    let shown = 0;
    for (const c of this.charts.values()) {
      const ok = matchesFilter(c.name, filter);
      c.box.hidden = !ok;
      if (ok) shown++;
    }
    for (const section of [this.pinnedSection, ...[...this.groups.values()].map((g) => g.section)])
      section.hidden = !section.querySelector('.chart:not([hidden])');
    this.emptyNote.hidden = shown > 0 || this.charts.size === 0;
  }

  private ensurePlot(name: string): void {
    const c = this.charts.get(name);
    if (!c || c.plot) return;
    c.width = plotWidth(c.box) ?? MIN_PLOT_WIDTH;
    c.data = this.host.model.chartData(this.lines, name, this.host.smoothing(), this.host.axis());
    c.plot = new uPlot(this.options(c), this.aligned(c), c.box);
    this.applyZoom(c);
    c.box.dataset.points = String(c.data.x.length);
    c.box.classList.add('drawn');
    this.showReadout(c, null);
  }

  private update(c: ChartBox): void {
    c.stale = false;
    c.data = this.host.model.chartData(this.lines, c.name, this.host.smoothing(), this.host.axis());
    // Zoomed: new data keeps the range (uPlot would fit every point again); the y range follows what is in view.
    c.plot!.setData(this.aligned(c), !this.host.zoom());
    this.applyZoom(c);
    this.showReadout(c, c.plot!.cursor.idx ?? null);
  }

  /** uPlot's columns for a chart, and how many values a log scale leaves out (said in its readout). */
  private aligned(c: ChartBox): uPlot.AlignedData {
    const { data, dropped } = toAligned(c.data!, this.isLog(c.name));
    c.box.dataset.logDropped = String(dropped);
    return data;
  }

  private applyZoom(c: ChartBox): void {
    const z = this.host.zoom();
    if (z) c.plot!.setScale('x', { min: z[0], max: z[1] });
    c.box.dataset.zoom = z ? `${z[0]} ${z[1]}` : '';
  }

  /** The tab's x range changed (a drag, or reset): every plot shows it (those out of view when they come back). */
  rezoom(): void {
    for (const c of this.charts.values()) {
      if (!c.plot) continue;
      if (!c.visible) {
        c.stale = true;
        continue;
      }
      if (this.host.zoom()) this.applyZoom(c);
      else this.update(c);
    }
  }

  /** Redraws every plot (alert marks changed). */
  redraw(): void {
    for (const c of this.charts.values()) {
      if (c.plot && c.visible) c.plot.redraw(false, false);
      else if (c.plot) c.stale = true; // redrawn with fresh data when it scrolls back
    }
  }

  private options(c: ChartBox): uPlot.Options {
    const smoothing = this.host.smoothing();
    const axisColours = {
      stroke: cssVar('--vscode-descriptionForeground'),
      grid: { stroke: cssVar('--vscode-charts-lines', '--vscode-widget-border'), width: 1 },
      ticks: { stroke: cssVar('--vscode-charts-lines', '--vscode-widget-border'), width: 1 },
    };
    const font = `11px ${cssVar('--vscode-font-family') || 'sans-serif'}`;
    const axis = this.host.axis();
    const series: uPlot.Series[] = [{ label: axisLabel(axis) }];
    this.lines.forEach((l, i) => {
      const colour = lineColour(i);
      const shown = !this.host.hidden(l);
      // The solid line (smoothed, or raw when smoothing is off) marks its points when it has too few to be a line:
      // uPlot's own rule hides points by density, and a lone point among many steps would draw nothing.
      const solid = {
        show: (u: uPlot, si: number) => fewPoints(u.data[si] as (number | null)[]),
        size: 6,
        fill: colour,
      };
      // Gaps (null: a value that was not finite, a break in the steps) stay gaps; points another line has and this one
      // has not (undefined) are drawn through.
      series.push({
        label: `${l.label} raw`,
        stroke: smoothing > 0 ? withAlpha(colour, RAW_ALPHA) : colour,
        width: smoothing > 0 ? 1 : 1.5,
        spanGaps: false,
        points: smoothing > 0 ? { show: false } : solid,
        show: shown,
      });
      series.push({
        label: l.label,
        stroke: colour,
        width: 1.75,
        spanGaps: false,
        points: solid,
        show: shown && smoothing > 0,
      });
    });
    const clickable = this.lines.map((l) => this.host.clickable(l) && !this.host.hidden(l));
    const log = this.isLog(c.name);
    let dragged = false;
    let pendingClick: ReturnType<typeof setTimeout> | undefined;
    return {
      width: c.width,
      height: HEIGHT,
      legend: { show: false },
      // A drag selects an x range for every chart of the tab (onZoom); uPlot's own zoom would be lost at the next data.
      cursor: { sync: { key: `coa-live-${this.tab}` }, drag: { x: true, y: false, setScale: false } },
      scales: {
        x: {
          time: false,
          range: (_u, min, max) =>
            min === max || min === null || max === null ? [Math.max(0, (min ?? 0) - 1), (max ?? 0) + 1] : [min, max],
        },
        // A flat series (e.g. EM 0 before learning starts) gets a range around its value instead of uPlot's 0–100.
        y: log
          ? { distr: 3, log: 10, range: (_u, min, max) => safeRange(min, max, true) }
          : { range: (_u, min, max) => safeRange(min, max, false) },
      },
      axes: [
        {
          ...axisColours,
          label: axisLabel(axis),
          labelSize: 16,
          labelFont: font,
          font,
          incrs: STEP_INCRS,
          splits: (u, _i, min, max) =>
            axis === 'step'
              ? niceTicks(min, max, Math.max(2, (u.width - 80) / 70), true)
              : timeTicks(min, max, Math.max(2, (u.width - 80) / 80)),
          values: (_u, splits) => {
            c.box.dataset.xticks = splits.join(' '); // readable from the page (the webview test checks whole steps)
            return axis === 'step' ? splits.map((v) => String(Math.round(v))) : timeLabels(splits, axis);
          },
        },
        {
          ...axisColours,
          label: c.name,
          labelSize: 16,
          labelFont: font,
          font,
          size: (_u, values) => yAxisWidth(values),
          splits: (_u, _i, min, max) => (log ? logTicks(min, max, 5) : niceTicks(min, max, 4)),
          // uPlot thins log ticks by default (nulls in `values`); ours are already few.
          filter: (_u, splits) => splits,
          values: (_u, splits) => {
            c.box.dataset.yticks = splits.join(' '); // readable from the page (the webview test checks log ticks)
            return log ? logTickLabels(splits) : tickLabels(splits);
          },
        },
      ],
      series,
      hooks: {
        setCursor: [(u) => this.showReadout(c, u.cursor.idx ?? null)],
        setSelect: [
          (u) => {
            if (u.select.width <= 2) return;
            const range: [number, number] = [
              u.posToVal(u.select.left, 'x'),
              u.posToVal(u.select.left + u.select.width, 'x'),
            ];
            dragged = true;
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            this.host.onZoom(range);
          },
        ],
        ready: [
          (u) => {
            // A double click shows the whole x range again, on every chart of the tab.
            u.over.addEventListener('dblclick', () => this.host.onZoom(null));
            if (!clickable.some(Boolean)) return;
            u.over.classList.add('clickable');
            u.over.addEventListener('click', (e) => {
              if (dragged) return void (dragged = false); // the end of a drag-zoom, not a click
              // The second click of a double click (which resets the zoom) lists nothing; the first waits to see.
              clearTimeout(pendingClick);
              if (e.detail > 1) return;
              const idx = u.cursor.idx;
              if (idx == null || !c.data) return;
              const data = c.data;
              const line = this.nearestLine(u, data, idx, clickable, this.isLog(c.name));
              const step = line >= 0 ? data.steps[line][idx] : undefined;
              if (step !== undefined)
                pendingClick = setTimeout(() => this.host.onStep(this.lines[line], step), DOUBLE_CLICK_MS);
            });
          },
        ],
      },
      plugins: [this.alertPlugin(c)],
    };
  }

  /** The clickable line whose value at `idx` is nearest the pointer (vertically). */
  private nearestLine(u: uPlot, data: ChartData, idx: number, clickable: boolean[], log: boolean): number {
    let best = -1;
    let bestD = Infinity;
    data.smooth.forEach((col, i) => {
      const v = col[idx] ?? data.raw[i][idx];
      if (data.steps[i][idx] === undefined) return;
      if (!clickable[i] || v == null || (log && v <= 0)) return;
      const d = Math.abs(u.valToPos(v, 'y') - (u.cursor.top ?? 0));
      if (d < bestD) [best, bestD] = [i, d];
    });
    return best;
  }

  private showReadout(c: ChartBox, idx: number | null): void {
    const data = c.data;
    if (!data || !data.x.length) {
      c.readout.replaceChildren(el('span', { class: 'muted' }, 'no data yet'));
      return;
    }
    const axis = this.host.axis();
    // The latest point: the last x any line has a value at (a gap marker is no point).
    let at = idx ?? data.x.length - 1;
    if (idx === null) while (at > 0 && data.steps.every((col) => col[at] === undefined)) at--;
    const x = data.x[at];
    const smoothing = this.host.smoothing();
    const rows = readout(this.lines, data, at);
    const steps = new Set(rows.flatMap((r) => (r.step === null ? [] : [r.step])));
    const step = axis === 'step' ? x : steps.size === 1 ? [...steps][0] : null;
    const alerts = this.host.model.alertMarks(this.lines, axis).filter((m) => rows[m.line]?.step === m.step);
    c.readout.dataset.step = step === null ? '' : String(step);
    const where =
      axis === 'step' ? `step ${x}` : `${timeLabels([x], axis, true)[0]}${step !== null ? ` · step ${step}` : ''}`;
    const dropped = Number(c.box.dataset.logDropped ?? 0);
    c.readout.replaceChildren(
      el('span', { class: 'step' }, `${idx === null ? 'latest · ' : ''}${where}`),
      ...rows.flatMap((r, i) => {
        if (this.host.hidden(this.lines[i])) return [];
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = lineColour(i);
        const value = el('b', { class: 'v' }, formatValue(smoothing > 0 ? r.smooth : r.raw));
        const ownStep = axis !== 'step' && step === null && r.step !== null ? ` (step ${r.step})` : '';
        return el(
          'span',
          { class: 'row', 'data-line': String(i), 'data-raw': r.raw === null ? '' : String(r.raw) },
          swatch,
          `${r.label} `,
          value,
          smoothing > 0 && r.raw !== null ? el('span', { class: 'raw' }, ` raw ${formatValue(r.raw)}`) : '',
          ownStep,
        );
      }),
      ...alerts.map((a) =>
        el(
          'span',
          { class: `row alert ${a.severity}` },
          icon(a.severity === 'error' ? 'error' : 'warning'),
          ` ${a.kind}: ${a.message}`,
        ),
      ),
      // A log scale cannot draw values ≤ 0: say how many are left out instead of dropping them silently.
      ...(this.isLog(c.name) && dropped > 0
        ? [
            el(
              'span',
              { class: 'row muted log-dropped' },
              data.raw.some((col) => col.some((v) => v != null && v > 0))
                ? `${dropped} value${dropped === 1 ? '' : 's'} ≤ 0 not drawn on the log scale`
                : 'no value above 0: nothing to draw on a log scale',
            ),
          ]
        : []),
    );
  }

  /** Alerts of the tab's lines: a triangle on the top edge and a faint line at their step. */
  private alertPlugin(c: ChartBox): uPlot.Plugin {
    return {
      hooks: {
        draw: (u) => {
          const marks = this.host.model.alertMarks(this.lines, this.host.axis());
          const ctx = u.ctx;
          const min = u.scales.x.min!;
          const max = u.scales.x.max!;
          let drawn = 0;
          ctx.save();
          for (const m of marks) {
            if (m.x < min || m.x > max) continue;
            const px = Math.round(u.valToPos(m.x, 'x', true));
            const colour = cssVar(
              m.severity === 'error' ? '--vscode-editorError-foreground' : '--vscode-editorWarning-foreground',
            );
            ctx.strokeStyle = withAlpha(colour, 0.5);
            ctx.setLineDash([2, 3]);
            ctx.lineWidth = 1;
            ctx.beginPath();
            ctx.moveTo(px, u.bbox.top);
            ctx.lineTo(px, u.bbox.top + u.bbox.height);
            ctx.stroke();
            const s = 5 * devicePixelRatio;
            ctx.fillStyle = colour;
            ctx.beginPath();
            ctx.moveTo(px - s, u.bbox.top);
            ctx.lineTo(px + s, u.bbox.top);
            ctx.lineTo(px, u.bbox.top + 1.6 * s);
            ctx.closePath();
            ctx.fill();
            drawn++;
          }
          ctx.restore();
          c.box.dataset.alerts = String(drawn);
        },
      },
    };
  }

  destroy(): void {
    this.observer.disconnect();
    this.resize.disconnect();
    for (const c of this.charts.values()) c.plot?.destroy();
    this.charts.clear();
    this.root.replaceChildren();
  }
}

/**
 * uPlot's columns: x, then raw and smoothed per line. On a log scale, values ≤ 0 become gaps (no log of them) and
 * are counted (raw values only: the readout says how many).
 */
export function toAligned(d: ChartData, log = false): { data: uPlot.AlignedData; dropped: number } {
  const cols: (number | null | undefined)[][] = [];
  let dropped = 0;
  const keep = (col: (number | null | undefined)[], count: boolean) =>
    log
      ? col.map((v) => {
          if (v === null || v === undefined || v > 0) return v;
          if (count) dropped++;
          return null;
        })
      : col;
  d.raw.forEach((r, i) => cols.push(keep(r, true), keep(d.smooth[i], false)));
  return { data: [d.x, ...cols] as uPlot.AlignedData, dropped };
}

/** Fewer than 3 values: a line cannot show them. */
function fewPoints(col: (number | null | undefined)[] | undefined): boolean {
  let n = 0;
  for (const v of col ?? []) if (v !== null && v !== undefined && ++n >= 3) return false;
  return true;
}

/** The plot width a chart box gives (its content width), or null while it has none (hidden, not laid out). */
function plotWidth(box: HTMLElement): number | null {
  const w = box.clientWidth;
  return w > 0 ? Math.max(MIN_PLOT_WIDTH, Math.floor(w - BOX_CHROME)) : null;
}
