// The live training panel (browser side). Events arrive in batches by postMessage and are applied to the model at
// once (so none is lost or counted late); drawing is throttled to a few frames per second, so a stream of
// thousands of events per second costs a handful of chart updates. Theme colours only (VS Code's CSS variables).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import '@vscode/codicons/dist/codicon.css';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import './style.css';
import { GROUPS, PanelModel, type GroupId } from './model';
import { tickLabels, yAxisWidth } from './format';
import type { HostToPanel, LivePanelInitialState, LivePanelSavedState, PanelToHost } from './protocol';

interface VsCodeApi {
  postMessage(message: PanelToHost): void;
  getState(): LivePanelSavedState | undefined;
  setState(state: LivePanelSavedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const initial = JSON.parse(document.getElementById('initial-state')?.textContent || 'null') as LivePanelInitialState | null;
const model = new PanelModel();
let smoothing = initial?.smoothing ?? 0;
const SMOOTHING_CHOICES = [0, 0.6, 0.8, 0.9, 0.95, 0.99];
const RENDER_INTERVAL_MS = 250;
const SAMPLES_SHOWN = 100;
const ALERTS_SHOWN = 5;

// vscode-icon (inside vscode-button) clones the codicon stylesheet found by this id into its shadow root.
const ownSheet = Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel="stylesheet"]')).find((l) => /live-panel\.css/.test(l.href));
if (ownSheet && !document.getElementById('vscode-codicon-stylesheet')) ownSheet.id = 'vscode-codicon-stylesheet';

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Record<string, string>, ...children: (Node | string)[]): HTMLElementTagNameMap[K];
function el(tag: string, attrs?: Record<string, string>, ...children: (Node | string)[]): HTMLElement;
function el(tag: string, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}
const icon = (name: string) => el('span', { class: `codicon codicon-${name}`, 'aria-hidden': 'true' });

// ---- colours from the theme ---------------------------------------------------------------------------------
const PALETTE = ['blue', 'orange', 'green', 'purple', 'red', 'yellow'];
function cssVar(name: string, fallbackVar = '--vscode-foreground'): string {
  const style = getComputedStyle(document.body);
  return style.getPropertyValue(name).trim() || style.getPropertyValue(fallbackVar).trim() || 'currentColor';
}
function runColour(i: number): string {
  return cssVar(`--vscode-charts-${PALETTE[i % PALETTE.length]}`);
}

// ---- layout -------------------------------------------------------------------------------------------------
const countEl = el('span', { id: 'event-count' }, '0');
const smoothingSelect = el('vscode-single-select', { id: 'smoothing', 'aria-label': 'Smoothing' });
for (const c of SMOOTHING_CHOICES) smoothingSelect.append(el('vscode-option', { value: String(c) }, c === 0 ? 'off' : String(c)));
const addRunButton = el('vscode-button', { id: 'add-run', icon: 'add', secondary: '' }, 'Compare run…');
const runsEl = el('div', { id: 'runs', class: 'runs' });
const issuesEl = el('div', { id: 'issues' });
const alertsEl = el('div', { id: 'alerts' });
const chartsEl = el('div', { id: 'charts' });
const samplesList = el('ul', { id: 'samples', class: 'samples' });
document.body.append(
  el(
    'header',
    {},
    el('h1', {}, icon('pulse'), ' CoA live training'),
    el('span', { class: 'count' }, el('vscode-badge', { variant: 'counter' }, countEl), ' events'),
    el('label', { class: 'smoothing' }, 'Smoothing ', smoothingSelect),
    addRunButton,
  ),
  runsEl,
  issuesEl,
  alertsEl,
  el('main', {}, chartsEl, el('aside', {}, el('h2', {}, icon('list-unordered'), ' Sampled rollouts'), samplesList)),
);
(smoothingSelect as HTMLElement & { value: string }).value = String(smoothing);
smoothingSelect.addEventListener('change', () => {
  smoothing = Number((smoothingSelect as HTMLElement & { value: string }).value) || 0;
  for (const name of model.metricNames.keys()) model.dirtyMetrics.add(name);
  saveState();
  scheduleRender();
});
addRunButton.addEventListener('click', () => vscode.postMessage({ type: 'addRun' }));

