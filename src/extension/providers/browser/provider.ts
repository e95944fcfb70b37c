// The paged, read-only trajectory browser (custom editor) for files too large for the notebook. The first page is
// read directly and embedded in the page's HTML; the full index is built in a worker thread while the user
// already browses; queries run on the index so far and are re-run as it grows.
import * as vscode from 'vscode';
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { webviewHtml } from '../../webview/html';
import { renderUntilReady } from '../../webview/readyWatchdog';
import { textToNotebook } from '../notebook/codec';
import { NOTEBOOK_TYPE } from '../notebook/cells';
import { rewardOptions, toVscode } from '../notebook/serializer';
import { checkFormat } from '../../../core/rules';
import { parseRecordLine } from '../../../core/jsonl';
import { firstRecords, readLines } from './indexer';
import { BrowserQuery, findPage, questionsLine, runQuery, stagesOf } from './query';
import { BROWSER_VIEW_TYPE, RecordSummary } from './summary';
import type { WorkerMessage } from './worker';

export { BROWSER_VIEW_TYPE };
const PAGE_SIZE = 50;

/** Messages from the page. */
type FromPage = { type: 'ready' } | { type: 'query'; query: BrowserQuery } | { type: 'jump'; query: BrowserQuery; target: string } | { type: 'open'; i: number } | { type: 'notebook'; i: number };

export function registerTrajectoryBrowser(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): void {
  context.subscriptions.push(
    vscode.window.registerCustomEditorProvider(BROWSER_VIEW_TYPE, new TrajectoryBrowserProvider(context, log), {
      webviewOptions: { retainContextWhenHidden: false },
      supportsMultipleEditorsPerDocument: true,
    }),
  );
}

class TrajectoryBrowserProvider implements vscode.CustomReadonlyEditorProvider {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => {} };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    const path = document.uri.fsPath;
    const size = statSync(path).size;
    const opts = rewardOptions();
    const first = await firstRecords(path, PAGE_SIZE, opts);
    const extensionUri = this.context.extensionUri;
    panel.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist')] };
    const initialState = { file: vscode.workspace.asRelativePath(document.uri), size, pageSize: PAGE_SIZE, first, questions: questionsLine(first) };
    const watchdog = renderUntilReady(
      panel.webview,
      // Each call renders afresh: a new nonce per attempt.
      () => webviewHtml(panel.webview, extensionUri, { title: 'Trajectory browser', scripts: ['dist/webview/browser.js'], initialState }, vscode.Uri.joinPath),
      {
        onStall: (attempt, gaveUp) => {
          if (!gaveUp) return this.log.warn(`trajectory browser for ${path}: no word from the page; reloading it (attempt ${attempt})`);
          this.log.error(`trajectory browser for ${path}: the page never started after ${attempt} reloads`);
          // A new editor gets a new webview host; the stuck one is closed rather than left blank.
          void vscode.window.showWarningMessage(`CoA: the trajectory browser for ${vscode.workspace.asRelativePath(document.uri)} did not start (see the CoA Studio log).`, 'Reopen').then((pick) => {
            if (pick !== 'Reopen') return;
            panel.dispose();
            void vscode.commands.executeCommand('vscode.openWith', document.uri, BROWSER_VIEW_TYPE);
          });
        },
      },
    );

    const index: RecordSummary[] = [];
    let done = false;
    let bytes = 0;
    let last: BrowserQuery = { pageSize: PAGE_SIZE };
    const post = (m: unknown) => void panel.webview.postMessage(m);
    let queried = false;
    let pageFull = true;
    const answer = (q: BrowserQuery) => {
      last = q;
      queried = true;
      const result = runQuery(index, q);
      pageFull = result.rows.length === result.pageSize;
      post({ type: 'page', result, indexed: index.length, done, bytes, size, stages: stagesOf(index), questions: questionsLine(index.length ? index : first) });
    };

    const worker = new Worker(vscode.Uri.joinPath(extensionUri, 'dist', 'browser-worker.js').fsPath, { workerData: { path, ...opts } });
    let lastPost = 0;
    worker.on('message', (m: WorkerMessage) => {
      if (m.type === 'batch') {
        for (const r of m.rows as RecordSummary[]) index.push(r);
        bytes = m.bytes;
        // Progress at most ~5×/s; the page re-queries when it likes.
        const now = Date.now();
        if (now - lastPost > 200) {
          lastPost = now;
          post({ type: 'progress', indexed: index.length, bytes, size });
          // A query asked before enough of the file was indexed fills its page as records arrive.
          if (queried && !pageFull) answer(last);
        }
      } else if (m.type === 'done') {
        done = true;
        answer(last);
      } else {
        post({ type: 'error', message: `indexing ${path} failed: ${m.message}` });
      }
    });
    worker.on('error', (e) => post({ type: 'error', message: `indexing ${path} failed: ${e.message}` }));
    panel.onDidDispose(() => {
      watchdog.dispose();
      void worker.terminate();
    });

    panel.webview.onDidReceiveMessage(async (m: FromPage) => {
      if (m.type === 'query') answer(m.query);
      else if (m.type === 'jump') {
        const hit = findPage(index, m.query, m.target);
        if (!hit) post({ type: 'error', message: `no record "${m.target}" ${done ? '' : 'in the part indexed so far'}` });
        else {
          answer({ ...m.query, page: hit.page });
          await this.sendRecord(path, index[hit.i], post);
        }
      } else if (m.type === 'open') {
        const row = index[m.i] ?? first[m.i];
        if (row) await this.sendRecord(path, row, post);
      } else if (m.type === 'notebook') {
        const row = index[m.i] ?? first[m.i];
        if (!row) return;
        const [raw] = await readLines(path, [row]);
        const nb = toVscode(textToNotebook(raw, { ...opts, source: path }));
        await vscode.window.showNotebookDocument(await vscode.workspace.openNotebookDocument(NOTEBOOK_TYPE, nb));
      }
    });
  }

  /** One record, read at its offset, with its step segments for colouring. */
  private async sendRecord(path: string, row: RecordSummary, post: (m: unknown) => void): Promise<void> {
    const [raw] = await readLines(path, [row]);
    const entry = parseRecordLine(raw, row.line);
    const r = entry.record;
    const segments = r ? checkFormat(r.response, { dialect: r.dialect ?? rewardOptions().params.dialect }).segments.map((s) => ({ kind: s.kind, start: s.start, end: s.end })) : [];
    post({ type: 'record', row, record: r ?? null, raw: r ? null : raw.slice(0, 20000), segments });
  }
}
