// The live training panel (browser side). Events arrive in batches by postMessage and are applied to the model at
// once (so none is lost or counted late); drawing is throttled to a few frames per second, so a stream of
// thousands of events per second costs a handful of chart updates. One tab per stage family is drawn at a time
// (charts.ts); everything else is small lists (lists.ts). Theme colours only (VS Code's CSS variables).
import 'uplot/dist/uPlot.min.css';
import '@vscode/codicons/dist/codicon.css';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import './style.css';
import { stageInfo } from '../../src/core/stages';
import { PanelModel, type XAxis } from './model';
import { axisLabel, timeLabels } from './format';
import { TabCharts } from './charts';
import { renderToolHealth, type ToolHealthState } from './toolHealth';
import {
  RESULTS_TAB,
  renderAlerts,
  renderResults,
  renderRuns,
  renderSamples,
  renderStepRollouts,
  renderTabHead,
  renderTabs,
  type StepRollouts,
} from './lists';
import { el, icon } from './dom';
import { renderHistograms, renderStepDiagnostics, type StepDiagnostics } from './diagnostics';
import type {
  HostToPanel,
  LivePanelInitialState,
  LivePanelSavedState,
  PanelToHost,
} from '../../src/protocols/livePanel';

interface VsCodeApi {
  postMessage(message: PanelToHost): void;
  getState(): LivePanelSavedState | undefined;
  setState(state: LivePanelSavedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const initial = JSON.parse(
  document.getElementById('initial-state')?.textContent || 'null',
) as LivePanelInitialState | null;
const saved = vscode.getState();
const model = new PanelModel();
let smoothing = initial?.smoothing ?? 0;
const pinned = new Set(saved?.pinned ?? []);
const logScale = new Set(saved?.log ?? []);
/** Lines hidden from the legend, as `<run>\n<stage>`. */
const hiddenLines = new Set<string>();
const lineKey = (l: { run: string; stage: string }) => `${l.run}\n${l.stage}`;
const isHidden = (l: { run: string; stage: string }) => hiddenLines.has(lineKey(l));
function toggleLine(l: { run: string; stage: string }): void {
  if (!hiddenLines.delete(lineKey(l))) hiddenLines.add(lineKey(l));
  rebuildTab();
}
/** The tab the user picked; until then the panel follows the stage being trained. */
let pickedTab: string | undefined = saved?.tab;
let filter = saved?.filter ?? '';
/** The x axis of the charts (W&B's and TensorBoard's step / relative / wall choice). */
let xAxis: XAxis = saved?.xAxis ?? 'step';
/** The x range the tab's charts show after a drag (null: all of it); in the axis's units, so reset with it. */
let zoom: [number, number] | null = null;
/** The smoothing slider's top (TensorBoard's): an EMA weight of 0.99 already averages ~100 steps. */
const SMOOTHING_MAX = 0.99;
const RENDER_INTERVAL_MS = 250;
const SAMPLES_SHOWN = 100;

// vscode-icon (inside vscode-button) clones the codicon stylesheet found by this id into its shadow root.
const ownSheet = Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel="stylesheet"]')).find((l) =>
  /live-panel\.css/.test(l.href),
);
if (ownSheet && !document.getElementById('vscode-codicon-stylesheet')) ownSheet.id = 'vscode-codicon-stylesheet';

