// Messages between the extension host (src/extension/providers/livePanel) and the live panel webview, and the
// state embedded in the page / saved by vscode.setState for restoring after a window reload.
import type { TrainerEvent } from '../../src/core/events';
import type { TailIssue } from '../../src/core/eventTail';

export const LIVE_PANEL_VIEW_TYPE = 'coaStudio.livePanel';

export interface LivePanelRun {
  /** Stable key: the run directory's URI string. */
  key: string;
  /** Shown in legends: the run directory's name. */
  label: string;
}

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
}

export type HostToPanel =
  | { type: 'events'; run: string; events: TrainerEvent[]; reset?: boolean }
  | { type: 'issues'; run: string; issues: TailIssue[] }
  | { type: 'addRun'; run: LivePanelRun }
  | { type: 'removeRun'; run: string };

export type PanelToHost =
  /** The page's message listener is attached: the host may post. */
  | { type: 'ready' }
  | { type: 'openSample'; run: string; stage: string; step: number; id: string; record: unknown }
  | { type: 'addRun' }
  | { type: 'removeRun'; run: string };
