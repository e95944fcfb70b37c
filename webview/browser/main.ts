// The trajectory browser page: a table of one page of records (filters, sort, paging, jump) and the selected
// record's steps. Draws the first page from the embedded state at once; everything else comes from the host.
import type { BrowserQuery, QueryResult } from '../../src/extension/providers/browser/query';
import type { RecordSummary } from '../../src/extension/providers/browser/summary';

interface InitialState {
  file: string;
  size: number;
  pageSize: number;
  first: RecordSummary[];
  /** The questions line (records without responses yet), '' when there are none. */
  questions: string;
}
declare function acquireVsCodeApi(): { postMessage(m: unknown): void };

const vscode = acquireVsCodeApi();
const init = JSON.parse(document.getElementById('initial-state')!.textContent!) as InitialState;
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
tr.row:hover { background: var(--vscode-list-hoverBackground); cursor: pointer; }
tr.sel { background: var(--vscode-list-activeSelectionBackground); color: var(--vscode-list-activeSelectionForeground); }
.ok { color: var(--vscode-testing-iconPassed, green); } .bad { color: var(--vscode-errorForeground, red); }
.status { color: var(--vscode-descriptionForeground); }
.w4 { width: 4em; } .w5 { width: 5em; } .w10 { width: 10em; }
pre { white-space: pre-wrap; font-family: var(--vscode-editor-font-family); background: var(--vscode-textCodeBlock-background); padding: 6px; }
.s-think { color: var(--vscode-descriptionForeground); } .s-action { color: var(--vscode-symbolIcon-functionForeground, #b180d7); font-weight: bold; }
.s-observation { color: var(--vscode-symbolIcon-stringForeground, #ce9178); } .s-answer { color: var(--vscode-testing-iconPassed, #73c991); font-weight: bold; }
`;
document.head.appendChild(style);

const root = document.createElement('div');
root.innerHTML = `
<div class="bar"><strong id="file"></strong><span class="status" id="status"></span></div>
<div class="bar" id="questions" hidden></div>
<div class="bar">
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
</div>
<div class="bar"><button id="prev">◀</button><span id="pageinfo"></span><button id="next">▶</button></div>
<table><thead><tr><th>line</th><th>id</th><th>reward</th><th>EM</th><th>tools</th><th>stage</th><th>step</th><th>question</th></tr></thead><tbody id="rows"></tbody></table>
<div id="detail"></div>`;
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

for (const id of ['failures', 'errors', 'em', 'minReward', 'tools', 'stage', 'step', 'sort', 'order']) $(id).addEventListener('change', () => send(0));
$('prev').addEventListener('click', () => send(Math.max(0, (query.page ?? 0) - 1)));
$('next').addEventListener('click', () => send((query.page ?? 0) + 1));
$('jump').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') vscode.postMessage({ type: 'jump', query, target: $<HTMLInputElement>('jump').value });
});

const fmt = (x: number | null) => (x === null ? '—' : String(Math.round(x * 1000) / 1000));

function drawRows(rows: RecordSummary[]): void {
  const body = $('rows');
  body.replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement('tr');
      tr.className = 'row';
      tr.dataset.i = String(r.i);
      const cells = r.error
        ? [String(r.line), '', 'bad line', '', '', '', '', r.error]
        : [String(r.line), r.id, r.isQuestion ? 'question' : fmt(r.reward), fmt(r.em), fmt(r.toolCalls), r.stage ?? '', r.step === null ? '' : String(r.step), r.question];
      cells.forEach((text, k) => {
        const td = document.createElement('td');
        td.textContent = text;
        if (k === 2) td.className = r.isQuestion ? '' : r.error || (r.reward ?? 0) <= 0 || r.formatOk === false ? 'bad' : 'ok';
        tr.appendChild(td);
      });
      tr.addEventListener('click', () => {
        body.querySelectorAll('tr.sel').forEach((x) => x.classList.remove('sel'));
        tr.classList.add('sel');
        vscode.postMessage({ type: 'open', i: r.i });
      });
      return tr;
    }),
  );
}

function drawStatus(bytes: number, size: number): void {
  const pct = size ? Math.round((100 * bytes) / size) : 100;
  $('status').textContent = done ? ` · ${indexed.toLocaleString()} records indexed` : ` · indexing… ${pct}% (${indexed.toLocaleString()} records so far)`;
}

function drawPage(result: QueryResult): void {
  drawRows(result.rows);
  const pages = Math.max(1, Math.ceil(result.total / result.pageSize));
  $('pageinfo').textContent = ` page ${result.page + 1} / ${pages}${done ? '' : '+'} · ${result.total.toLocaleString()} matching `;
  query.page = result.page;
}

interface RecordMsg {
  row: RecordSummary;
  record: { id: string; question: string; golden_answers?: string[]; response: string } | null;
  raw: string | null;
  segments: { kind: string; start: number; end: number }[];
}

function drawRecord(m: RecordMsg): void {
  const detail = $('detail');
  detail.replaceChildren();
  const h = document.createElement('h3');
  h.textContent = m.record ? `${m.record.id} (line ${m.row.line})` : `line ${m.row.line}: ${m.row.error ?? ''}`;
  detail.appendChild(h);
  const pre = document.createElement('pre');
  if (!m.record) pre.textContent = m.raw ?? '';
  else {
    const q = document.createElement('p');
    q.textContent = `Question: ${m.record.question} — golden: ${(m.record.golden_answers ?? []).join(' · ')}`;
    detail.appendChild(q);
    for (const s of m.segments) {
      const span = document.createElement('span');
      span.className = `s-${s.kind}`;
      span.textContent = m.record.response.slice(s.start, s.end);
      pre.appendChild(span);
    }
    const open = document.createElement('button');
    open.textContent = 'Open as notebook';
    open.addEventListener('click', () => vscode.postMessage({ type: 'notebook', i: m.row.i }));
    detail.appendChild(open);
  }
  detail.appendChild(pre);
}

window.addEventListener('message', (e: MessageEvent) => {
  const m = e.data;
  if (m.type === 'progress') {
    indexed = m.indexed;
    drawStatus(m.bytes, m.size);
  } else if (m.type === 'page') {
    indexed = m.indexed;
    done = m.done;
    drawStatus(m.bytes, m.size);
    const sel = $<HTMLSelectElement>('stage');
    const have = new Set(Array.from(sel.options, (o) => o.value));
    for (const s of m.stages as string[]) if (!have.has(s)) sel.add(new Option(s, s));
    drawQuestions(m.questions ?? '');
    drawPage(m.result);
  } else if (m.type === 'record') drawRecord(m);
  else if (m.type === 'error') $('status').textContent = ` · ${m.message}`;
});

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
