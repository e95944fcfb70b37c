// ★ Fork a trajectory: in a trajectory notebook (the record view above all), pick a step, edit it or not, and
// "CoA: Fork Trajectory from This Step" regenerates the rest with the checkpoint (src/replay: the step cells up to
// this one are given to the model as they now read; after an action, its observation comes first). The fork is a
// record of its own, appended to `<file>.forks.coa.jsonl` beside the source and opened in its record view beside
// the original, which is reverted to what it was: the original and its fork side by side, each with its reward.
import * as vscode from 'vscode';
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { serializeRecord, type TrajectoryRecord } from '../../../core/record';
import { formatOf } from '../../../core/rewards';
import { replayQuestion, type ReplayMode } from '../../../replay/agent';
import { CancelledError } from '../../../replay/generate';
import { forkRecord } from '../../../replay/fork';
import { describeSettings } from '../../../replay/runSettings';
import { requireTrust } from '../../workspace';
import { cellMeta, isTrajectoryNotebook } from '../notebook/cells';
import { RECORD_SCHEME } from '../notebook/recordView';
import {
  type State,
  checkpointFor,
  envTool,
  exportIfNeeded,
  loadModel,
  recordOf,
  sampling,
  settingsFor,
  sourceFile,
} from './state';

/** `coaStudio.forkFromStep` (the step cell's toolbar passes the cell; the palette uses the selected one). */
export async function forkFromStep(s: State, arg?: unknown): Promise<void> {
  if (!(await requireTrust('Fork'))) return;
  const cell = cellOf(arg);
  if (!cell)
    return void vscode.window.showInformationMessage(
      'CoA: select a step cell of a trajectory (think, action, observation, …) to fork from.',
    );
  const meta = cellMeta(cell.metadata);
  const found = recordOf(cell.notebook, cell);
  if (meta?.kind !== 'step' || typeof found === 'string')
    return void vscode.window.showInformationMessage(
      `CoA: fork from a step cell of a record. ${typeof found === 'string' ? found : ''}`,
    );
  const source = found.record;
  // The record's steps up to this one, as they read now (the user's edit included).
  const cells = cell.notebook.getCells(new vscode.NotebookRange(cell.index - meta.index, cell.index + 1));
  const prefix = cells.map((c) => c.document.getText()).join('');
  const edited = prefix !== source.response.slice(0, meta.end);
  const file = sourceFile(cell.notebook.uri);
  const chosen = await checkpointFor(s, file);
  if (!chosen) return;
  const { checkpoint } = chosen;
  // RL-1 rollouts were generated with the policy writing its own observations; anything else with the real tools.
  const mode: ReplayMode = source.meta?.stage === 'rl1' ? 'simulated' : 'env';
  const at = { step: meta.index, kind: meta.step, edited };
  const title = `Forking ${source.id} from step ${meta.index + 1} (${meta.step}${edited ? ', edited' : ''})`;
  const forked = await vscode.window
    .withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        const ctl = new AbortController();
        token.onCancellationRequested(() => ctl.abort());
        // The first fork of a stage with only its final/ model exports it here, inside this progress.
        await exportIfNeeded(s, chosen, ctl.signal, (message) => progress.report({ message }));
        progress.report({ message: `loading ${vscode.workspace.asRelativePath(checkpoint)}` });
        const model = await loadModel(s, checkpoint);
        const settings = settingsFor(checkpoint, source, model);
        s.log.info(`fork of ${source.id} at step ${meta.index + 1}: ${describeSettings(settings)}`);
        const tool = mode === 'env' ? await envTool(s, checkpoint, settings) : undefined;
        const run = sampling();
        let steps = 0;
        const result = await replayQuestion(model, source.question, {
          mode,
          tool,
          prefix,
          signal: ctl.signal,
          ...run,
          promptTemplate: settings.promptTemplate,
          maxTurns: settings.maxTurns,
          maxNewTokens: settings.maxNewTokens,
          maxObservationTokens: settings.maxObsTokens,
          maxTotal: settings.maxLen ?? undefined,
          onStep: () => progress.report({ message: `${++steps} step${steps === 1 ? '' : 's'} generated` }),
        });
        return forkRecord(source, result, at, {
          mode,
          checkpoint,
          dialect: model.info.dialect,
          scheme: settings.scheme,
          params: settings.params,
          ...run,
        });
      },
    )
    .then(
      (r) => r,
      (e: Error) => {
        if (!(e instanceof CancelledError))
          void vscode.window.showErrorMessage(`CoA: the fork of ${source.id} failed: ${e.message}`);
        return undefined;
      },
    );
  if (!forked) return;
  const where = appendFork(file, forked);
  s.log.info(`fork ${forked.id} written to ${where.file}:${where.line}`);
  // The original goes back to what it was (its own reward below it); the fork opens beside it.
  if (cell.notebook.isDirty && cell.notebook.uri.scheme === RECORD_SCHEME)
    await restoreOriginal(cell.notebook, source, found.last);
  await s.seams.records.show(
    { file: vscode.Uri.file(where.file), line: where.line },
    { viewColumn: vscode.ViewColumn.Beside, preview: false },
  );
  const before = source.reward ? `${source.reward.total} (${source.reward.scheme})` : 'not stored';
  void vscode.window.showInformationMessage(
    `CoA: ${forked.id} — reward ${before} → ${forked.reward!.total} (${forked.reward!.scheme}); answer ${JSON.stringify(answerOf(source))} → ${JSON.stringify(answerOf(forked))}.`,
  );
}

