// Two trajectories side by side, step by step (the scanner's segments: thoughts, tool calls, observations, the
// answer; prose between tags is not a step), with the first step where they part marked: where a checkpoint's
// behaviour on a question changed — another query, a search skipped, another answer.
import { scan, actionQuery, type SegmentKind } from '../scanner';
import type { DialectName } from '../dialects';

export interface AlignedStep {
  kind: SegmentKind;
  /** The step as written, tags included. */
  text: string;
  /** What is compared: the content with spaces folded (a tool call's query; the rest between the tags). */
  content: string;
}

export interface AlignedRow {
  index: number;
  a: AlignedStep | null;
  b: AlignedStep | null;
  same: boolean;
}

export interface Alignment {
  rows: AlignedRow[];
  /** Index of the first row whose steps differ (kind or content); null when the trajectories take the same steps. */
  divergence: number | null;
}

const fold = (s: string) => s.trim().replace(/\s+/g, ' ');

/** A response's steps in order. */
export function stepsOf(response: string, dialect?: DialectName | 'auto' | null): AlignedStep[] {
  const out: AlignedStep[] = [];
  for (const seg of scan(response, { dialect: dialect ?? 'auto' }).segments) {
    if (seg.kind === 'text') continue;
    const content =
      seg.kind === 'action'
        ? `${seg.tool ?? ''}: ${fold(actionQuery(seg))}`
        : fold(response.slice(seg.contentStart, seg.contentEnd));
    out.push({ kind: seg.kind, text: response.slice(seg.start, seg.end), content });
  }
  return out;
}

/** Step i of one beside step i of the other; the shorter side padded with nulls. */
export function alignTrajectories(
  a: { response: string; dialect?: string | null },
  b: { response: string; dialect?: string | null },
): Alignment {
  const sa = stepsOf(a.response, (a.dialect as DialectName | null) ?? 'auto');
  const sb = stepsOf(b.response, (b.dialect as DialectName | null) ?? 'auto');
  const rows: AlignedRow[] = [];
  let divergence: number | null = null;
  for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
    const x = sa[i] ?? null;
    const y = sb[i] ?? null;
    const same = !!x && !!y && x.kind === y.kind && x.content === y.content;
    if (!same && divergence === null) divergence = i;
    rows.push({ index: i, a: x, b: y, same });
  }
  return { rows, divergence };
}
