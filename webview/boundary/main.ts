// The Search Boundary page: a checkpoint's questions by class (searched though it knew the answer, answered though it
// needed a search …) as a bar with counts, the rates and TC against the estimated minimum, the embedded benchmark's
// ground truth with its confusion table where the report has it, then every question — filterable by class and
// text — with the trajectories that decided its class. State comes embedded in the page (#initial-state); no
// messages, no remote content.
import { BOUNDARY_CLASSES, BOUNDARY_CLASS_NAMES, type BoundaryClass } from '../../src/core/boundaryClasses';
import type { BoundaryRow } from '../../src/core/boundary';
import type { BoundaryPageState } from '../../src/protocols/boundary';

const state = JSON.parse(document.getElementById('initial-state')?.textContent ?? 'null') as BoundaryPageState | null;
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? '';

/** Class colours from the theme: the waste (over-search) and the loss (under-search) stand out. */
const COLOURS: Record<BoundaryClass, string> = {
  'no-search': 'var(--vscode-charts-blue, #4a8)',
  'over-search': 'var(--vscode-charts-orange, #d80)',
  'needed-search': 'var(--vscode-charts-green, #3a3)',
  'under-search': 'var(--vscode-charts-red, #d33)',
  unreachable: 'var(--vscode-disabledForeground, #888)',
};