// ---- layout -------------------------------------------------------------------------------------------------
const countEl = el('span', { id: 'event-count' }, '0');
// Continuous, as W&B's and TensorBoard's: an EMA weight from 0 (raw) to 0.99.
const smoothingInput = el('input', {
  id: 'smoothing',
  type: 'range',
  min: '0',
  max: String(SMOOTHING_MAX),
  step: '0.01',
  'aria-label': 'Smoothing (exponential moving average weight)',
});
const smoothingValue = el('output', { id: 'smoothing-value', for: 'smoothing' });
const filterInput = el('input', {
  id: 'filter',
  type: 'search',
  placeholder: 'Filter charts (e.g. reward, tool)',
  'aria-label': 'Filter charts',
  spellcheck: 'false',
});
filterInput.value = filter;
const addRunButton = el('vscode-button', { id: 'add-run', icon: 'add', secondary: '' }, 'Compare run…');
const axisSelect = el(
  'select',
  { id: 'x-axis', 'aria-label': 'X axis' },
  ...(['step', 'relative', 'wall'] as const).map((a) =>
    el('option', { value: a }, a === 'step' ? 'step' : a === 'relative' ? 'relative time' : 'wall clock'),
  ),
);
axisSelect.value = xAxis;
const zoomButton = el(
  'button',
  { id: 'zoom-reset', class: 'zoom-reset', hidden: '', title: 'Show the whole x range (or double-click a chart)' },
  icon('zoom-out'),
  el('span', {}, ''),
);
const runsEl = el('div', { id: 'runs', class: 'runs' });
const issuesEl = el('div', { id: 'issues' });
const alertsEl = el('div', { id: 'alerts' });
const tabsEl = el('nav', { id: 'tabs', class: 'tabs', role: 'tablist', 'aria-label': 'Stages' });
const tabHeadEl = el('div', { id: 'tab-head' });
const chartsEl = el('div', { id: 'charts' });
const resultsEl = el('div', { id: 'results', hidden: '' });
const stepRolloutsEl = el('div', { id: 'step-rollouts' });
const stepDiagEl = el('div', { id: 'step-diagnostics' });
const histogramsEl = el('section', { id: 'histograms', hidden: '' });
const histogramStep: { step: number | null } = { step: null };
const toolHealthEl = el('div', { id: 'tool-health', hidden: '' });
/** Tool health per run, as the host last polled it. */
const toolHealth = new Map<string, ToolHealthState>();
const samplesList = el('ul', { id: 'samples', class: 'samples' });
document.body.append(
  el(
    'header',
    {},
    el('h1', {}, icon('pulse'), ' CoA live training'),
    el('span', { class: 'count' }, el('vscode-badge', { variant: 'counter' }, countEl), ' events'),
    el('label', { class: 'smoothing' }, 'Smoothing ', smoothingInput, smoothingValue),
    el('label', { class: 'filter' }, icon('filter'), filterInput),
    el(
      'label',
      { class: 'x-axis', title: 'Drag across a chart to zoom every chart of the tab to that range' },
      'x ',
      axisSelect,
    ),
    zoomButton,
    addRunButton,
  ),
  runsEl,
  issuesEl,
  alertsEl,
  toolHealthEl,
  tabsEl,
  el(
    'main',
    {},
    el('div', { class: 'tab-body' }, tabHeadEl, chartsEl, histogramsEl, resultsEl),
    el(
      'aside',
      {},
      el('h2', {}, icon('list-selection'), ' Rollouts of a step'),
      stepRolloutsEl,
      stepDiagEl,
      el('h2', {}, icon('list-unordered'), ' Sampled rollouts'),
      samplesList,
    ),
  ),
);
smoothingInput.value = String(smoothing);
const showSmoothing = () => (smoothingValue.textContent = smoothing > 0 ? smoothing.toFixed(2) : 'off');
showSmoothing();
let smoothingFrame = 0;
smoothingInput.addEventListener('input', () => {
  const was = smoothing;
  smoothing = Math.min(SMOOTHING_MAX, Math.max(0, Number(smoothingInput.value) || 0));
  showSmoothing();
  // Dragging fires many events: at most one redraw per frame. Switching smoothing on or off changes every chart's
  // series styles (raw faint under a solid smoothed line), so those charts are built again; otherwise only data.
  if (was > 0 !== smoothing > 0) {
    cancelAnimationFrame(smoothingFrame);
    smoothingFrame = 0;
    rebuildTab();
  } else if (!smoothingFrame) {
    smoothingFrame = requestAnimationFrame(() => {
      smoothingFrame = 0;
      charts?.resmooth();
      if (shownTab)
        renderTabHead(
          tabHeadEl,
          model,
          model.tabs().find((t) => t.id === shownTab),
          smoothing,
          isHidden,
          toggleLine,
        );
    });
  }
});
smoothingInput.addEventListener('change', saveState);
filterInput.addEventListener('input', () => {
  filter = filterInput.value;
  charts?.applyFilter(filter);
  saveState();
});
addRunButton.addEventListener('click', () => vscode.postMessage({ type: 'addRun' }));
axisSelect.addEventListener('change', () => {
  xAxis = axisSelect.value as XAxis;
  setZoom(null, false);
  saveState();
  rebuildTab();
});
zoomButton.addEventListener('click', () => setZoom(null));

/** A drag on a chart (or its reset): every chart of the tab shows that x range; the button says which and resets. */
function setZoom(range: [number, number] | null, redraw = true): void {
  zoom = range && range[1] > range[0] ? range : null;
  zoomButton.hidden = !zoom;
  const [from, to] = zoom
    ? xAxis === 'step'
      ? zoom.map((v) => String(Math.round(v)))
      : timeLabels(zoom, xAxis)
    : ['', ''];
  zoomButton.querySelector('span')!.textContent = zoom ? ` ${axisLabel(xAxis)} ${from}–${to}` : '';
  document.body.dataset.zoom = zoom ? zoom.join(' ') : '';
  if (redraw) charts?.rezoom();
}

// ---- tabs and charts ----------------------------------------------------------------------------------------
let charts: TabCharts | undefined;
let shownTab: string | null = null;
/** The current tab's lines when its charts were built (a new line means new series: rebuild). */
let shownLines = '';

