// Problems lists the language server's findings for files open in an editor tab only. VS Code keeps a text
// document open in the extension host after its tab closed (and opens some no tab ever shows), so the server
// never hears didClose and its findings would stay: 70 problems of closed rollout files in the status bar, and
// clicking one throws a workbench error. The last list the server sent is kept per file, so reopening a
// tab shows it again without asking the server (which re-sends only on a change).
import * as vscode from 'vscode';
import type { Middleware } from 'vscode-languageclient/node';

/** The URIs of files shown in a text tab (a diff tab shows both sides). */
function tabUris(tab: vscode.Tab): vscode.Uri[] {
  const input = tab.input;
  if (input instanceof vscode.TabInputText) return [input.uri];
  if (input instanceof vscode.TabInputTextDiff) return [input.original, input.modified];
  return [];
}

function shownInTab(uri: string): boolean {
  return vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => tabUris(t).some((u) => u.toString() === uri)));
}

export class OpenFileDiagnostics implements vscode.Disposable {
  private readonly last = new Map<string, { uri: vscode.Uri; diagnostics: vscode.Diagnostic[] }>();
  private readonly subscription: vscode.Disposable;
  /** The client's collection, known once it has started. */
  collection: vscode.DiagnosticCollection | undefined;

  constructor() {
    this.subscription = vscode.window.tabGroups.onDidChangeTabs((e) => this.tabsChanged(e));
  }

  readonly middleware: Middleware = {
    handleDiagnostics: (uri, diagnostics, next) => {
      const key = uri.toString();
      if (diagnostics.length) this.last.set(key, { uri, diagnostics });
      else this.last.delete(key);
      next(uri, shownInTab(key) ? diagnostics : []);
    },
  };

  private tabsChanged(e: vscode.TabChangeEvent): void {
    const c = this.collection;
    if (!c) return;
    for (const tab of e.closed) {
      for (const uri of tabUris(tab)) if (!shownInTab(uri.toString())) c.delete(uri);
    }
    for (const tab of [...e.opened, ...e.changed]) {
      for (const uri of tabUris(tab)) {
        const kept = this.last.get(uri.toString());
        if (kept && !c.has(uri)) c.set(kept.uri, kept.diagnostics);
      }
    }
  }

  dispose(): void {
    this.subscription.dispose();
    this.last.clear();
  }
}
