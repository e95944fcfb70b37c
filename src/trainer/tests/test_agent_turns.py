"""The agent-turn conformance vectors (test/conformance/agent-turns.json) through the trainer's multi-turn loop:
`rollout` with the reference sampler (rollout/loop.py run_turns, ModelSampler), the real tags, tokenizer and tool
loop, with the checkpoint replaced by a policy that writes the vector's script. The editor's replay runs the same
file (test/unit/replay/agent-turns.test.ts). The rules a turn ends, is answered and is cut by are rollout/turns.py's,
which the rollout engine's loop (continuous.py) applies too; test_engine.py holds that loop to this one token for
token."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from coa_trainer.data.dialects import tags
from coa_trainer.rollout.loop import rollout
from conftest import REPO

VECTORS = json.loads((REPO / "test" / "conformance" / "agent-turns.json").read_text(encoding="utf-8"))


class ScriptedPolicy(torch.nn.Module):
    """A causal LM that writes its script by position: at response position k (the context's length minus the
    prompt's) its logits are one-hot on the script's k-th token (EOS past its end), whatever the context holds."""

    def __init__(self, script: list[int], prompt_len: int, vocab: int, eos: int):
        super().__init__()
        self.script, self.prompt_len, self.vocab, self.eos = script, prompt_len, vocab, eos

    def forward(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, logits_to_keep: int = 0, **_: Any
    ) -> SimpleNamespace:
        logits = torch.zeros(input_ids.shape[0], 1, self.vocab)
        for row, last in enumerate(position_ids[:, -1].tolist()):  # the context is positions 0 … last
            k = last + 1 - self.prompt_len
            logits[row, -1, self.script[k] if k < len(self.script) else self.eos] = 1.0
        return SimpleNamespace(logits=logits, past_key_values=None)


@pytest.fixture(scope="module")
def tok() -> Any:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(VECTORS["tokenizer"])),
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_the_rollout_loop_runs_every_agent_turn_vector(case, tok):
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompt = ids(case["prompt"])
    policy = ScriptedPolicy(ids(case["policy"]), len(prompt), len(tok), tok.eos_token_id)
    asked: list[str] = []

    def tool(queries: list[str]) -> list[str | None]:
        asked.extend(queries)
        return [case["tool"][q] for q in queries]  # a query the vector does not expect fails the test (KeyError)

    lim = case["limits"]
    simulated = case["mode"] == "simulated"
    [tr] = rollout(
        policy,
        tok,
        [prompt],
        tags("coa"),
        None if simulated else tool,
        simulate=simulated,
        max_turns=lim["max_turns"],
        max_new_tokens=lim["max_new_tokens"],
        max_obs_tokens=lim["max_obs_tokens"],
        max_len=lim["max_len"],
        device=torch.device("cpu"),
        dtype=None,
        engine=False,
    )
    want = case["expect"]
    got = {
        "response": " ".join(tok.convert_ids_to_tokens(tr.ids)),
        "mask": " ".join(map(str, tr.loss_mask)),
        "finished": tr.finished,
        "truncated": tr.truncated,
        "queries": tr.queries,
        "tool_failures": tr.tool_failures,
    }
    assert got == want
    assert asked == [q for q in want["queries"] if not simulated]
    assert [lp is None for lp in tr.logprobs] == [m == 0 for m in tr.loss_mask]  # only what the policy wrote is scored
