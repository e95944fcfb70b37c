// `coa convert --from verl-rollouts <dir|file> -o out.coa.jsonl`: verl's rollout dumps (src/core/importers/
// verl-rollouts.ts) in step order, each record format-checked with the core's rules (the dialect detected per
// record); a line that is not a dump row is reported as file:line:column with its field and skipped.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dumpFiles, importVerlRollouts } from '../core/importers/verl-rollouts';
import { formatOf } from '../core/rewards';
import type { TrajectoryRecord } from '../core/record';
import { CliError } from './args';
import { readTextInput } from './common';

export interface VerlConvertResult {
  records: TrajectoryRecord[];
  skipped: number;
  files: number;
  formatErrors: number;
}

/** The dump files of a directory (`<step>.jsonl`) or the one file given. */
export function verlDumpPaths(input: string): string[] {
  let info;
  try {
    info = statSync(input);
  } catch {
    throw new CliError(`${input}: no such file or directory`);
  }
  if (!info.isDirectory()) return [input];
  const files = dumpFiles(readdirSync(input)).map((f) => join(input, f.name));
  if (!files.length) throw new CliError(`${input}: no <step>.jsonl files (verl writes trainer.rollout_data_dir/<global_step>.jsonl)`);
  return files;
}

export function convertVerlRollouts(input: string, log: (line: string) => void = (l) => console.error(l)): VerlConvertResult {
  const out: VerlConvertResult = { records: [], skipped: 0, files: 0, formatErrors: 0 };
  const counts = new Map<string, number>();
  let shown = 0;
  for (const file of verlDumpPaths(input)) {
    const text = readTextInput(file);
    if (text.includes('\u0000')) throw new CliError(`${file}: binary data, not a verl rollout dump`);
    const { records, issues } = importVerlRollouts(text);
    out.files++;
    out.skipped += issues.length;
    for (const i of issues) log(`${file}:${i.line}:${i.column}: error ${i.message} (line skipped)`);
    for (const r of records) {
      const report = formatOf(r);
      if (!report.formatOk) {
        out.formatErrors++;
        const codes = [...new Set(report.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code))];
        for (const c of codes) counts.set(c, (counts.get(c) ?? 0) + 1);
        if (shown++ < 5) log(`${file}: ${r.id}: format errors ${codes.join(', ')} (${r.dialect})`);
      }
      out.records.push(r);
    }
  }
  const dialects = new Map<string, number>();
  for (const r of out.records) dialects.set(r.dialect ?? 'coa', (dialects.get(r.dialect ?? 'coa') ?? 0) + 1);
  log(`convert: ${out.files} dump file(s); dialects ${[...dialects].map(([d, n]) => `${d} ${n}`).join(', ') || 'none'}; ` +
    `${out.formatErrors} record(s) with format errors${counts.size ? ` (${[...counts].map(([c, n]) => `${c} ×${n}`).join(', ')})` : ''}`);
  return out;
}
