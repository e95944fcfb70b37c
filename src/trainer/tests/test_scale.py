"""The scale features on CPU, in one process: chunked log-probs / entropy equal the full log-softmax, packed batches
equal padded ones (losses and gradients), token-budget micro-batches equal one pass, activation checkpointing changes
no gradient, bf16 weights train with fp32 master weights, and flash-attention without its package is a clear error."""

import json
import random

import pytest
import torch
from coa_trainer.model import scoring as logprobs
from coa_trainer.base.config import ConfigError
from coa_trainer.data.samples import Encoded, Pair
from coa_trainer.base.distributed import DistInfo
from coa_trainer.algos.grpo import Sample, grpo_count, grpo_lengths, grpo_loss_parts
from coa_trainer.model.scoring import TokenScorer, full_token_logprobs
from coa_trainer.algos.losses import lm_count, lm_loss_parts, sft1_lengths, sft1_loss_parts
from coa_trainer.algos.microbatch import accumulate
from coa_trainer.model.load import Runtime, load_model
from coa_trainer.model.optim import load_master_state, make_optimizer, master_state
from coa_trainer.model.packing import layout, micro_batches
from conftest import TINY, merge, read_events, run_trainer

CPU = torch.device("cpu")
V = 97


def tiny_lm(seed: int = 0, dtype: torch.dtype = torch.float32, attn: str = "sdpa"):
    from transformers import AutoModelForCausalLM, Qwen2Config

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
        tie_word_embeddings=False,
        attn_implementation=attn,
    )
    return AutoModelForCausalLM.from_config(cfg).to(dtype)


def rand_seqs(n: int, seed: int, lo: int = 3, hi: int = 20) -> list[list[int]]:
    r = random.Random(seed)
    return [[r.randrange(1, V) for _ in range(r.randrange(lo, hi))] for _ in range(n)]


def grads(model) -> dict[str, torch.Tensor]:
    out = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out


def assert_grads_close(a: dict, b: dict, atol: float = 1e-5) -> None:
    assert a.keys() == b.keys() and a
    for n, x in a.items():
        assert torch.allclose(x, b[n], atol=atol, rtol=1e-4), (n, (x - b[n]).abs().max())


# ------------------------------------------------------------------ chunked log-probs


def test_chunked_logprobs_and_entropy_equal_the_full_log_softmax(monkeypatch):
    lm = tiny_lm()
    seqs = rand_seqs(3, 1)
    lay = layout(seqs, 0, False, CPU)
    w = torch.randn(lay.ids.shape[0], lay.ids.shape[1] - 1)
    full_lp, full_ent = full_token_logprobs(lm, lay.ids, lay.attn, temperature=0.7)
    (full_lp * w * lay.attn[:, 1:]).sum().backward()
    g_full = grads(lm)

    monkeypatch.setattr(logprobs, "CHUNK_ELEMENTS", V * 5)  # 5 positions per chunk: many chunks
    lp, ent = TokenScorer(lm)(lay.ids, lay.attn, temperature=0.7, with_entropy=True)
    valid = lay.attn[:, 1:].bool()
    assert torch.allclose(lp[valid], full_lp[valid], atol=1e-5)
    assert torch.allclose(ent[valid], full_ent[valid], atol=1e-5)
    (lp * w * lay.attn[:, 1:]).sum().backward()
    assert_grads_close(grads(lm), g_full)

    # only selected positions go through the head; the rest are 0, the selected ones unchanged
    sel = valid & (torch.rand(valid.shape, generator=torch.Generator().manual_seed(0)) < 0.5)
    lp_s, _ = TokenScorer(lm)(lay.ids, lay.attn, select=sel, temperature=0.7)
    assert torch.allclose(lp_s[sel], full_lp[sel].detach(), atol=1e-5)
    assert (lp_s[~sel] == 0).all()


def test_chunked_logprobs_of_a_model_without_a_separate_head_use_its_logits(monkeypatch):
    """A model we cannot split (here: soft-capped logits) is scored from its own logits, chunked."""
    lm = tiny_lm()
    lm.config.final_logit_softcapping = 30.0  # Qwen2 ignores it; split_head must not
    assert logprobs.split_head(lm) is None
    assert logprobs.split_head(tiny_lm()) is not None
    monkeypatch.setattr(logprobs, "CHUNK_ELEMENTS", V * 4)
    lay = layout(rand_seqs(2, 2), 0, False, CPU)
    lp, _ = TokenScorer(lm)(lay.ids, lay.attn)
    full, _ = full_token_logprobs(lm, lay.ids, lay.attn)
    valid = lay.attn[:, 1:].bool()
    assert torch.allclose(lp[valid], full[valid], atol=1e-5)


