"""The training step's fast path across the torch / transformers / Liger-Kernel releases it meets (model/fastpath.py):
each API the step calls is probed by what it is, and a release that lacks it or gets it wrong falls back with its
reason instead of failing the stage.

The version matrix: torch's `varlen_attn` in the three shapes it has had — torch 2.9's (is_causal after max_k, and a
backward returning one gradient more than the op has inputs: pytorch/pytorch torch/nn/attention/varlen.py at 2.9,
fixed by pytorch/pytorch#170142), an `is_causal` keyword without GQA, and this install's window_size + enable_gqa —
written here with those signatures over SDPA, beside the installed one probed on the meta device; Liger-Kernel
installed, missing, with a monkey_patch that cannot import because peft raises at import (a peft built for another
transformers), and with a patch function gone; transformers' mask functions with and without the arguments packed
attention reads; fused AdamW on the devices torch has a kernel for and on one it has not."""

from __future__ import annotations

import copy
import importlib.abc
import importlib.util
import random
import sys

import pytest
import torch
import torch.nn.functional as F

from coa_trainer.model import fastpath, liger, packing
from coa_trainer.model.fastpath import check_varlen, varlen_api
from coa_trainer.model.optim import adamw_implementation, make_optimizer
from coa_trainer.model.packing import layout
from coa_trainer.model.scoring import TokenScorer

CPU = torch.device("cpu")


def _lm(seed: int = 0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    return Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=101,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
            tie_word_embeddings=False,
        )
    )


def _logprobs(lm) -> torch.Tensor:
    r = random.Random(1)
    lay = layout([[r.randrange(1, 101) for _ in range(n)] for n in (9, 17, 4)], 0, True, CPU)
    with torch.no_grad():
        return TokenScorer(lm)(lay.ids, None, lay.pos)[0]


# ------------------------------------------------------------------ torch: varlen_attn across releases


def _attend(q, k, v, cu, causal: bool, scale, gqa: bool) -> torch.Tensor:
    """Attention within each sequence of packed [T, heads, d] tensors, one SDPA call per sequence."""
    out = [
        F.scaled_dot_product_attention(
            q[a:b].transpose(0, 1),
            k[a:b].transpose(0, 1),
            v[a:b].transpose(0, 1),
            is_causal=causal,
            scale=scale,
            enable_gqa=gqa,
        ).transpose(0, 1)
        for a, b in zip(cu[:-1].tolist(), cu[1:].tolist())
    ]
    return torch.cat(out)


@torch.library.custom_op("coa_test::varlen_torch_2_9", mutates_args=())
def _varlen_op_2_9(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    cu_seq_q: torch.Tensor,
    cu_seq_k: torch.Tensor,
    max_q: int,
    max_k: int,
    is_causal: bool = False,
) -> torch.Tensor:
    """torch 2.9's op: eight inputs (a custom op, whose registered backward autograd holds to its input count)."""
    return _attend(query, key, value, cu_seq_q, is_causal, None, False)


@_varlen_op_2_9.register_fake
def _(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, is_causal=False):
    return torch.empty_like(query)


def _setup_2_9(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:4])
    ctx.is_causal = inputs[7]


def _backward_2_9(ctx, grad):
    q, k, v, cu = ctx.saved_tensors
    with torch.enable_grad():
        qq, kk, vv = (x.detach().requires_grad_(True) for x in (q, k, v))
        dq, dk, dv = torch.autograd.grad(_attend(qq, kk, vv, cu, ctx.is_causal, None, False), (qq, kk, vv), grad)
    return dq, dk, dv, None, None, None, None, None, None  # nine: torch 2.9's count


_varlen_op_2_9.register_autograd(_backward_2_9, setup_context=_setup_2_9)


def varlen_torch_2_9(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, is_causal=False, return_aux=None):
    if key.shape[1] != query.shape[1]:
        raise ValueError("Expect query and key/value to have the same number of heads")
    return _varlen_op_2_9(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, is_causal)


def varlen_is_causal_keyword(
    query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, is_causal=False, return_aux=None, scale=None
):
    if key.shape[1] != query.shape[1]:
        raise ValueError("Expect query and key/value to have the same number of heads")
    return _attend(query, key, value, cu_seq_q, is_causal, scale, False)