const CSS = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid var(--vscode-panel-border); }
th:first-child, td:first-child { text-align: left; }
.note { opacity: .75; } .missing { opacity: .6; font-style: italic; }
.bar { display: flex; height: 22px; width: 100%; max-width: 900px; border: 1px solid var(--vscode-panel-border); margin: 6px 0; }
.bar div { height: 100%; cursor: pointer; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; max-width: 900px; }
.legend button { background: none; border: 1px solid transparent; color: inherit; font: inherit; cursor: pointer; padding: 2px 4px; text-align: left; }
.legend button.on { border-color: var(--vscode-focusBorder); }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
.cols { display: flex; flex-wrap: wrap; gap: 12px 40px; }
details { border-bottom: 1px solid var(--vscode-panel-border); padding: 3px 0; }
summary, .row-head { display: grid; grid-template-columns: 6em 1fr 9em 5em 5em 4em 4em 9em; gap: 8px; align-items: baseline; }
summary { cursor: pointer; } .row-head { font-weight: 600; position: sticky; top: 0; background: var(--vscode-editor-background); padding: 4px 0 4px 16px; border-bottom: 1px solid var(--vscode-panel-border); z-index: 1; }
.cls { font-weight: 600; }
.traj { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 10px; margin-top: 6px; }
.traj h4 { margin: 4px 0; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--vscode-textCodeBlock-background); padding: 6px; max-height: 22em; overflow: auto; margin: 0; }
.toolbar { display: flex; gap: 8px; align-items: center; margin: 8px 0; }
`;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

const num = (x: number | null | undefined, d = 3) =>
  x === null || x === undefined ? '—' : String(Number(x.toFixed(d)));
const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : `${(100 * x).toFixed(1)} %`);
const mark = (share: number) => (share >= 0.5 ? '✓' : '✗') + (share > 0 && share < 1 ? ` ${num(share, 2)}` : '');

function header(s: BoundaryPageState): HTMLElement {
  const r = s.report;
  const how =
    r.samples === 1
      ? 'greedy, one trajectory each way'
      : `${r.samples} samples each way at temperature ${r.temperature}`;
  return el(
    'div',
    {},
    el('h2', {}, `Search boundary — ${r.stage}`),
    el(
      'div',
      { class: 'note' },
      `step ${r.step} · ${r.split} split · ${r.summary.questions} questions · ${how} · ${num(r.seconds, 1)} s · ${s.file}`,
    ),
    el('div', { class: 'note' }, `checkpoint ${r.checkpoint}`),
  );
}

function classBar(s: BoundaryPageState, pick: (c: BoundaryClass | '') => void): HTMLElement {
  const { classes, questions } = s.report.summary;
  const bar = el('div', { class: 'bar', id: 'class-bar' });
  const legend = el('div', { class: 'legend', id: 'class-legend' });
  for (const c of BOUNDARY_CLASS_NAMES) {
    const n = classes[c] ?? 0;
    if (n > 0) {
      const part = el('div', { title: `${c}: ${n} — ${BOUNDARY_CLASSES[c]}` });
      part.style.width = `${(100 * n) / Math.max(1, questions)}%`;
      part.style.background = COLOURS[c];
      part.addEventListener('click', () => pick(c));
      bar.append(part);
    }
    const swatch = el('span', { class: 'swatch' });
    swatch.style.background = COLOURS[c];
    const b = el(
      'button',
      { 'data-class': c, title: BOUNDARY_CLASSES[c] },
      swatch,
      `${c} ${n} (${pct(questions ? n / questions : null)})`,
    );
    b.addEventListener('click', () => pick(c));
    legend.append(b);
  }
  return el('div', {}, bar, legend);
}

function summaryTable(s: BoundaryPageState): HTMLElement {
  const m = s.report.summary;
  const rows: [string, string, string][] = [
    ['over-search rate', pct(m.over_search_rate), 'right with search refused, searched anyway'],
    ['under-search rate', pct(m.under_search_rate), 'wrong both ways, right with one more search'],
    ['EM with search refused', num(m.em_closed_book), 'each query answered by the model itself, asked it alone'],
    ['EM with search', num(m.em), ''],
    ['TC', num(m.tc), 'tool calls per question with search'],
    ['estimated minimum TC', num(m.min_tc), `over the ${m.min_tc_questions} questions with a known minimum`],
    ['TC over the minimum', num(m.tc_over_min), 'per question, same questions'],
    ['avoidable searches', pct(m.avoidable_share), 'share of their searches the minimum does without'],
  ];
  return el(
    'table',
    { id: 'summary' },
    ...rows.map(([k, v, note]) => el('tr', {}, el('td', {}, k), el('td', {}, v), el('td', { class: 'note' }, note))),
  );
}

function truthView(s: BoundaryPageState): HTMLElement | null {
  const t = s.report.truth;
  if (!t) return null;
  const cols = BOUNDARY_CLASS_NAMES.filter((c) => Object.values(t.confusion).some((row) => (row[c] ?? 0) > 0));
  const rows = BOUNDARY_CLASS_NAMES.filter((c) => t.confusion[c]);
  const confusion = el(
    'table',
    { id: 'confusion' },
    el('tr', {}, el('th', {}, 'truth ↓ · meter →'), ...cols.map((c) => el('th', {}, c))),
    ...rows.map((r) =>
      el('tr', {}, el('td', {}, r), ...cols.map((c) => el('td', {}, String(t.confusion[r]?.[c] ?? 0)))),
    ),
  );
  const facts = el(
    'table',
    { id: 'truth' },
    el('tr', {}, el('td', {}, 'classes agree'), el('td', {}, pct(t.class_agreement))),
    el(
      'tr',
      {},
      el('td', {}, 'minimum TC: meter · truth (same questions)'),
      el('td', {}, `${num(t.min_tc_meter)} · ${num(t.min_tc_truth)}`),
    ),
    el('tr', {}, el('td', {}, 'truth on every question'), el('td', {}, num(t.min_tc_truth_all))),
    el(
      'tr',
      {},
      el('td', {}, "the benchmark's optimum (all · same questions)"),
      el('td', {}, `${num(t.optimal_tc)} · ${num(t.optimal_tc_same)}`),
    ),
    el('tr', {}, el('td', {}, "minimum = the benchmark's optimum"), el('td', {}, pct(t.optimal_agreement))),
  );
  return el(
    'div',
    {},
    el('h3', {}, "Against the benchmark's ground truth"),
    el(
      'div',
      { class: 'note' },
      'Truth: each fact of a question asked alone, closed-book, of this checkpoint; its minimum is the facts it does not answer.',
    ),
    el('div', { class: 'cols' }, facts, confusion),
  );
}

const RESPONSES: [keyof BoundaryRow['responses'], string][] = [
  ['closed_book', 'search refused'],
  ['search', 'with search'],
  ['minimal', 'fewest searches found'],
  ['forced', 'one more search'],
];

function rowView(r: BoundaryRow): HTMLElement {
  const d = el('details', { 'data-id': r.id });
  const cls = el('span', { class: 'cls' }, r.class);
  cls.style.color = COLOURS[r.class];
  d.append(
    el(
      'summary',
      {},
      el('span', {}, r.id),
      el('span', {}, r.question),
      cls,
      el('span', { title: 'right with search refused' }, mark(r.closed_book)),
      el('span', { title: 'right with search' }, mark(r.right)),
      el('span', { title: 'tool calls' }, num(r.tool_calls, 2)),
      el('span', { title: 'estimated fewest tool calls' }, r.min_calls === null ? '—' : String(r.min_calls)),
      el(
        'span',
        { title: "the benchmark's truth: class · minimum" },
        r.truth ? `${r.truth.class} · ${r.truth.min_calls}` : '',
      ),
    ),
  );
  // Bodies are built on first open: a report of thousands of questions stays light.
  d.addEventListener('toggle', () => {
    if (!d.open || d.dataset.filled) return;
    d.dataset.filled = '1';
    const facts = r.truth
      ? ` · truth: facts known ${r.truth.facts_known.map((k) => (k ? '✓' : '✗')).join(' ')}${r.truth.optimal !== null ? `, the benchmark's optimum ${r.truth.optimal}` : ''}`
      : '';
    d.append(
      el(
        'div',
        { class: 'note' },
        `golden: ${r.golden_answers.join(' · ') || '—'}${r.group ? ` · ${r.group}` : ''} · ${BOUNDARY_CLASSES[r.class]}${facts}`,
      ),
      el(
        'div',
        { class: 'traj' },
        ...RESPONSES.filter(([k]) => r.responses[k] !== undefined).map(([k, label]) =>
          el('div', {}, el('h4', {}, label), el('pre', {}, r.responses[k] ?? '')),
        ),
      ),
    );
  });
  return d;
}

const PAGE = 300;

function render(s: BoundaryPageState): void {
  document.head.append(el('style', { nonce }, CSS));
  const app = document.getElementById('app') ?? document.body;
  const filter = el('input', { type: 'search', placeholder: 'filter questions', 'aria-label': 'filter questions' });
  const classPick = el(
    'select',
    { 'aria-label': 'class', id: 'class-filter' },
    el('option', { value: '' }, 'every class'),
    ...BOUNDARY_CLASS_NAMES.map((c) => el('option', { value: c }, c)),
  );
  const list = el('div', { id: 'rows' });
  const count = el('span', { class: 'note', id: 'row-count' });
  const more = el('button', {}, 'show more');
  let shown = PAGE;
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const rows = s.report.rows.filter(
      (r) =>
        (!classPick.value || r.class === classPick.value) &&
        (!q || r.question.toLowerCase().includes(q) || r.id.toLowerCase().includes(q)),
    );
    list.replaceChildren(...rows.slice(0, shown).map(rowView));
    count.textContent = `${rows.length} of ${s.report.rows.length} questions${s.cutRows ? ` (${s.cutRows} more in the file, not shown)` : ''}`;
    more.hidden = rows.length <= shown;
    for (const b of Array.from(document.querySelectorAll('#class-legend button')))
      b.classList.toggle('on', (b as HTMLElement).dataset.class === classPick.value);
  };
  const pick = (c: BoundaryClass | '') => {
    classPick.value = classPick.value === c ? '' : c;
    shown = PAGE;
    draw();
  };
  app.append(header(s), classBar(s, pick), summaryTable(s));
  const truth = truthView(s);
  if (truth) app.append(truth);
  const head = el(
    'div',
    { class: 'row-head' },
    ...['id', 'question', 'class', 'no search', 'search', 'TC', 'min', 'truth'].map((h) => el('span', {}, h)),
  );
  app.append(el('h3', {}, 'Questions'), el('div', { class: 'toolbar' }, classPick, filter, count), head, list, more);
  filter.addEventListener('input', () => {
    shown = PAGE;
    draw();
  });
  classPick.addEventListener('change', () => {
    shown = PAGE;
    draw();
  });
  more.addEventListener('click', () => {
    shown += PAGE;
    draw();
  });
  draw();
}

if (state) render(state);
else document.body.append('No search boundary report.');