const groupEls = new Map<GroupId, { section: HTMLElement; grid: HTMLElement }>();
for (const g of GROUPS) {
  const grid = el('div', { class: 'grid' });
  const section = el('vscode-collapsible', { title: g.title, open: '', 'data-group': g.id, hidden: '' }, grid);
  chartsEl.append(section);
  groupEls.set(g.id, { section, grid });
}

// ---- charts -------------------------------------------------------------------------------------------------
interface Chart {
  plot: uPlot;
  box: HTMLElement;
}
const charts = new Map<string, Chart>();
let chartRuns: string[] = [];

/** Stage boundaries of every run: dashed vertical lines with the stage name where there is room. */
function stagePlugin(): uPlot.Plugin {
  return {
    hooks: {
      draw: (u) => {
        const ctx = u.ctx;
        const runs = [...model.runs.values()];
        ctx.save();
        ctx.setLineDash([4, 4]);
        ctx.lineWidth = 1;
        ctx.font = `${Math.round(10 * devicePixelRatio)}px ${cssVar('--vscode-font-family') || 'sans-serif'}`;
        ctx.textBaseline = 'top';
        runs.forEach((run, r) => {
          ctx.strokeStyle = runs.length > 1 ? runColour(r) : cssVar('--vscode-charts-lines', '--vscode-descriptionForeground');
          ctx.fillStyle = cssVar('--vscode-descriptionForeground');
          let lastLabel = -Infinity;
          let lastLine = -Infinity;
          for (const mark of run.stages) {
            if (mark.x < u.scales.x.min! || mark.x > u.scales.x.max!) continue;
            const px = Math.round(u.valToPos(mark.x, 'x', true));
            if (px - lastLine < 6 * devicePixelRatio) continue; // hundreds of stages: lines, not a grey wall
            lastLine = px;
            ctx.beginPath();
            ctx.moveTo(px, u.bbox.top);
            ctx.lineTo(px, u.bbox.top + u.bbox.height);
            ctx.stroke();
            if (px - lastLabel > 60 * devicePixelRatio) {
              ctx.fillText(mark.stage, px + 3, u.bbox.top + 2 + r * 12 * devicePixelRatio);
              lastLabel = px;
            }
          }
        });
        ctx.restore();
      },
    },
  };
}

function chartWidth(grid: HTMLElement): number {
  const w = grid.clientWidth || chartsEl.clientWidth || 600;
  // Two charts a row when there is room (box padding + border + gap ≈ 20 px each).
  return Math.max(240, w >= 700 ? Math.floor(w / 2) - 22 : w - 12);
}

function makeChart(name: string): Chart {
  const group = groupEls.get(model.metricNames.get(name)!)!;
  group.section.removeAttribute('hidden');
  const box = el('div', { class: 'chart', 'data-metric': name, 'data-points': '0' }, el('div', { class: 'chart-title' }, name));
  group.grid.append(box);
  const runs = [...model.runs.values()];
  const axis = { stroke: cssVar('--vscode-descriptionForeground'), grid: { stroke: cssVar('--vscode-charts-lines', '--vscode-widget-border'), width: 1 }, ticks: { stroke: cssVar('--vscode-charts-lines', '--vscode-widget-border'), width: 1 } };
  const plot = new uPlot(
    {
      width: chartWidth(group.grid),
      height: 170,
      legend: { show: runs.length > 1 },
      cursor: { sync: { key: 'coa-live' } },
      // A flat series (e.g. EM 0 before learning starts) gets a unit range instead of uPlot's 0–100.
      scales: { x: { time: false }, y: { range: (_u, min, max) => (min === max ? [min - 1, max + 1] : uPlot.rangeNum(min, max, 0.1, true)) } },
      axes: [{ ...axis, label: undefined }, { ...axis, size: (_u, values) => yAxisWidth(values), values: (_u, splits) => tickLabels(splits) }],
      series: [{ label: 'step' }, ...runs.map((r, i) => ({ label: r.info.label, stroke: runColour(i), width: 1.5, spanGaps: true }))],
      plugins: [stagePlugin()],
    },
    model.aligned(name, smoothing).data as uPlot.AlignedData,
    box,
  );
  return { plot, box };
}

