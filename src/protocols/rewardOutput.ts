// The trajectory notebook's reward output: the payload the host writes into a cell output (src/extension/providers/
// notebook/codec.ts) and the notebook renderer draws (webview/notebook-renderer) — the host↔renderer protocol.
import type { RewardBreakdown } from '../core/record';

/** Custom MIME type of the reward breakdown output (drawn by webview/notebook-renderer). */
export const REWARD_MIME = 'application/vnd.coa-studio.reward+json';
/** Renderer id (`contributes.notebookRenderer[].id`). */
export const RENDERER_ID = 'coa-studio.reward-renderer';
/** The reward output's payload (REWARD_MIME): the breakdown plus what the renderer needs to explain it. */
export interface RewardOutput {
  id: string;
  breakdown: RewardBreakdown;
  /** The formula in words (core/rewards.ts describeFormula). */
  formula: string;
  /**
   * Reward stored in the record itself (its own run's scheme), when present. `breakdown` is recomputed under the
   * stored scheme, so the two are comparable; `storedDiffers` says whether they disagree.
   */
  stored?: RewardBreakdown;
  storedDiffers?: boolean;
  /** The recomputation under the configured scheme (coaStudio.rewardScheme) when it is not the record's own. */
  setting?: RewardBreakdown;
  /** Answer extracted from the response (null: none) and the golden answers, for the table. */
  answer: string | null;
  golden: string[];
}
