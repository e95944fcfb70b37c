// Replay → notebook cells, without `vscode`. While a replay runs, each finished step becomes a provisional cell
// (its text, with the step's latency as an output); when it ends, the provisional cells are replaced by the
// notebook's own cells for the replayed record (header, scanner-segmented steps, reward output — produced by the
// notebook serializer's codec, so the replay saves as one more line of the file), keeping the latencies.
import { serializeRecord, type TrajectoryRecord } from '../../../core/record';
import type { RewardParams } from '../../../core/rewards';
import type { Scheme } from '../../../core/record';
import type { ReplayResult, ReplayStep } from '../../../replay/agent';
import { type CellData, textToNotebook } from '../notebook/codec';
import { META_KEY, STEP_LANGUAGE, cellMeta } from '../notebook/cells';

/** Metadata key of provisional replay cells (not a notebook record cell: never written back). */
export const REPLAY_META_KEY = 'coaReplay';
export const LATENCY_MIME = 'text/plain';

export function stepLabel(step: ReplayStep, index: number): string {
  const what =
    step.kind === 'model'
      ? `model turn (${step.ids.length} tokens, stop: ${step.stop})`
      : step.simulated
        ? `simulated observation (${step.ids.length} tokens, written by the model)`
        : `observation for ${JSON.stringify(step.query ?? '')}${step.toolError ? ` — tool failed: ${step.toolError}` : ''}`;
  return `step ${index + 1} · ${what} · ${step.latencyMs.toFixed(1)} ms`;
}

/** A provisional cell for a step as soon as it is generated. */
export function provisionalCell(step: ReplayStep, index: number, run: string): CellData {
  return {
    kind: 'code',
    value: step.text,
    languageId: STEP_LANGUAGE,
    metadata: { [REPLAY_META_KEY]: { run, index, provisional: true } },
    outputs: [[{ mime: LATENCY_MIME, data: stepLabel(step, index) }]],
  };
}

/** Markdown shown above the provisional cells while a replay runs. */
export function runningHeader(question: string, checkpoint: string, mode: string, run: string): CellData {
  return {
    kind: 'markup',
    value: `### Replay (${mode === 'env' ? 'environment server' : 'simulated environment'}) — running…\n\n**Question:** ${question.replace(/[\\`*_<>#[\]]/g, (c) => `\\${c}`)}\n\n*checkpoint ${checkpoint.replace(/[\\`*_<>#[\]]/g, (c) => `\\${c}`)}*`,
    languageId: 'markdown',
    metadata: { [REPLAY_META_KEY]: { run, provisional: true } },
  };
}

/**
 * The final cells of a replayed record: the notebook codec's cells for its JSON line, with each replay step's
 * latency attached to the first cell that starts inside it (model turns hold several segments: think + action).
 */
export function finalCells(
  record: TrajectoryRecord,
  result: ReplayResult,
  options: { scheme?: Scheme; params?: RewardParams; source?: string } = {},
): CellData[] {
  const content = textToNotebook(serializeRecord(record) + '\n', options);
  const starts = result.steps.map((s) =>
    utf16Offset(result.response, result.offsets[s.first] ?? result.response.length),
  );
  const steps = content.cells.filter((c) => cellMeta(c.metadata)?.kind === 'step');
  const labels = new Map<CellData, string[]>();
  result.steps.forEach((step, k) => {
    // The cell whose text holds the step's first token (the last cell starting at or before it).
    let target: CellData | undefined;
    for (const c of steps) {
      const m = cellMeta(c.metadata);
      if (m?.kind === 'step' && m.start <= starts[k]) target = c;
    }
    target ??= steps[0];
    if (!target) return;
    labels.set(target, [...(labels.get(target) ?? []), stepLabel(step, k)]);
  });
  for (const [cell, lines] of labels)
    cell.outputs = [[{ mime: LATENCY_MIME, data: lines.join('\n') }], ...(cell.outputs ?? [])];
  for (const cell of content.cells) {
    const m = cell.metadata?.[META_KEY];
    if (m && typeof m === 'object') (m as { replay?: boolean }).replay = true;
    // The codec numbers lines of the one-line text it was given; a replay has no line until the file is saved.
    if (cellMeta(cell.metadata)?.kind === 'header')
      cell.value = cell.value.replace(/^\*line 1\b/m, '*replay, written as a new line on save');
  }
  return content.cells;
}

/** A code-point offset (Python's convention, used in tokens.offsets) as a UTF-16 offset into `text`. */
export function utf16Offset(text: string, codePoints: number): number {
  if (!/[\uD800-\uDBFF]/.test(text)) return codePoints;
  let cp = 0;
  let i = 0;
  while (i < text.length && cp < codePoints) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
    cp++;
  }
  return i;
}
