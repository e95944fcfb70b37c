// The paged, read-only trajectory browser (custom editor) for files too large for the notebook. The first page is
// read directly and embedded in the page's HTML; the full index is built in a worker thread while the user
// already browses; queries run on the index so far and are re-run as it grows.
import * as vscode from 'vscode';
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { webviewHtml } from '../../webview/html';
import { renderUntilReady } from '../../webview/readyWatchdog';
import { rewardOptions } from '../notebook/serializer';
import type { RecordViews } from '../notebook/recordView';
import { firstRecords, readOptions } from './indexer';
import { locateRecord } from './locate';
import { findIndexed, findPage, questionsLine, runQuery, stagesOf, tableKind } from './query';
import { BROWSER_VIEW_TYPE } from './summary';
import type { WorkerMessage } from './worker';
import type {
  BrowserInitialState,
  BrowserQuery,
  BrowserSearchState,
  BrowserToHost,
  HostToBrowser,
  RecordSummary,
  SearchField,
} from '../../../protocols/browser';

export { BROWSER_VIEW_TYPE };
const PAGE_SIZE = 50;

export function registerTrajectoryBrowser(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  records: RecordViews,
): void {
  context.subscriptions.push(
    vscode.window.registerCustomEditorProvider(
      BROWSER_VIEW_TYPE,
      new TrajectoryBrowserProvider(context, log, records),
      {
        webviewOptions: { retainContextWhenHidden: false },
        supportsMultipleEditorsPerDocument: true,
      },
    ),
  );
}

class TrajectoryBrowserProvider implements vscode.CustomReadonlyEditorProvider {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly records: RecordViews,
  ) {}

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => {} };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    const path = document.uri.fsPath;
    const size = statSync(path).size;
    const opts = rewardOptions();
    const t0 = performance.now();
    const first = await firstRecords(path, PAGE_SIZE, opts);
    this.log.info(
      `trajectory browser: ${path} (${(size / 1e6).toFixed(1)} MB): first page (${first.length} records) read in ${(performance.now() - t0).toFixed(1)} ms; indexing the rest`,
    );
    const extensionUri = this.context.extensionUri;
    panel.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist')] };
    const initialState: BrowserInitialState = {
      file: vscode.workspace.asRelativePath(document.uri),
      size,
      pageSize: PAGE_SIZE,
      first,
      questions: questionsLine(first),
      kind: tableKind(first),
    };
    const watchdog = renderUntilReady(
      panel.webview,
      // Each call renders afresh: a new nonce per attempt.
      () =>
        webviewHtml(
          panel.webview,
          extensionUri,
          { title: 'Trajectory browser', scripts: ['dist/webview/browser.js'], initialState },
          vscode.Uri.joinPath,
        ),
      {
        onStall: (attempt, gaveUp) => {
          if (!gaveUp)
            return this.log.warn(
              `trajectory browser for ${path}: no word from the page; reloading it (attempt ${attempt})`,
            );
          this.log.error(`trajectory browser for ${path}: the page never started after ${attempt} reloads`);
          // A new editor gets a new webview host; the stuck one is closed rather than left blank.
          void vscode.window
            .showWarningMessage(
              `CoA: the trajectory browser for ${vscode.workspace.asRelativePath(document.uri)} did not start (see the CoA Studio log).`,
              'Reopen',
            )
            .then((pick) => {
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
    const post = (m: HostToBrowser) => void panel.webview.postMessage(m);
    let queried = false;
    let pageFull = true;
    const search = new TextSearch(workerPath(extensionUri), path, (state) => {
      post({ type: 'search', ...state });
      answer(last);
    });
    const answer = (q: BrowserQuery) => {
      last = q;
      queried = true;
      const result = runQuery(index, q, search.hits);
      pageFull = result.rows.length === result.pageSize;
      post({
        type: 'page',
        result,
        indexed: index.length,
        done,
        bytes,
        size,
        stages: stagesOf(index),
        questions: questionsLine(index.length ? index : first),
      });
    };

    const worker = new Worker(workerPath(extensionUri), { workerData: { path, ...opts } });
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
      } else if (m.type === 'error') {
        post({ type: 'error', message: `indexing ${path} failed: ${m.message}` });
      }
    });
    worker.on('error', (e) => post({ type: 'error', message: `indexing ${path} failed: ${e.message}` }));
    panel.onDidDispose(() => {
      watchdog.dispose();
      search.stop();
      void worker.terminate();
    });

    /** A record of the file in its record view, beside the browser (the browser keeps the focus unless asked). */
    const openRecord = async (row: Pick<RecordSummary, 'line' | 'offset' | 'length'>, focus: boolean) => {
      try {
        await this.records.open(
          { file: document.uri, line: row.line, offset: row.offset, length: row.length },
          { viewColumn: vscode.ViewColumn.Beside, preserveFocus: !focus, preview: !focus },
        );
      } catch (e) {
        post({ type: 'error', message: `cannot open line ${row.line}: ${(e as Error).message}` });
      }
    };

    // A jump past the part indexed so far: the record is found in the file itself (locate.ts), from the index's
    // frontier on (what is indexed was looked at already), and opened beside; the table shows it once the index
    // reaches it. A new jump or closing the browser stops the search. Whether the file is a verl dump (whose ids only
    // the index knows) is read once, on the first such jump.
    let locating: AbortController | undefined;
    let verl: Promise<boolean> | undefined;
    const jumpAhead = async (target: string) => {
      const ctl = new AbortController();
      locating = ctl;
      post({ type: 'jump', target, state: 'searching', bytes: 0, size });
      const t0 = Date.now();
      const lastRow = index[index.length - 1];
      const from = lastRow && { offset: lastRow.offset + lastRow.length, line: lastRow.line };
      verl ??= readOptions(path).then((o) => o.parse !== undefined);
      const found = await verl
        .then((isVerl) =>
          locateRecord(path, target, {
            from,
            verl: isVerl,
            signal: ctl.signal,
            onProgress: (b) => post({ type: 'jump', target, state: 'searching', bytes: b, size }),
          }),
        )
        .catch((e: Error) => {
          this.log.warn(`trajectory browser: looking for "${target}" in ${path} failed: ${e.message}`);
          return null;
        });
      if (ctl.signal.aborted) return;
      locating = undefined;
      if (found === 'indexOnly') return post({ type: 'jump', target, state: 'unindexed' });
      if (!found) return post({ type: 'jump', target, state: 'missing' });
      this.log.info(
        `trajectory browser: "${target}" found at line ${found.line} of ${path} in ${Date.now() - t0} ms, before the index (${index.length} records indexed)`,
      );
      post({ type: 'jump', target, state: 'ahead', line: found.line });
      await openRecord(found, false);
    };
    panel.onDidDispose(() => locating?.abort());

    panel.webview.onDidReceiveMessage(async (m: BrowserToHost) => {
      if (m.type === 'query') answer(m.query);
      else if (m.type === 'search') search.start(m.text, m.field);
      else if (m.type === 'cancelSearch') search.cancel();
      else if (m.type === 'jump') {
        locating?.abort();
        locating = undefined;
        const hit = findPage(index, m.query, m.target, search.hits);
        if (hit) {
          answer({ ...m.query, page: hit.page });
          post({ type: 'selected', i: hit.i });
          post({ type: 'jump', target: m.target, state: 'done' });
          await openRecord(index[hit.i], false);
          return;
        }
        // Indexed, but the filter or search hides it: opened all the same (a file search would not find it anew).
        const hidden = findIndexed(index, m.target);
        if (hidden) {
          post({ type: 'jump', target: m.target, state: 'filtered', line: hidden.line });
          await openRecord(hidden, false);
        } else if (done) post({ type: 'jump', target: m.target, state: 'missing' });
        else await jumpAhead(m.target);
      } else if (m.type === 'open') {
        const row = index[m.i] ?? first[m.i];
        if (row) await openRecord(row, m.focus === true);
      }
    });
  }
}

