// "CoA: Audit Tokens" in a trajectory notebook or a record view: each record's token ids against what their text
// re-tokenizes to with the run's tokenizer (src/core/tokenAudit.ts, the tokenizer found beside the file as `coa
// validate --tokens` finds it). The first divergent token of each drifting record is a COA106 warning on the step
// cell that holds it, at that token — in the cell and in Problems — and a message says what was audited.
import * as vscode from 'vscode';
import { auditTokens, codePointToUtf16, describeDivergence } from '../../../core/tokenAudit';
import { parseRecordLine } from '../../../core/jsonl';
import { findRunTokenizer } from '../../../replay/findTokenizer';
import { Tokenizer } from '../../../replay/tokenizer';
import { cellMeta, isTrajectoryNotebook, type HeaderCellMeta, type StepCellMeta } from '../notebook/cells';
import { recordViewSource } from '../notebook/recordView';

export class TokenAudits implements vscode.Disposable {
  readonly diagnostics = vscode.languages.createDiagnosticCollection('coa-token-audit');
  private readonly tokenizers = new Map<string, Tokenizer>();

  dispose(): void {
    this.diagnostics.dispose();
  }

  /** Audits every record of the active trajectory notebook; returns the number of records that drift. */
  async auditActive(tokenizerPath?: string): Promise<number | undefined> {
    const nb = vscode.window.activeNotebookEditor?.notebook;
    if (!nb || !isTrajectoryNotebook(nb.notebookType)) {
      void vscode.window.showInformationMessage(
        'CoA: Audit Tokens works on a trajectory notebook or a record view with token ids.',
      );
      return undefined;
    }
    const source = recordViewSource(nb.uri)?.file ?? (nb.uri.scheme === 'file' ? nb.uri : undefined);
    const cells = nb.getCells();
    const headers = cells
      .map((c) => ({ c, m: cellMeta(c.metadata) }))
      .filter((x): x is { c: vscode.NotebookCell; m: HeaderCellMeta } => x.m?.kind === 'header');
    const records = headers
      .map((h) => ({ h, r: parseRecordLine(h.m.raw, h.m.line).record }))
      .filter((x) => x.r?.tokens?.ids.length);
    if (!records.length) {
      void vscode.window.showInformationMessage('CoA: no record here carries token ids (tokens.ids) to audit.');
      return undefined;
    }
    const stage = records[0].r!.meta?.stage;
    const path =
      tokenizerPath ?? (source ? findRunTokenizer(source.fsPath, typeof stage === 'string' ? stage : null).path : null);
    if (!path) {
      const pick = await vscode.window.showOpenDialog({
        title: 'The tokenizer this run used (tokenizer.json)',
        filters: { 'tokenizer.json': ['json'] },
      });
      if (!pick?.[0]) return undefined;
      return this.auditActive(pick[0].fsPath);
    }
    let tok = this.tokenizers.get(path);
    if (!tok) this.tokenizers.set(path, (tok = Tokenizer.fromFile(path)));
    const codec = {
      encode: async (t: string) => (await tok!.encode(t)).ids,
      decode: (ids: readonly number[]) => tok!.decode(ids),
    };
    const byCell = new Map<vscode.Uri, vscode.Diagnostic[]>();
    for (const c of cells) this.diagnostics.delete(c.document.uri);
    let drifted = 0;
    let first = '';
    for (const { h, r } of records) {
      const audit = await auditTokens(r!, codec);
      if (!audit?.first) continue;
      drifted++;
      const ids = r!.tokens!.ids;
      let at = r!.tokens!.offsets?.[audit.first.index];
      if (at === undefined) {
        const d = await tok.decodeWithOffsets(ids);
        at = d.text === r!.response ? d.offsets[audit.first.index] : 0;
      }
      at = codePointToUtf16(r!.response, at ?? 0);
      const message = `token drift: ${describeDivergence(audit.first)}`;
      if (!first) first = `${r!.id}: ${message}`;
      // The step cell of this record holding the token's character (its [start, end) in the response).
      const steps = cells.filter((c) => {
        const m = cellMeta(c.metadata);
        return m?.kind === 'step' && m.record === h.m.record;
      });
      const cell =
        steps.find((c) => {
          const m = cellMeta(c.metadata) as StepCellMeta;
          return at! >= m.start && at! < m.end;
        }) ?? steps[0];
      if (!cell) continue;
      const m = cellMeta(cell.metadata) as StepCellMeta;
      const pos = cell.document.positionAt(Math.max(0, at! - m.start));
      const len = Math.max(1, audit.first.text.length);
      const d = new vscode.Diagnostic(
        new vscode.Range(pos, cell.document.positionAt(Math.max(0, at! - m.start) + len)),
        message,
        vscode.DiagnosticSeverity.Warning,
      );
      d.code = 'COA106';
      d.source = 'coa token audit';
      byCell.set(cell.document.uri, [...(byCell.get(cell.document.uri) ?? []), d]);
    }
    for (const [uri, ds] of byCell) this.diagnostics.set(uri, ds);
    void vscode.window.showInformationMessage(
      `CoA token audit (${vscode.workspace.asRelativePath(path)}): ${records.length} record${records.length === 1 ? '' : 's'} with tokens, ${drifted} drifting${first ? ` — ${first}` : ': every turn re-tokenizes to its stored ids'}`,
    );
    return drifted;
  }
}

export function registerTokenAudits(context: vscode.ExtensionContext): TokenAudits {
  const audits = new TokenAudits();
  context.subscriptions.push(audits);
  return audits;
}
