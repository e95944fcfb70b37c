// The "Compare runs" page: the flip table of two checkpoints (src/core/diff/flips.ts, the same table `coa diff`
// prints) — per question gained / lost / both right / both wrong, ΔEM = net / questions, ΔTC and Δ of each reward
// component, grouped by what the data says (source, hops, kind, level) — over a window of steps (RL rollouts: by
// default the last step both runs sampled), with the mean reward per step above it. A question row opened asks the
// host for its two trajectories and shows them side by side, aligned by step, the first step where they part marked.
// State comes embedded (#initial-state); no remote content.
import type { ComparePageState, HostToPage, PageToHost, PageSample } from '../../src/protocols/compare';
import {
  CLASS_WORDS,
  flipTable,
  windowLabel,
  type FlipCounts,
  type FlipRow,
  type FlipTable,
} from '../../src/core/diff/flips';
import type { Means, StepRow, StepWindow, SideInfo } from '../../src/core/diff/types';
import type { Alignment } from '../../src/core/diff/align';

declare function acquireVsCodeApi(): { postMessage(m: PageToHost): void };
const vscode = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : { postMessage: () => undefined };

type State = ComparePageState;
type Row = FlipRow<PageSample>;
const state = JSON.parse(document.getElementById('initial-state')?.textContent ?? 'null') as State | null;
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? '';