def varlen_window_size(
    query,
    key,
    value,
    cu_seq_q,
    cu_seq_k,
    max_q,
    max_k,
    *,
    return_aux=None,
    scale=None,
    window_size=(-1, -1),
    enable_gqa=False,
    seqused_k=None,
    block_table=None,
    num_splits=None,
):
    if key.shape[1] != query.shape[1] and not enable_gqa:
        raise ValueError("Expect query and key/value to have the same number of heads")
    return _attend(query, key, value, cu_seq_q, list(window_size) == [-1, 0], scale, enable_gqa)


def varlen_without_causal(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, scale=None):
    return _attend(query, key, value, cu_seq_q, False, scale, False)


def test_this_torchs_varlen_attn_passes_its_probe_on_the_meta_device():
    """No CUDA here: the installed op's fake kernels run its Python and autograd's gradient-count check."""
    api = fastpath.probe_varlen("cpu")
    assert not isinstance(api, str), api
    assert api.causal == ("window_size", (-1, 0)) and api.takes_scale and api.takes_gqa


@pytest.mark.parametrize(
    "fn, causal, gqa",
    [(varlen_is_causal_keyword, "is_causal", False), (varlen_window_size, "window_size", True)],
    ids=["is_causal keyword", "window_size + enable_gqa"],
)
def test_each_varlen_signature_is_called_causally_and_gives_the_padded_attention(fn, causal, gqa):
    api = varlen_api(fn)
    assert not isinstance(api, str) and api.causal[0] == causal and api.takes_gqa == gqa
    assert check_varlen(api, CPU) is None
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(23, h, 8, generator=g) for h in (4, 2, 2))
    cu = torch.tensor([0, 5, 6, 23], dtype=torch.int32)
    got = api(q, k, v, cu, 17, 0.3)
    want = packing.varlen_causal(q, k, v, cu, 17, 0.3)  # CPU: the unpacked batch under SDPA is_causal
    assert torch.allclose(got, want, atol=1e-6)


def test_torch_2_9s_varlen_backward_is_caught_by_the_probe_and_named():
    api = varlen_api(varlen_torch_2_9)
    assert not isinstance(api, str) and api.causal == ("is_causal", True) and not api.takes_scale
    why = check_varlen(api, CPU)
    assert why is not None and "incorrect number of gradients" in why and "forward + backward" in why


def test_a_varlen_without_a_causal_switch_and_a_torch_without_varlen_are_named(monkeypatch):
    assert "takes neither is_causal nor window_size" in varlen_api(varlen_without_causal)
    monkeypatch.setitem(sys.modules, "torch.nn.attention.varlen", None)  # as a torch before 2.9 has none
    why = fastpath.probe_varlen("cuda")
    assert isinstance(why, str) and "has no torch.nn.attention.varlen" in why


def test_a_varlen_without_scale_is_taken_only_at_the_default_scale():
    api = varlen_api(varlen_torch_2_9)
    assert api.scale_ok(8**-0.5, 8) and api.scale_ok(None, 8) and not api.scale_ok(0.3, 8)
    assert varlen_api(varlen_window_size).scale_ok(0.3, 8)


# ------------------------------------------------------------------ torch: fused AdamW


def test_fused_adamw_is_probed_per_device_and_the_cpu_keeps_torchs_default():
    assert fastpath.probe_fused_adamw("cpu", torch.float32) is None  # torch has a CPU kernel …
    why = fastpath.probe_fused_adamw("meta", torch.float32)
    assert why is not None and "AdamW(fused=True) on meta" in why
    lm = _lm()
    kw, choice = adamw_implementation(list(lm.parameters()))
    assert kw == {} and str(choice).startswith("for-loop (CPU:")  # … but CPU runs stay bit-identical without it
    assert make_optimizer(list(lm.parameters()), 1e-3, 0.0).defaults["fused"] is None


