"""Losses without full logits and packed attention without a dense mask, on CPU: the fused linear + cross-entropy
(model/linear_ce.py) gives the full-logit loss and gradients, chunk by chunk; the SFT loss through it equals the loss
from every logit; a packed row's attention runs per sequence with no [T, T] mask built and equals the padded batch.
(test_scale.py checks packed = padded for every stage loss; the CUDA kernels — Liger, varlen flash — are compared
with these paths by bench/gpu/device-check.sh.)"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F

from coa_trainer.algos.losses import lm_loss_parts
from coa_trainer.data.samples import Encoded
from coa_trainer.model import packing, scoring
from coa_trainer.model.linear_ce import ChunkedLinearNLL, linear_nll_sum
from coa_trainer.model.packing import layout
from coa_trainer.model.scoring import TokenScorer, full_token_logprobs

CPU = torch.device("cpu")


def _lm(tied: bool, seed: int = 0, model_type: str = "qwen2"):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    common = dict(
        vocab_size=211,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=tied,
    )
    if model_type == "llama":
        return LlamaForCausalLM(LlamaConfig(**common))
    return Qwen2ForCausalLM(Qwen2Config(**common))


def _grads(model) -> dict[str, torch.Tensor]:
    out = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out


def test_chunked_linear_nll_equals_cross_entropy_of_full_logits():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(37, 16, generator=g, requires_grad=True)
    w = torch.randn(53, 16, generator=g, requires_grad=True)
    b = torch.randn(53, generator=g, requires_grad=True)
    t = torch.randint(0, 53, (37,), generator=g)
    want = F.cross_entropy(h @ w.t() + b, t, reduction="sum")
    gw = torch.autograd.grad(want * 1.7, (h, w, b))
    for rows in (1, 5, 37, 64):  # chunks of one row, uneven chunks, one chunk, more than needed
        got = ChunkedLinearNLL.apply(h, w, b, t, rows, True)
        assert torch.allclose(got, want, atol=1e-4)
        for x, y in zip(torch.autograd.grad(got * 1.7, (h, w, b)), gw):  # the scalar's gradient scales them
            assert torch.allclose(x, y, atol=1e-4)


def test_with_grad_mode_off_the_fused_head_computes_the_loss_only(monkeypatch):
    """Evaluation (no_grad) gets the same loss and builds no gradients: needs_input_grad stays True under no_grad,
    so the function is told the caller's grad mode; the softmax − one-hot step never runs."""
    g = torch.Generator().manual_seed(0)
    h = torch.randn(37, 16, generator=g, requires_grad=True)
    head = torch.nn.Linear(16, 53)
    t = torch.randint(0, 53, (37,), generator=g)
    want = F.cross_entropy(head(h), t, reduction="sum")

    def no_softmax(*a, **k):
        raise AssertionError("gradients computed with grad mode off")

    with torch.no_grad():
        monkeypatch.setattr(torch, "softmax", no_softmax)
        got = linear_nll_sum(h, head, t, 7, kernel="chunked")
    assert torch.allclose(got, want, atol=1e-4) and not got.requires_grad


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_sft_loss_through_the_fused_head_equals_the_full_logit_loss(monkeypatch, packed, tied):
    monkeypatch.setattr(scoring, "CHUNK_ELEMENTS", 211 * 7)  # several chunks
    lm = _lm(tied)
    r = random.Random(3)
    seqs = [[r.randrange(1, 211) for _ in range(r.randrange(3, 30))] for _ in range(5)]
    batch = [
        Encoded(s[:2], s[2:], ["think"] * (len(s) - 2), [r.randrange(2) for _ in s[2:]], [0] * (len(s) - 2), "")
        for s in seqs
    ]
    loss, count, _ = lm_loss_parts(lm, batch, 0, CPU, None, packed)
    loss.backward()
    fused = _grads(lm)
    lay = layout([e.input_ids for e in batch], 0, False, CPU)
    tmask = lay.place([e.target_mask[1 : len(e.input_ids)] for e in batch])
    lp, _ = full_token_logprobs(lm, lay.ids, lay.attn)
    ref = -(lp * tmask).sum()
    ref.backward()
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-5) and count == float(tmask.sum())
    full = _grads(lm)
    assert fused.keys() == full.keys()
    for n in full:
        assert torch.allclose(fused[n], full[n], atol=2e-5, rtol=1e-4), n


