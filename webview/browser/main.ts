// The trajectory browser page: a table of one page of records (filters, sort, paging, jump, text search) whose
// columns suit the file (questions or trajectories); a row opens its record in the record view beside the browser
// (the host does that). Draws the first page from the embedded state at once; everything else comes from the host.
import type {
  BrowserInitialState,
  BrowserQuery,
  BrowserSearchState,
  BrowserToHost,
  HostToBrowser,
  QueryResult,
  RecordSummary,
  SearchField,
  TableKind,
} from '../../src/protocols/browser';

declare function acquireVsCodeApi(): { postMessage(m: BrowserToHost): void };

const vscode = acquireVsCodeApi();
const init = JSON.parse(document.getElementById('initial-state')!.textContent!) as BrowserInitialState;
let query: BrowserQuery = { pageSize: init.pageSize, page: 0, sort: 'file', order: 'asc' };
let indexed = 0;
let done = false;

const style = document.createElement('style');
style.nonce = (document.querySelector('script[nonce]') as HTMLScriptElement).nonce;
style.textContent = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); background: var(--vscode-editor-background); margin: 0; padding: 8px; }
.bar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 6px; }
input, select, button { background: var(--vscode-input-background); color: var(--vscode-input-foreground); border: 1px solid var(--vscode-input-border, transparent); padding: 2px 4px; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); cursor: pointer; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 2px 6px; border-bottom: 1px solid var(--vscode-editorWidget-border, #8884); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 40vw; }
thead th { position: sticky; top: 0; z-index: 1; background: var(--vscode-editor-background); color: var(--vscode-descriptionForeground); font-weight: 600; box-shadow: 0 1px 0 var(--vscode-editorWidget-border, #8884); }
tr.row:focus { outline: 1px solid var(--vscode-focusBorder); outline-offset: -1px; }
#search { width: 16em; }
.hits { font-variant-numeric: tabular-nums; }
tr.row:hover { background: var(--vscode-list-hoverBackground); cursor: pointer; }
tr.sel { background: var(--vscode-list-activeSelectionBackground); color: var(--vscode-list-activeSelectionForeground); }
.ok { color: var(--vscode-testing-iconPassed, green); } .bad { color: var(--vscode-errorForeground, red); }
.status { color: var(--vscode-descriptionForeground); }
.w4 { width: 4em; } .w5 { width: 5em; } .w10 { width: 10em; }
`;
document.head.appendChild(style);

const root = document.createElement('div');
root.innerHTML = `
<div class="bar"><strong id="file"></strong><span class="status" id="status"></span></div>
<div class="bar" id="questions" hidden></div>
<div class="bar" role="search">
  <label>search <input id="search" type="search" placeholder="text (Ctrl+F)" aria-label="Search the text of questions, responses and answers" spellcheck="false"></label>
  <select id="search-field" aria-label="Search in"><option value="all">questions, responses, answers</option><option value="question">questions</option><option value="response">responses</option><option value="answers">golden answers</option></select>
  <button id="search-cancel" hidden>Stop</button>
  <span class="status hits" id="search-status" aria-live="polite"></span>
</div>
<div class="bar" id="filters">
  <label><input type="checkbox" id="failures"> failures</label>
  <label><input type="checkbox" id="errors"> bad lines</label>
  <label>EM <select id="em"><option value="">any</option><option value="1">1</option><option value="0">0</option></select></label>
  <label>reward ≥ <input id="minReward" type="number" step="0.1" class="w4"></label>
  <label>tool calls &gt; <input id="tools" type="number" min="0" class="w4"></label>
  <label>stage <select id="stage"><option value="">any</option></select></label>
  <label>step <input id="step" type="number" min="0" class="w5"></label>
  <label>sort <select id="sort"><option value="file">file order</option><option value="reward">reward</option><option value="em">EM</option><option value="tool-calls">tool calls</option><option value="step">step</option></select></label>
  <select id="order"><option value="asc">ascending</option><option value="desc">descending</option></select>
  <label>jump <input id="jump" placeholder="id or line" class="w10"></label>
  <span class="status" id="jump-status" aria-live="polite"></span>
</div>
<div class="bar"><button id="prev">◀</button><span id="pageinfo"></span><button id="next">▶</button></div>
<table><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table>`;
document.body.prepend(root);
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
$('file').textContent = init.file;

function num(id: string): number | null {
  const v = $<HTMLInputElement>(id).value.trim();
  return v === '' ? null : Number(v);
}

function send(page = 0): void {
  query = {
    ...query,
    page,
    failuresOnly: $<HTMLInputElement>('failures').checked,
    errorsOnly: $<HTMLInputElement>('errors').checked,
    moreToolCalls: num('tools'),
    em: $<HTMLSelectElement>('em').value === '' ? null : (Number($<HTMLSelectElement>('em').value) as 0 | 1),
    minReward: num('minReward'),
    stage: $<HTMLSelectElement>('stage').value || null,
    step: num('step'),
    sort: $<HTMLSelectElement>('sort').value as BrowserQuery['sort'],
    order: $<HTMLSelectElement>('order').value as 'asc' | 'desc',
  };
  vscode.postMessage({ type: 'query', query });
}

for (const id of ['failures', 'errors', 'em', 'minReward', 'tools', 'stage', 'step', 'sort', 'order'])
  $(id).addEventListener('change', () => send(0));
$('prev').addEventListener('click', () => send(Math.max(0, (query.page ?? 0) - 1)));
$('next').addEventListener('click', () => send((query.page ?? 0) + 1));
$('jump').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') vscode.postMessage({ type: 'jump', query, target: $<HTMLInputElement>('jump').value });
});

const fmt = (x: number | null) => (x === null ? '—' : String(Math.round(x * 1000) / 1000));

/** Columns by the file's kind: a question set is read by its questions, answers and sources; trajectories by rewards. */
interface Column {
  title: string;
  cell(r: RecordSummary): string;
  cls?(r: RecordSummary): string;
  /** The cell's tooltip (default: its text). */
  tip?(r: RecordSummary): string;
}
const rewardClass = (r: RecordSummary) =>
  r.isQuestion ? '' : r.error || (r.reward ?? 0) <= 0 || r.formatOk === false ? 'bad' : 'ok';
const COLUMNS: Record<TableKind, Column[]> = {
  questions: [
    { title: 'line', cell: (r) => String(r.line) },
    { title: 'id', cell: (r) => r.id },
    { title: 'question', cell: (r) => (r.error ? r.error : r.question) },
    { title: 'golden answers', cell: (r) => (r.error ? '' : r.golden || '—') },
    {
      title: 'source',
      cell: (r) => (r.error ? 'bad line' : r.isQuestion ? (r.source ?? '') : `trajectory · reward ${fmt(r.reward)}`),
      cls: (r) => (r.error ? 'bad' : ''),
    },
  ],
  trajectories: [
    { title: 'line', cell: (r) => String(r.line) },
    { title: 'id', cell: (r) => r.id },
    {
      title: 'reward',
      cell: (r) => (r.error ? 'bad line' : r.isQuestion ? 'question' : fmt(r.reward)),
      cls: rewardClass,
      tip: rewardTip,
    },
    { title: 'EM', cell: (r) => (r.error ? '' : fmt(r.em)) },
    { title: 'tools', cell: (r) => (r.error ? '' : fmt(r.toolCalls)) },
    { title: 'stage', cell: (r) => r.stage ?? '' },
    { title: 'step', cell: (r) => (r.step === null ? '' : String(r.step)) },
    { title: 'question', cell: (r) => (r.error ? r.error : r.question) },
  ],
};
const columns = COLUMNS[init.kind] ?? COLUMNS.trajectories;
$('head').replaceChildren(
  ...columns.map((c) => Object.assign(document.createElement('th'), { textContent: c.title, scope: 'col' })),
);
const rewardHead = Array.from($('head').children).find((th) => th.textContent === 'reward') as HTMLElement | undefined;

/** Where a row's reward comes from: the record's stored one (its run's scheme), or recomputed here. */
function rewardTip(r: RecordSummary): string {
  if (r.error || r.isQuestion || r.reward === null) return '';
  return r.stored
    ? `${fmt(r.reward)}: the record's stored reward (${r.scheme}, what its run trained on)`
    : `${fmt(r.reward)}: recomputed with ${r.scheme} (the record stores no reward; coaStudio.reward.scheme)`;
}

/** The reward column's heading names the scheme of the rows shown, and whether they are stored or recomputed. */
function drawRewardHead(rows: readonly RecordSummary[]): void {
  if (!rewardHead) return;
  const scored = rows.filter((r) => !r.error && !r.isQuestion && r.reward !== null);
  const schemes = [...new Set(scored.map((r) => r.scheme))];
  const stored = scored.filter((r) => r.stored).length;
  const source = stored === scored.length ? 'stored' : stored === 0 ? 'recomputed' : 'stored or recomputed';
  rewardHead.textContent = scored.length
    ? `reward (${schemes.length === 1 ? schemes[0] : 'mixed schemes'}, ${source})`
    : 'reward';
  rewardHead.dataset.scheme = schemes.join(' ');
  rewardHead.dataset.source = scored.length ? source : '';
  rewardHead.title = scored.length
    ? 'Each record\'s stored reward (under its run\'s scheme) when it has one; otherwise recomputed with coaStudio.reward.scheme. Sorting and "reward ≥" use these values.'
    : '';
}
document.body.dataset.kind = init.kind;
// Reward filters mean nothing for a question set (failures stays: it answers "none", questions never fail).
if (init.kind === 'questions')
  for (const id of ['em', 'minReward', 'tools']) ($(id).closest('label') as HTMLElement).hidden = true;

/** The record last opened (kept selected across pages and redraws). */
let selected: number | null = null;

function select(tr: HTMLElement, focus: boolean): void {
  $('rows')
    .querySelectorAll('tr.sel')
    .forEach((x) => x.classList.remove('sel'));
  tr.classList.add('sel');
  selected = Number(tr.dataset.i);
  vscode.postMessage({ type: 'open', i: selected, focus });
}

function drawRows(rows: RecordSummary[]): void {
  drawRewardHead(rows);
  const body = $('rows');
  body.replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement('tr');
      tr.className = r.i === selected ? 'row sel' : 'row';
      tr.dataset.i = String(r.i);
      tr.tabIndex = 0;
      for (const c of columns) {
        const td = document.createElement('td');
        td.textContent = c.cell(r);
        td.title = c.tip?.(r) || td.textContent;
        const cls = c.cls?.(r);
        if (cls) td.className = cls;
        tr.appendChild(td);
      }
      // One click opens the record beside the browser, which keeps the focus (the next click replaces it, as a
      // preview does); a double click or Enter moves there.
      tr.addEventListener('click', () => select(tr, false));
      tr.addEventListener('dblclick', () => select(tr, true));
      tr.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') select(tr, true);
        else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
          const next = (
            e.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling
          ) as HTMLElement | null;
          if (next) {
            e.preventDefault();
            next.focus();
            select(next, false);
          }
        }
      });
      return tr;
    }),
  );
}

