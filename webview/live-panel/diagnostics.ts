// The live panel's RL diagnostics beside the charts (their metrics — zero_variance_groups, logprob_diff_*, scan_* —
// are charted like any other, in the Diagnostics group): the sampler-vs-trainer log-prob histogram of a step for each
// line of the tab, and, for a clicked step, what the reward-hacking scanners flagged there (opening in the record
// view) and the way to the step's GRPO groups.
import { stageLabelOf } from '../../src/core/stages';
import type { FlaggedItem } from '../../src/protocols/livePanel';
import type { HistogramPoint, Line, PanelModel } from './model';
import { el, icon, lineColour } from './dom';

const binLabel = (edges: number[], i: number) => {
  const f = (x: number) => (x >= 1 ? String(x) : x.toExponential(0));
  return i === 0
    ? `< ${f(edges[0])}`
    : i === edges.length
      ? `≥ ${f(edges[edges.length - 1])}`
      : `${f(edges[i - 1])}–${f(edges[i])}`;
};

/** One step's histogram as bars (share of the step's tokens per bin) with the counts in the title. */
function bars(p: HistogramPoint, colour: string): HTMLElement {
  const total = p.counts.reduce((a, b) => a + b, 0) || 1;
  return el(
    'div',
    { class: 'histogram', 'data-step': String(p.step) },
    ...p.counts.map((c, i) => {
      const bar = el('span', { class: 'bar' });
      bar.style.height = `${Math.max(c ? 2 : 0, Math.round((60 * c) / total))}px`;
      bar.style.background = colour;
      return el(
        'span',
        {
          class: 'bin',
          title: `${binLabel(p.edges, i)} nats: ${c} tokens (${((100 * c) / total).toFixed(1)} %)`,
          'data-count': String(c),
        },
        bar,
        el('span', { class: 'bin-label' }, binLabel(p.edges, i)),
      );
    }),
  );
}

/** The tab's log-prob drift histograms: one row per line that logged them, a step slider shared by the rows. */
export function renderHistograms(
  root: HTMLElement,
  model: PanelModel,
  lines: Line[],
  chosen: { step: number | null },
  redraw: () => void,
): void {
  const rows = lines
    .map((l, i) => ({ l, i, points: model.runs.get(l.run)?.stages.get(l.stage)?.histograms.get('logprob_diff') ?? [] }))
    .filter((r) => r.points.length);
  if (!rows.length) {
    root.replaceChildren();
    root.hidden = true;
    return;
  }
  root.hidden = false;
  const steps = [...new Set(rows.flatMap((r) => r.points.map((p) => p.step)))].sort((a, b) => a - b);
  const step = chosen.step !== null && steps.includes(chosen.step) ? chosen.step : steps[steps.length - 1];
  const slider = el('input', {
    type: 'range',
    min: '0',
    max: String(steps.length - 1),
    step: '1',
    'aria-label': 'histogram step',
    id: 'histogram-step',
  });
  slider.value = String(steps.indexOf(step));
  slider.addEventListener('input', () => {
    chosen.step = steps[Number(slider.value)];
    redraw();
  });
  root.replaceChildren(
    el('h3', {}, icon('graph'), ' Sampler vs trainer log-probs, before each update'),
    el(
      'p',
      { class: 'muted note' },
      "|log p(sampler) − log p(trainer)| per trained token of a step, in nats: the rollout engine's numerics against the trainer's on the same weights (logprob_diff_mean and _max are charted; the logprob_drift alert watches the mean).",
    ),
    el('label', { class: 'histogram-step' }, `step ${step} `, slider),
    ...rows.map(({ l, i, points }) => {
      const p = points.find((x) => x.step === step);
      const total = p ? p.counts.reduce((a, b) => a + b, 0) : 0;
      return el(
        'div',
        { class: 'histogram-row', 'data-stage': l.stage },
        el(
          'div',
          { class: 'muted' },
          `${l.label}${p ? ` · ${total.toLocaleString('en-US')} tokens` : ' · not logged at this step'}`,
        ),
        p ? bars(p, lineColour(i)) : '',
      );
    }),
  );
}

export interface StepDiagnostics {
  run: string;
  stage: string;
  /** The step clicked (scanner examples are per step). */
  step: number;
  /** The step whose rollouts are listed (the nearest sampled one): its GRPO groups. */
  rolloutStep: number;
  rl: boolean;
  flagged?: FlaggedItem[];
}

/** Under a clicked step's rollouts: its GRPO groups, and what the scanners flagged at that step. */
export function renderStepDiagnostics(
  root: HTMLElement,
  q: StepDiagnostics | null,
  onGroups: () => void,
  onOpen: (item: FlaggedItem) => void,
): void {
  if (!q || !q.rl) {
    root.replaceChildren();
    return;
  }
  const groups = el(
    'vscode-button',
    { id: 'open-groups', secondary: '', icon: 'group-by-ref-type' },
    `GRPO groups of step ${q.rolloutStep}`,
  );
  groups.addEventListener('click', onGroups);
  const parts: (Node | string)[] = [groups];
  if (q.flagged === undefined) parts.push(el('p', { class: 'muted' }, 'Reading what the scanners flagged…'));
  else if (!q.flagged.length)
    parts.push(
      el(
        'p',
        { class: 'muted', id: 'flagged-none' },
        `Reward-hacking scanners: nothing flagged at ${stageLabelOf(q.stage)} step ${q.step}.`,
      ),
    );
  else {
    parts.push(
      el('h3', {}, icon('shield'), ` Flagged at step ${q.step}`),
      el(
        'ul',
        { class: 'samples flagged', id: 'flagged' },
        ...q.flagged.map((f) => {
          const row = el(
            'li',
            { tabindex: '0', role: 'button', 'data-id': f.id, title: f.detail },
            icon('warning'),
            el('span', { class: 'id' }, f.id),
            el('span', { class: 'reward' }, f.rules.join(', ')),
            el('span', { class: 'question' }, f.detail),
          );
          row.addEventListener('click', () => onOpen(f));
          row.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && onOpen(f));
          return row;
        }),
      ),
    );
  }
  root.replaceChildren(...parts);
}
