// Forking a trajectory ("would it have answered right if search had returned X?"): a record's response up to a step,
// that step possibly edited, is given to the model as it stands and the rest regenerated (agent.ts replayQuestion
// with `prefix`; where the given part leaves the agent loop is given.ts). Here: the fork as a record of its own, tied
// to its source, and its reward comparable with the source's. Independent of VS Code.
import type { RewardBreakdown, Scheme, TrajectoryRecord } from '../core/record';
import { OtcState, questionKey, scoreRecords, type RewardParams } from '../core/rewards';
import type { ReplayMode, ReplayResult } from './agent';

/** The fork as a record: its own id, tied to the record and step it came from and what was changed there. */
export function forkMeta(
  source: Pick<TrajectoryRecord, 'id' | 'reward'>,
  at: { step: number; kind: string; edited: boolean },
): Record<string, unknown> {
  return {
    fork_of: source.id,
    fork_step: at.step,
    fork_step_kind: at.kind,
    fork_edited: at.edited,
    ...(source.reward ? { fork_of_reward: source.reward.total, fork_of_scheme: source.reward.scheme } : {}),
  };
}

export const forkId = (sourceId: string, step: number) => `${sourceId}#fork-${step}`;

/** The fork as a record: tokens as generated (the given part masked), its reward under the run's own scheme. */
export function forkRecord(
  source: TrajectoryRecord,
  result: ReplayResult,
  at: { step: number; kind: string; edited: boolean },
  run: {
    mode: ReplayMode;
    checkpoint: string;
    dialect: string;
    scheme: Scheme;
    params: RewardParams;
    temperature?: number;
    seed?: number;
  },
): TrajectoryRecord {
  const record: TrajectoryRecord = {
    id: forkId(source.id, at.step),
    question: source.question,
    ...(source.golden_answers ? { golden_answers: source.golden_answers } : {}),
    response: result.response,
    dialect: run.dialect as TrajectoryRecord['dialect'],
    tokens: { ids: result.ids, loss_mask: result.lossMask, logprobs: result.logprobs, offsets: result.offsets },
    meta: {
      ...(source.meta?.run !== undefined ? { run: source.meta.run } : {}),
      stage: 'fork',
      ...(source.meta?.step !== undefined ? { step: source.meta.step } : {}),
      ...forkMeta(source, at),
      mode: run.mode,
      checkpoint: run.checkpoint,
      temperature: run.temperature ?? 0,
      seed: run.seed ?? 0,
      given_tokens: result.given ?? 0,
      truncated: result.truncated,
      latency_ms: result.steps.map((s) => Math.round(s.latencyMs)),
    },
  };
  record.reward = forkReward(source, record, run.scheme, run.params);
  return record;
}

/**
 * The fork's reward, comparable with its source's: the same scheme and parameters, and for OTC-GRPO the n of the
 * source's own group (its stored optimal_tool_calls), as the record view rescores the source.
 */
export function forkReward(
  source: TrajectoryRecord,
  fork: TrajectoryRecord,
  scheme: Scheme,
  params: RewardParams,
): RewardBreakdown {
  const n = source.reward?.scheme === 'otc-grpo' ? source.reward.optimal_tool_calls : null;
  if (scheme !== 'otc-grpo' || n === null || n === undefined) return scoreRecords([fork], scheme, params)[0];
  const state = new OtcState();
  state.observe(questionKey(source), n);
  return scoreRecords([fork], scheme, params, state)[0];
}