@pytest.mark.parametrize("model_type", ["qwen2", "llama"])
def test_packed_attention_builds_no_dense_mask_and_equals_padded_attention(monkeypatch, model_type):
    import transformers.masking_utils as mu

    lm = _lm(False, seed=1, model_type=model_type)
    scorer = TokenScorer(lm)
    assert scorer.packed_attention and lm.config._attn_implementation == packing.PACKED_ATTENTION
    r = random.Random(5)
    seqs = [[r.randrange(1, 211) for _ in range(n)] for n in (9, 2, 31, 14)]
    sel_p = layout(seqs, 0, True, CPU)
    sel_u = layout(seqs, 0, False, CPU)
    w_p = sel_p.place([[r.random() for _ in s[1:]] for s in seqs])
    w_u = sel_u.place([[w_p[0, a + j].item() for j in range(n - 1)] for _, a, n in sel_p.spans])

    calls = {"mask": 0, "varlen": 0}
    real_mask, real_varlen = mu.sdpa_mask, packing.varlen_causal

    def counting_mask(*a, **k):
        calls["mask"] += 1
        return real_mask(*a, **k)

    def counting_varlen(*a, **k):
        calls["varlen"] += 1
        return real_varlen(*a, **k)

    monkeypatch.setattr(mu, "sdpa_mask", counting_mask)
    monkeypatch.setattr(packing, "varlen_causal", counting_varlen)
    lp, ent = scorer(sel_p.ids, None, sel_p.pos, with_entropy=True)
    assert calls == {"mask": 0, "varlen": 2}  # no mask built; each layer's attention ran per sequence
    (lp * w_p).sum().backward()
    g_p = _grads(lm)
    lu, eu = scorer(sel_u.ids, sel_u.attn, None, with_entropy=True)
    assert calls["mask"] == 1  # the padded batch keeps transformers' sdpa mask
    (lu * w_u).sum().backward()
    g_u = _grads(lm)
    for (_, a, n), (urow, _, _) in zip(sel_p.spans, sel_u.spans):
        assert torch.allclose(lp[0, a : a + n - 1], lu[urow, : n - 1], atol=1e-5)
        assert torch.allclose(ent[0, a : a + n - 1], eu[urow, : n - 1], atol=1e-5)
    for n in g_u:
        assert torch.allclose(g_p[n], g_u[n], atol=1e-5, rtol=1e-4), n


def test_a_model_set_to_packed_attention_saves_and_generates_as_sdpa(tmp_path):
    """The switch is a runtime choice: the saved config does not name it, and generation with a KV cache (masks
    from transformers) is unchanged."""
    from coa_trainer.rollout.generate import reference_generate

    lm = _lm(True, seed=2).eval()
    prompts = [[5, 6, 7, 8], [9, 10]]
    before = reference_generate(lm, prompts, 6, set(), 0, CPU)
    TokenScorer(lm)
    assert lm.config._attn_implementation == packing.PACKED_ATTENTION
    assert reference_generate(lm, prompts, 6, set(), 0, CPU)[0] == before[0]
    lm.save_pretrained(str(tmp_path))
    assert packing.PACKED_ATTENTION not in (tmp_path / "config.json").read_text()


def test_the_pinned_liger_kernel_offers_what_the_cuda_path_calls():
    """Imported, not run (Triton needs CUDA): the fused linear cross-entropy and the module patches we bind."""
    import inspect

    from coa_trainer.model.liger import fused_linear_ce_class

    cls = fused_linear_ce_class()
    assert cls is not None and list(inspect.signature(cls.forward).parameters)[1:4] == [
        "lin_weight",
        "_input",
        "target",
    ]
    from liger_kernel.transformers.monkey_patch import _patch_rms_norm_module, _patch_swiglu_module  # noqa: F401

    with pytest.raises(RuntimeError, match="liger"):
        linear_nll_sum(torch.zeros(2, 4), torch.nn.Linear(4, 5), torch.zeros(2, dtype=torch.long), 2, kernel="liger")


