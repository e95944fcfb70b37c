// What the GRPO group page (webview/group) and its host (src/extension/providers/groups) say to each other: the
// page gets one step's groups of a rollouts file (src/core/groups.ts, responses cut to a readable length) and the
// group to show first; it asks the host to open a sample in the record view.
import type { StepGroups } from '../core/groups';

export interface GroupPageState {
  /** The rollouts file, as shown (workspace-relative). */
  file: string;
  stage: string | null;
  data: StepGroups;
  /** The group shown first (meta.group as a string), or null for the first. */
  selected: string | null;
}

export type GroupPageToHost = { type: 'openRecord'; line: number };
