// GRPO group view: a step's groups of a rollouts file — each group's G samples side by side with their reward
// components and the advantage the trainer stored, zero-variance groups marked (src/core/groups.ts) — in a webview
// (dist/webview/group.js). Opened from a record view (that record's step and group), from the live panel's step
// list (a chart step), or with a file and a step. A sample opens in the record view.
import * as vscode from 'vscode';
import type { RecordViews } from '../notebook/recordView';
import { webviewHtml } from '../../webview/html';
import { groupsOfStep } from '../../../core/groups';
import { parseRecordLine } from '../../../core/jsonl';
import { readLineAt } from '../notebook/recordFile';
import { recordViewSource } from '../notebook/recordView';
import { recordsOfStep } from './read';
import type { GroupPageState, GroupPageToHost } from '../../../protocols/group';

/** Responses on the page are cut past this (the record view shows them whole). */
export const MAX_RESPONSE_CHARS = 4000;

export interface GroupTarget {
  file: vscode.Uri;
  step: number;
  group?: string;
}

/** What the view needs of the extension: where its page's script is, and the record views. */
export interface GroupViewHost {
  extensionUri: vscode.Uri;
  records: RecordViews;
}

export async function openGroupView(ctx: GroupViewHost, t: GroupTarget): Promise<vscode.WebviewPanel | undefined> {
  const rows = await recordsOfStep(t.file.fsPath, t.step);
  const data = groupsOfStep(rows, t.step);
  if (!data.groups.length) {
    void vscode.window.showInformationMessage(
      `CoA: ${vscode.workspace.asRelativePath(t.file)} has no GRPO group at step ${t.step} (records with meta.step and meta.group)`,
    );
    return undefined;
  }
  for (const g of data.groups)
    for (const s of g.samples)
      if (s.response.length > MAX_RESPONSE_CHARS)
        s.response = `${s.response.slice(0, MAX_RESPONSE_CHARS)}… (${s.response.length - MAX_RESPONSE_CHARS} more characters: open the sample)`;
  const stage = rows.find((r) => typeof r.record.meta?.stage === 'string')?.record.meta?.stage ?? null;
  const state: GroupPageState = {
    file: vscode.workspace.asRelativePath(t.file),
    stage,
    data,
    selected: t.group ?? null,
  };
  const panel = vscode.window.createWebviewPanel(
    'coaStudio.grpoGroup',
    `GRPO groups: ${stage ?? ''} step ${t.step}`,
    { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
    {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(ctx.extensionUri, 'dist', 'webview')],
    },
  );
  panel.webview.onDidReceiveMessage((m: GroupPageToHost) => {
    if (m?.type === 'openRecord' && Number.isInteger(m.line) && m.line > 0)
      void ctx.records.show({ file: t.file, line: m.line });
  });
  panel.webview.html = webviewHtml(
    panel.webview,
    ctx.extensionUri,
    { title: 'GRPO groups', scripts: ['dist/webview/group.js'], initialState: state, body: '<div id="app"></div>' },
    vscode.Uri.joinPath,
  );
  return panel;
}

/** `coaStudio.openGroup`: `{ file, step, group? }`, or the active record view's record (its step and group). */
export async function openGroupCommand(ctx: GroupViewHost, arg?: unknown): Promise<void> {
  const o = (arg && typeof arg === 'object' ? arg : {}) as { file?: unknown; step?: unknown; group?: unknown };
  if (o.file !== undefined && Number.isInteger(o.step)) {
    const file = o.file instanceof vscode.Uri ? o.file : vscode.Uri.file(String(o.file));
    await openGroupView(ctx, {
      file,
      step: o.step as number,
      group: o.group === undefined ? undefined : String(o.group),
    });
    return;
  }
  const uri = vscode.window.activeNotebookEditor?.notebook.uri;
  const src = uri && recordViewSource(uri);
  if (!src) {
    void vscode.window.showInformationMessage(
      'CoA: Show GRPO Group works on a record view of an RL rollout (open one from the live panel or the trajectory browser).',
    );
    return;
  }
  const at = await readLineAt(src.file.fsPath, src.line);
  const r = parseRecordLine(at.bytes.toString('utf8'), src.line).record;
  const step = r?.meta?.step;
  if (!r || typeof step !== 'number' || r.meta?.group === undefined) {
    void vscode.window.showInformationMessage(
      `CoA: ${r?.id ?? `line ${src.line}`} is not a GRPO sample (no meta.step and meta.group)`,
    );
    return;
  }
  await openGroupView(ctx, { file: src.file, step, group: String(r.meta.group) });
}
