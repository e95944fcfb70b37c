// "Show failures", "> N tool calls", "sort by reward": a view of a trajectory file as a new notebook holding the
// matching records (the source is never reordered or changed). Pure; the commands in commands.ts call it.
import { parseRecordLine } from '../../../core/jsonl';
import { isQuestion, type RewardBreakdown } from '../../../core/record';
import {
  DecodeOptions,
  NotebookContent,
  NotebookRewards,
  linesToNotebook,
  notebookToText,
  scoreForNotebook,
  splitLines,
} from './codec';
import { META_KEY, NotebookMeta } from './cells';

export type ViewSpec =
  | { kind: 'failures' }
  | { kind: 'tool-calls'; more: number }
  | { kind: 'sort'; by: 'reward' | 'tool-calls'; order: 'asc' | 'desc' }
  /** A collection (`coa_trainer collect`): by reward (> 0 / 0) and by `meta.mode` (coa / cot); null: any. */
  | { kind: 'filter'; reward: 'positive' | 'zero' | null; mode: string | null };

export function describeView(spec: ViewSpec): string {
  switch (spec.kind) {
    case 'failures':
      return 'failures (reward 0 or format errors)';
    case 'tool-calls':
      return `trajectories with > ${spec.more} tool calls`;
    case 'sort':
      return `sorted by ${spec.by} (${spec.order === 'asc' ? 'lowest' : 'highest'} first)`;
    case 'filter':
      return (
        [
          spec.reward === 'positive' ? 'reward > 0' : spec.reward === 'zero' ? 'reward 0' : null,
          spec.mode ? `mode ${spec.mode}` : null,
        ]
          .filter(Boolean)
          .join(', ') || 'every trajectory'
      );
  }
}

/** A failure: nothing earned, or a format error. */
export function isFailure(b: RewardBreakdown): boolean {
  return b.total <= 0 || !b.format_ok;
}

/**
 * The view notebook for a file's text. Rewards are computed over the whole file first (OTC-GRPO's n depends on
 * every answer to a question), then records are chosen; bad lines are left out of a view. The view is untitled;
 * saving it writes the subset, each line as it was.
 */
export interface ViewResult extends NotebookContent {
  count: number;
  /** The view as file text (the chosen lines, each as it was) and the whole-file rewards of its records. */
  text: string;
  rewards: NotebookRewards;
}

export function viewNotebook(text: string, spec: ViewSpec, options: DecodeOptions = {}): ViewResult {
  const { lines } = splitLines(text);
  const parsed = lines
    .map((src) => ({ src: { ...src, gap: '', eol: '\n' }, entry: parseRecordLine(src.raw, src.line) }))
    .filter((e) => e.entry.record);
  const all = scoreForNotebook(
    parsed.map((e) => e.entry.record!),
    options.scheme ?? 'em',
    options.params ?? {},
  );
  const rewards = all.own;
  let order = parsed.map((_, i) => i);
  // A question (no response yet) has not failed: it has not been tried.
  if (spec.kind === 'failures')
    order = order.filter((i) => !isQuestion(parsed[i].entry.record!) && isFailure(rewards[i]));
  if (spec.kind === 'tool-calls') order = order.filter((i) => rewards[i].tool_calls > spec.more);
  if (spec.kind === 'filter') {
    if (spec.reward)
      order = order.filter((i) => (spec.reward === 'positive' ? rewards[i].total > 0 : rewards[i].total <= 0));
    if (spec.mode) order = order.filter((i) => modeOf(parsed[i].entry.record!) === spec.mode);
  }
  if (spec.kind === 'sort') {
    const key = (i: number) => (spec.by === 'reward' ? rewards[i].total : rewards[i].tool_calls);
    const sign = spec.order === 'asc' ? 1 : -1;
    order.sort((a, b) => sign * (key(a) - key(b)) || a - b); // stable: file order breaks ties
  }
  // Score the subset with the whole file's rewards: re-scoring a subset would change OTC-GRPO's n.
  const chosen: NotebookRewards = { own: order.map((i) => all.own[i]), setting: order.map((i) => all.setting[i]) };
  const content = linesToNotebook(
    order.map((i) => parsed[i]),
    '',
    { ...options, rewards: chosen },
  );
  const meta = content.metadata[META_KEY] as NotebookMeta;
  meta.view = { source: options.source ?? '', description: describeView(spec) };
  return { ...content, count: order.length, text: notebookToText(content), rewards: chosen };
}

/** A record's sampling mode (`meta.mode`, written by `coa_trainer collect`), or null. */
export function modeOf(record: { meta?: Record<string, unknown> }): string | null {
  const m = record.meta?.mode;
  return typeof m === 'string' ? m : null;
}

/** The modes present in a file's text, in order of first appearance (for the filter's pick). */
export function modesIn(text: string): string[] {
  const out = new Set<string>();
  for (const src of splitLines(text).lines) {
    const r = parseRecordLine(src.raw, src.line).record;
    const m = r ? modeOf(r) : null;
    if (m) out.add(m);
  }
  return [...out];
}