# ------------------------------------------------------------------ packing


def test_packed_layout_restarts_positions_and_never_targets_across_sequences():
    lay = layout([[5, 6, 7], [8, 9], [10]], 0, True, CPU)
    assert lay.ids.tolist() == [[5, 6, 7, 8, 9, 10]] and lay.attn is None
    assert lay.pos.tolist() == [[0, 1, 2, 0, 1, 0]]
    # targets: 6, 7 | (7→8 crosses) | 9 | (9→10 crosses)
    assert lay.place([[1, 1], [1], []]).tolist() == [[1, 1, 0, 1, 0]]
    assert lay.seq_index().tolist() == [[0, 0, -1, 1, -1]]
    padded = layout([[5, 6, 7], [8, 9]], 0, False, CPU)
    assert padded.ids.tolist() == [[5, 6, 7], [8, 9, 0]] and padded.attn.tolist() == [[1, 1, 1], [1, 1, 0]]


def test_packed_attention_stays_inside_each_sequence():
    """Each packed sequence's log-probs equal those of the sequence alone (packed attention: per sequence, no mask)."""
    lm = tiny_lm()
    seqs = rand_seqs(3, 3)
    lay = layout(seqs, 0, True, CPU)
    with torch.no_grad():
        lp, _ = TokenScorer(lm)(lay.ids, None, lay.pos)
        for (_, start, n), s in zip(lay.spans, seqs):
            alone, _ = TokenScorer(lm)(torch.tensor([s]), torch.ones(1, len(s), dtype=torch.long))
            assert torch.allclose(lp[0, start : start + n - 1], alone[0], atol=1e-5)


def _encoded(seqs):
    r = random.Random(4)
    return [
        Encoded(s[:2], s[2:], ["think"] * (len(s) - 2), [r.randrange(2) for _ in s[2:]], [0] * (len(s) - 2), "")
        for s in seqs
    ]


def _pairs():
    r = random.Random(5)
    s = rand_seqs(12, 6, 2, 9)
    return [
        Pair(
            s[i],
            s[i + 1],
            s[i + 2],
            s[i + 3],
            bool(r.randrange(2)),
            chosen_mask=[r.randrange(2) for _ in s[i + 2]] if i % 8 else None,
        )
        for i in range(0, 12, 4)
    ]


def _samples():
    r = random.Random(7)
    out = []
    for s in rand_seqs(5, 8, 4, 18):
        mask = [r.randrange(2) for _ in s[2:]]
        out.append(Sample(s[:2], s[2:], mask, [-r.random() * 3 if m else None for m in mask], r.uniform(-1, 1)))
    return out


@pytest.mark.parametrize("kind", ["lm", "sft1", "grpo"])
def test_packed_batches_equal_padded_ones(kind):
    lm, ref = tiny_lm(0), tiny_lm(1)

    def run(packed):
        if kind == "lm":
            loss, count, _ = lm_loss_parts(lm, _encoded(rand_seqs(4, 9)), 0, CPU, None, packed)
        elif kind == "sft1":
            loss, count, ex = sft1_loss_parts(lm, _pairs(), 0, CPU, None, 2.0, 0.5, 0.2, packed)
            count = (count, ex["pair_correct"], round(ex["logp_chosen"], 4))
        else:
            loss, count, ex = grpo_loss_parts(lm, ref, _samples(), 0, CPU, None, 0.2, 0.05, 0.8, packed)
            count = (count, round(ex["entropy_sum"], 3), round(ex["kl_sum"], 4))
        loss.backward()
        return float(loss.detach()), count, grads(lm)

    lp, cp, gp = run(True)
    lu, cu, gu = run(False)
    assert lp == pytest.approx(lu, rel=1e-5, abs=1e-5) and cp == cu
    assert_grads_close(gp, gu)


# ------------------------------------------------------------------ micro-batches


def test_micro_batches_respect_the_token_budget_and_keep_items_whole():
    assert micro_batches([[3], [4], [5], [9]], 8, True) == [slice(0, 2), slice(2, 3), slice(3, 4)]
    assert micro_batches([[3], [4], [5]], 8, False) == [slice(0, 2), slice(2, 3)]  # 2 rows × 4 = 8
    assert micro_batches([[2, 3], [2, 2]], 8, True) == [slice(0, 1), slice(1, 2)]
    assert micro_batches([[3], [4]], None, True) == [slice(0, 2)]