function currentTab(): string | null {
  const tabs = model.tabs();
  const { settings, stages } = model.results();
  const hasResults = settings.length + stages.length > 0;
  const ok = (id: string | undefined) => !!id && (tabs.some((t) => t.id === id) || (id === RESULTS_TAB && hasResults));
  if (ok(pickedTab)) return pickedTab!;
  const latest = model.latestTab();
  if (latest && ok(latest)) return latest;
  return tabs[0]?.id ?? (hasResults ? RESULTS_TAB : null);
}

function pickTab(id: string): void {
  pickedTab = id;
  setZoom(null, false); // another tab: its own steps and times
  saveState();
  draw(true);
}

/** A chart's per-chart choice (pinned, log scale) flipped and saved; returns whether it is now on. */
function toggleChart(set: Set<string>, tab: string, name: string): boolean {
  const key = `${tab}\n${name}`;
  const on = !set.delete(key);
  if (on) set.add(key);
  saveState();
  return on;
}

const host = {
  model,
  smoothing: () => smoothing,
  pinned,
  onPin(tab: string, name: string) {
    charts?.setPinned(name, toggleChart(pinned, tab, name));
  },
  onStep(line: { run: string; stage: string }, clicked: number) {
    const step = model.rolloutStep(line.run, line.stage, clicked);
    stepQuery = { run: line.run, stage: line.stage, step, clicked };
    renderStepRollouts(stepRolloutsEl, model, stepQuery, openRollout);
    stepDiag = {
      run: line.run,
      stage: line.stage,
      step: clicked,
      rolloutStep: step,
      rl: stageInfo(line.stage)?.kind === 'rl' && model.runs.get(line.run)?.info.engine === undefined,
    };
    drawStepDiagnostics();
    vscode.postMessage({ type: 'stepRollouts', run: line.run, stage: line.stage, step, clicked });
  },
  hidden: isHidden,
  logScale,
  onLog(tab: string, name: string) {
    charts?.setLog(name, toggleChart(logScale, tab, name));
  },
  axis: () => xAxis,
  zoom: () => zoom,
  onZoom: (range: [number, number] | null) => setZoom(range),
  clickable(line: { run: string; stage: string }) {
    const run = model.runs.get(line.run);
    // A verl run with a known dump directory: every step may have a dump (<rollout_data_dir>/<step>.jsonl).
    if (run?.info.engine === 'verl') return !!run.info.rolloutDir;
    if (run?.info.engine === 'tensorboard') return false; // scalars only: no rollouts to list
    return stageInfo(line.stage)?.kind === 'rl' || !!run?.samples.some((s) => s.stage === line.stage);
  },
};

function rebuildTab(): void {
  charts?.destroy();
  charts = undefined;
  shownLines = '';
  draw(true);
}

// ---- rollouts -----------------------------------------------------------------------------------------------
let stepQuery: StepRollouts | null = null;
/** A listed rollout, by reference (its line in the stage's rollouts of the step asked for): the host opens it. */
function openRollout(item: { line: number }): void {
  if (!stepQuery) return;
  vscode.postMessage({
    type: 'openRollout',
    ref: { run: stepQuery.run, stage: stepQuery.stage, file: 'rollouts', step: stepQuery.step, line: item.line },
  });
}
renderStepRollouts(stepRolloutsEl, model, null, openRollout);
let stepDiag: StepDiagnostics | null = null;
function drawStepDiagnostics(): void {
  renderStepDiagnostics(
    stepDiagEl,
    stepDiag,
    () =>
      stepDiag &&
      vscode.postMessage({ type: 'openGroups', run: stepDiag.run, stage: stepDiag.stage, step: stepDiag.rolloutStep }),
    (f) =>
      stepDiag &&
      vscode.postMessage({
        type: 'openRollout',
        ref: { run: stepDiag.run, stage: stepDiag.stage, file: 'flagged', step: stepDiag.step, line: f.line },
      }),
  );
}
function drawHistograms(): void {
  renderHistograms(
    histogramsEl,
    model,
    shownTab && shownTab !== RESULTS_TAB ? model.lines(shownTab).filter((l) => !isHidden(l)) : [],
    histogramStep,
    drawHistograms,
  );
}

// ---- render loop --------------------------------------------------------------------------------------------
let renderTimer: ReturnType<typeof setTimeout> | undefined;
let lastRender = 0;
function scheduleRender(): void {
  if (renderTimer !== undefined) return;
  renderTimer = setTimeout(render, Math.max(0, lastRender + RENDER_INTERVAL_MS - performance.now()));
}

