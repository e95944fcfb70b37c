// The live panel's non-chart parts, each rendered whole from the model (they are small): the runs bar, the tab bar,
// the alert groups, the results table, the sampled rollouts and the rollouts of a clicked step.
import { resultSetting, stageInfo, stageLabelOf } from '../../src/core/stages';
import { alertWords, type Line, type PanelModel, type ResultsRow, type Tab } from './model';
import type { RolloutItem } from '../../src/protocols/livePanel';
import { formatValue } from './format';
import { el, icon, lineColour } from './dom';

export const RESULTS_TAB = 'results';

export function renderRuns(root: HTMLElement, model: PanelModel, onRemove: (key: string) => void): void {
  root.replaceChildren(
    ...[...model.runs.values()].map((run) => {
      const p = run.progress;
      const progress =
        p && p.stage !== 'pipeline'
          ? ` · ${stageLabelOf(p.stage)} ${p.step}/${p.total}${p.eta_s != null && p.step < p.total ? ` · ETA ${Math.round(p.eta_s)} s` : ''}`
          : '';
      const remove = el(
        'button',
        { class: 'icon-button', title: `Remove ${run.info.label}`, 'aria-label': `Remove ${run.info.label}` },
        icon('close'),
      );
      remove.addEventListener('click', () => onRemove(run.info.key));
      return el(
        'span',
        { class: 'run', 'data-run': run.info.key },
        icon('beaker'),
        el('b', {}, run.info.label),
        ` ${run.status}${progress}`,
        model.runs.size > 1 ? remove : '',
      );
    }),
  );
}

export function renderTabs(
  root: HTMLElement,
  tabs: Tab[],
  hasResults: boolean,
  current: string | null,
  onPick: (id: string) => void,
): void {
  const all = [
    ...tabs.map((t) => ({ id: t.id, label: t.label, title: t.description })),
    ...(hasResults
      ? [
          {
            id: RESULTS_TAB,
            label: 'Results',
            title: "Evaluations: the pipeline's results table and each stage's final evaluation",
          },
        ]
      : []),
  ];
  root.replaceChildren(
    ...all.map((t) => {
      const b = el(
        'button',
        {
          class: 'tab',
          role: 'tab',
          'data-tab': t.id,
          'aria-selected': String(t.id === current),
          title: t.title,
          tabindex: t.id === current ? '0' : '-1',
        },
        t.id === RESULTS_TAB ? icon('table') : '',
        t.label,
      );
      b.addEventListener('click', () => onPick(t.id));
      // Arrow keys move between tabs, as in a tab list.
      b.addEventListener('keydown', (e) => {
        const i = all.findIndex((x) => x.id === t.id) + (e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0);
        if (i === all.findIndex((x) => x.id === t.id) || i < 0 || i >= all.length) return;
        onPick(all[i].id);
        (root.querySelector(`[data-tab="${all[i].id}"]`) as HTMLElement | null)?.focus();
      });
      return b;
    }),
  );
  if (!all.length) root.append(el('span', { class: 'muted' }, 'Waiting for the first metrics…'));
}

/** The tab's stage descriptions and the legend of its lines (raw faint, smoothed solid). */
export function renderTabHead(
  root: HTMLElement,
  model: PanelModel,
  tab: Tab | undefined,
  smoothing: number,
  hidden: (l: Line) => boolean,
  onToggle: (l: Line) => void,
): void {
  if (!tab) {
    root.replaceChildren();
    return;
  }
  const lines = model.lines(tab.id);
  const statusOf = (run: string, stage: string) => {
    const s = model.runs.get(run)?.stages.get(stage);
    return s ? (s.status === 'running' ? `step ${s.maxStep}` : `${s.status} at step ${s.maxStep}`) : '';
  };
  root.replaceChildren(
    el(
      'div',
      { class: 'descriptions' },
      ...tab.stages.map((s) =>
        el(
          'p',
          { class: 'description', 'data-stage': s },
          el('b', {}, stageLabelOf(s)),
          ` — ${stageInfo(s)?.description ?? 'a stage the stage table does not know'}`,
        ),
      ),
    ),
    el(
      'div',
      { id: 'legend', class: 'legend', role: 'group', 'aria-label': 'Lines: click to hide or show' },
      ...lines.map((l, i) => {
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = lineColour(i);
        const off = hidden(l);
        const item = el(
          'button',
          {
            class: 'legend-item',
            'data-line': String(i),
            'data-stage': l.stage,
            'data-run': l.run,
            'aria-pressed': String(!off),
            title: off ? 'Show this line' : 'Hide this line',
          },
          swatch,
          el('b', {}, l.label),
          ` ${statusOf(l.run, l.stage)}`,
        );
        item.addEventListener('click', () => onToggle(l));
        return item;
      }),
      el(
        'span',
        { class: 'muted hint' },
        smoothing > 0 ? `faint: raw · solid: smoothed (${smoothing})` : 'raw values (smoothing off)',
      ),
    ),
  );
}

