// `coa scan <files…>`: the reward-hacking scanners (src/core/scanners.ts) over rollout files, one batch per
// meta.stage × meta.step (a step's rollouts, as the trainer scans them), counts per rule and step, and every flagged
// record as `file:line: rule detail (id)`. Exit 1 when a rule fires (like validate's errors), so a pipeline can gate.
import { readJsonl } from '../core/jsonl';
import { SCAN_RULE_NAMES, SCAN_RULES, scanBatch, type ScanFinding, type ScanRule } from '../core/scanners';
import type { TrajectoryRecord } from '../core/record';
import { CliError, type ParsedArgs } from './args';
import { convertHint, formatOptions, requireFile } from './common';

export const SCAN_FLAGS = {
  json: 'boolean',
  dialect: 'string',
  strict: 'boolean',
  tools: 'string',
  'max-turns': 'number',
} as const;

interface Batch {
  stage: string | null;
  step: number | null;
  records: TrajectoryRecord[];
  lines: number[];
}

export interface FileScan {
  file: string;
  records: number;
  bad_lines: number;
  steps: {
    stage: string | null;
    step: number | null;
    scanned: number;
    counts: Record<ScanRule, number>;
    length_limit: number | null;
  }[];
  flagged: { line: number; id: string; stage: string | null; step: number | null; findings: ScanFinding[] }[];
  totals: Record<ScanRule, number>;
}

export async function scanFile(file: string, args: ParsedArgs): Promise<FileScan> {
  const batches = new Map<string, Batch>();
  let records = 0;
  let bad = 0;
  for await (const e of readJsonl(file)) {
    if (!e.record) {
      bad++;
      continue;
    }
    records++;
    const stage = typeof e.record.meta?.stage === 'string' ? e.record.meta.stage : null;
    const step = typeof e.record.meta?.step === 'number' ? e.record.meta.step : null;
    const key = `${stage}\u0000${step}`;
    let b = batches.get(key);
    if (!b) batches.set(key, (b = { stage, step, records: [], lines: [] }));
    b.records.push(e.record);
    b.lines.push(e.line);
  }
  const fmt = formatOptions(args);
  const totals = Object.fromEntries(SCAN_RULE_NAMES.map((r) => [r, 0])) as Record<ScanRule, number>;
  const out: FileScan = { file, records, bad_lines: bad, steps: [], flagged: [], totals };
  for (const b of batches.values()) {
    const s = scanBatch(b.records, {
      format: { dialect: fmt.dialect, strictness: fmt.strictness, tools: fmt.tools, maxTurns: fmt.maxTurns },
    });
    out.steps.push({ stage: b.stage, step: b.step, scanned: s.scanned, counts: s.counts, length_limit: s.lengthLimit });
    for (const r of SCAN_RULE_NAMES) totals[r] += s.counts[r];
    for (const f of s.flagged)
      out.flagged.push({
        line: b.lines[f.index],
        id: b.records[f.index].id,
        stage: b.stage,
        step: b.step,
        findings: f.findings,
      });
  }
  out.flagged.sort((x, y) => x.line - y.line);
  return out;
}

export async function runScan(args: ParsedArgs): Promise<number> {
  if (args.positional.length === 0) throw new CliError('scan: give one or more rollout files');
  const results: FileScan[] = [];
  for (const file of args.positional) {
    requireFile(file);
    const hint = convertHint(file);
    if (hint) throw new CliError(`${file}: ${hint}`);
    results.push(await scanFile(file, args));
  }
  if (args.flags.json) console.log(JSON.stringify(results.length === 1 ? results[0] : results, null, 1));
  else for (const r of results) console.log(scanText(r));
  return results.some((r) => r.flagged.length) ? 1 : 0;
}

export function scanText(r: FileScan): string {
  const out: string[] = [];
  const stepsWith = (rule: ScanRule) => r.steps.filter((s) => s.counts[rule] > 0).length;
  out.push(
    `${r.file}: ${r.records} records in ${r.steps.length} batch${r.steps.length === 1 ? '' : 'es'} (meta.stage × meta.step)${r.bad_lines ? `, ${r.bad_lines} bad lines skipped (coa validate)` : ''}`,
  );
  const width = Math.max(...SCAN_RULE_NAMES.map((k) => k.length));
  for (const rule of SCAN_RULE_NAMES)
    out.push(
      `  ${rule.padEnd(width)}  ${String(r.totals[rule]).padStart(5)} records in ${String(stepsWith(rule)).padStart(3)} steps — ${SCAN_RULES[rule]}`,
    );
  for (const f of r.flagged)
    for (const x of f.findings)
      out.push(`${r.file}:${f.line}: ${x.rule} ${x.detail} (${f.id}${f.step !== null ? `, step ${f.step}` : ''})`);
  return out.join('\n');
}
