"""GRPO loss: a hand-computed batch, and observation tokens (loss mask 0) changing nothing — loss or gradients."""

import math

import pytest
import torch

from coa_trainer.algos.grpo import Sample, group_advantages, grpo_loss_parts, grpo_token_terms


def test_group_advantages_centre_and_scale():
    assert group_advantages([1, 0, 0, 1], 2, False) == [0.5, -0.5, -0.5, 0.5]
    a = group_advantages([1.0, 0.0, 0.0, 0.0], 4, True, eps=0.0)
    std = math.sqrt(0.25 * 0.75)  # population std of {1, 0, 0, 0}
    assert a == pytest.approx([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std])
    assert group_advantages([1.0, 1.0], 2, True) == [0.0, 0.0]  # all-correct group: no signal, no NaN
    with pytest.raises(ValueError):
        group_advantages([1.0, 0.0, 1.0], 2, False)


def test_hand_computed_loss():
    # one row, 4 positions; position 2 is an observation token (mask 0)
    logp = torch.tensor([[math.log(0.5), math.log(0.2), -1.0, math.log(0.3)]])
    old = torch.tensor([[math.log(0.4), math.log(0.2), 5.0, math.log(0.2)]])
    ref = torch.tensor([[math.log(0.5), math.log(0.4), 9.0, math.log(0.3)]])
    mask = torch.tensor([[1.0, 1.0, 0.0, 1.0]])
    adv = torch.tensor([2.0])
    eps, beta = 0.2, 0.1
    loss_sum, count, ex = grpo_token_terms(logp, old, ref, adv, mask, eps, beta)
    # ratios 1.25 (clipped to 1.2), 1.0, 1.5 (clipped to 1.2); A = 2 > 0 so min picks the clipped value
    pg = [-1.2 * 2, -1.0 * 2, -1.2 * 2]
    # k3 = r − log r − 1 with r = π_ref / π: 1, 2, 1
    k3 = [0.0, 2 - math.log(2) - 1, 0.0]
    expected = sum(p + beta * k for p, k in zip(pg, k3))
    assert count == 3.0
    assert float(loss_sum) == pytest.approx(expected, abs=1e-6)
    assert ex["clip_sum"] == 2.0
    assert ex["kl_sum"] == pytest.approx(sum(k3), abs=1e-6)
    # negative advantage: the unclipped (larger loss) side is kept for ρ > 1 + ε
    loss_neg, _, ex_neg = grpo_token_terms(logp, old, ref, -adv, mask, eps, 0.0)
    assert float(loss_neg) == pytest.approx(1.25 * 2 + 1.0 * 2 + 1.5 * 2, abs=1e-6)
    assert ex_neg["clip_sum"] == 0.0


def test_masked_positions_never_leak():
    """Huge values at mask-0 positions (inf·0 would be NaN) change neither the loss nor its gradient."""
    torch.manual_seed(0)
    base = torch.randn(2, 6)
    mask = torch.tensor([[1, 1, 0, 0, 1, 1], [1, 0, 0, 1, 1, 0]], dtype=torch.float32)
    old, ref, adv = torch.randn(2, 6), torch.randn(2, 6), torch.randn(2, 6)

    def run(junk: float):
        lp = base.clone().requires_grad_(True)
        o, r, a = old.clone(), ref.clone(), adv.clone()
        lp_in = torch.where(mask > 0, lp, lp + junk)  # the policy's own values at masked positions differ too
        o[mask == 0], r[mask == 0], a[mask == 0] = -junk, junk, junk
        s, c, _ = grpo_token_terms(lp_in, o, r, a, mask, 0.2, 0.05)
        (s / c).backward()
        return float(s.detach()), c, lp.grad.clone()

    s1, c1, g1 = run(0.0)
    s2, c2, g2 = run(1e4)
    assert c1 == c2 == float(mask.sum())
    assert s1 == s2
    assert torch.equal(g1, g2)
    assert torch.all(g1[mask == 0] == 0)


# Tolerance for comparisons across tensor shapes: a few dozen float32 rounding steps, never a masking bug's size.
_EPS32 = torch.finfo(torch.float32).eps


def _tiny_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(1)
    cfg = LlamaConfig(
        vocab_size=40,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
    )
    return LlamaForCausalLM(cfg)


def test_observation_tokens_change_nothing_with_a_real_model():
    """A trajectory whose last turn is an observation: replacing the observation's ids (and their recorded
    log-probs) leaves the loss, the token count and every gradient exactly as they were."""
    model = _tiny_model()
    ref = _tiny_model()
    prompt = [5, 6, 7]
    gen = [8, 9, 10, 11]

    def loss_and_grads(obs: list[int], obs_lp: float):
        model.zero_grad()
        s = Sample(
            prompt,
            gen + obs,
            [1] * len(gen) + [0] * len(obs),
            [-1.0, -2.0, -1.5, -0.7] + [obs_lp] * len(obs),
            advantage=0.8,
        )
        other = Sample([5, 6], [12, 13, 14], [1, 1, 1], [-0.5, -3.0, -2.0], advantage=-0.8)
        total, count, _ = grpo_loss_parts(model, ref, [s, other], 0, torch.device("cpu"), None, 0.2, 0.01, 1.0)
        (total / count).backward()
        return float(total.detach()), count, [p.grad.clone() for p in model.parameters()]

    a = loss_and_grads([20, 21, 22], -1.0)
    b = loss_and_grads([30, 31, 32], 7.0)
    assert a[1] == b[1] == 7.0  # 4 + 3 model-generated tokens: the observation is not in the denominator
    assert a[0] == b[0]
    assert all(torch.equal(x, y) for x, y in zip(a[2], b[2]))
    # A longer observation pads the batch to another length: the same terms are summed over differently shaped
    # tensors, so float summation order may differ (seen: 7e-12 with 2 threads). Same value up to rounding.
    c = loss_and_grads([20, 21, 22, 23, 24], -1.0)
    assert c[1] == a[1]
    assert c[0] == pytest.approx(a[0], rel=_EPS32 * 64, abs=_EPS32)
    for x, y in zip(a[2], c[2]):
        torch.testing.assert_close(y, x, rtol=_EPS32 * 64, atol=_EPS32 * 64 * float(x.abs().max()))
