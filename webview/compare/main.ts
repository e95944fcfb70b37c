// The "Compare runs" page: the mean reward per step of both runs, a summary over a window of steps (by default the
// last step both sampled: RL rollout files hold every step, and pooling them compared early policies too), then
// one collapsible row per question with each side's trajectories and reward breakdowns side by side and the
// difference B − A. State comes embedded in the page (#initial-state); no messages, no remote content.
import type { CompareRow, Means, Sample, Side, StepRow, StepWindow } from '../../src/extension/providers/compare/model';
import type { ComparePageState } from '../../src/protocols/compare';
import { summarize, windowRows } from '../../src/extension/providers/compare/aggregate';

type State = ComparePageState;

const state = JSON.parse(document.getElementById('initial-state')?.textContent ?? 'null') as State | null;
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? '';

const CSS = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid var(--vscode-panel-border); }
th:first-child, td:first-child { text-align: left; }
.pos { color: var(--vscode-testing-iconPassed, #3a3); } .neg { color: var(--vscode-testing-iconFailed, #d33); }
details { border-bottom: 1px solid var(--vscode-panel-border); padding: 4px 0; }
summary, .row-head { display: grid; grid-template-columns: 1fr 7em 7em 7em; gap: 8px; }
summary { cursor: pointer; } summary span:not(:first-child), .row-head span:not(:first-child) { text-align: right; }
.row-head { position: sticky; top: 0; background: var(--vscode-editor-background); font-weight: 600; padding: 4px 0 4px 16px; border-bottom: 1px solid var(--vscode-panel-border); z-index: 1; }
.steps { max-height: 16em; overflow: auto; } .steps th { position: sticky; top: 0; background: var(--vscode-editor-background); }
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

const windowLabel = (w: StepWindow) => (w.kind === 'all' ? 'all records' : `step ${w.step}`);

function summaryTable(s: State, rows: CompareRow[]): HTMLElement {
  const sum = summarize(rows);
  const keys: (keyof Omit<Means, 'n'>)[] = ['total', 'em', 'f1', 'tool_calls', 'format_ok'];
  const head = el('tr', {}, el('th', {}, ''), ...keys.map((k) => el('th', {}, k === 'total' ? `reward (${s.scheme})` : k === 'format_ok' ? 'format ok' : k === 'tool_calls' ? 'tool calls' : k.toUpperCase())), el('th', {}, 'trajectories'));
  const row = (label: string, m: Means) => el('tr', {}, el('td', {}, label), ...keys.map((k) => el('td', {}, num(m[k]))), el('td', {}, String(m.n)));
  const delta = el('tr', {}, el('td', {}, 'B − A'), ...keys.map((k) => el('td', {}, signed(sum.delta[k]))), el('td', {}, ''));
  return el('div', {}, el('table', { id: 'summary' }, head, row(`A ${s.a.label}`, sum.a), row(`B ${s.b.label}`, sum.b), delta),
    el('div', { class: 'note' }, `${sum.shared} shared questions · ${sum.onlyA} only in A · ${sum.onlyB} only in B · A ${s.a.records} records, B ${s.b.records} records in all`));
}

/** Mean reward per step of each run: the curve, not one number pooled over every step. */
function stepsTable(steps: StepRow[]): HTMLElement {
  const head = el('tr', {}, ...['step', 'A reward', 'B reward', 'Δ reward', 'A tool calls', 'B tool calls', 'A n', 'B n'].map((h) => el('th', {}, h)));
  const rows = steps.map((r) => el('tr', {}, el('td', {}, String(r.step)), el('td', {}, r.a ? num(r.a.total) : '—'), el('td', {}, r.b ? num(r.b.total) : '—'), el('td', {}, signed(r.delta?.total)),
    el('td', {}, r.a ? num(r.a.tool_calls) : '—'), el('td', {}, r.b ? num(r.b.tool_calls) : '—'), el('td', {}, String(r.a?.n ?? 0)), el('td', {}, String(r.b?.n ?? 0))));
  return el('div', { class: 'steps' }, el('table', { id: 'steps' }, head, ...rows));
}

function breakdownTable(sample: Sample): HTMLElement {
  const b = sample.breakdown;
  const cells: [string, string][] = [['reward', num(b.total)], ['EM', num(b.em)], ['F1', num(b.f1)], ['tool calls', `${b.tool_calls}${b.optimal_tool_calls !== null ? ` (optimal ${b.optimal_tool_calls})` : ''}`],
    ['r_tool', num(b.r_tool)], ['r_correct', num(b.r_correct)], ['format', b.format_ok ? 'ok' : `errors: ${b.violations.join(', ')}`]];
  return el('table', {}, ...cells.map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', {}, v))));
}

function sideView(name: string, label: string, side: Side | null): HTMLElement {
  if (!side) return el('div', { class: 'side missing' }, `${name}: no trajectory for this question in ${label}`);
  const box = el('div', { class: 'side' }, el('h4', {}, `${name} · ${side.samples.length} ${side.samples.length === 1 ? 'trajectory' : 'trajectories'} · mean reward ${num(side.mean.total)}`));
  for (const s of side.samples) box.append(el('div', {}, el('div', { class: 'note' }, `${s.id} (line ${s.line}${s.step !== null ? `, step ${s.step}` : ''})`), breakdownTable(s), el('pre', {}, s.response)));
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
  app.append(el('h2', {}, 'Compare runs'), el('div', { class: 'note' }, s.formula));
  if (s.steps.length) app.append(el('h3', {}, 'Reward per step'), stepsTable(s.steps));
  // The window the summary and the questions cover: the default (last shared step), each step, or all pooled.
  const windows: StepWindow[] = [s.window, ...s.steps.filter((r) => r.a && r.b && !(s.window.kind === 'step' && r.step === s.window.step)).reverse().map((r): StepWindow => ({ kind: 'step', step: r.step })), ...(s.window.kind === 'all' ? [] : [{ kind: 'all' } as StepWindow])];
  const windowPick = el('select', { 'aria-label': 'steps', id: 'window' }, ...windows.map((w, i) => el('option', { value: String(i) }, i === 0 && w.kind === 'step' ? `step ${w.step} (the last both runs sampled)` : w.kind === 'all' ? (s.steps.length ? 'all steps, pooled' : 'all records') : `step ${w.step}`)));
  const summaryBox = el('div', {});
  app.append(el('h3', {}, 'Summary over ', windowPick), summaryBox);
  for (const bad of [...s.a.invalid, ...s.b.invalid].slice(0, 20)) app.append(el('div', { class: 'neg' }, bad.message));
  const filter = el('input', { type: 'search', placeholder: 'filter questions', 'aria-label': 'filter questions' });
  const order = el('select', { 'aria-label': 'order' }, el('option', { value: 'abs' }, 'largest |Δ| first'), el('option', { value: 'down' }, 'B worse first'), el('option', { value: 'up' }, 'B better first'));
  const list = el('div', { id: 'rows' });
  const head = el('div', { class: 'row-head' }, el('span', {}, 'question'), el('span', {}, 'A reward'), el('span', {}, 'B reward'), el('span', {}, 'Δ reward'));
  app.append(el('div', { class: 'toolbar' }, filter, order), head, list);
  if (s.truncatedRows > 0) app.append(el('div', { class: 'note' }, `${s.truncatedRows} more questions not shown`));
  let windowed: CompareRow[] = [];
  const pickWindow = () => {
    const w = windows[Number(windowPick.value)] ?? s.window;
    windowed = windowRows(s.all, w);
    summaryBox.replaceChildren(summaryTable(s, windowed));
    head.firstElementChild!.textContent = `question (${windowLabel(w)})`;
  };
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const rows = windowed.filter((r) => !q || r.question.toLowerCase().includes(q));
    const key = (r: CompareRow) => r.delta?.total ?? 0;
    if (order.value === 'down') rows.sort((x, y) => key(x) - key(y));
    else if (order.value === 'up') rows.sort((x, y) => key(y) - key(x));
    list.replaceChildren(...rows.map((r) => rowView(s, r)));
  };
  filter.addEventListener('input', draw);
  order.addEventListener('change', draw);
  windowPick.addEventListener('change', () => {
    pickWindow();
    draw();
  });
  pickWindow();
  draw();
}

if (state) render(state);
else document.body.append('No comparison data.');
