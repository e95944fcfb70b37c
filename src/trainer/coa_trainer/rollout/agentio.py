"""A dialect's tags as a tokenizer sees them, for the rollout loop. Two modes:
- special: every tag is one token (the embedded default, or `model.tags_as_special_tokens`): turns stop on the
  closing tags' ids, queries are the ids between the tag ids.
- text: tags are ordinary text for the tokenizer (a pretrained model's own vocabulary, untouched). A turn stops
  when the closing tag's *string* has been generated, however BPE split it over tokens or merged it with what
  follows (`</search>` + `\\n` in one token); the query is read from the turn's decoded text.
In both modes generated ids are kept as generated and an observation is tokenised once and appended, so the ids
that are trained are the ids that were sampled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data.dialects import Tags
from ..data.tokenizer import TextTokenizer


@dataclass
class AgentIO:
    tok: Any
    t: Tags
    special: bool
    extra_eos: tuple[int, ...] = ()

    @classmethod
    def make(cls, tok: TextTokenizer, t: Tags, extra_eos: tuple[int, ...] = ()) -> "AgentIO":
        """Special mode exactly when every tag the loop needs is one token of `tok`."""
        needed = [t.action_open, t.action_close, t.obs_open, t.obs_close] + ([t.answer_close] if t.answer_close else [])
        special = all(_single_id(tok, s) is not None for s in needed)
        return cls(tok, t, special, tuple(i for i in extra_eos if i is not None and i != tok.eos_token_id))

    def id_of(self, s: str) -> int:
        i = _single_id(self.tok, s)
        assert i is not None, s
        return i

    # ------------------------------------------------------------ stops
    def turn_stops(self) -> tuple[set[int], list[str]]:
        """(stop ids, stop strings) of a policy turn: the action's close, the answer's close, EOS."""
        closes = [self.t.action_close] + ([self.t.answer_close] if self.t.answer_close else [])
        ids = self.eos_ids()
        if self.special:
            return ids | {self.id_of(c) for c in closes}, []
        return ids, closes

    def obs_stops(self) -> tuple[set[int], list[str]]:
        if self.special:
            return {self.id_of(self.t.obs_close)}, []
        return set(), [self.t.obs_close]

    def ended_with_action(self, turn_ids: list[int]) -> bool:
        """Whether a turn that stopped ended on the action's closing tag (not the answer's, not EOS)."""
        if not turn_ids:
            return False
        if self.special:
            return turn_ids[-1] == self.id_of(self.t.action_close)
        if turn_ids[-1] in self.eos_ids():
            return False
        return self.text_ended_with_action(self.tok.decode(turn_ids, skip_special_tokens=False))

    def eos_ids(self) -> set[int]:
        """Token ids that end a trajectory: the tokenizer's EOS plus `extra_eos` (a model's generation_config may
        name several, as Qwen2.5's `[<|im_end|>, <|endoftext|>]` — what a server generating from the same
        directory stops on)."""
        return {self.tok.eos_token_id, *self.extra_eos}

    def text_ended_with_action(self, text: str) -> bool:
        """The text form (a turn as an OpenAI-compatible endpoint returns it): the last closing tag is the
        action's."""
        a = text.rfind(self.t.action_close)
        b = text.rfind(self.t.answer_close) if self.t.answer_close else -1
        return a >= 0 and a >= b

    def text_query(self, text: str) -> str:
        """The query of the action that ends the turn `text`."""
        end = text.rfind(self.t.action_close)
        start = text.rfind(self.t.action_open, 0, max(end, 0))
        return self._argument(text[start + len(self.t.action_open) : end].strip()) if 0 <= start < end else ""

    def query(self, ids: list[int], turn_start: int) -> str:
        """The query of the action that ends `ids` (the turn began at `turn_start`)."""
        if self.special:
            a_open = self.id_of(self.t.action_open)
            try:
                start = len(ids) - 1 - ids[::-1].index(a_open)
            except ValueError:
                return ""
            return self._argument(self.tok.decode(ids[start + 1 : -1], skip_special_tokens=False).strip())
        return self.text_query(self.tok.decode(ids[turn_start:], skip_special_tokens=False))

    def _argument(self, body: str) -> str:
        """Hermes-style calls carry `{"name": …, "arguments": {"query": …}}`: the search gets the query argument
        (whether the call is well formed is the core's format rules' business, at grading)."""
        if not self.t.json_actions:
            return body
        import json

        try:
            q = json.loads(body).get("arguments", {}).get("query")
        except (ValueError, AttributeError):
            return body
        return q.strip() if isinstance(q, str) else body

    # ------------------------------------------------------------ observations
    def observation_ids(self, body: str, max_tokens: int) -> tuple[list[int], bool]:
        """`<obs>body</obs>` as ids, tokenised once; the body cut to `max_tokens` tokens. (ids, truncated)."""
        tok = self.tok
        body_ids = tok.encode(body, add_special_tokens=False)
        cut = len(body_ids) > max_tokens
        if self.special:
            return [self.id_of(self.t.obs_open), *body_ids[:max_tokens], self.id_of(self.t.obs_close)], cut
        if cut:
            body = tok.decode(body_ids[:max_tokens], skip_special_tokens=False)
        return list(tok.encode(f"{self.t.obs_open}{body}{self.t.obs_close}", add_special_tokens=False)), cut

    def obs_open_ids(self) -> list[int]:
        if self.special:
            return [self.id_of(self.t.obs_open)]
        return list(self.tok.encode(self.t.obs_open, add_special_tokens=False))

    def obs_close_ids(self) -> list[int]:
        if self.special:
            return [self.id_of(self.t.obs_close)]
        return list(self.tok.encode(self.t.obs_close, add_special_tokens=False))

    # ------------------------------------------------------------ metrics
    def think_tokens(self, ids: list[int], mask: list[int]) -> int:
        """Model-written tokens inside think blocks (tags excluded; text mode: tokens starting inside)."""
        if self.special:
            o, c = self.id_of(self.t.think_open), self.id_of(self.t.think_close)
            inside, n = False, 0
            for i, m in zip(ids, mask):
                if i == o:
                    inside = True
                elif i == c:
                    inside = False
                elif inside and m:
                    n += 1
            return n
        starts, pos = [], 0
        for i in ids:  # each token's start in the decoded text (ASCII tags: per-token decoding keeps them whole)
            starts.append(pos)
            pos += len(self.tok.decode([i], skip_special_tokens=False))
        text = "".join(self.tok.decode([i], skip_special_tokens=False) for i in ids)
        spans, k = [], 0
        while (o := text.find(self.t.think_open, k)) >= 0:
            c = text.find(self.t.think_close, o)
            c = len(text) if c < 0 else c
            spans.append((o + len(self.t.think_open), c))
            k = c + 1
        return sum(1 for st, m in zip(starts, mask) if m and any(a <= st < b for a, b in spans))


def _single_id(tok: TextTokenizer, s: str) -> int | None:
    ids = tok.encode(s, add_special_tokens=False)
    if len(ids) != 1 or ids[0] == tok.unk_token_id:
        return None
    return ids[0]
