// Which data a run used, for the Runs view: the data section and model.path of runs/<id>/config.json (written by
// Train Stage with absolute paths), else of the config in the run's last run_started event (a run started from a
// terminal). Pure apart from reading the run directory (no vscode import).
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { dataEntries, type DataEntry } from '../../../core/data/paths';
import { configFromEvents, type RunInfo } from './model';

export type RunDataNode = {
  kind: 'data';
  id: string;
  label: string;
  description: string;
  tooltip: string;
  run: RunInfo;
  entries: DataEntry[];
};
export type DataNode =
  | RunDataNode
  | { kind: 'dataFile'; id: string; label: string; description: string; path: string; entry: DataEntry; run: RunInfo };

/** The run's data entries; null when neither config.json nor a run_started event holds a config. */
export function runDataEntries(runDir: string): DataEntry[] | null {
  const path = join(runDir, 'config.json');
  if (existsSync(path)) {
    try {
      return dataEntries(JSON.parse(readFileSync(path, 'utf8')));
    } catch {
      /* a half-written or hand-edited copy: fall back to the trainer's own record */
    }
  }
  const config = configFromEvents(runDir);
  return config ? dataEntries(config) : null;
}

/** The run's "data" node (null when the run has no config to read). */
export function dataNode(run: RunInfo): RunDataNode | null {
  const entries = runDataEntries(run.dir);
  if (!entries) return null;
  const files = entries.filter((e) => e.kind !== 'model');
  const model = entries.find((e) => e.kind === 'model');
  const description = [
    files.length ? files.map((e) => basename(e.path)).join(' · ') : 'embedded benchmark',
    model ? `model ${basename(model.path)}` : null,
  ]
    .filter(Boolean)
    .join(' · ');
  const tooltip = entries.length
    ? entries.map((e) => `${e.key}: ${e.path}`).join('\n')
    : 'The embedded synthetic benchmark (no data section, no model.path).';
  return { kind: 'data', id: `${run.dir}#data`, label: 'data', description, tooltip, run, entries };
}

export function dataFileNodes(node: RunDataNode): DataNode[] {
  return node.entries.map((entry) => ({
    kind: 'dataFile' as const,
    id: `${node.id}:${entry.key}`,
    label: entry.key.replace(/^data\./, ''),
    description: basename(entry.path),
    path: entry.path,
    entry,
    run: node.run,
  }));
}
