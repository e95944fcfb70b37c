"""The SFT-1 contrastive loss against a hand computation, and the LM loss masking."""

import math

import torch

from coa_trainer.data.samples import Encoded, Pair
from coa_trainer.algos.losses import lm_loss_parts, sft1_loss_parts


class TableLM(torch.nn.Module):
    """A model whose next-token distribution depends only on the current token (a learnable table)."""

    def __init__(self, vocab: int = 6):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.table = torch.nn.Parameter(torch.randn(vocab, vocab, generator=g))

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        class Out:
            pass

        o = Out()
        o.logits = self.table[input_ids]
        return o


def lp(model, prev, nxt):
    return torch.log_softmax(model.table[prev], -1)[nxt].item()


def test_sft1_loss_matches_hand_computation():
    m = TableLM()
    pairs = [Pair([1], [2], [3, 4], [5], True), Pair([1], [2, 3], [4], [5, 5, 1], False)]
    beta, margin, alpha = 2.0, 0.5, 0.2
    total, count, extras = sft1_loss_parts(m, pairs, 0, torch.device("cpu"), None, beta, margin, alpha)
    expected = 0.0
    correct = 0
    for p in pairs:
        ctx = p.prompt_ids + p.prefix_ids

        def mean_lp(cont, ctx=ctx):
            seq = ctx + cont
            vals = [lp(m, seq[i - 1], seq[i]) for i in range(len(ctx), len(seq))]
            return sum(vals) / len(vals)

        pc, pr = mean_lp(p.chosen_ids), mean_lp(p.rejected_ids)
        correct += pc > pr
        expected += -math.log(1 / (1 + math.exp(-(beta * (pc - pr) - margin)))) + alpha * (-pc)
    assert count == 2
    assert abs(total.item() - expected) < 1e-5
    assert extras["pair_correct"] == correct
    total.backward()
    assert m.table.grad is not None and m.table.grad.abs().sum() > 0


def test_lm_loss_counts_only_masked_in_targets():
    m = TableLM()
    e = Encoded([1, 2], [3, 4, 5], ["think", "observation", "answer"], [1, 0, 1], [0, 0, 0], "")
    total, count, _ = lm_loss_parts(m, [e], 0, torch.device("cpu"), None)
    # targets: 2 (prompt, no loss), 3 (mask 1), 4 (mask 0), 5 (mask 1)
    expected = -(lp(m, 2, 3) + lp(m, 4, 5))
    assert count == 2 and abs(total.item() - expected) < 1e-5


def test_sft1_mean_skips_masked_continuation_tokens():
    """Users' pairs are whole trajectories: the mean log-prob runs over model-written tokens only (mask 1), the
    environment's observation tokens (mask 0) are context."""
    m = TableLM()
    p = Pair([1], [], [2, 3, 4, 5], [5, 4], True, chosen_mask=[1, 0, 0, 1], rejected_mask=[0, 1])
    total, _, extras = sft1_loss_parts(m, [p], 0, torch.device("cpu"), None, 1.0, 0.0, 0.0)
    pc = (lp(m, 1, 2) + lp(m, 4, 5)) / 2
    pr = lp(m, 5, 4)
    assert abs(extras["logp_chosen"] - pc) < 1e-5 and abs(extras["logp_rejected"] - pr) < 1e-5
    assert abs(total.item() - (-math.log(1 / (1 + math.exp(-(pc - pr)))))) < 1e-5