def test_fused_adamw_on_cpu_equals_the_default_update_to_float_tolerance():
    """What switching the CPU default would change: rounding only."""
    out = []
    for kw in ({"fused": True}, {}):
        lm = _lm(2)
        params = list(lm.parameters())
        opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95), **kw)
        for step in range(3):
            g = torch.Generator().manual_seed(step)
            for p in params:
                p.grad = torch.randn(p.shape, generator=g)
            opt.step()
        out.append([p.detach().clone() for p in params])
    assert all(torch.allclose(a, b, atol=1e-6, rtol=1e-5) for a, b in zip(*out))


# ------------------------------------------------------------------ Liger-Kernel: installed, missing, broken


class _PeftBuiltForAnotherTransformers(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An installed peft whose import fails the way one built against another transformers does: not with
    ImportError (its module code reads a transformers name that release does not have)."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "peft" else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise AttributeError("module 'transformers' has no attribute 'PreTrainedModelMixin'")


@pytest.fixture
def fresh_imports(monkeypatch):
    """forget(*packages): the packages' modules imported afresh in this test; after it, the modules it imported are
    dropped and the earlier ones put back (monkeypatch)."""
    prefixes: list[str] = []

    def ours(name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    def forget(*packages: str) -> None:
        prefixes.extend(packages)
        for name in [n for n in sys.modules if ours(n)]:
            monkeypatch.delitem(sys.modules, name)

    yield forget
    for name in [n for n in sys.modules if ours(n)]:
        del sys.modules[name]


def test_the_pinned_liger_kernel_offers_every_part():
    cls = fastpath.probe_liger_linear_ce()
    assert not isinstance(cls, str) and cls.__name__ == "LigerFusedLinearCrossEntropyLoss"
    assert not isinstance(fastpath.probe_liger_modules(), str)
    assert callable(fastpath.probe_liger_rope())


def test_a_peft_failing_at_import_leaves_liger_importable_and_is_said(monkeypatch, fresh_imports):
    """Liger 0.8.5 imports peft in liger_kernel/utils.py, under every kernel: caught as ImportError only, such a peft
    would take all of Liger down. It is imported again with peft hidden, and the choices carry the note."""
    fresh_imports("peft", "liger_kernel")
    monkeypatch.setattr(sys, "meta_path", [_PeftBuiltForAnotherTransformers(), *sys.meta_path])
    monkeypatch.setattr(fastpath, "LIGER_NOTES", [])
    assert not isinstance(fastpath.probe_liger_modules(), str)
    assert not isinstance(fastpath.probe_liger_linear_ce(), str) and callable(fastpath.probe_liger_rope())
    assert fastpath.LIGER_NOTES == [
        "peft failed to import (AttributeError: module 'transformers' has no attribute "
        "'PreTrainedModelMixin'): Liger-Kernel imported without its peft support"
    ]
    assert sys.modules["liger_kernel.utils"].PEFT_AVAILABLE is False
    with pytest.raises(AttributeError):  # hidden for Liger's import only
        import peft  # noqa: F401
    assert TokenScorer(_lm()).fast_path(None, True, "lm")["liger-kernel"] == fastpath.LIGER_NOTES[0]


class _MonkeyPatchFailing(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Liger's monkey_patch failing at import for a reason of its own."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "liger_kernel.transformers.monkey_patch" else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise RuntimeError("patched model classes missing from this transformers")


def test_a_failing_monkey_patch_turns_off_only_the_module_patches(monkeypatch, fresh_imports):
    fresh_imports("liger_kernel")
    monkeypatch.setattr(sys, "meta_path", [_MonkeyPatchFailing(), *sys.meta_path])
    modules = fastpath.probe_liger_modules()
    assert modules == (
        "liger-kernel's monkey_patch failed to import (RuntimeError: patched model classes missing "
        "from this transformers)"
    )
    rope = fastpath.probe_liger_rope()
    assert not isinstance(fastpath.probe_liger_linear_ce(), str) and callable(rope)
    lm = _lm(3)
    module = sys.modules[type(lm.model.layers[0].self_attn).__module__]
    monkeypatch.setattr(module, "apply_rotary_pos_emb", module.apply_rotary_pos_emb)  # restored after the test
    before = _logprobs(lm)
    norms, bound_rope = liger.bind(lm, modules, rope)  # what a CUDA model gets: still bound, still scored
    assert str(norms) == f"transformers' ({modules})" and bound_rope.fast
    assert torch.equal(_logprobs(lm), before)  # CPU tensors: transformers' RoPE under the dispatcher


def test_liger_missing_or_moved_is_named(monkeypatch, fresh_imports):
    import liger_kernel.transformers.monkey_patch as mp

    monkeypatch.delattr(mp, "_patch_swiglu_module")
    assert fastpath.probe_liger_modules() == "liger-kernel's monkey_patch has no _patch_swiglu_module"
    fresh_imports("liger_kernel")
    monkeypatch.setitem(sys.modules, "liger_kernel", None)
    assert {fastpath.probe_liger_modules(), fastpath.probe_liger_rope(), fastpath.probe_liger_linear_ce()} == {
        "liger-kernel is not installed"
    }


# ------------------------------------------------------------------ transformers: mask functions, RoPE site


def _mask_with_cache_position(
    batch_size,
    cache_position,
    kv_length,
    kv_offset=0,
    mask_function=None,
    attention_mask=None,
    local_size=None,
    allow_is_causal_skip=True,
    **kwargs,
):
    """A mask function that reads cache_position where this transformers passes q_length / q_offset."""


def test_a_transformers_whose_mask_functions_lack_packed_attentions_arguments_keeps_sdpa(monkeypatch):
    import transformers.masking_utils as mu

    assert fastpath.probe_attention_registry() is None
    assert "take no q_length, q_offset" in fastpath.mask_function_problem(_mask_with_cache_position)
    monkeypatch.setattr(mu, "sdpa_mask", _mask_with_cache_position)
    fastpath.attention_registry.cache_clear()
    try:
        lm = _lm(4)
        scorer = TokenScorer(lm)
        assert not scorer.packed_attention and lm.config._attn_implementation == "sdpa"
        assert (
            scorer.fast_path(None, True, "lm")["packed attention"]
            == f"transformers' dense block mask ({fastpath.probe_attention_registry()})"
        )
    finally:
        fastpath.attention_registry.cache_clear()


class _AttentionWithRotaryAsMethod(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        return self.rotary(q, k, cos, sin)


def test_the_rope_site_is_found_in_transformers_code_and_its_absence_named():
    lm = _lm()
    site = fastpath.rope_site([layer.self_attn for layer in lm.model.layers])
    assert not isinstance(site, str) and site[1].__name__ == "apply_rotary_pos_emb"
    assert "has no apply_rotary_pos_emb" in fastpath.rope_site([_AttentionWithRotaryAsMethod()])


def test_a_bound_rope_leaves_cpu_models_and_copies_as_they_were(monkeypatch):
    lm = _lm(5)
    module = sys.modules[type(lm.model.layers[0].self_attn).__module__]
    monkeypatch.setattr(module, "apply_rotary_pos_emb", module.apply_rotary_pos_emb)  # restored after the test
    before = _logprobs(lm)

    def fused(*a, **k):
        raise AssertionError("the fused RoPE ran on CPU tensors")

    assert liger.bind_rope(lm, fused).fast
    assert module.apply_rotary_pos_emb.coa_original is not None
    assert torch.equal(_logprobs(lm), before) and torch.equal(_logprobs(_lm(5)), before)  # bound, and unbound
    twin = copy.deepcopy(lm)  # a LoRA merge deep-copies the model: the copy's attention calls the copy's modules
    assert all(layer.self_attn.forward.__self__ is layer.self_attn for layer in twin.model.layers)
    assert torch.equal(_logprobs(twin), before)


# ------------------------------------------------------------------ what a CPU stage names


def test_a_cpu_scorer_names_every_fallback():
    fast = TokenScorer(_lm()).fast_path(None, True, "lm")
    assert fast == {
        "packed attention": "padded (CPU: torch's varlen flash attention runs on CUDA only; each sequence unpacked "
        "into a padded batch, SDPA is_causal)",
        "loss head": "chunked PyTorch (CPU: Liger's Triton kernel runs on CUDA only)",
        "RMSNorm/SwiGLU": "transformers' (CPU: Liger's Triton kernels run on CUDA only)",
        "RoPE": "transformers' (CPU: Liger's Triton kernels run on CUDA only)",
    }
    rl = TokenScorer(_lm()).fast_path(None, False, "grpo")
    assert rl["packed attention"].startswith("not used (packing off")
    assert rl["loss head"] == (
        "checkpointed chunks (CPU: the fused GRPO head runs on CUDA; CPU runs stay bit-identical to earlier ones)"
    )
    assert (
        TokenScorer(_lm()).fast_path(None, True, "pairwise")["loss head"]
        == "checkpointed chunks (the pairwise loss is not token-local)"
    )


# ------------------------------------------------------------------ third-party APIs of another signature


@pytest.fixture
def fresh_probes():
    """The cached probes forgotten before and after the test: what it installs is what they meet, once."""
    caches = (
        fastpath.liger_linear_ce,
        fastpath.liger_modules,
        fastpath.liger_rope,
        fastpath.attention_registry,
        fastpath.fused_adamw,
    )
    for c in caches:
        c.cache_clear()
    yield
    for c in caches:
        c.cache_clear()


def test_a_liger_linear_cross_entropy_of_another_signature_falls_back_to_the_chunked_loss(monkeypatch, fresh_probes):
    """A Liger whose fused linear cross-entropy takes the hidden states first (not lin_weight, _input, target): the
    CUDA step names the chunked loss with why, the trainer's loss never calls it, the other Liger parts still load."""
    from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

    from coa_trainer.model.linear_ce import linear_nll_sum
    from coa_trainer.model.scoring import lm_head_choice

    def forward(self, _input, lin_weight, target, bias=None):
        raise AssertionError("the mismatched Liger loss was called")

    monkeypatch.setattr(LigerFusedLinearCrossEntropyLoss, "forward", forward)
    why = "LigerFusedLinearCrossEntropyLoss.forward takes (_input, lin_weight, target, …), not (lin_weight, _input, target)"
    assert str(lm_head_choice("cuda")) == f"chunked PyTorch ({why})"
    assert liger.fused_linear_ce_class() is None
    assert not isinstance(fastpath.liger_modules(), str) and callable(fastpath.liger_rope())
    head = torch.nn.Linear(8, 11, bias=False)
    h, t = torch.randn(5, 8), torch.tensor([1, 2, 3, 4, 5])
    want = F.cross_entropy(head(h), t, reduction="sum")
    assert torch.allclose(linear_nll_sum(h, head, t, 5), want, atol=1e-5)
    assert TokenScorer(_lm()).fast_path(None, True, "lm")["loss head"].startswith("chunked PyTorch (CPU:")


def test_a_liger_rope_of_another_signature_keeps_transformers_rope_and_says_why(monkeypatch, fresh_probes):
    """A Liger whose RoPE takes position_ids and no unsqueeze_dim: transformers' RoPE stays (its function and the
    attention forwards untouched), named with why; the RMSNorm / SwiGLU patches are bound all the same."""
    import liger_kernel.transformers.rope as liger_rope_module

    def liger_rotary_pos_emb(q, k, cos, sin, position_ids=None):
        raise AssertionError("the mismatched Liger RoPE was called")

    monkeypatch.setattr(liger_rope_module, "liger_rotary_pos_emb", liger_rotary_pos_emb)
    rope = fastpath.liger_rope()
    assert (
        rope
        == "liger_rotary_pos_emb(q, k, cos, sin, position_ids=None) does not take (q, k, cos, sin, …, unsqueeze_dim)"
    )
    lm = _lm(6)
    module = sys.modules[type(lm.model.layers[0].self_attn).__module__]
    original = module.apply_rotary_pos_emb
    norms, bound = liger.bind(lm, fastpath.liger_modules(), rope)
    assert norms.fast and str(bound) == f"transformers' ({rope})"
    assert module.apply_rotary_pos_emb is original
    assert all("forward" not in vars(layer.self_attn) for layer in lm.model.layers)
    assert not isinstance(fastpath.liger_linear_ce(), str)


def test_a_transformers_without_the_mask_registry_keeps_sdpa_and_names_the_import_failure(monkeypatch, fresh_probes):
    """A transformers without masking_utils (AttentionMaskInterface, the mask functions: older releases): packed
    attention is not registered, the model keeps transformers' sdpa and scores as before, and the import failure is
    the named reason."""
    import transformers

    before = _logprobs(_lm(7))  # through packed attention
    lm = _lm(7)
    monkeypatch.setitem(sys.modules, "transformers.masking_utils", None)
    fastpath.attention_registry.cache_clear()  # the scoring above probed the whole transformers
    why = fastpath.probe_attention_registry()
    assert why == (
        f"transformers {transformers.__version__}: ModuleNotFoundError: import of transformers.masking_utils "
        "halted; None in sys.modules"
    )
    scorer = TokenScorer(lm)
    assert not scorer.packed_attention and lm.config._attn_implementation == "sdpa"
    assert scorer.fast_path(None, True, "lm")["packed attention"] == f"transformers' dense block mask ({why})"
    assert torch.allclose(_logprobs(lm), before, atol=1e-5)


class _AdamWWithoutFused(torch.optim.AdamW):
    """AdamW as torch releases before the fused kernel declared it: no `fused` keyword."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
        capturable=False,
    ):
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
        )


def test_fused_adamw_is_chosen_only_where_its_probe_steps(monkeypatch, fresh_probes):
    """The fused branch as CUDA takes it, run on the CPU kernel torch has (fused_on): fused where the probe stepped,
    torch's default with the probe's reason where it could not — an AdamW without `fused`, a CUDA that is not
    there — and the CPU stage's own choice named."""
    from coa_trainer.model.optim import adamw_choice

    assert adamw_choice({"cpu"}, {torch.float32}, fused_on=("cpu",)) == ({"fused": True}, fastpath.Choice("fused"))
    kw, choice = adamw_choice({"cuda"}, {torch.float32})
    if not torch.cuda.is_available():
        assert kw == {} and str(choice).startswith(f"foreach (torch {torch.__version__}: AdamW(fused=True) on cuda")
    assert adamw_choice({"cpu"}, {torch.float32}) == (
        {},
        fastpath.Choice("for-loop", "CPU: torch's default, kept bit-identical to earlier runs"),
    )
    fastpath.fused_adamw.cache_clear()
    monkeypatch.setattr(torch.optim, "AdamW", _AdamWWithoutFused)
    kw, choice = adamw_choice({"cpu"}, {torch.float32}, fused_on=("cpu",))
    assert kw == {} and str(choice) == (
        f"foreach (torch {torch.__version__}: AdamW(fused=True) on cpu torch.float32 "
        "failed (TypeError: _AdamWWithoutFused.__init__() got an unexpected keyword argument "
        "'fused'))"
    )
    opt = make_optimizer(list(_lm().parameters()), 1e-3, 0.0)  # the stage's optimiser still builds and steps
    assert type(opt) is _AdamWWithoutFused and str(opt.coa_adamw).startswith("for-loop (CPU:")


def test_the_first_event_names_the_rollout_engines_path_and_the_attention_that_runs():
    """What a stage's rollouts run, beside the training step's parts: on CPU the engine's eager decode step with the
    attention it names really called; a model the engine cannot run goes through the reference loop, with why."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from coa_trainer.rollout.generate import engine_path, generate

    lm = _lm()
    path = engine_path(lm, CPU, None)
    assert path["rollout engine"] == (
        "eager decode step and prefill (CPU: the engine compiles them by default on CUDA "
        "only); 8-step blocks run step by step (CPU: CUDA graphs on CUDA only)"
    )
    assert path["rollout attention"].startswith("SDPA over each slot's cache")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        generate(lm, [[1, 2, 3], [4, 5]], 4, set(), 0, CPU)
    ops = {e.key for e in prof.key_averages()}
    assert "aten::scaled_dot_product_attention" in ops and not any("flex" in op for op in ops)
    dynamic = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=101,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
            rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
        )
    )
    assert engine_path(dynamic, CPU, None) == {
        "rollout engine": "reference loop (rope type 'dynamic' changes with the sequence length; transformers' forward "
        "and KV cache, one step per token)",
        "rollout attention": "the model's own (sdpa)",
    }