function rebuildCharts(): void {
  for (const c of charts.values()) {
    c.plot.destroy();
    c.box.remove();
  }
  charts.clear();
  chartRuns = [...model.runs.keys()];
  for (const name of model.metricNames.keys()) model.dirtyMetrics.add(name);
}

new ResizeObserver(() => {
  for (const c of charts.values()) c.plot.setSize({ width: chartWidth(c.box.parentElement!), height: 170 });
}).observe(chartsEl);

// ---- lists: runs, alerts, samples, issues ------------------------------------------------------------------
const dismissed = new Set<string>();

function renderRuns(): void {
  runsEl.replaceChildren(
    ...[...model.runs.values()].map((run, i) => {
      const p = run.progress;
      const progress = p ? ` · ${p.stage} ${p.step}/${p.total}${p.eta_s != null ? ` · ETA ${Math.round(p.eta_s)} s` : ''}` : '';
      const remove = el('button', { class: 'icon-button', title: `Remove ${run.info.label}`, 'aria-label': `Remove ${run.info.label}` }, icon('close'));
      remove.addEventListener('click', () => vscode.postMessage({ type: 'removeRun', run: run.info.key }));
      const swatch = el('span', { class: 'swatch' });
      swatch.style.background = runColour(i); // CSSOM, not a style attribute: the CSP has no 'unsafe-inline'
      return el('span', { class: 'run', 'data-run': run.info.key }, swatch, el('b', {}, run.info.label), ` ${run.status}${progress}`, model.runs.size > 1 ? remove : '');
    }),
  );
}

function renderAlerts(): void {
  const all = [...model.runs.values()].flatMap((run) => run.alerts.map((a, i) => ({ run, a, key: `${run.info.key}#${i}` })));
  const open = all.filter((x) => !dismissed.has(x.key)).reverse();
  alertsEl.replaceChildren(
    ...open.slice(0, ALERTS_SHOWN).map(({ run, a, key }) => {
      const close = el('button', { class: 'icon-button', title: 'Dismiss', 'aria-label': 'Dismiss' }, icon('close'));
      close.addEventListener('click', () => {
        dismissed.add(key);
        renderAlerts();
      });
      return el('div', { class: `banner ${a.severity}`, role: 'alert', 'data-kind': a.kind }, icon(a.severity === 'error' ? 'error' : 'warning'), el('span', { class: 'where' }, `${model.runs.size > 1 ? run.info.label + ' · ' : ''}${a.stage} step ${a.step}`), el('b', {}, a.kind), el('span', {}, a.message), close);
    }),
    ...(open.length > ALERTS_SHOWN ? [el('div', { class: 'more' }, `${open.length - ALERTS_SHOWN} more alerts`)] : []),
  );
}

function renderSamples(): void {
  const runs = [...model.runs.values()];
  const all = runs.flatMap((run) => run.samples.map((s) => ({ run, s })));
  all.sort((a, b) => b.s.x - a.s.x);
  samplesList.replaceChildren(
    ...all.slice(0, SAMPLES_SHOWN).map(({ run, s }) => {
      const row = el('li', { tabindex: '0', role: 'button', 'data-id': s.id, title: 'Open the trajectory' }, icon('symbol-event'), el('span', { class: 'where' }, `${runs.length > 1 ? run.info.label + ' · ' : ''}${s.stage} · step ${s.step}`), el('span', { class: 'id' }, s.id), s.reward != null ? el('span', { class: 'reward' }, `r=${s.reward.toFixed(2)}`) : '', el('span', { class: 'question' }, s.question));
      const open = () => vscode.postMessage({ type: 'openSample', run: run.info.key, stage: s.stage, step: s.step, id: s.id, record: s.record });
      row.addEventListener('click', open);
      row.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && open());
      return row;
    }),
  );
  if (all.length === 0) samplesList.append(el('li', { class: 'empty' }, 'No rollouts sampled yet (stages emit them every sample_every steps).'));
}

