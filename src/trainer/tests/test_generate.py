"""Batched KV-cached generation equals each prompt generated alone: rows that stop early keep exactly their tokens
and log-probs — the rollout engine (`generate`) and the reference loop (`reference_generate`, whose per-step results
are gathered on the device and read back once) alike. test_engine.py compares the two with each other."""

import pytest
import torch

from coa_trainer.rollout.generate import generate, reference_generate

CPU = torch.device("cpu")


def _model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
    )
    return LlamaForCausalLM(cfg).eval()


def _teacher_forced_logprobs(model, prompt, new):
    ids = torch.tensor([prompt + new])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
    return [float(logp[len(prompt) - 1 + k, t]) for k, t in enumerate(new)]


@pytest.mark.parametrize("gen", [generate, reference_generate], ids=["engine", "reference"])
def test_batch_equals_one_by_one_with_early_stops(gen):
    model = _model()
    prompts = [[5, 6, 7], [9, 3], [4, 4, 4, 4, 2], [11]]
    alone = [gen(model, [p], 8, set(), 0, CPU)[0][0] for p in prompts]
    stop = alone[0][2]  # row 0 stops at its third token; others stop wherever this id first appears, if at all
    out, lps, stopped = gen(model, prompts, 8, {stop}, 0, CPU)
    for p, full, got, lp, st in zip(prompts, alone, out, lps, stopped):
        cut = full.index(stop) + 1 if stop in full else len(full)
        assert got == full[:cut]
        assert st == (stop in full)
        assert lp == pytest.approx(_teacher_forced_logprobs(model, p, got), abs=1e-4)
    assert stopped[0] and len(out[0]) == 3


@pytest.mark.parametrize("gen", [generate, reference_generate], ids=["engine", "reference"])
def test_zero_new_tokens_is_empty(gen):
    assert gen(_model(), [[5], [6, 7]], 0, {1}, 0, CPU) == ([[], []], [[], []], [False, False])


def test_a_static_kv_cache_for_the_batch_generates_the_same():
    """The cache allocated up front for batch × (prompt + max_new_tokens) gives the growing cache's tokens and
    log-probs, sampled (same generator seed) and greedy, with early stops."""
    model = _model()
    prompts = [[5, 6, 7], [9, 3], [4, 4, 4, 4, 2], [11]]
    for temperature in (0.0, 1.0):
        runs = []
        for static in (False, True):
            g = torch.Generator().manual_seed(3)
            runs.append(
                reference_generate(
                    model, prompts, 8, {7}, 0, CPU, temperature=temperature, generator=g, static_cache=static
                )
            )
        (a_ids, a_lp, a_st), (b_ids, b_lp, b_st) = runs
        assert a_ids == b_ids and a_st == b_st
        for x, y in zip(a_lp, b_lp):
            assert x == pytest.approx(y, abs=1e-5)


def test_the_reference_loop_samples_from_the_nucleus_and_scores_the_whole_distribution():
    """top_p reaches the reference loop too (models the engine does not run, and a collect teacher's top_p): a nucleus
    of one token is greedy decoding whatever the generator draws, each sampled token lies in its step's nucleus, and
    the log-probs are those of the whole tempered distribution (as the engine's)."""
    model = _model()
    prompts = [[5, 6, 7], [9, 3], [4, 4, 4, 4, 2], [11]]
    greedy = reference_generate(model, prompts, 8, set(), 0, CPU)[0]
    for seed in (0, 1, 2):
        g = torch.Generator().manual_seed(seed)
        assert (
            reference_generate(model, prompts, 8, set(), 0, CPU, temperature=1.0, generator=g, top_p=1e-6)[0] == greedy
        )
    wide = [
        reference_generate(
            model, prompts, 8, set(), 0, CPU, temperature=1.0, generator=torch.Generator().manual_seed(s)
        )[0]
        for s in range(3)
    ]
    assert any(w != greedy for w in wide), "the tiny model samples something other than greedy at full top_p"
    g = torch.Generator().manual_seed(7)
    out, lps, _ = reference_generate(model, prompts, 8, set(), 0, CPU, temperature=1.3, generator=g, top_p=0.6)
    for p, new, lp in zip(prompts, out, lps):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p + new])).logits[0].float()
        logp = torch.log_softmax(logits / 1.3, -1)
        for k, t in enumerate(new):
            probs = logp[len(p) - 1 + k].exp()
            sp, order = probs.sort(descending=True)
            nucleus = set(order[(sp.cumsum(0) - sp) < 0.6].tolist())
            assert t in nucleus
            assert lp[k] == pytest.approx(float(logp[len(p) - 1 + k, t]), abs=1e-4)