function drawStatus(bytes: number, size: number): void {
  const pct = size ? Math.round((100 * bytes) / size) : 100;
  $('status').textContent = done
    ? ` · ${indexed.toLocaleString()} records indexed`
    : ` · indexing… ${pct}% (${indexed.toLocaleString()} records so far)`;
}

function drawPage(result: QueryResult): void {
  drawRows(result.rows);
  const pages = Math.max(1, Math.ceil(result.total / result.pageSize));
  $('pageinfo').textContent =
    ` page ${result.page + 1} / ${pages}${done ? '' : '+'} · ${result.total.toLocaleString()} matching `;
  query.page = result.page;
}

// ---- text search: the host streams the file in a worker; the page shows the hits as they are counted ----------
const searchInput = $<HTMLInputElement>('search');
let searchTimer: ReturnType<typeof setTimeout> | undefined;
function startSearch(): void {
  clearTimeout(searchTimer);
  vscode.postMessage({
    type: 'search',
    text: searchInput.value,
    field: $<HTMLSelectElement>('search-field').value as SearchField,
  });
}
searchInput.addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(startSearch, 300);
});
searchInput.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') startSearch();
  else if (e.key === 'Escape' && searchInput.value) {
    searchInput.value = '';
    startSearch();
  }
});
$('search-field').addEventListener('change', startSearch);
$('search-cancel').addEventListener('click', () => vscode.postMessage({ type: 'cancelSearch' }));
// Ctrl+F (⌘F) is the search box: the browser's rows are pages of a file the page never holds whole.
window.addEventListener('keydown', (e) => {
  if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'f') {
    e.preventDefault();
    searchInput.focus();
    searchInput.select();
  }
});

