// The GRPO group page: one step's groups of a rollouts file; the chosen group's G samples side by side — reward and
// its components, the advantage each was trained with, the response — and, per group, whether its rewards were all
// equal (zero advantages: no gradient). State embedded (#initial-state); a sample opens in the record view.
import type { GroupPageState, GroupPageToHost } from '../../src/protocols/group';
import type { Group, GroupSample } from '../../src/core/groups';

declare function acquireVsCodeApi(): { postMessage(m: GroupPageToHost): void };
const vscode = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : { postMessage: () => undefined };
const state = JSON.parse(document.getElementById('initial-state')?.textContent ?? 'null') as GroupPageState | null;
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? '';

const CSS = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 12px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 2px 8px; text-align: right; border-bottom: 1px solid var(--vscode-panel-border); white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.note { opacity: .75; } .zero { color: var(--vscode-editorWarning-foreground, #cc6633); font-weight: 600; }
.pos { color: var(--vscode-testing-iconPassed, #3a3); } .neg { color: var(--vscode-testing-iconFailed, #d33); }
.responses { display: grid; gap: 8px; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); }
.sample { border: 1px solid var(--vscode-panel-border); padding: 4px 6px; }
.sample h4 { margin: 2px 0; } button.open { background: none; border: none; color: var(--vscode-textLink-foreground); cursor: pointer; padding: 0; font: inherit; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0 0; font-family: var(--vscode-editor-font-family); font-size: 90%; max-height: 22em; overflow: auto; }
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
const signedCell = (x: number | null) =>
  el(
    'td',
    { class: x === null || x === 0 ? '' : x > 0 ? 'pos' : 'neg' },
    x === null ? '—' : `${x > 0 ? '+' : ''}${num(x)}`,
  );

function groupLabel(g: Group): string {
  return `group ${g.group} · ${g.samples.length} samples · mean reward ${num(g.mean)}${g.zeroVariance ? ' · zero variance' : ''} — ${g.question}`;
}

const ROWS: [string, (s: GroupSample) => HTMLElement][] = [
  ['reward', (s) => el('td', {}, num(s.reward?.total))],
  ['advantage', (s) => signedCell(s.advantage)],
  ['EM', (s) => el('td', {}, num(s.reward?.em))],
  ['F1', (s) => el('td', {}, num(s.reward?.f1))],
  [
    'tool calls',
    (s) =>
      el(
        'td',
        {},
        s.reward
          ? `${s.reward.tool_calls}${s.reward.optimal_tool_calls !== null ? ` (n ${s.reward.optimal_tool_calls})` : ''}`
          : '—',
      ),
  ],
  ['r_tool', (s) => el('td', {}, num(s.reward?.r_tool))],
  ['r_correct', (s) => el('td', {}, num(s.reward?.r_correct))],
  ['format', (s) => el('td', {}, s.reward ? (s.reward.format_ok ? 'ok' : s.reward.violations.join(', ')) : '—')],
];

function openButton(s: GroupSample): HTMLElement {
  const b = el('button', { class: 'open', title: 'Open in the record view', 'data-line': String(s.line) }, s.id);
  b.addEventListener('click', () => vscode.postMessage({ type: 'openRecord', line: s.line }));
  return b;
}

function groupView(g: Group): HTMLElement {
  const head = el('tr', {}, el('th', {}, ''), ...g.samples.map((s) => el('th', {}, openButton(s))));
  const rows = ROWS.map(([name, cell]) => el('tr', { 'data-row': name }, el('td', {}, name), ...g.samples.map(cell)));
  const verdict =
    g.mean === null
      ? el('div', { class: 'note' }, 'some samples carry no stored reward')
      : g.zeroVariance
        ? el(
            'div',
            { class: 'zero', id: 'verdict' },
            `zero variance: every sample got reward ${num(g.mean)}, so every advantage is 0 — this group cost ${g.samples.length} rollouts and gives no gradient`,
          )
        : el(
            'div',
            { class: 'note', id: 'verdict' },
            `rewards mean ${num(g.mean)}, standard deviation ${num(g.std)} (GRPO's advantage: reward − mean, ÷ std when std_normalize)`,
          );
  const responses = el(
    'div',
    { class: 'responses' },
    ...g.samples.map((s) =>
      el(
        'div',
        { class: 'sample' },
        el('h4', {}, openButton(s), ` · reward ${num(s.reward?.total)} · advantage ${num(s.advantage)}`),
        el('pre', {}, s.response),
      ),
    ),
  );
  return el(
    'div',
    {},
    el('div', { class: 'note' }, `question: ${g.question} · golden: ${g.golden.join(' · ') || '—'}`),
    verdict,
    el('table', { id: 'group-samples' }, head, ...rows),
    responses,
  );
}

function render(s: GroupPageState): void {
  document.head.append(el('style', { nonce }, CSS));
  const app = document.getElementById('app') ?? document.body;
  const d = s.data;
  const zero = d.groups.filter((g) => g.zeroVariance).length;
  const pick = el(
    'select',
    { id: 'group', 'aria-label': 'group' },
    ...d.groups.map((g, i) => el('option', { value: String(i) }, groupLabel(g))),
  );
  const at = d.groups.findIndex((g) => g.group === s.selected);
  pick.value = String(at >= 0 ? at : 0);
  const body = el('div', { id: 'group-body' });
  app.append(
    el('h2', {}, `GRPO groups · ${s.stage ?? ''} step ${d.step}`),
    el(
      'div',
      { class: 'note', id: 'share' },
      `${s.file} · ${d.groups.length} groups at this step, ${zero} with zero variance (${d.zeroVarianceShare === null ? '—' : `${Math.round(100 * d.zeroVarianceShare)} %`}: all samples rewarded alike, no gradient)`,
    ),
    el('div', { class: 'toolbar' }, pick),
    body,
  );
  const show = () => body.replaceChildren(groupView(d.groups[Number(pick.value)] ?? d.groups[0]));
  pick.addEventListener('change', show);
  show();
}

if (state) render(state);
else document.body.append('No group data.');
