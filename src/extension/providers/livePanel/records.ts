// A stage's records by step for the live panel — the rollouts it wrote at a step, what the scanners flagged there,
// a sampled rollout by its id — read at their offsets through the file's line index (src/core/lineIndex.ts), and
// the few names the host accepts from the webview. No vscode import: unit-tested directly.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { isValidName } from '../../../core/names';
import { parsePythonJson } from '../../../core/pythonJson';
import type { StepIndex } from '../../../core/lineIndex';
import type { FlaggedItem, RolloutItem } from '../../../protocols/livePanel';

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

type Fields = {
  id?: unknown;
  question?: unknown;
  meta?: { scan?: { rule?: unknown; detail?: unknown }[] };
  reward?: { total?: unknown; tool_calls?: unknown } | null;
};
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * The rollouts a stage wrote at `step` (records whose `meta.step` is `step`), in file order; at most `limit` listed,
 * `total` counts all. A missing file has none.
 */
export async function rolloutsOfStep(
  index: StepIndex,
  step: number,
  limit = 500,
): Promise<{ items: RolloutItem[]; total: number }> {
  const rows = (await index.rowsOf(step)).filter((r) => typeof (r.value as Fields).id === 'string');
  const items = rows.slice(0, limit).map((r) => {
    const v = r.value as Fields;
    return {
      id: v.id as string,
      line: r.line,
      question: typeof v.question === 'string' ? v.question : '',
      reward: num(v.reward?.total),
      toolCalls: num(v.reward?.tool_calls),
    };
  });
  return { items, total: rows.length };
}

/**
 * What the reward-hacking scanners flagged at `step`: the stage's flagged.coa.jsonl records (the trainer keeps a few
 * examples per rule and step, findings in meta.scan), in file order. A missing file is an empty list: nothing flagged.
 */
export async function flaggedOfStep(index: StepIndex, step: number): Promise<FlaggedItem[]> {
  return (await index.rowsOf(step)).flatMap((r) => {
    const v = r.value as Fields;
    if (typeof v.id !== 'string') return [];
    const scan = Array.isArray(v.meta?.scan) ? v.meta.scan : [];
    return [
      {
        id: v.id,
        line: r.line,
        rules: scan.map((f) => String(f.rule)),
        detail: scan.map((f) => String(f.detail)).join('; '),
      },
    ];
  });
}

/** The 0-based line of the record `id` among the rows of `step` (a `sample` event's record), or undefined. */
export async function lineOfSample(index: StepIndex, step: number, id: string): Promise<number | undefined> {
  return (await index.rowsOf(step)).find((r) => (r.value as Fields).id === id)?.line;
}

/**
 * The record of a run's `sample` event (stage, step, record id) read back from its events.jsonl, each line parsed:
 * for a sample whose stage keeps no rollouts file holding it (a collection's samples). Undefined when none is there.
 */
export async function sampleFromEvents(eventsFile: string, stage: string, step: number, id: string): Promise<unknown> {
  let found: unknown;
  try {
    for await (const row of createInterface({
      input: createReadStream(eventsFile, { encoding: 'utf8' }),
      crlfDelay: Infinity,
    })) {
      let e: { type?: unknown; stage?: unknown; step?: unknown; record?: { id?: unknown } };
      try {
        e = parsePythonJson(row) as typeof e;
      } catch {
        continue;
      }
      if (e?.type === 'sample' && e.stage === stage && e.step === step && e.record?.id === id) found = e.record;
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  return found;
}