def test_micro_batches_are_as_few_as_fit_and_as_even_as_that_allows():
    """No ragged tail: five 5-token items at a budget of 20 are 15 + 10 tokens, not 20 + 5; a batch of ¼…1 × 2,048-token
    sequences over a 16k budget is two micro-batches of about half the tokens each, not 16k and a remainder."""
    assert micro_batches([[5]] * 5, 20, True) == [slice(0, 3), slice(3, 5)]
    assert micro_batches([[5]] * 5, 20, False) == [slice(0, 3), slice(3, 5)]  # padded: rows × longest
    r = random.Random(1)
    lens = [int(2048 * (0.25 + 0.75 * r.random())) for _ in range(16)]
    groups = micro_batches([[n] for n in lens], 16384, True)
    sizes = [sum(lens[g]) for g in groups]
    assert sum(lens) > 16384 and len(groups) == 2 and max(sizes) <= 16384
    assert max(sizes) - min(sizes) <= max(lens)  # even to within one sequence
    assert [g.start for g in groups] == [0, groups[0].stop] and groups[-1].stop == len(lens)
    assert micro_batches([[30], [2], [2]], 16, True) == [slice(0, 1), slice(1, 3)]  # too big alone, the rest together


@pytest.mark.parametrize("packed", [False, True])
def test_micro_batched_gradients_equal_one_pass(packed):
    lm = tiny_lm()
    batch = _encoded(rand_seqs(6, 10))

    def loss_fn(m, part):
        return lm_loss_parts(m, part, 0, CPU, None, packed)

    lengths = [[len(e.input_ids)] for e in batch]
    one = accumulate(lm, batch, lengths, lm_count(batch), loss_fn, None, packed, DistInfo())
    g_one = grads(lm)
    many = accumulate(lm, batch, lengths, lm_count(batch), loss_fn, 24, packed, DistInfo())
    assert many.micro_batches > 2 and one.micro_batches == 1
    assert many.loss_sum == pytest.approx(one.loss_sum, rel=1e-5) and many.count == one.count == lm_count(batch)
    assert_grads_close(grads(lm), g_one)


def test_counts_known_before_the_forward_equal_the_losses_counts():
    lm = tiny_lm()
    batch, pairs, samples = _encoded(rand_seqs(4, 11)), _pairs(), _samples()
    with torch.no_grad():
        assert lm_loss_parts(lm, batch, 0, CPU, None)[1] == lm_count(batch)
        assert grpo_loss_parts(lm, None, samples, 0, CPU, None, 0.2, 0.0, 1.0)[1] == grpo_count(samples)
    assert sft1_lengths(pairs)[0] == [
        len(pairs[0].prompt_ids + pairs[0].prefix_ids + pairs[0].chosen_ids),
        len(pairs[0].prompt_ids + pairs[0].prefix_ids + pairs[0].rejected_ids),
    ]
    assert grpo_lengths(samples)[0] == [len(samples[0].prompt_ids) + len(samples[0].ids)]


# ------------------------------------------------------------------ activation checkpointing, bf16, attention


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("scale") / "model"
    tiny_lm(3).save_pretrained(str(d))
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(V - 8)}, unk_token="w1"))  # no resize on load
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="w2", pad_token="w0").save_pretrained(str(d))
    return d


def test_activation_checkpointing_changes_no_gradient(model_dir):
    batch = _encoded(rand_seqs(3, 12))
    out = []
    for ckpt in (False, True):
        lm, _ = load_model(model_dir, Runtime(CPU, None), special_tags=False, gradient_checkpointing=ckpt)
        assert any(getattr(m, "gradient_checkpointing", False) for m in lm.modules()) == ckpt and lm.training
        loss, _, _ = lm_loss_parts(lm, batch, 0, CPU, None)
        loss.backward()
        out.append((float(loss.detach()), grads(lm)))
    assert out[0][0] == out[1][0]
    assert_grads_close(out[0][1], out[1][1], atol=1e-7)


