// Messages between the extension host (src/extension/providers/livePanel) and the live panel webview (webview/live-panel), and the
// state embedded in the page / saved by vscode.setState for restoring after a window reload.
import type { TrainerEvent } from '../core/events';
import type { TailIssue } from '../core/eventTail';
import type { CallerHealth } from '../core/toolHealth';

export const LIVE_PANEL_VIEW_TYPE = 'coaStudio.livePanel';

export interface LivePanelRun {
  /** Stable key: the run directory's URI string. */
  key: string;
  /** Shown in legends: the run directory's name. */
  label: string;
  /** A run CoA Studio did not start: `key` is verl's metrics file, `rolloutDir` its dump directory (URI strings);
   * or a TensorBoard run, `key` the folder holding its event files (scalars only: no rollouts). */
  engine?: 'verl' | 'tensorboard';
  rolloutDir?: string;
}

/** One caller's tool health as the environment server reports it (GET /v1/tool-health). */
export type ToolHealthRow = Omit<CallerHealth, 'last_call'>;

/** Embedded in the page (`#initial-state`): the runs and every event read so far, so the first paint is complete. */
export interface LivePanelInitialState {
  runs: LivePanelRun[];
  events: Record<string, TrainerEvent[]>;
  smoothing: number;
}

/** What the webview keeps with vscode.setState: enough to re-attach after a reload (events are re-read). */
export interface LivePanelSavedState {
  runs: LivePanelRun[];
  smoothing: number;
  /** Charts pinned to the top of their tab, as `<tab>\n<metric>` (kept by the page across reloads). */
  pinned?: string[];
  /** Charts on a log y scale, as `<tab>\n<metric>`. */
  log?: string[];
  /** The tab the user picked (a stage family, or 'results'). */
  tab?: string;
  /** The chart filter box's text. */
  filter?: string;
  /** The charts' x axis: step (the default), seconds since the stage started, or the wall clock. */
  xAxis?: 'step' | 'relative' | 'wall';
}

/**
 * A record by reference — never the record itself: one of a run stage's record files and the 0-based line in it.
 * The host keeps where each line's bytes are (the file's line index, src/core/lineIndex.ts). For a verl run, the
 * rollouts of `step` are its dump `<rollout_data_dir>/<step>.jsonl`.
 */
export interface RecordRef {
  run: string;
  stage: string;
  file: 'rollouts' | 'flagged';
  /** The step the record was listed under. */
  step: number;
  line: number;
}

/** One rollout of a step, as the host lists it from the stage's rollouts file. */
export interface RolloutItem {
  id: string;
  /** 0-based line in the rollouts file. */
  line: number;
  question: string;
  reward: number | null;
  /** Tool calls of the trajectory when the record says (reward.tool_calls), else null. */
  toolCalls: number | null;
}

/** A record the reward-hacking scanners flagged at a step (the stage's flagged.coa.jsonl, src/core/scanners.ts). */
export interface FlaggedItem {
  id: string;
  /** 0-based line in flagged.coa.jsonl. */
  line: number;
  rules: string[];
  detail: string;
}

export type HostToPanel =
  | { type: 'events'; run: string; events: TrainerEvent[]; reset?: boolean }
  | { type: 'issues'; run: string; issues: TailIssue[] }
  | { type: 'addRun'; run: LivePanelRun }
  | { type: 'removeRun'; run: string }
  /** Answer to 'stepRollouts': the rollouts of one step (empty with `error` when there is no rollouts file). */
  | {
      type: 'rollouts';
      run: string;
      stage: string;
      step: number;
      items: RolloutItem[];
      total: number;
      error?: string;
      flagged?: FlaggedItem[];
      flaggedStep?: number;
    }
  /** The tool health of the environment server a run searches through, polled by the host (error: unreachable). */
  | { type: 'toolHealth'; run: string; callers: Record<string, ToolHealthRow>; error?: string };

export type PanelToHost =
  /** The page's message listener is attached: the host may post. */
  | { type: 'ready' }
  /** Open a sampled rollout (a `sample` event's record) in the record view: found by its step and id in the stage's
   * rollouts. */
  | { type: 'openSample'; run: string; stage: string; step: number; id: string }
  | { type: 'addRun' }
  | { type: 'removeRun'; run: string }
  /** A point of a chart was clicked: list the rollouts the stage wrote at that step. */
  | { type: 'stepRollouts'; run: string; stage: string; step: number; clicked?: number }
  /** Open one listed rollout, or a record the scanners flagged, in the record view. */
  | { type: 'openRollout'; ref: RecordRef }
  /** The GRPO groups of a step of a stage's rollouts (the group view beside the panel). */
  | { type: 'openGroups'; run: string; stage: string; step: number };
