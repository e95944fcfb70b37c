// Notebook renderer for the reward breakdown output (REWARD_MIME): a table explaining how the reward was made
// (scheme, EM/F1, format rule violations, tool calls m vs optimal n, r_tool × r_correct, answer vs golden).
// An ES module exporting `activate`, as VS Code's notebook renderer API wants; colours come from the theme.
import type { RewardOutput } from '../../src/protocols/rewardOutput';

/** The parts of vscode-notebook-renderer's API used here (the types package is not a dependency). */
interface OutputItem {
  id: string;
  mime: string;
  json(): unknown;
}
interface RendererContext {
  postMessage?(message: unknown): void;
}

export function activate(_context?: RendererContext) {
  return {
    renderOutputItem(item: OutputItem, element: HTMLElement): void {
      renderReward(item.json() as RewardOutput, element);
    },
    disposeOutputItem(): void {},
  };
}

const GOOD = 'var(--vscode-testing-iconPassed, var(--vscode-charts-green, #73c991))';
const BAD = 'var(--vscode-errorForeground, #f14c4c)';
const DIM = 'var(--vscode-descriptionForeground, #999)';

const num = (x: number) => String(Math.round(x * 10000) / 10000);

/** Draw one breakdown into `element` (replacing its content). Exported for tests. */
export function renderReward(o: RewardOutput, element: HTMLElement): void {
  const b = o.breakdown;
  const root = document.createElement('div');
  root.className = 'coa-reward';
  Object.assign(root.style, {
    fontFamily: 'var(--vscode-font-family)',
    fontSize: 'var(--vscode-font-size, 13px)',
    color: 'var(--vscode-foreground)',
    padding: '4px 0',
  });

  const title = document.createElement('div');
  const total = document.createElement('strong');
  total.className = 'coa-total';
  total.textContent = `reward ${num(b.total)}`;
  // Without golden answers nothing can be right or wrong: no red for a 0 that measures nothing.
  const noGolden = o.golden.length === 0;
  total.style.color = noGolden ? DIM : b.total > 0 ? GOOD : BAD;
  title.append(total, ` · ${b.scheme}`);
  root.appendChild(title);

  const table = document.createElement('table');
  Object.assign(table.style, { borderCollapse: 'collapse', marginTop: '4px' });
  const row = (label: string, value: string, color?: string, cls?: string) => {
    const tr = document.createElement('tr');
    if (cls) tr.className = cls;
    const th = document.createElement('th');
    th.textContent = label;
    Object.assign(th.style, {
      textAlign: 'left',
      fontWeight: 'normal',
      color: DIM,
      padding: '1px 12px 1px 0',
      borderBottom: '1px solid var(--vscode-editorWidget-border, #8884)',
    });
    const td = document.createElement('td');
    td.textContent = value;
    Object.assign(td.style, { padding: '1px 0', borderBottom: '1px solid var(--vscode-editorWidget-border, #8884)' });
    if (color) td.style.color = color;
    tr.append(th, td);
    table.appendChild(tr);
  };
  row('answer', o.answer === null ? '— (none)' : o.answer, o.answer === null ? BAD : undefined, 'coa-answer');
  row('golden', noGolden ? 'no golden answers' : o.golden.join(' · '), noGolden ? DIM : undefined, 'coa-golden');
  if (noGolden) row('EM / F1', 'not measured (no golden answers)', DIM, 'coa-em');
  else {
    row('EM', num(b.em), b.em > 0 ? GOOD : BAD, 'coa-em');
    row('F1', num(b.f1), undefined, 'coa-f1');
  }
  row('format', b.format_ok ? 'ok' : `errors: ${b.violations.join(', ')}`, b.format_ok ? GOOD : BAD, 'coa-format');
  row(
    'tool calls',
    `m = ${b.tool_calls}${b.optimal_tool_calls !== null ? `, optimal n = ${b.optimal_tool_calls}` : ''}`,
    undefined,
    'coa-tools',
  );
  row('r_tool × r_correct', `${num(b.r_tool)} × ${num(b.r_correct)}`, undefined, 'coa-factors');
  row('formula', o.formula, DIM, 'coa-formula');
  // The record's own run scored it with o.stored.scheme; `b` is recomputed under that scheme, so they compare.
  if (o.stored) {
    row(
      'stored by its run',
      `${num(o.stored.total)} (${o.stored.scheme})${o.storedDiffers ? ' — differs from the recomputed reward' : ' — recomputed the same'}`,
      o.storedDiffers ? BAD : undefined,
      'coa-stored',
    );
  }
  if (o.setting)
    row(`recomputed with ${o.setting.scheme}`, `${num(o.setting.total)} (coaStudio.rewardScheme)`, DIM, 'coa-setting');
  root.appendChild(table);
  element.replaceChildren(root);
}