function drawSearch(m: BrowserSearchState): void {
  $('search-cancel').hidden = !m.running;
  const el = $('search-status');
  el.dataset.count = String(m.count);
  el.dataset.running = String(m.running);
  if (!m.text) el.textContent = '';
  else {
    const pct = init.size ? Math.min(100, Math.round((100 * m.bytes) / init.size)) : 100;
    const n = `${m.count.toLocaleString()} record${m.count === 1 ? '' : 's'} with “${m.text}”`;
    el.textContent = m.running
      ? `${n} so far · searching… ${pct}%`
      : m.error === 'cancelled'
        ? `${n} (stopped at ${pct}%)`
        : m.error
          ? `${n} · search failed: ${m.error}`
          : n;
  }
}

window.addEventListener('message', (e: MessageEvent) => {
  const m = e.data as HostToBrowser;
  if (m.type === 'progress') {
    indexed = m.indexed;
    drawStatus(m.bytes, m.size);
  } else if (m.type === 'page') {
    indexed = m.indexed;
    done = m.done;
    drawStatus(m.bytes, m.size);
    const sel = $<HTMLSelectElement>('stage');
    const have = new Set(Array.from(sel.options, (o) => o.value));
    for (const s of m.stages) if (!have.has(s)) sel.add(new Option(s, s));
    drawQuestions(m.questions ?? '');
    drawPage(m.result);
  } else if (m.type === 'search') drawSearch(m);
  else if (m.type === 'selected') {
    selected = m.i;
    $('rows')
      .querySelectorAll<HTMLElement>('tr.row')
      .forEach((tr) => tr.classList.toggle('sel', Number(tr.dataset.i) === selected));
    // A jump lands on a row of its page that may be far below the fold: bring it into view (the page's answer to
    // the jump's query is posted first, so the row is drawn by now).
    $('rows').querySelector<HTMLElement>('tr.row.sel')?.scrollIntoView({ block: 'center' });
  } else if (m.type === 'jump') drawJump(m);
  else if (m.type === 'error') $('status').textContent = ` · ${m.message}`;
});

