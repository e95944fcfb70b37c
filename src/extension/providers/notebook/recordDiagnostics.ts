// What a record view's header adds for an RL engineer (no `vscode` import): the reward-hacking scanners' findings on
// this record (src/core/scanners.ts: the per-record rules, and those the trainer stored in meta.scan — a length outlier
// is judged against its whole step), and the ways to its token audit and its GRPO group.
import { scanRecord, type ScanFinding } from '../../../core/scanners';
import type { TrajectoryRecord } from '../../../core/record';

const md = (text: string) => text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, (c) => `\\${c}`);

export function recordDiagnosticsMarkdown(r: TrajectoryRecord): string | null {
  const stored = Array.isArray((r.meta as Record<string, unknown> | undefined)?.scan)
    ? ((r.meta as Record<string, unknown>).scan as ScanFinding[])
    : [];
  const found = scanRecord(r).findings;
  const all = [...found, ...stored.filter((s) => !found.some((f) => f.rule === s.rule))];
  const parts: string[] = [];
  if (all.length)
    parts.push(
      `**Reward-hacking scanners:** ${all.map((f) => `${md(String(f.rule))} — ${md(String(f.detail))}`).join('; ')}`,
    );
  const links: string[] = [];
  if (r.tokens?.ids.length) links.push('[Audit tokens](command:coaStudio.auditTokens)');
  if (typeof r.meta?.step === 'number' && r.meta.group !== undefined)
    links.push(`[GRPO group of step ${r.meta.step}](command:coaStudio.openGroup)`);
  if (links.length) parts.push(links.join(' · '));
  return parts.length ? parts.join('\n\n') : null;
}
