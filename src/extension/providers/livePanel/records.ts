// Finding a sampled rollout in a stage's rollouts file, and the few names the host accepts from the webview.
// No vscode import: unit-tested directly.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { isValidName } from '../../../core/names';
import type { FlaggedItem } from '../../../protocols/livePanel';

/** A stage name from the webview becomes a path segment: only plain names, never `..` or separators. */
export function isSafeStageName(stage: string): boolean {
  return isValidName(stage);
}

/** Splits events into message-sized batches (postMessage clones them; very large messages stall the page). */
export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export interface StepRollout {
  id: string;
  /** 0-based line in the file, and where its bytes are (a hint for the record view, assuming '\n' terminators). */
  line: number;
  offset: number;
  length: number;
  question: string;
  reward: number | null;
  toolCalls: number | null;
}

/**
 * The rollouts a stage wrote at `step` (records whose `meta.step` is `step`), from its rollouts file's lines, in file
 * order; at most `limit` listed, `total` counts all. Lines that are not JSON records are skipped: the file may be
 * being appended to while it is read.
 */
export async function rolloutsOfStep(lines: Iterable<string> | AsyncIterable<string>, step: number, limit = 500): Promise<{ items: StepRollout[]; total: number }> {
  const items: StepRollout[] = [];
  let total = 0;
  let line = -1;
  let next = 0;
  const needle = `"step": ${step}`;
  const compact = `"step":${step}`;
  for await (const row of lines) {
    line++;
    const offset = next;
    const length = Buffer.byteLength(row);
    next += length + 1;
    if (!row.includes(needle) && !row.includes(compact)) continue; // most lines are other steps: skip the parse
    let r: { id?: unknown; question?: unknown; meta?: { step?: unknown }; reward?: { total?: unknown; tool_calls?: unknown } | null };
    try {
      r = JSON.parse(row);
    } catch {
      continue;
    }
    if (!r || typeof r !== 'object' || r.meta?.step !== step || typeof r.id !== 'string') continue;
    total++;
    if (items.length >= limit) continue;
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    items.push({ id: r.id, line, offset, length, question: typeof r.question === 'string' ? r.question : '', reward: num(r.reward?.total), toolCalls: num(r.reward?.tool_calls) });
  }
  return { items, total };
}

/**
 * What the reward-hacking scanners flagged at `step`: the stage's flagged.coa.jsonl records (the trainer keeps a few
 * examples per rule and step, findings in meta.scan), in file order. A missing file is an empty list: nothing flagged.
 */
export async function flaggedOfStep(file: string, step: number): Promise<FlaggedItem[]> {
  const out: FlaggedItem[] = [];
  let line = -1;
  let next = 0;
  try {
    for await (const row of createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity })) {
      line++;
      const offset = next;
      const length = Buffer.byteLength(row);
      next += length + 1;
      let r: { id?: unknown; meta?: { step?: unknown; scan?: { rule?: unknown; detail?: unknown }[] } };
      try {
        r = JSON.parse(row);
      } catch {
        continue;
      }
      if (r?.meta?.step !== step || typeof r.id !== 'string') continue;
      const scan = Array.isArray(r.meta.scan) ? r.meta.scan : [];
      out.push({ id: r.id, line, offset, length, rules: scan.map((f) => String(f.rule)), detail: scan.map((f) => String(f.detail)).join('; ') });
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return out;
}