// ---- render loop --------------------------------------------------------------------------------------------
let renderTimer: ReturnType<typeof setTimeout> | undefined;
let lastRender = 0;
function scheduleRender(): void {
  if (renderTimer !== undefined) return;
  renderTimer = setTimeout(render, Math.max(0, lastRender + RENDER_INTERVAL_MS - performance.now()));
}

/** Render cost, readable from the page (the browser test reports it; nothing depends on it). */
const renderStats = { count: 0, totalMs: 0, maxMs: 0 };

function render(): void {
  renderTimer = undefined;
  lastRender = performance.now();
  draw();
  const ms = performance.now() - lastRender;
  renderStats.count++;
  renderStats.totalMs += ms;
  renderStats.maxMs = Math.max(renderStats.maxMs, ms);
  document.body.dataset.renders = `${renderStats.count} ${renderStats.totalMs.toFixed(1)} ${renderStats.maxMs.toFixed(1)}`;
}

function draw(): void {
  countEl.textContent = String(model.received);
  document.body.dataset.received = String(model.received);
  const runKeys = [...model.runs.keys()];
  if (runKeys.join('\n') !== chartRuns.join('\n')) rebuildCharts();
  for (const name of model.dirtyMetrics) {
    const data = model.aligned(name, smoothing).data as uPlot.AlignedData;
    let chart = charts.get(name);
    if (!chart) charts.set(name, (chart = makeChart(name)));
    else chart.plot.setData(data);
    chart.box.dataset.points = String(data[0].length);
  }
  model.dirtyMetrics.clear();
  if (model.stagesChanged) {
    for (const c of charts.values()) c.plot.redraw(false, false);
    model.stagesChanged = false;
  }
  if (model.listsChanged) {
    renderRuns();
    renderAlerts();
    renderSamples();
    model.listsChanged = false;
  }
}

const ISSUES_SHOWN = 3;
let issueCount = 0;
const issuesMore = el('div', { class: 'more' });

function saveState(): void {
  vscode.setState({ runs: [...model.runs.values()].map((r) => r.info), smoothing });
}

window.addEventListener('message', (ev: MessageEvent<HostToPanel>) => {
  const msg = ev.data;
  switch (msg?.type) {
    case 'events':
      if (msg.reset) model.resetRun(msg.run);
      model.apply(msg.run, msg.events);
      break;
    case 'issues':
      // The first few in full; then one line counting the rest (a corrupt file must not bury the charts).
      for (const i of msg.issues) {
        issueCount++;
        if (issueCount <= ISSUES_SHOWN) issuesEl.append(el('div', { class: 'banner warning', role: 'status' }, icon('warning'), el('span', {}, `Skipped a malformed event: ${i.file}:${i.line}:${i.column}: ${i.message}`)));
      }
      if (issueCount > ISSUES_SHOWN) {
        issuesMore.textContent = `${issueCount - ISSUES_SHOWN} more malformed events skipped (listed in the CoA Studio log)`;
        issuesEl.append(issuesMore);
      }
      break;
    case 'addRun':
      model.addRun(msg.run);
      saveState();
      break;
    case 'removeRun':
      model.removeRun(msg.run);
      saveState();
      break;
    default:
      return;
  }
  scheduleRender();
});

for (const run of initial?.runs ?? []) {
  model.addRun(run);
  model.apply(run.key, initial?.events[run.key] ?? []);
}
saveState();
render();
vscode.postMessage({ type: 'ready' });
