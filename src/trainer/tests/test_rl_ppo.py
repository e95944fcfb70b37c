"""PPO-style reuse of a rollout batch in the RL stages (`mini_batches`, `ppo_epochs`): the importance ratio against
the sampler's log-probs leaves 1 after the first update and the clipping becomes active; one mini-batch and one
epoch is exactly the single on-policy update the stage always made."""

import copy
import json

import pytest
import torch

from coa_trainer.base.distributed import DistInfo
from coa_trainer.algos.grpo import Sample, group_advantages, grpo_loss_parts
from coa_trainer.stages.rl import mini_batch_slices, policy_updates
from conftest import TINY, merge, read_events, run_trainer

G = 2
CPU = torch.device("cpu")


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


def _samples(model) -> list[Sample]:
    """4 groups × G = 2 trajectories with an observation span (mask 0), log-probs from `model` itself as the
    sampler at temperature 1, so the first update is exactly on-policy."""
    g = torch.Generator().manual_seed(7)
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    adv = group_advantages(rewards, G, True)
    out = []
    for i, a in enumerate(adv):
        prompt = torch.randint(2, 40, (3,), generator=g).tolist()
        ids = torch.randint(2, 40, (7,), generator=g).tolist()
        mask = [1, 1, 1, 0, 0, 1, 1] if i % 2 else [1] * 7
        with torch.no_grad():
            x = torch.tensor([prompt + ids])
            lp = torch.log_softmax(model(input_ids=x).logits[0, :-1].float(), -1).gather(-1, x[0, 1:, None])[:, 0]
        sampler = lp[len(prompt) - 1 :].tolist()
        out.append(Sample(prompt, ids, mask, [v if m else None for v, m in zip(sampler, mask)], a))
    return out


def _scfg(**over):
    from coa_trainer.base.config import validate_config

    rl2 = {
        "mini_batches": 1,
        "ppo_epochs": 1,
        "clip_eps": 0.05,
        "kl_coef": 0.0,
        "temperature": 1.0,
        "grad_clip": 1.0,
        "micro_batch_tokens": None,
        "packing": False,
        **over,
    }
    return validate_config({"stages": {"rl2": rl2}}).stages.rl2


def _opt(model, lr):
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0, betas=(0.9, 0.95)), params


def _run(model, samples, lr=0.05, **over):
    opt, params = _opt(model, lr)
    return policy_updates(model, None, opt, params, samples, G, _scfg(**over), 0, CPU, None, DistInfo())


def test_mini_batch_slices_keep_groups_whole():
    assert mini_batch_slices(8, 2, 1) == [slice(0, 8)]
    assert mini_batch_slices(8, 2, 2) == [slice(0, 4), slice(4, 8)]
    assert mini_batch_slices(6, 2, 2) == [slice(0, 4), slice(4, 6)]  # 3 groups: 2 + 1
    assert mini_batch_slices(6, 3, 2) == [slice(0, 3), slice(3, 6)]
    with pytest.raises(ValueError):
        mini_batch_slices(4, 2, 3)


def test_one_mini_batch_is_exactly_the_previous_update():
    """The stage's former inline update (one grpo_loss_parts over the batch, token-mean, clip, step) and
    policy_updates with mini_batches = ppo_epochs = 1 give the same loss, norm and weights, bit for bit."""
    a = _tiny_model()
    samples = _samples(a)
    b = copy.deepcopy(a)
    scfg = _scfg()

    opt, params = _opt(a, 0.05)
    loss_sum, count, extras = grpo_loss_parts(
        a, None, samples, 0, CPU, None, scfg.clip_eps, scfg.kl_coef, scfg.temperature
    )
    loss = loss_sum / max(count, 1.0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = float(torch.nn.utils.clip_grad_norm_(params, scfg.grad_clip))
    opt.step()

    sums, norm_b = _run(b, samples)
    assert sums["count"] == count == float(sum(sum(s.loss_mask) for s in samples))
    assert sums["loss_sum"] == float(loss_sum.detach())
    assert norm_b == norm
    assert all(sums[k] == v for k, v in extras.items())
    assert sums["clip_sum"] == 0.0  # on-policy: nothing to clip
    assert sums["ratio_sum"] / sums["count"] == pytest.approx(1.0, abs=1e-5)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))


def test_two_mini_batches_make_the_ratio_leave_one_and_clip():
    """Update 1 sees the sampler's own policy (ratio 1, no clipping); update 2 sees a policy that update 1 moved,
    against the same sampler log-probs, so its ratio departs from 1 and tokens get clipped."""
    model = _tiny_model()
    samples = _samples(model)
    first = copy.deepcopy(model)  # update 1 alone, to separate the two updates in policy_updates' sums
    s1, _ = _run(first, samples[:4])
    assert s1["clip_sum"] == 0.0
    assert s1["ratio_sum"] / s1["count"] == pytest.approx(1.0, abs=1e-5)

    both, _ = _run(model, samples, mini_batches=2)
    assert both["count"] == s1["count"] + float(sum(sum(s.loss_mask) for s in samples[4:]))
    second = {k: both[k] - s1[k] for k in ("count", "clip_sum", "ratio_sum")}
    assert second["clip_sum"] > 0  # the clipping is active on the later update
    ratio = second["ratio_sum"] / second["count"]
    assert abs(ratio - 1.0) > 0.01, ratio  # update 1 stays within 1e-5 of 1
    # the reported clip_frac / ratio mean are over both updates
    assert 0 < both["clip_sum"] / both["count"] < 1


def test_ppo_epochs_reuse_the_batch():
    """A second pass over the same (whole) batch is off-policy too: clipping shows up with mini_batches = 1."""
    model = _tiny_model()
    samples = _samples(model)
    once, _ = _run(copy.deepcopy(model), samples)
    twice, _ = _run(model, samples, ppo_epochs=2)
    assert twice["count"] == 2 * once["count"]
    assert once["clip_sum"] == 0.0 and twice["clip_sum"] > 0


def test_config_fields_and_the_stage_check(tmp_path):
    from coa_trainer.base.config import ConfigError, validate_config

    c = validate_config(TINY)
    assert (c.stages.rl1.mini_batches, c.stages.rl2.ppo_epochs) == (1, 1)
    with pytest.raises(ConfigError, match="mini_batches"):
        validate_config(merge(TINY, {"stages": {"rl2": {"mini_batches": 0}}}))
    # more mini-batches than the groups a process gets: one clear error before any model is loaded
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps(merge(TINY, {"stages": {"rl2": {"prompts_per_step": 2, "mini_batches": 3}}})))
    r = run_trainer("train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2, (r.stdout + r.stderr)[-2000:]
    (err,) = [e for e in read_events(tmp_path / "run") if e["type"] == "error"]
    assert err["code"] == "bad_config" and "stages.rl2.mini_batches 3" in err["message"]