/** Alerts grouped by kind: `3 × tool-call explosion`, where, the newest message; the list opens on click. */
export function renderAlerts(
  root: HTMLElement,
  model: PanelModel,
  dismissed: Set<string>,
  onDismiss: (kind: string) => void,
): void {
  const multiRun = model.runs.size > 1;
  const where = (run: string, stage: string, step: number) =>
    `${multiRun ? `${model.runs.get(run)?.info.label ?? ''} · ` : ''}${stageLabelOf(stage)} step ${step}`;
  root.replaceChildren(
    ...model.alertGroups(dismissed).map((g) => {
      const close = el(
        'button',
        { class: 'icon-button', title: `Dismiss ${alertWords(g.kind)} alerts`, 'aria-label': 'Dismiss' },
        icon('close'),
      );
      close.addEventListener('click', (e) => {
        e.preventDefault();
        onDismiss(g.kind);
      });
      const newest = g.items[0];
      const steps =
        g.items
          .slice(0, 8)
          .map((a) => where(a.run, a.stage, a.step))
          .join(', ') + (g.count > 8 ? ', …' : '');
      return el(
        'details',
        {
          class: `banner alert-group ${g.severity}`,
          role: 'alert',
          'data-kind': g.kind,
          'data-count': String(g.count),
        },
        el(
          'summary',
          {},
          icon(g.severity === 'error' ? 'error' : 'warning'),
          el('b', { class: 'title' }, g.title),
          el('span', { class: 'message' }, newest.message),
          el('span', { class: 'where' }, steps),
          close,
        ),
        el(
          'ul',
          {},
          ...g.items.map((a) =>
            el('li', {}, el('span', { class: 'where' }, where(a.run, a.stage, a.step)), ` ${a.message}`),
          ),
        ),
      );
    }),
  );
}

const COLUMN_TITLES: Record<string, string> = {
  em: 'EM',
  f1: 'F1',
  tc: 'TC',
  tp: 'TP',
  format_error_rate: 'format errors',
};

function table(
  id: string,
  caption: string,
  rows: ResultsRow[],
  columns: string[],
  multiRun: boolean,
  useSettingWords: boolean,
): HTMLElement {
  const head = el(
    'tr',
    {},
    ...(multiRun ? [el('th', {}, 'run')] : []),
    el('th', {}, useSettingWords ? 'setting' : 'stage'),
    el('th', {}, 'split'),
    el('th', { class: 'num' }, 'step'),
    ...columns.map((c) => el('th', { class: 'num', title: c }, COLUMN_TITLES[c] ?? c)),
  );
  const body = rows.map((r) =>
    el(
      'tr',
      { 'data-stage': r.stage, 'data-split': r.split, 'data-run': r.run },
      ...(multiRun ? [el('td', {}, r.runLabel)] : []),
      el(
        'td',
        { title: (useSettingWords ? resultSetting(r.stage)?.description : stageInfo(r.stage)?.description) ?? '' },
        r.stageLabel,
      ),
      el('td', {}, r.split),
      el('td', { class: 'num' }, String(r.step)),
      ...columns.map((c) => el('td', { class: 'num', 'data-col': c }, formatValue(r.values[c]))),
    ),
  );
  // Wide tables (many metrics) scroll sideways inside their own box instead of running under the side bar.
  return el(
    'div',
    { class: 'table-wrap' },
    el('table', { id, class: 'results' }, el('caption', {}, caption), el('thead', {}, head), el('tbody', {}, ...body)),
  );
}

