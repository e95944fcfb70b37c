// Train Stage's data step: one quick pick listing the data slots (questions train/dev/test, SFT trajectories,
// SFT-1 pairs, corpus) with the file each holds; picking a slot opens a file dialog, "Use this data" ends. The
// files are checked by `coa data check` before the trainer starts (./index.ts), not here.
import * as vscode from 'vscode';
import { basename } from 'node:path';
import { dataEntries } from '../../../core/data/paths';
import { applyDataPicks, describeData, type DataPicks } from './data';
import type { RunConfigInput } from '../../../core/config';
import { LABELS, PLACEHOLDERS, TITLES } from './picks';

type Slot = 'train' | 'dev' | 'test' | 'sft' | 'sft1_pairs' | 'corpus';

const SLOTS: { slot: Slot; label: string; filters: Record<string, string[]>; many?: boolean }[] = [
  {
    slot: 'train',
    label: 'Training questions…',
    filters: { 'Question sets (verl parquet, FlashRAG JSONL, *.coa.jsonl)': ['parquet', 'jsonl'] },
  },
  { slot: 'dev', label: 'Dev questions…', filters: { 'Question sets': ['parquet', 'jsonl'] } },
  { slot: 'test', label: 'Test questions…', filters: { 'Question sets': ['parquet', 'jsonl'] } },
  {
    slot: 'sft',
    label: 'SFT trajectories…',
    filters: { 'Trajectories (*.coa.jsonl, OpenAI chats)': ['jsonl'] },
    many: true,
  },
  { slot: 'sft1_pairs', label: 'SFT-1 pairs…', filters: { 'Pairs (chosen/rejected JSONL)': ['jsonl'] } },
  { slot: 'corpus', label: 'Search corpus…', filters: { 'FlashRAG corpus (JSONL)': ['jsonl'] } },
];

/** The data picks, starting from `config`'s own data (null: none); undefined when the user backs out. */
export async function pickDataFiles(config: RunConfigInput | null): Promise<DataPicks | undefined> {
  const picks: DataPicks = {};
  for (;;) {
    const current = applyDataPicks(config ?? {}, picks);
    const byKey = new Map(dataEntries(current).map((e) => [e.key, e.path]));
    const shown = (slot: Slot): string => {
      if (slot === 'sft') {
        const files = dataEntries(current).filter((e) => e.kind === 'sft');
        return files.length ? files.map((e) => basename(e.path)).join(', ') : 'none';
      }
      const path = byKey.get(slot === 'sft1_pairs' || slot === 'corpus' ? `data.${slot}` : `data.questions.${slot}`);
      return path ? basename(path) : slot === 'sft1_pairs' ? 'none (built from the SFT trajectories)' : 'none';
    };
    const items = [
      { label: LABELS.dataDone, description: describeData(current) ?? 'no data chosen yet', slot: null as Slot | null },
      ...SLOTS.map((s) => ({ label: s.label, description: shown(s.slot), slot: s.slot as Slot | null })),
    ];
    const pick = await vscode.window.showQuickPick(items, {
      title: TITLES.data,
      placeHolder: PLACEHOLDERS.data,
      ignoreFocusOut: true,
    });
    if (!pick) return undefined;
    if (pick.slot === null) {
      if (!describeData(current)) {
        void vscode.window.showWarningMessage(
          'CoA: choose at least one data file (or pick the embedded default config).',
        );
        continue;
      }
      return picks;
    }
    const spec = SLOTS.find((s) => s.slot === pick.slot)!;
    const uris = await vscode.window.showOpenDialog({
      canSelectFiles: true,
      canSelectFolders: false,
      canSelectMany: !!spec.many,
      filters: spec.filters,
      openLabel: `Use as ${spec.label.replace('…', '').toLowerCase()}`,
    });
    if (!uris?.length) continue;
    if (spec.slot === 'sft') picks.sft = uris.map((u) => u.fsPath);
    else picks[spec.slot] = uris[0].fsPath;
  }
}