def test_bf16_weights_train_with_fp32_master_weights_and_resume_exactly(model_dir, tmp_path):
    lm, _ = load_model(model_dir, Runtime(CPU, torch.bfloat16), special_tags=False, weight_dtype="bfloat16")
    assert {p.dtype for p in lm.parameters()} == {torch.bfloat16}
    params = [p for p in lm.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-4, 0.0)
    assert {p.dtype for g in opt.param_groups for p in g["params"]} == {torch.float32}
    batch = _encoded(rand_seqs(3, 13))

    def step():
        opt.zero_grad(set_to_none=True)
        loss, count, _ = lm_loss_parts(lm, batch, 0, CPU, torch.bfloat16)
        (loss / count).backward()
        opt.step()
        return float(loss)

    before = [p.detach().float().clone() for p in params]
    assert torch.isfinite(torch.tensor(step()))
    masters = master_state(opt)
    assert all(m.dtype == torch.float32 for m in masters)
    # lr 1e-4 moves the masters; in bf16 most of those moves round away, so the masters hold what bf16 cannot
    moved_master = sum(int((m != b).sum()) for m, b in zip(masters, before))
    moved_bf16 = sum(int((p.detach().float() != b).sum()) for p, b in zip(params, before))
    assert moved_master > moved_bf16
    assert all(torch.equal(p.detach(), m.to(torch.bfloat16)) for p, m in zip(params, masters))
    for p in params:
        assert p.grad is None and p.dtype == torch.bfloat16

    # a checkpoint keeps the masters: two more steps after a reload repeat the uninterrupted ones bit for bit
    from coa_trainer.model.checkpoint import load_checkpoint, save_checkpoint

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    path = save_checkpoint(tmp_path, 1, 0, lm, opt, sched, "sft2")
    losses = [step(), step()]
    end = [p.detach().clone() for p in params]
    lm2, _ = load_model(model_dir, Runtime(CPU, torch.bfloat16), special_tags=False, weight_dtype="bfloat16")
    lm, params = lm2, [p for p in lm2.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-4, 0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    load_checkpoint(path, lm, opt, sched)
    assert [step(), step()] == losses
    assert all(torch.equal(a, p.detach()) for a, p in zip(end, params))
    load_master_state(opt, None)  # a checkpoint without masters (fp32 run) is a no-op


def test_flash_attention_without_its_package_is_a_clear_error(model_dir):
    import importlib.util

    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash-attn is installed here")
    with pytest.raises(ConfigError, match="flash-attn package is not installed"):
        load_model(model_dir, Runtime(CPU, None), special_tags=False, attn_implementation="flash_attention_2")


def test_eager_attention_gives_the_sdpa_log_probs():
    seqs = rand_seqs(2, 14)
    lay = layout(seqs, 0, False, CPU)
    with torch.no_grad():
        a, _ = TokenScorer(tiny_lm(attn="sdpa"))(lay.ids, lay.attn)
        b, _ = TokenScorer(tiny_lm(attn="eager"))(lay.ids, lay.attn)
    valid = lay.attn[:, 1:].bool()
    assert torch.allclose(a[valid], b[valid], atol=1e-5)


def test_a_bf16_stage_runs(tmp_path):
    """pretrain with bf16 weights and bf16 autocast, packed micro-batches, activation checkpointing: finite losses,
    and the stage's HF directory is written in bf16."""
    cfg = merge(
        TINY,
        {
            "dtype": "bfloat16",
            "model": {"dtype": "bfloat16", "gradient_checkpointing": True},
            "stages": {"pretrain": {"steps": 3, "micro_batch_tokens": 64, "packing": True}},
        },
    )
    p = tmp_path / "run.json"
    p.write_text(json.dumps(cfg))
    r = run_trainer("train", "--stage", "pretrain", "--config", str(p), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 0, r.stdout[-2000:]
    losses = [e["values"]["loss"] for e in read_events(tmp_path / "run") if e["type"] == "metrics"]
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(x)) for x in losses)
    saved = json.loads((tmp_path / "run" / "stages" / "pretrain" / "final" / "config.json").read_text())
    assert saved.get("dtype", saved.get("torch_dtype")) == "bfloat16"
    # the stage's run_started names what every part of the step runs here, each fallback with its reason
    started = next(e for e in read_events(tmp_path / "run") if e["type"] == "run_started")
    assert started["fast_path"] == {
        "packed attention": "padded (CPU: torch's varlen flash attention runs on CUDA only; each sequence unpacked "
        "into a padded batch, SDPA is_causal)",
        "loss head": "chunked PyTorch (CPU: Liger's Triton kernel runs on CUDA only)",
        "RMSNorm/SwiGLU": "transformers' (CPU: Liger's Triton kernels run on CUDA only)",
        "RoPE": "transformers' (CPU: Liger's Triton kernels run on CUDA only)",
        "AdamW": "for-loop (CPU: torch's default, kept bit-identical to earlier runs)",
        "rollout engine": "eager decode step and prefill (CPU: the engine compiles them by default on CUDA only); "
        "8-step blocks run step by step (CPU: CUDA graphs on CUDA only)",
        "rollout attention": "SDPA over each slot's cache up to the block's attention length, a per-row boolean "
        "length mask (SDPA's flash kernel takes no mask: the memory-efficient or math kernel "
        "runs), each KV head read once",
        "activation checkpointing": "on (model.gradient_checkpointing)",
    }
