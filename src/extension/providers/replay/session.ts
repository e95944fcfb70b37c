// One replay of a notebook record, without `vscode`: runs the engine, appends a cell per step as it is generated
// through a `CellSink` (the controller's is a NotebookEdit writer; tests use an array), then swaps the provisional
// cells for the notebook's own cells of the replayed record. Cancel (AbortSignal) removes what was appended.
import type { TrajectoryRecord } from '../../../core/record';
import type { RewardParams } from '../../../core/rewards';
import type { Scheme } from '../../../core/record';
import { replayQuestion, replayRecord, type ReplayMode, type ReplayResult } from '../../../replay/agent';
import { CancelledError } from '../../../replay/generate';
import type { OnnxModel } from '../../../replay/model';
import type { CellData } from '../notebook/codec';
import type { HeaderCellMeta } from '../notebook/cells';
import { META_KEY } from '../notebook/cells';
import { finalCells, provisionalCell, runningHeader } from './cells';

export interface CellSink {
  /** Append cells at the end of this replay's group of cells. */
  append(cells: CellData[]): Promise<void>;
  /** Replace the whole group (everything appended so far) with `cells`. */
  replaceAll(cells: CellData[]): Promise<void>;
}

export interface SessionOptions {
  model: OnnxModel;
  /** The record being replayed (its question and golden answers). */
  source: Pick<TrajectoryRecord, 'id' | 'question' | 'golden_answers'>;
  mode: ReplayMode;
  tool?: (query: string) => Promise<string>;
  sink: CellSink;
  signal?: AbortSignal;
  temperature?: number;
  seed?: number;
  maxTurns?: number;
  maxNewTokens?: number;
  maxObservationTokens?: number;
  /** Prompt + response tokens at most (the run's max_len). */
  maxTotal?: number;
  /** How the question is put to the model (the run's prompt_template). */
  promptTemplate?: string;
  scheme?: Scheme;
  params?: RewardParams;
}

export interface SessionResult {
  status: 'done' | 'cancelled';
  record?: TrajectoryRecord;
  result?: ReplayResult;
  steps: number;
}

export async function runReplaySession(o: SessionOptions): Promise<SessionResult> {
  const run = `${o.source.id}#replay-${o.mode}`;
  const header = runningHeader(o.source.question, o.model.path, o.mode, run);
  // The running header already carries a record header's metadata (empty response), so saving mid-run writes a
  // coherent partial replay line instead of gluing the provisional steps onto the record above.
  const placeholder: HeaderCellMeta = {
    kind: 'header',
    record: -1,
    line: 0,
    eol: '\n',
    gap: '',
    id: run,
    raw: JSON.stringify({
      id: run,
      question: o.source.question,
      ...(o.source.golden_answers ? { golden_answers: o.source.golden_answers } : {}),
      response: '',
      meta: { stage: 'replay', replay_of: o.source.id, mode: o.mode },
    }),
  };
  header.metadata = { ...header.metadata, [META_KEY]: placeholder };
  await o.sink.append([header]);
  let steps = 0;
  try {
    const result = await replayQuestion(o.model, o.source.question, {
      mode: o.mode,
      tool: o.tool,
      signal: o.signal,
      temperature: o.temperature,
      seed: o.seed,
      maxTurns: o.maxTurns,
      maxNewTokens: o.maxNewTokens,
      maxObservationTokens: o.maxObservationTokens,
      maxTotal: o.maxTotal,
      promptTemplate: o.promptTemplate,
      onStep: async (step) => {
        await o.sink.append([provisionalCell(step, steps, run)]);
        steps++;
      },
    });
    const record = replayRecord(o.source, result, o.model, {
      mode: o.mode,
      checkpoint: o.model.path,
      temperature: o.temperature,
      seed: o.seed,
    });
    await o.sink.replaceAll(finalCells(record, result, { scheme: o.scheme, params: o.params }));
    return { status: 'done', record, result, steps };
  } catch (e) {
    await o.sink.replaceAll([]);
    if (e instanceof CancelledError) return { status: 'cancelled', steps };
    throw e;
  }
}