def test_chunked_linear_token_loss_equals_autograd_through_full_logits():
    """A token-local loss of each target's log-prob at a temperature, through the head in one pass: its value, the
    log-probs, the entropy and the gradients of h, W and b equal autograd's through the whole [N, V] log-softmax."""
    from coa_trainer.model.linear_ce import ChunkedLinearTokenLoss

    g = torch.Generator().manual_seed(0)
    h = torch.randn(29, 16, generator=g, requires_grad=True)
    w = torch.randn(53, 16, generator=g, requires_grad=True)
    b = torch.randn(53, generator=g, requires_grad=True)
    t = torch.randint(0, 53, (29,), generator=g)
    a = torch.randn(29, generator=g)

    def f(lp, pos):  # non-linear, per token, reads per-token constants by position
        return a[pos] * torch.exp(lp - 0.3) + 0.5 * lp**2

    z = (h @ w.t() + b) / 0.7
    logp_all = torch.log_softmax(z, dim=-1)
    want_lp = logp_all.gather(-1, t[:, None]).squeeze(-1)
    want = f(want_lp, torch.arange(29)).sum()
    want_ent = -(logp_all.exp() * logp_all).sum(-1)
    gw = torch.autograd.grad(want * 1.3, (h, w, b))
    for rows in (1, 6, 29, 64):
        got, lp, ent = ChunkedLinearTokenLoss.apply(h, w, b, t, rows, 0.7, f, torch.arange(29), True)
        assert torch.allclose(got, want, atol=1e-4) and torch.allclose(lp, want_lp.detach(), atol=1e-5)
        assert torch.allclose(ent, want_ent.detach(), atol=1e-4) and not lp.requires_grad
        for x, y in zip(torch.autograd.grad(got * 1.3, (h, w, b)), gw):
            assert torch.allclose(x, y, atol=1e-4), (rows, (x - y).abs().max())


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize(
    "tied, with_ref, temperature", [(False, True, 1.0), (True, False, 0.8)], ids=["untied+ref", "tied+no ref+T0.8"]
)
def test_grpo_through_the_fused_head_equals_the_checkpointed_chunks(monkeypatch, packed, tied, with_ref, temperature):
    """The fused GRPO head (CUDA's path) forced on CPU: loss, count, metrics and every gradient equal the checkpointed
    chunks' (CPU's path)."""
    from coa_trainer.algos.grpo import Sample, grpo_loss_parts

    monkeypatch.setattr(scoring, "CHUNK_ELEMENTS", 211 * 9)  # several chunks
    lm, ref = _lm(tied, seed=6), (_lm(tied, seed=7) if with_ref else None)
    r = random.Random(8)
    samples = []
    for _ in range(5):
        ids = [r.randrange(1, 211) for _ in range(r.randrange(2, 20))]
        mask = [1 if r.random() < 0.8 else 0 for _ in ids]
        samples.append(
            Sample(
                [r.randrange(1, 211) for _ in range(r.randrange(1, 6))],
                ids,
                mask,
                [-r.random() * 4 if m else None for m in mask],
                r.uniform(-1.5, 1.5),
            )
        )
    out = {}
    for mode in ("never", "always"):
        monkeypatch.setattr(scoring, "FUSED_TOKEN_LOSS", mode)
        loss, count, extras = grpo_loss_parts(
            lm, ref, samples, 0, CPU, None, 0.2, 0.05, temperature, packed, lpd_edges=[0.01, 0.1, 1.0]
        )
        loss.backward()
        out[mode] = (float(loss.detach()), count, extras, _grads(lm))
    (l0, c0, e0, g0), (l1, c1, e1, g1) = out["never"], out["always"]
    assert l1 == pytest.approx(l0, rel=1e-5, abs=1e-6) and c1 == c0
    assert e1.keys() == e0.keys() and all(e1[k] == pytest.approx(e0[k], rel=1e-4, abs=1e-5) for k in e0)
    assert g1.keys() == g0.keys()
    for n in g0:
        assert torch.allclose(g1[n], g0[n], atol=2e-5, rtol=1e-4), (n, (g1[n] - g0[n]).abs().max())