export function renderResults(root: HTMLElement, model: PanelModel): void {
  const { settings, stages, columns } = model.results();
  const multiRun = model.runs.size > 1;
  const settingCols = columns.filter((c) => settings.some((r) => c in r.values));
  const stageCols = columns.filter((c) => stages.some((r) => c in r.values));
  root.replaceChildren(
    ...(settings.length
      ? [
          table(
            'results-table',
            "Results table (the pipeline's evaluation of each setting)",
            settings,
            settingCols,
            multiRun,
            true,
          ),
        ]
      : []),
    ...(stages.length
      ? [table('stage-evals', "Each stage's final evaluation", stages, stageCols, multiRun, false)]
      : []),
    ...(settings.length || stages.length ? [] : [el('p', { class: 'muted' }, 'No evaluation yet.')]),
  );
}

export function renderSamples(
  root: HTMLElement,
  model: PanelModel,
  shown: number,
  onOpen: (s: ReturnType<PanelModel['samples']>[number]) => void,
): void {
  const all = model.samples();
  const multiRun = model.runs.size > 1;
  root.replaceChildren(
    ...all.slice(0, shown).map((s) => {
      const row = el(
        'li',
        { tabindex: '0', role: 'button', 'data-id': s.id, title: 'Open the trajectory' },
        icon('symbol-event'),
        el(
          'span',
          { class: 'where' },
          `${multiRun ? s.run.info.label + ' · ' : ''}${stageLabelOf(s.stage)} · step ${s.step}`,
        ),
        el('span', { class: 'id' }, s.id),
        s.reward != null ? el('span', { class: 'reward' }, `r=${s.reward.toFixed(2)}`) : '',
        el('span', { class: 'question' }, s.question),
      );
      row.addEventListener('click', () => onOpen(s));
      row.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && onOpen(s));
      return row;
    }),
  );
  if (all.length === 0)
    root.append(el('li', { class: 'empty' }, 'No rollouts sampled yet (stages emit them every sample_every steps).'));
}

export interface StepRollouts {
  run: string;
  stage: string;
  step: number;
  /** The step clicked, when the nearest step with rollouts was taken instead. */
  clicked?: number;
  items?: RolloutItem[];
  total?: number;
  error?: string;
}

export function renderStepRollouts(
  root: HTMLElement,
  model: PanelModel,
  q: StepRollouts | null,
  onOpen: (item: RolloutItem) => void,
): void {
  if (!q) {
    root.replaceChildren(
      el('p', { class: 'muted' }, 'Click a step on a chart of an RL stage to list the rollouts of that step.'),
    );
    return;
  }
  const runLabel = model.runs.size > 1 ? `${model.runs.get(q.run)?.info.label ?? ''} · ` : '';
  const head = el(
    'h3',
    {},
    `${runLabel}${stageLabelOf(q.stage)} step ${q.step}`,
    q.items ? el('span', { class: 'muted' }, ` · ${q.total ?? q.items.length} rollouts`) : '',
    q.clicked !== undefined && q.clicked !== q.step
      ? el(
          'div',
          { class: 'muted note' },
          `the nearest step with rollouts to step ${q.clicked} (the stage writes them every few steps)`,
        )
      : '',
  );
  if (!q.items) {
    root.replaceChildren(head, el('p', { class: 'muted' }, q.error ?? 'Reading the rollouts file…'));
    return;
  }
  const list = el(
    'ul',
    { class: 'samples step-rollouts', 'data-step': String(q.step), 'data-stage': q.stage },
    ...q.items.map((it) => {
      const row = el(
        'li',
        { tabindex: '0', role: 'button', 'data-id': it.id, 'data-line': String(it.line), title: 'Open this rollout' },
        icon('symbol-event'),
        el('span', { class: 'id' }, it.id),
        el(
          'span',
          { class: 'reward' },
          `${it.reward != null ? `r=${formatValue(it.reward)}` : ''}${it.toolCalls != null ? ` · ${it.toolCalls} calls` : ''}`,
        ),
        el('span', { class: 'question' }, it.question),
      );
      row.addEventListener('click', () => onOpen(it));
      row.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && onOpen(it));
      return row;
    }),
  );
  root.replaceChildren(head, ...(q.error ? [el('p', { class: 'muted' }, q.error)] : []), list);
  if (!q.items.length && !q.error) root.append(el('p', { class: 'muted' }, 'No rollout of this step in the file.'));
}
