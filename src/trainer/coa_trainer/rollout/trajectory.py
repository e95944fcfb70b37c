"""One trajectory of the rollout loop, as every sampler fills it (loop.py, continuous.py, teacher.py)."""

from __future__ import annotations

import zlib
from array import array
from dataclasses import dataclass, field


@dataclass
class RlTrajectory:
    """One trajectory of the loop. Ids samplers fill ids/loss_mask/logprobs (the text is their decoding); text
    samplers (an OpenAI-compatible endpoint) fill `text` and leave the ids empty. Either way it becomes the same
    `*.coa.jsonl` record (collect.trajectory_record, rl._record)."""

    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    tool_failures: int = 0
    simulated: bool = False
    truncated: bool = False  # hit max_new_tokens in a turn, max_len, or max_obs_tokens on a real observation
    finished: bool = False  # ended on an answer / EOS (not a limit, not a refused action)
    contexts: list[tuple[int, int]] = field(default_factory=list)  # (length, crc32) of each turn's model input
    prompt: str = ""  # text samplers: the prompt text (or chat messages' rendering) the teacher saw
    text: str = ""  # text samplers: the response so far
    length: int = 0  # text samplers: prompt + response tokens as far as known (the server's usage)
    error: str | None = None  # text samplers: the teacher failed for this trajectory (retries exhausted)


def crc(ids: list[int]) -> int:
    """CRC-32 of token ids: each turn's context is recorded as (length, crc) for `loop.retok_mismatch`."""
    return zlib.crc32(array("q", ids).tobytes())
