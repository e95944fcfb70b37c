// vscode.NotebookSerializer for trajectory files: a thin adapter over codec.ts (which holds all the logic and is
// tested without VS Code). Files above the large-file threshold become a one-cell stub that hands the file to the
// paged trajectory browser, so a 500 MB file is never parsed into cells; so do files that would make more cells
// than VS Code handles fluidly (threshold.ts).
import * as vscode from 'vscode';
import { readConfig } from '../../config';
import type { RewardParams } from '../../../core/rewards';
import { CellData, NotebookContent, NotebookRewards, SaveError, decodeNotebook, notebookToText } from './codec';
import { META_KEY, NotebookMeta } from './cells';
import { NotebookLimits, TooLarge, describeTooLarge, tooLargeBeforeParsing, tooManyCells } from './threshold';

/** NotebookMeta.readonly of the large-file stub (the opener looks for it). */
export const LARGE_FILE_REASON = 'large file: opened in the trajectory browser';

export function rewardOptions(): { scheme: ReturnType<typeof readConfig>['rewardScheme']; params: RewardParams } {
  const c = readConfig();
  return {
    scheme: c.rewardScheme,
    params: { c: c.otcC, alpha: c.otcAlpha, strictness: c.strictness, tools: c.tools, dialect: c.dialect },
  };
}

export function largeFileBytes(): number {
  return Math.max(1, readConfig().notebookLargeFileMB) * 1024 * 1024;
}

export function notebookLimits(): NotebookLimits {
  return { maxBytes: largeFileBytes(), maxCells: Math.max(1, readConfig().notebookMaxCells) };
}

/** Whole-file rewards of view files about to be opened, by their exact text (consumed on open). */
export const viewRewards = new Map<string, NotebookRewards>();
/**
 * Record views about to be opened (recordView.ts), by their exact text: the line and file the record comes from.
 * A serializer is given bytes, never the document's URI, so the file system provider leaves this beside them.
 */
export const recordViews = new Map<string, { line: number; file: string }>();

export class TrajectorySerializer implements vscode.NotebookSerializer {
  deserializeNotebook(content: Uint8Array): vscode.NotebookData {
    const limits = notebookLimits();
    const early = tooLargeBeforeParsing(content, limits);
    if (early) return toVscode(largeFileStub(early));
    const options = rewardOptions();
    // A filter/sort view shows the rewards of the whole file it came from (OTC-GRPO's n), not of the subset.
    const text = viewRewards.size || recordViews.size ? new TextDecoder().decode(content) : '';
    const rewards = viewRewards.get(text);
    viewRewards.delete(text);
    const within = recordViews.get(text);
    recordViews.delete(text);
    const decoded = decodeNotebook(content, {
      ...options,
      ...(rewards ? { rewards } : {}),
      ...(within ? { within } : {}),
    });
    const late = tooManyCells(decoded.cells.length, limits);
    return toVscode(late ? largeFileStub(late) : decoded);
  }

  serializeNotebook(data: vscode.NotebookData): Uint8Array {
    try {
      return new TextEncoder().encode(notebookToText(fromVscode(data)));
    } catch (e) {
      // VS Code shows the message of a failed save; make it say what and why.
      if (e instanceof SaveError) throw new Error(`CoA Studio: ${e.message}`, { cause: e });
      throw new Error(`CoA Studio: cannot save the trajectory notebook: ${(e as Error).message}`, { cause: e });
    }
  }
}

function largeFileStub(t: TooLarge): NotebookContent {
  const meta: NotebookMeta = { trailer: '', readonly: LARGE_FILE_REASON };
  const text = `**${describeTooLarge(t)}**: this file opens in the paged trajectory browser instead. [Open the trajectory browser](command:coaStudio.openTrajectoryBrowser)`;
  return { cells: [{ kind: 'markup', value: text, languageId: 'markdown' }], metadata: { [META_KEY]: meta } };
}

export function toVscode(content: NotebookContent): vscode.NotebookData {
  const cells = content.cells.map((c) => {
    const cell = new vscode.NotebookCellData(
      c.kind === 'markup' ? vscode.NotebookCellKind.Markup : vscode.NotebookCellKind.Code,
      c.value,
      c.languageId,
    );
    cell.metadata = c.metadata;
    if (c.outputs) {
      cell.outputs = c.outputs.map(
        (items) =>
          new vscode.NotebookCellOutput(
            items.map((i) =>
              typeof i.data === 'string'
                ? vscode.NotebookCellOutputItem.text(i.data, i.mime)
                : i.mime === 'application/vnd.code.notebook.error'
                  ? vscode.NotebookCellOutputItem.error(i.data as Error)
                  : vscode.NotebookCellOutputItem.json(i.data, i.mime),
            ),
          ),
      );
    }
    return cell;
  });
  const data = new vscode.NotebookData(cells);
  data.metadata = content.metadata;
  return data;
}

export function fromVscode(data: vscode.NotebookData): { cells: CellData[]; metadata: { [key: string]: unknown } } {
  return {
    cells: data.cells.map((c) => ({
      kind: c.kind === vscode.NotebookCellKind.Markup ? 'markup' : 'code',
      value: c.value,
      languageId: c.languageId,
      metadata: c.metadata,
    })),
    metadata: data.metadata ?? {},
  };
}

/** The text of an open notebook as it would be saved (edits included). */
export function notebookDocumentText(doc: vscode.NotebookDocument): string {
  return notebookToText({
    cells: doc.getCells().map((c) => ({
      kind: c.kind === vscode.NotebookCellKind.Markup ? 'markup' : 'code',
      value: c.document.getText(),
      metadata: c.metadata,
    })),
    metadata: doc.metadata,
  });
}