/**
 * The record's step cells given back their text as read, then the view reverted (not dirty). Revert alone cleared
 * the dirty mark but left the edited text on screen: VS Code keeps a cell whose content it judges unchanged, and
 * both panes showed the edit as if the original had said it.
 */
async function restoreOriginal(
  notebook: vscode.NotebookDocument,
  source: TrajectoryRecord,
  last: number,
): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  for (let i = 0; i <= last; i++) {
    const c = notebook.cellAt(i);
    const m = cellMeta(c.metadata);
    if (m?.kind !== 'step') continue;
    const text = source.response.slice(m.start, m.end);
    if (c.document.getText() !== text)
      edit.replace(
        c.document.uri,
        new vscode.Range(c.document.positionAt(0), c.document.positionAt(c.document.getText().length)),
        text,
      );
  }
  if (edit.size) await vscode.workspace.applyEdit(edit);
  await vscode.window.showNotebookDocument(notebook);
  await vscode.commands.executeCommand('workbench.action.files.revert');
}

function cellOf(arg: unknown): vscode.NotebookCell | undefined {
  if (arg && typeof arg === 'object' && 'notebook' in arg && 'index' in arg && 'document' in arg)
    return arg as vscode.NotebookCell;
  const editor = vscode.window.activeNotebookEditor;
  if (!editor || !isTrajectoryNotebook(editor.notebook.notebookType) || !editor.notebook.cellCount) return undefined;
  return editor.notebook.cellAt(Math.min(editor.selection?.start ?? 0, editor.notebook.cellCount - 1));
}

/** Appends the fork to `<file>.forks.coa.jsonl` beside its source (a temp folder for a notebook with no file). */
function appendFork(file: string | null, fork: TrajectoryRecord): { file: string; line: number } {
  const out = file
    ? join(dirname(file), `${basename(file).replace(/(\.coa)?\.jsonl$/, '')}.forks.coa.jsonl`)
    : join(mkdtempSync(join(tmpdir(), 'coa-studio-fork-')), 'forks.coa.jsonl');
  const before = existsSync(out) ? readFileSync(out, 'utf8') : '';
  const lead = before && !before.endsWith('\n') ? '\n' : '';
  appendFileSync(out, `${lead}${serializeRecord(fork)}\n`);
  return { file: out, line: (before + lead).split('\n').length };
}

/** The answer as the reward reads it (the record's dialect). */
const answerOf = (r: TrajectoryRecord): string | null => formatOf(r).answer;
