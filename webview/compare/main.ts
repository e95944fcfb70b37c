// The "Compare runs" page: summary of both runs over shared questions, then one collapsible row per question
// with each side's trajectories and reward breakdowns side by side and the difference B − A. State comes
// embedded in the page (#initial-state); no messages, no remote content.
import type { CompareModel, CompareRow, Means, Sample, Side } from '../../src/extension/providers/compare/model';

type State = CompareModel & { truncatedRows: number };

const state = JSON.parse(document.getElementById('initial-state')?.textContent ?? 'null') as State | null;
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? '';

const CSS = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid var(--vscode-panel-border); }
th:first-child, td:first-child { text-align: left; }
.pos { color: var(--vscode-testing-iconPassed, #3a3); } .neg { color: var(--vscode-testing-iconFailed, #d33); }
details { border-bottom: 1px solid var(--vscode-panel-border); padding: 4px 0; }
summary { cursor: pointer; display: grid; grid-template-columns: 1fr 7em 7em 7em; gap: 8px; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 6px; }
.side h4 { margin: 4px 0; } .missing { opacity: .6; font-style: italic; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--vscode-textCodeBlock-background); padding: 6px; max-height: 24em; overflow: auto; }
.toolbar { display: flex; gap: 8px; align-items: center; margin: 8px 0; } .note { opacity: .75; }
`;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

const num = (x: number, d = 3) => String(Number(x.toFixed(d)));
function signed(x: number | undefined): HTMLElement {
  if (x === undefined) return el('span', { class: 'missing' }, '—');
  return el('span', { class: x > 0 ? 'pos' : x < 0 ? 'neg' : '' }, `${x > 0 ? '+' : ''}${num(x)}`);
}

function summaryTable(s: State): HTMLElement {
  const keys: (keyof Omit<Means, 'n'>)[] = ['total', 'em', 'f1', 'tool_calls', 'format_ok'];
  const head = el('tr', {}, el('th', {}, ''), ...keys.map((k) => el('th', {}, k === 'total' ? `reward (${s.scheme})` : k === 'format_ok' ? 'format ok' : k === 'tool_calls' ? 'tool calls' : k.toUpperCase())));
  const row = (label: string, m: Means) => el('tr', {}, el('td', {}, label), ...keys.map((k) => el('td', {}, num(m[k]))));
  const delta = el('tr', {}, el('td', {}, 'B − A'), ...keys.map((k) => el('td', {}, signed(s.summary.delta[k]))));
  return el('table', {}, head, row(`A ${s.a.label}`, s.summary.a), row(`B ${s.b.label}`, s.summary.b), delta);
}

function breakdownTable(sample: Sample): HTMLElement {
  const b = sample.breakdown;
  const cells: [string, string][] = [['reward', num(b.total)], ['EM', num(b.em)], ['F1', num(b.f1)], ['tool calls', `${b.tool_calls}${b.optimal_tool_calls !== null ? ` (optimal ${b.optimal_tool_calls})` : ''}`],
    ['r_tool', num(b.r_tool)], ['r_correct', num(b.r_correct)], ['format', b.format_ok ? 'ok' : `errors: ${b.violations.join(', ')}`]];
  return el('table', {}, ...cells.map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', {}, v))));
}

function sideView(name: string, label: string, side: Side | null): HTMLElement {
  if (!side) return el('div', { class: 'side missing' }, `${name}: no trajectory for this question in ${label}`);
  const box = el('div', { class: 'side' }, el('h4', {}, `${name} · ${side.samples.length} trajectory${side.samples.length === 1 ? '' : 'ies'} · mean reward ${num(side.mean.total)}`));
  for (const s of side.samples) box.append(el('div', {}, el('div', { class: 'note' }, `${s.id} (line ${s.line})`), breakdownTable(s), el('pre', {}, s.response)));
  return box;
}

function rowView(s: State, r: CompareRow): HTMLElement {
  const d = el('details', {});
  d.append(el('summary', {}, el('span', {}, r.question), el('span', {}, r.a ? num(r.a.mean.total) : '—'), el('span', {}, r.b ? num(r.b.mean.total) : '—'), signed(r.delta?.total)));
  // Bodies are built on first open: a file of thousands of questions stays light.
  d.addEventListener('toggle', () => {
    if (!d.open || d.dataset.filled) return;
    d.dataset.filled = '1';
    const deltas = r.delta ? el('div', { class: 'note' }, 'B − A: ', ...(['total', 'em', 'f1', 'tool_calls', 'format_ok'] as const).flatMap((k) => [`${k} `, signed(r.delta![k]), '  '])) : el('div', { class: 'missing' }, 'only one run has this question');
    d.append(el('div', { class: 'note' }, `golden: ${r.golden.join(' · ') || '—'}`), deltas, el('div', { class: 'sides' }, sideView('A', s.a.label, r.a), sideView('B', s.b.label, r.b)));
  });
  return d;
}

function render(s: State): void {
  const style = el('style', { nonce }, CSS);
  document.head.append(style);
  const app = document.getElementById('app') ?? document.body;
  app.append(el('h2', {}, 'Compare runs'), el('div', { class: 'note' }, s.formula), summaryTable(s),
    el('div', { class: 'note' }, `${s.summary.shared} shared questions · ${s.summary.onlyA} only in A · ${s.summary.onlyB} only in B · A ${s.a.records} records, B ${s.b.records} records`));
  for (const bad of [...s.a.invalid, ...s.b.invalid].slice(0, 20)) app.append(el('div', { class: 'neg' }, bad.message));
  const filter = el('input', { type: 'search', placeholder: 'filter questions', 'aria-label': 'filter questions' });
  const order = el('select', { 'aria-label': 'order' }, el('option', { value: 'abs' }, 'largest |Δ| first'), el('option', { value: 'down' }, 'B worse first'), el('option', { value: 'up' }, 'B better first'));
  const list = el('div', { id: 'rows' });
  app.append(el('div', { class: 'toolbar' }, filter, order, el('span', { class: 'note' }, 'columns: question · A · B · Δ reward')), list);
  if (s.truncatedRows > 0) app.append(el('div', { class: 'note' }, `${s.truncatedRows} more questions not shown`));
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const rows = s.rows.filter((r) => !q || r.question.toLowerCase().includes(q));
    const key = (r: CompareRow) => r.delta?.total ?? 0;
    if (order.value === 'down') rows.sort((x, y) => key(x) - key(y));
    else if (order.value === 'up') rows.sort((x, y) => key(y) - key(x));
    list.replaceChildren(...rows.map((r) => rowView(s, r)));
  };
  filter.addEventListener('input', draw);
  order.addEventListener('change', draw);
  draw();
}

if (state) render(state);
else document.body.append('No comparison data.');