/** Render cost, readable from the page (the browser test and bench/live-panel report it; nothing depends on it). */
const renderStats = { count: 0, totalMs: 0, maxMs: 0 };

function render(): void {
  renderTimer = undefined;
  lastRender = performance.now();
  draw(false);
  const ms = performance.now() - lastRender;
  renderStats.count++;
  renderStats.totalMs += ms;
  renderStats.maxMs = Math.max(renderStats.maxMs, ms);
  document.body.dataset.renders = `${renderStats.count} ${renderStats.totalMs.toFixed(1)} ${renderStats.maxMs.toFixed(1)}`;
}

/** Alert kinds the user dismissed (new alerts of that kind stay hidden until the page reloads). */
const dismissed = new Set<string>();
function drawAlerts(): void {
  renderAlerts(alertsEl, model, dismissed, (kind) => {
    dismissed.add(kind);
    drawAlerts();
  });
}

function draw(force: boolean): void {
  countEl.textContent = String(model.received);
  document.body.dataset.received = String(model.received);
  if (model.structureChanged || force) {
    const tab = currentTab();
    const tabs = model.tabs();
    const { settings, stages } = model.results();
    renderTabs(tabsEl, tabs, settings.length + stages.length > 0, tab, pickTab);
    const isResults = tab === RESULTS_TAB;
    resultsEl.hidden = !isResults;
    chartsEl.hidden = isResults;
    if (isResults) {
      charts?.destroy();
      charts = undefined;
      shownLines = '';
      renderResults(resultsEl, model);
    }
    const info = tabs.find((t) => t.id === tab);
    renderTabHead(tabHeadEl, model, info, smoothing, isHidden, toggleLine);
    const lines = tab && !isResults ? JSON.stringify(model.lines(tab)) : '';
    if (tab !== shownTab || lines !== shownLines) {
      if (tab !== shownTab) setZoom(null, false);
      charts?.destroy();
      charts = tab && !isResults ? new TabCharts(chartsEl, host, tab) : undefined;
      charts?.applyFilter(filter);
      shownLines = lines;
    }
    shownTab = tab;
    document.body.dataset.tab = tab ?? '';
    model.structureChanged = false;
  }
  if (charts && (model.dirtyTabs.has(charts.tab) || force)) {
    charts.sync();
    charts.redraw();
    drawHistograms();
  } else if (!charts) drawHistograms();
  model.dirtyTabs.clear();
  if (model.listsChanged || force) {
    renderRuns(runsEl, model, (key) => vscode.postMessage({ type: 'removeRun', run: key }));
    drawAlerts();
    renderSamples(samplesList, model, SAMPLES_SHOWN, (s) =>
      vscode.postMessage({ type: 'openSample', run: s.run.info.key, stage: s.stage, step: s.step, id: s.id }),
    );
    if (shownTab)
      renderTabHead(
        tabHeadEl,
        model,
        model.tabs().find((t) => t.id === shownTab),
        smoothing,
        isHidden,
        toggleLine,
      );
    model.listsChanged = false;
  }
}

const ISSUES_SHOWN = 3;
let issueCount = 0;
const issuesMore = el('div', { class: 'more' });

function saveState(): void {
  vscode.setState({
    runs: [...model.runs.values()].map((r) => r.info),
    smoothing,
    pinned: [...pinned],
    ...(logScale.size ? { log: [...logScale] } : {}),
    ...(pickedTab ? { tab: pickedTab } : {}),
    ...(filter ? { filter } : {}),
    ...(xAxis !== 'step' ? { xAxis } : {}),
  });
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
        if (issueCount <= ISSUES_SHOWN)
          issuesEl.append(
            el(
              'div',
              { class: 'banner warning', role: 'status' },
              icon('warning'),
              el('span', {}, `Skipped a malformed event: ${i.file}:${i.line}:${i.column}: ${i.message}`),
            ),
          );
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
    case 'toolHealth':
      toolHealth.set(msg.run, { callers: msg.callers, error: msg.error });
      renderToolHealth(toolHealthEl, model, toolHealth);
      return;
    case 'rollouts':
      // Only the answer to the latest click counts.
      if (stepQuery && stepQuery.run === msg.run && stepQuery.stage === msg.stage && stepQuery.step === msg.step) {
        stepQuery = { ...stepQuery, items: msg.items, total: msg.total, error: msg.error };
        renderStepRollouts(stepRolloutsEl, model, stepQuery, openRollout);
        if (stepDiag && stepDiag.run === msg.run && stepDiag.stage === msg.stage) {
          stepDiag = { ...stepDiag, flagged: msg.flagged ?? [] };
          drawStepDiagnostics();
        }
        // In a narrow panel the list sits below the charts: bring it into view.
        stepRolloutsEl.scrollIntoView({ block: 'nearest' });
      }
      return;
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
