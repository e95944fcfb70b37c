// Train Stage's data step, the pure part (no vscode import; unit-tested): the data files picked in the editor
// merged into a run config, the one-line summary shown for a config's data, and the check's error line parsed
// back into a location the editor can open.
import { basename } from 'node:path';
import { z } from 'zod';
import { dataEntries } from '../../../core/data/paths';
import type { RunConfigInput } from '../../../core/config';

const path = () => z.string().min(1);

/** Files picked in the editor; each replaces the config's own entry (sft: the list). Absolute paths. */
export const DataPicksSchema = z
  .object({
    train: path().optional(),
    dev: path().optional(),
    test: path().optional(),
    sft: z.array(path()).optional(),
    sft1_pairs: path().optional(),
    corpus: path().optional(),
  })
  .strict();
export type DataPicks = z.infer<typeof DataPicksSchema>;

export function hasPicks(p: DataPicks | undefined): p is DataPicks {
  return !!p && Object.values(p).some((v) => (Array.isArray(v) ? v.length > 0 : !!v));
}

/** `config` with the picks written into its data section (created when absent). */
export function applyDataPicks(config: RunConfigInput, picks: DataPicks): RunConfigInput {
  const out = structuredClone(config);
  const data = { ...(out.data ?? {}) };
  const questions = { ...(data.questions ?? {}) };
  for (const split of ['train', 'dev', 'test'] as const) if (picks[split]) questions[split] = picks[split];
  if (Object.keys(questions).length) data.questions = questions;
  if (picks.sft?.length) data.sft = [...picks.sft];
  if (picks.sft1_pairs) data.sft1_pairs = picks.sft1_pairs;
  if (picks.corpus) data.corpus = picks.corpus;
  out.data = data;
  return out;
}

/** "train hotpotqa_train.parquet · sft 2 files · corpus wiki.jsonl", or null when the config has no data section. */
export function describeData(config: unknown): string | null {
  const entries = dataEntries(config).filter((e) => e.kind !== 'model');
  if (!entries.length) return null;
  // dataEntries keeps config order (questions, sft, pairs, corpus); the sft files are shown as one part.
  const sft = entries.filter((e) => e.kind === 'sft');
  const parts: string[] = [];
  for (const e of entries) {
    if (e.kind === 'sft') {
      if (e === sft[0]) parts.push(sft.length === 1 ? `sft ${basename(e.path)}` : `sft ${sft.length} files`);
    } else parts.push(`${e.kind === 'questions' ? e.key.split('.').pop() : e.kind} ${basename(e.path)}`);
  }
  return parts.join(' · ');
}
