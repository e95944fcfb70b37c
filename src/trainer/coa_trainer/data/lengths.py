"""Sequence lengths follow the data. A realistic chat prompt (AutoCoA's instructions are ~858 tokens under a Qwen-style
tokenizer) is longer than a cap sized for the embedded default, and truncating prompt + response to it silently
trained nothing: SFT-2 logged loss 0 and finished "ok", RL-2 generated empty responses. So:

- `max_len: null` (the default of the SFT, RL and eval settings) is derived: SFT stages take their longest example,
  rollouts are bounded by the model's context only (max_turns, max_new_tokens and max_obs_tokens bound them anyway);
  both are capped by the model's context (`max_position_embeddings`).
- Every stage measures what the cap does to its data when the data is loaded, says it in one line when it cuts
  anything (`3 of 40 examples lose their whole response at max_len 320; the prompt alone is 858 tokens`), and stops
  with that line when nothing would be left to train."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from ..base.errors import StageError


NO_CAP = 2**31 - 1  # rollouts of a model that names no context: bounded by their turn limits only


def resolve_max_len(configured: int | None, need: int | None, context: int | None) -> int:
    """The configured cap, else what the data needs, never past the model's context."""
    if configured is not None:
        return configured
    return min([n for n in (need, context) if n is not None], default=NO_CAP)


@dataclass
class LengthReport:
    """What a cap does to a stage's examples (prompt + response, tokens)."""

    what: str  # "sft2 examples", "rl2 questions"
    max_len: int
    examples: int
    prompt_max: int
    prompt_median: float
    whole: int  # examples whose response is cut away entirely (or, for rollouts, whose prompt leaves no room)
    partial: int  # examples cut inside their response
    trained: int  # loss-bearing tokens left after the cut (SFT); prompts with room (rollouts)
    derived: bool  # max_len came from the data / the model, not the config

    def line(self) -> str | None:
        """One line for the run's log when the cap cuts anything, else None."""
        if not (self.whole or self.partial):
            return None
        parts = []
        if self.whole:
            parts.append(
                f"{self.whole} of {self.examples} {self.what} lose their whole response at max_len {self.max_len}"
            )
        if self.partial:
            parts.append(f"{self.partial} of {self.examples} are cut inside their response")
        source = "from the model's context" if self.derived else "set in the config"
        return (
            f"{'; '.join(parts)} (max_len {source}); the prompt alone is {self.prompt_max} tokens at most "
            f"(median {self.prompt_median:g})"
        )

    def require_tokens(self, stage: str) -> None:
        """A stage that would train on nothing stops here, saying why, instead of finishing "ok"."""
        if self.examples and self.trained == 0:
            raise StageError(
                f"{stage} would train on no tokens: {self.line()}. Raise stages.{stage}.max_len (or "
                "set it to null to follow the data) or shorten the prompt",
                "bad_data",
            )


def sft_report(what: str, examples: list[Any], max_len: int, derived: bool) -> LengthReport:
    """`examples`: untruncated data.Encoded (prompt_ids, ids, loss_mask)."""
    prompts = [len(e.prompt_ids) for e in examples] or [0]
    whole = partial = trained = 0
    for e in examples:
        keep = max(0, max_len - len(e.prompt_ids))
        if keep < len(e.ids):
            if keep == 0 or not any(e.loss_mask[:keep]):
                whole += 1
            else:
                partial += 1
        trained += sum(e.loss_mask[:keep])
    return LengthReport(what, max_len, len(examples), max(prompts), median(prompts), whole, partial, trained, derived)


def rollout_report(what: str, prompt_lengths: list[int], max_len: int, derived: bool, turn_tokens: int) -> LengthReport:
    """Questions whose prompt leaves no room to generate under `max_len` (their rollouts would be empty), and those
    that leave less than one turn (`turn_tokens`, max_new_tokens) — cut inside their first answer."""
    prompts = prompt_lengths or [0]
    whole = sum(1 for n in prompt_lengths if n >= max_len)
    partial = sum(1 for n in prompt_lengths if max_len - turn_tokens < n < max_len)
    return LengthReport(
        what,
        max_len,
        len(prompt_lengths),
        max(prompts),
        median(prompts),
        whole,
        partial,
        len(prompt_lengths) - whole,
        derived,
    )