const CSS = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 8px; text-align: right; border-bottom: 1px solid var(--vscode-panel-border); white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.pos { color: var(--vscode-testing-iconPassed, #3a3); } .neg { color: var(--vscode-testing-iconFailed, #d33); }
button.count { background: none; border: none; color: var(--vscode-textLink-foreground); cursor: pointer; padding: 0; font: inherit; }
button.count:disabled { color: inherit; cursor: default; opacity: .6; }
details { border-bottom: 1px solid var(--vscode-panel-border); padding: 3px 0; }
summary, .row-head { display: grid; grid-template-columns: 7em 1fr 6em 7em 8em 6em; gap: 8px; align-items: baseline; }
summary { cursor: pointer; } summary span:nth-child(n+3), .row-head span:nth-child(n+3) { text-align: right; }
.row-head { position: sticky; top: 0; background: var(--vscode-editor-background); font-weight: 600; padding: 4px 0 4px 16px; border-bottom: 1px solid var(--vscode-panel-border); z-index: 1; }
.cls { font-size: 90%; border-radius: 3px; padding: 0 4px; text-align: center; }
.cls-gained { background: rgba(60,170,60,.25); } .cls-lost { background: rgba(220,50,50,.25); }
.cls-both_right, .cls-both_wrong, .cls-mixed, .cls-only { opacity: .8; }
.steps { max-height: 14em; overflow: auto; } .steps th { position: sticky; top: 0; background: var(--vscode-editor-background); }
.aligned { width: 100%; table-layout: fixed; } .aligned td { text-align: left; vertical-align: top; white-space: normal; }
.aligned td:first-child { width: 3em; } .aligned tr.same td { opacity: .7; }
.aligned tr.diverge td { border-top: 2px solid var(--vscode-editorWarning-foreground, #cc6633); }
.aligned .marker { color: var(--vscode-editorWarning-foreground, #cc6633); font-weight: 600; font-size: 85%; display: block; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-family: var(--vscode-editor-font-family); font-size: 90%; }
.kind { font-size: 80%; opacity: .7; }
.toolbar { display: flex; gap: 8px; align-items: center; margin: 8px 0; flex-wrap: wrap; } .note { opacity: .75; }
.chip { border: 1px solid var(--vscode-panel-border); border-radius: 8px; padding: 0 6px; }
.missing { opacity: .6; font-style: italic; }
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

const num = (x: number, d = 3) => String(Number(x.toFixed(d)));
/** A signed difference; `tone: false` for quantities whose better direction depends on the goal (tool calls). */
function signed(x: number | undefined, tone = true): HTMLElement {
  if (x === undefined) return el('span', { class: 'missing' }, '—');
  return el('span', { class: tone ? (x > 0 ? 'pos' : x < 0 ? 'neg' : '') : '' }, `${x > 0 ? '+' : ''}${num(x)}`);
}

const rewardWords = (s: SideInfo) =>
  s.reward.source === 'stored'
    ? `rewards as stored (${s.reward.schemes.join(', ')})`
    : `rewards scored here (${s.reward.scheme})`;

/** Mean reward per step of each run: the curve, not one number pooled over every step. */
function stepsTable(steps: StepRow[]): HTMLElement {
  const head = el(
    'tr',
    {},
    ...['step', 'A reward', 'B reward', 'Δ reward', 'A EM', 'B EM', 'A tool calls', 'B tool calls', 'A n', 'B n'].map(
      (h) => el('th', {}, h),
    ),
  );
  const cell = (m: Means | null, k: keyof Means) => el('td', {}, m ? num(m[k]) : '—');
  const rows = steps.map((r) =>
    el(
      'tr',
      {},
      el('td', {}, String(r.step)),
      cell(r.a, 'total'),
      cell(r.b, 'total'),
      el('td', {}, signed(r.delta?.total)),
      cell(r.a, 'em'),
      cell(r.b, 'em'),
      cell(r.a, 'tool_calls'),
      cell(r.b, 'tool_calls'),
      el('td', {}, String(r.a?.n ?? 0)),
      el('td', {}, String(r.b?.n ?? 0)),
    ),
  );
  return el('div', { class: 'steps' }, el('table', { id: 'steps' }, head, ...rows));
}

type ClassFilter = 'flips' | 'all' | 'gained' | 'lost' | 'both_right' | 'both_wrong' | 'mixed' | 'only';
interface Filters {
  cls: ClassFilter;
  group: { name: string; value: string } | null;
  text: string;
}

const COUNT_COLUMNS: [keyof FlipCounts, string, ClassFilter | null][] = [
  ['shared', 'questions', 'all'],
  ['gained', 'gained', 'gained'],
  ['lost', 'lost', 'lost'],
  ['both_right', 'both right', 'both_right'],
  ['both_wrong', 'both wrong', 'both_wrong'],
  ['mixed', 'mixed', 'mixed'],
];

function flipsTable(t: FlipTable<PageSample>, pick: (cls: ClassFilter, group: Filters['group']) => void): HTMLElement {
  const head = el(
    'tr',
    {},
    el('th', {}, ''),
    ...COUNT_COLUMNS.map(([, h]) => el('th', {}, h)),
    ...['net', 'EM A', 'EM B', 'ΔEM', 'ΔTC', 'Δreward', 'ΔF1', 'Δr_tool', 'Δformat ok'].map((h) => el('th', {}, h)),
  );
  const row = (label: string, c: FlipCounts, group: Filters['group']) =>
    el(
      'tr',
      { 'data-group': group ? `${group.name}=${group.value}` : 'all' },
      el('td', {}, label),
      ...COUNT_COLUMNS.map(([k, , cls]) => {
        const b = el('button', { class: 'count', 'data-cls': cls ?? '' }, String(c[k]));
        if (!c[k]) b.disabled = true;
        b.addEventListener('click', () => pick(cls ?? 'all', group));
        return el('td', {}, b);
      }),
      el('td', {}, signed(c.net)),
      el('td', {}, num(c.em_a)),
      el('td', {}, num(c.em_b)),
      el('td', {}, signed(c.delta_em)),
      el('td', {}, signed(c.delta.tool_calls, false)),
      el('td', {}, signed(c.delta.total)),
      el('td', {}, signed(c.delta.f1)),
      el('td', {}, signed(c.delta.r_tool)),
      el('td', {}, signed(c.delta.format_ok)),
    );
  const rows = [row('all', t.totals, null)];
  for (const d of t.dimensions)
    for (const g of d.groups) rows.push(row(`${d.name} = ${g.value}`, g.counts, { name: d.name, value: g.value }));
  return el('table', { id: 'flips' }, head, ...rows);
}

function identity(t: FlipTable<PageSample>): string {
  const c = t.totals;
  const int = Math.abs(c.net - Math.round(c.net)) < 1e-9 && c.mixed === 0;
  return `ΔEM ${c.delta_em >= 0 ? '+' : ''}${num(c.delta_em, 4)} = net ${num(c.net)} / ${c.shared} shared questions${int ? ` (gained ${c.gained} − lost ${c.lost})` : ' (Σ per question of EM_B − EM_A: a question sampled several times counts its mean)'} · ${t.onlyA} only in A · ${t.onlyB} only in B`;
}

function classBadge(r: Row): HTMLElement {
  return r.cls
    ? el('span', { class: `cls cls-${r.cls}` }, CLASS_WORDS[r.cls])
    : el('span', { class: 'cls cls-only' }, r.a ? 'only in A' : 'only in B');
}

const pair = (a: Means | null, b: Means | null, k: keyof Means) => `${a ? num(a[k]) : '—'} → ${b ? num(b[k]) : '—'}`;

/** Answers to `pair` requests, by question key. */
const waiting = new Map<string, (m: Extract<HostToPage, { type: 'pair' }>) => void>();
window.addEventListener('message', (ev: MessageEvent<HostToPage>) => {
  const m = ev.data;
  if (m?.type === 'pair') {
    waiting.get(m.key)?.(m);
    waiting.delete(m.key);
  }
});

function sampleLabel(s: PageSample): string {
  return `${s.id} (line ${s.line}${s.step !== null ? `, step ${s.step}` : ''}) · reward ${num(s.breakdown.total)} · EM ${s.breakdown.em} · TC ${s.breakdown.tool_calls}${s.advantage !== null ? ` · advantage ${num(s.advantage)}` : ''}`;
}

function alignedTable(al: Alignment): HTMLElement {
  const cell = (s: Alignment['rows'][number]['a']) =>
    s
      ? el('td', {}, el('span', { class: 'kind' }, s.kind), el('pre', {}, s.text))
      : el('td', { class: 'missing' }, '—');
  const rows = al.rows.map((r) => {
    const tr = el(
      'tr',
      { class: r.index === al.divergence ? 'diverge' : r.same ? 'same' : 'differ' },
      el('td', {}, String(r.index + 1)),
      cell(r.a),
      cell(r.b),
    );
    if (r.index === al.divergence) tr.firstElementChild!.append(el('span', { class: 'marker' }, 'first divergence'));
    return tr;
  });
  return el(
    'table',
    { class: 'aligned' },
    el('tr', {}, el('th', {}, 'step'), el('th', {}, 'A'), el('th', {}, 'B')),
    ...rows,
  );
}

function rowBody(r: Row, box: HTMLElement): void {
  const deltas = r.delta
    ? el(
        'div',
        { class: 'note' },
        'B − A: ',
        ...(['em', 'f1', 'total', 'r_tool', 'r_correct', 'tool_calls', 'format_ok'] as const).flatMap((k) => [
          `${k} `,
          signed(r.delta![k], k !== 'tool_calls'),
          '  ',
        ]),
      )
    : el('div', { class: 'missing' }, 'only one run has this question here');
  const attrs = Object.entries(r.attrs)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ');
  const pickA = el(
    'select',
    { 'aria-label': 'A sample', class: 'pick-a' },
    ...r.aSamples.map((s, i) => el('option', { value: String(i) }, `A: ${sampleLabel(s)}`)),
  );
  const pickB = el(
    'select',
    { 'aria-label': 'B sample', class: 'pick-b' },
    ...r.bSamples.map((s, i) => el('option', { value: String(i) }, `B: ${sampleLabel(s)}`)),
  );
  const open = (side: 'a' | 'b', sel: HTMLSelectElement) => {
    const s = (side === 'a' ? r.aSamples : r.bSamples)[Number(sel.value)];
    if (s) vscode.postMessage({ type: 'openRecord', side, line: s.line });
  };
  const openA = el('button', { class: 'open-a' }, 'Open A in record view');
  const openB = el('button', { class: 'open-b' }, 'Open B in record view');
  openA.addEventListener('click', () => open('a', pickA));
  openB.addEventListener('click', () => open('b', pickB));
  const aligned = el('div', { class: 'aligned-box' }, el('div', { class: 'note' }, 'loading the trajectories…'));
  const request = () => {
    const key = r.key;
    waiting.set(key, (m) => {
      if (m.error) return aligned.replaceChildren(el('div', { class: 'neg' }, m.error));
      if (m.alignment)
        aligned.replaceChildren(
          el(
            'div',
            { class: 'note' },
            m.alignment.divergence === null
              ? 'the two trajectories take the same steps'
              : `they part at step ${m.alignment.divergence + 1}`,
          ),
          alignedTable(m.alignment),
        );
      else aligned.replaceChildren(el('pre', {}, (m.a ?? m.b)?.response ?? ''));
    });
    vscode.postMessage({
      type: 'pair',
      key,
      a: r.aSamples.length ? Number(pickA.value) : null,
      b: r.bSamples.length ? Number(pickB.value) : null,
    });
  };
  pickA.addEventListener('change', request);
  pickB.addEventListener('change', request);
  box.append(
    el('div', { class: 'note' }, `golden: ${r.golden.join(' · ') || '—'}${attrs ? ` · ${attrs}` : ''}`),
    deltas,
    el(
      'div',
      { class: 'toolbar' },
      ...(r.aSamples.length ? [pickA, openA] : []),
      ...(r.bSamples.length ? [pickB, openB] : []),
    ),
    aligned,
  );
  request();
}

function rowView(r: Row): HTMLElement {
  const d = el('details', { 'data-key': r.key, 'data-class': r.cls ?? 'only' });
  d.append(
    el(
      'summary',
      {},
      classBadge(r),
      el('span', {}, r.question),
      el('span', {}, pair(r.a, r.b, 'em')),
      el('span', {}, pair(r.a, r.b, 'tool_calls')),
      el('span', {}, pair(r.a, r.b, 'total')),
      signed(r.delta?.total),
    ),
  );
  // Bodies are built on first open: a comparison of thousands of questions stays light.
  d.addEventListener('toggle', () => {
    if (!d.open || d.dataset.filled) return;
    d.dataset.filled = '1';
    rowBody(r, d);
  });
  return d;
}

const PAGE = 300;

function render(s: State): void {
  document.head.append(el('style', { nonce }, CSS));
  const app = document.getElementById('app') ?? document.body;
  const schemes = (x: SideInfo) => (x.reward.source === 'stored' ? x.reward.schemes : [x.reward.scheme]).join();
  app.append(
    el('h2', {}, 'Compare runs'),
    el(
      'div',
      { class: 'note', id: 'sides' },
      `A ${s.a.label}: ${s.a.records} trajectories, ${rewardWords(s.a)} · B ${s.b.label}: ${s.b.records} trajectories, ${rewardWords(s.b)} · paired by ${s.keyBy === 'id' ? 'record id' : 'question'}`,
    ),
    ...(schemes(s.a) !== schemes(s.b)
      ? [
          el(
            'div',
            { class: 'note' },
            'The runs were rewarded by different schemes: Δreward compares them as they trained; EM, F1 and tool calls do not depend on the scheme.',
          ),
        ]
      : []),
    ...(s.a.reward.source === 'scored' || s.b.reward.source === 'scored'
      ? [el('div', { class: 'note' }, s.formula)]
      : []),
  );
  if (s.steps.length) app.append(el('h3', {}, 'Reward per step'), stepsTable(s.steps));
  const windows: StepWindow[] = [
    s.window,
    ...s.steps
      .filter((r) => r.a && r.b && !(s.window.kind === 'step' && r.step === s.window.step))
      .reverse()
      .map((r): StepWindow => ({ kind: 'step', step: r.step })),
    ...(s.window.kind === 'all' ? [] : [{ kind: 'all' } as StepWindow]),
  ];
  const windowPick = el(
    'select',
    { 'aria-label': 'steps', id: 'window' },
    ...windows.map((w, i) =>
      el(
        'option',
        { value: String(i) },
        i === 0 && w.kind === 'step'
          ? `step ${w.step} (the last both runs sampled)`
          : w.kind === 'all'
            ? s.steps.length
              ? 'all steps, pooled'
              : 'all records'
            : `step ${w.step}`,
      ),
    ),
  );
  const tableBox = el('div', {});
  const identityLine = el('div', { class: 'note', id: 'identity' });
  app.append(el('h3', {}, 'Flip table over ', windowPick), identityLine, tableBox);
  for (const bad of [...s.a.invalid, ...s.b.invalid].slice(0, 20)) app.append(el('div', { class: 'neg' }, bad.message));
  if (s.truncated > 0)
    app.append(
      el('div', { class: 'note' }, `${s.truncated} more questions are not in this view (coa diff covers every one)`),
    );

  const filters: Filters = { cls: 'flips', group: null, text: '' };
  const filter = el('input', { type: 'search', placeholder: 'filter questions', 'aria-label': 'filter questions' });
  const clsPick = el(
    'select',
    { 'aria-label': 'class', id: 'class' },
    ...(
      [
        ['flips', 'gained and lost'],
        ['all', 'every question'],
        ['gained', 'gained'],
        ['lost', 'lost'],
        ['both_right', 'both right'],
        ['both_wrong', 'both wrong'],
        ['mixed', 'same, mixed'],
        ['only', 'only one run'],
      ] as const
    ).map(([v, t]) => el('option', { value: v }, t)),
  );
  const groupChip = el('span', { class: 'chip', id: 'group' });
  const order = el(
    'select',
    { 'aria-label': 'order' },
    el('option', { value: 'change' }, 'flips first, largest change'),
    el('option', { value: 'down' }, 'B worse first'),
    el('option', { value: 'up' }, 'B better first'),
  );
  const list = el('div', { id: 'rows' });
  const more = el('button', { id: 'more' }, 'show more');
  const head = el(
    'div',
    { class: 'row-head' },
    el('span', {}, ''),
    el('span', {}, 'question'),
    el('span', {}, 'EM A → B'),
    el('span', {}, 'tool calls A → B'),
    el('span', {}, 'reward A → B'),
    el('span', {}, 'Δ reward'),
  );
  app.append(el('div', { class: 'toolbar' }, filter, clsPick, groupChip, order), head, list, more);

  let table: FlipTable<PageSample>;
  let shown: Row[] = [];
  let drawn = 0;
  const pick = (cls: ClassFilter, group: Filters['group']) => {
    filters.cls = cls;
    clsPick.value = cls;
    filters.group = group;
    draw();
    head.scrollIntoView();
  };
  const pickWindow = () => {
    const w = windows[Number(windowPick.value)] ?? s.window;
    table = flipTable(s.questions, w);
    tableBox.replaceChildren(flipsTable(table, pick));
    identityLine.textContent = identity(table);
    head.children[1].textContent = `question (${windowLabel(w)})`;
  };
  const drawMore = () => {
    list.append(...shown.slice(drawn, drawn + PAGE).map(rowView));
    drawn = Math.min(shown.length, drawn + PAGE);
    more.hidden = drawn >= shown.length;
    more.textContent = `show more (${shown.length - drawn} left)`;
  };
  const draw = () => {
    const q = filters.text.trim().toLowerCase();
    const g = filters.group;
    groupChip.hidden = !g;
    groupChip.textContent = g ? `${g.name} = ${g.value} ✕` : '';
    shown = table.rows.filter(
      (r) =>
        (filters.cls === 'all' ||
          (filters.cls === 'flips'
            ? r.cls === 'gained' || r.cls === 'lost'
            : filters.cls === 'only'
              ? r.cls === null
              : r.cls === filters.cls)) &&
        (!g || r.attrs[g.name] === g.value) &&
        (!q || r.question.toLowerCase().includes(q)),
    );
    const key = (r: Row) => r.delta?.total ?? 0;
    if (order.value === 'down') shown.sort((x, y) => key(x) - key(y));
    else if (order.value === 'up') shown.sort((x, y) => key(y) - key(x));
    list.replaceChildren();
    drawn = 0;
    drawMore();
    if (!shown.length) list.append(el('div', { class: 'missing' }, 'no question here'));
  };
  groupChip.addEventListener('click', () => pick(filters.cls, null));
  filter.addEventListener('input', () => {
    filters.text = filter.value;
    draw();
  });
  clsPick.addEventListener('change', () => pick(clsPick.value as ClassFilter, filters.group));
  order.addEventListener('change', draw);
  more.addEventListener('click', drawMore);
  windowPick.addEventListener('change', () => {
    pickWindow();
    draw();
  });
  pickWindow();
  draw();
}

if (state) render(state);
else document.body.append('No comparison data.');