/** A jump's outcome beside the jump box (the status line is the index's progress, redrawn as it grows). */
function drawJump(m: Extract<HostToBrowser, { type: 'jump' }>): void {
  const el = $('jump-status');
  el.dataset.state = m.state;
  if (m.state === 'done') el.textContent = '';
  else if (m.state === 'missing') el.textContent = `no record "${m.target}"${done ? '' : ' in the file'}`;
  else if (m.state === 'searching')
    el.textContent = `looking for "${m.target}" in the file… ${m.size ? Math.floor((100 * m.bytes) / m.size) : 0}%`;
  else if (m.state === 'unindexed')
    el.textContent = `no record "${m.target}" in the part indexed so far (a verl dump's ids exist once indexed)`;
  else if (m.state === 'ahead')
    el.textContent = `"${m.target}" is line ${m.line.toLocaleString()}: opened beside (the table shows it once the index gets there)`;
  else if (m.state === 'filtered')
    el.textContent = `"${m.target}" is line ${m.line.toLocaleString()}: opened beside (the filter or search hides it from the table)`;
}

/** The questions view in one line: prompt-only records are a dataset, not failures. */
function drawQuestions(line: string | undefined): void {
  line ??= '';
  const el = $('questions');
  el.hidden = line === '';
  el.textContent = line ? `Questions: ${line}${done ? '' : ' (so far)'}` : '';
}

// First paint: the first page came embedded in the HTML.
drawRows(init.first);
drawQuestions(init.questions);
$('pageinfo').textContent = ' page 1 ';
$('status').textContent = ' · indexing…';
// The host re-sets this page's HTML until it hears from it (a stalled script load is otherwise a blank panel).
vscode.postMessage({ type: 'ready' });