const workerPath = (extensionUri: vscode.Uri) => vscode.Uri.joinPath(extensionUri, 'dist', 'browser-worker.js').fsPath;

/**
 * The browser's text search: one worker per search streaming the file (search.ts); a new search or an empty text
 * stops the one running. `hits` is what it found so far (null: no search), the page's filter.
 */
class TextSearch {
  hits: Set<number> | null = null;
  private worker: Worker | undefined;
  private lastPost = 0;
  private state = { text: '', count: 0, running: false, bytes: 0 };

  constructor(
    private readonly workerFile: string,
    private readonly path: string,
    private readonly report: (state: BrowserSearchState) => void,
  ) {}

  private onChange(state: BrowserSearchState): void {
    this.state = state;
    this.report(state);
  }

  start(text: string, field: SearchField = 'all'): void {
    this.stop();
    const needle = text.trim();
    if (!needle) {
      this.hits = null;
      this.onChange({ text: '', count: 0, running: false, bytes: 0 });
      return;
    }
    const hits = new Set<number>();
    this.hits = hits;
    const worker = new Worker(this.workerFile, { workerData: { path: this.path, search: { text: needle, field } } });
    this.worker = worker;
    let bytes = 0;
    worker.on('message', (m: WorkerMessage) => {
      if (this.worker !== worker) return; // a newer search took over
      if (m.type === 'hits') {
        for (const i of m.hits) hits.add(i);
        bytes = m.bytes;
        const now = Date.now();
        if (now - this.lastPost > 200) {
          this.lastPost = now;
          this.onChange({ text: needle, count: hits.size, running: true, bytes });
        }
      } else if (m.type === 'done') {
        this.worker = undefined;
        void worker.terminate();
        this.onChange({ text: needle, count: hits.size, running: false, bytes });
      } else if (m.type === 'error') {
        this.worker = undefined;
        this.onChange({ text: needle, count: hits.size, running: false, bytes, error: m.message });
      }
    });
    worker.on(
      'error',
      (e) =>
        this.worker === worker &&
        this.onChange({ text: needle, count: hits.size, running: false, bytes, error: e.message }),
    );
    this.onChange({ text: needle, count: 0, running: true, bytes: 0 });
  }

  /** Cancel the running search: its hits so far stay the filter, counted as cut short. */
  cancel(): void {
    if (!this.worker) return;
    this.stop();
    this.onChange({ ...this.state, count: this.hits?.size ?? 0, running: false, error: 'cancelled' });
  }

  stop(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
