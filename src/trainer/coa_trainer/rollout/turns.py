"""The agent-turn rules, written once for both multi-turn loops: `loop.run_turns` (a batch turn by turn: the
reference sampler, the teacher's endpoint) and `continuous.Continuous` (each trajectory in its own slot on the
rollout engine). How a turn ends (truncated at its token budget, finished on a stop, or an action that calls the
tool), what a tool's answer appends (a failed call: an empty observation, counted), when a trajectory stops after an
observation, and the cut at `max_len` are these functions in both, so the agent-turn conformance vectors
(test/conformance/agent-turns.json, also run by src/replay) hold each loop to the same rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .trajectory import RlTrajectory


@dataclass(frozen=True)
class Limits:
    max_turns: int
    max_new_tokens: int
    max_obs_tokens: int
    max_len: int
    simulate: bool


class ObservationIds(Protocol):
    """What turns an observation's text into ids (agentio.AgentIO)."""

    def observation_ids(self, body: str, max_tokens: int) -> tuple[list[int], bool]: ...


def after_turn(
    tr: RlTrajectory, *, stopped: bool, action: bool, turns_done: int, size: int, lim: Limits, has_tool: bool
) -> bool:
    """A turn has ended: without a stop (its token budget ran out) the trajectory is truncated; on a stop that is not
    an action it is finished; an action is answered (the tool's observation, or simulated, the policy's own) while
    turns remain and the trajectory is shorter than max_len — True — else the trajectory ends as it is."""
    if not stopped:
        tr.truncated = True
    elif not action:
        tr.finished = True
    elif (has_tool or lim.simulate) and turns_done < lim.max_turns and size < lim.max_len:
        return True
    return False


def tool_answered(tr: RlTrajectory, query: str, text: str | None) -> str:
    """The tool's answer to `query`, recorded: a failed call (None) is an empty observation, counted as a failure."""
    tr.queries.append(query)
    if text is None:
        tr.tool_failures += 1
        return ""
    return text


def append_unsampled(tr: RlTrajectory, ids: list[int]) -> None:
    """Ids the policy did not sample (an observation, its tags): loss mask 0, no log-prob."""
    tr.ids += ids
    tr.loss_mask += [0] * len(ids)
    tr.logprobs += [None] * len(ids)


def append_observation(tr: RlTrajectory, io: ObservationIds, text: str, max_obs_tokens: int) -> list[int]:
    """The observation's ids (tokenised once, cut at max_obs_tokens: a cut truncates the trajectory) appended;
    returns them."""
    ids, cut = io.observation_ids(text, max_obs_tokens)
    tr.truncated = tr.truncated or cut
    append_unsampled(tr, ids)
    return ids


def goes_on_after_observation(tr: RlTrajectory, size: int, max_len: int) -> bool:
    """After an observation the policy takes another turn unless the trajectory reached max_len (truncated)."""
    if size >= max_len:
        tr.truncated = True
        return False
    return True


def cut_to_length(tr: RlTrajectory, max_len: int) -> None:
    """The policy may run past max_len in its last turn: cut the response back to it, and say so (truncated, not
    finished)."""
    keep = max(0, max_len - len(tr.prompt_ids))
    if len(tr.ids) > keep:
        tr.ids, tr.loss_mask, tr.logprobs, tr.truncated = tr.ids[:keep], tr.loss_mask[:keep], tr.logprobs[:keep], True
        tr.finished = False
