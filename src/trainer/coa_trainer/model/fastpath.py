"""Which fast path each torch / transformers / Liger-Kernel API of the training step takes on this install: probed
once per process, by what the API is (its signature, a tiny call) rather than by a version number, and the
fallback named with its reason. The stage's first event (run_started `fast_path`) carries the choices.

The trainer runs on installs it does not choose — a device image's torch 2.11 and transformers 5.17 beside the pinned
torch 2.15 and transformers 5.23, Liger-Kernel importing whatever peft the image has — so:

- `torch.nn.attention.varlen.varlen_attn` (packed attention on CUDA, since torch 2.9): its causal switch moved from
  `is_causal` to a flash-style `window_size=(-1, 0)`, `scale` and `enable_gqa` came later, and torch 2.9's backward
  returned one gradient more than the op has inputs, which autograd refuses ("returned an incorrect number of
  gradients"; fixed by pytorch/pytorch#170142, December 2025). The probe reads the signature, then runs a causal GQA
  forward and backward — on the CUDA device, or on the meta device where there is none (the op's fake kernels go
  through the same Python and the same autograd checks).
- `torch.optim.AdamW(fused=True)`: a one-parameter step on the device and dtype.
- Liger-Kernel, in three parts imported separately with any exception caught, so one failing part turns off that
  part only: the fused linear cross-entropy, RoPE, and the RMSNorm / SwiGLU module patches of
  `liger_kernel.transformers.monkey_patch`. Liger imports peft at module level and takes only ImportError as "no
  peft"; a peft built against another transformers fails with more than that, and every Liger import with it — so
  Liger is then imported again with peft hidden (`_import_liger`), and the choices say so.
- transformers: the attention and mask-function registries packed attention registers with, the mask function's
  argument names, and whether a decoder's attention calls its modeling module's `apply_rotary_pos_emb` (where the
  fused RoPE is bound)."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

HALF = (torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class Choice:
    """What runs for one part of the step: `name`, and `why` when that is not the fast path."""

    name: str
    why: str | None = None

    @property
    def fast(self) -> bool:
        return self.why is None

    def __str__(self) -> str:
        return self.name if self.why is None else f"{self.name} ({self.why})"


def _err(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:240].rstrip(": ")


# ------------------------------------------------------------------ torch: varlen flash attention


@dataclass(frozen=True)
class Varlen:
    """torch's `varlen_attn` called causally with the keywords this release takes."""

    fn: Callable[..., Any]
    causal: tuple[str, Any]  # ("is_causal", True) or ("window_size", (-1, 0))
    takes_scale: bool
    takes_gqa: bool

    def scale_ok(self, scale: float | None, head_dim: int) -> bool:
        """Whether `scale` can be had: passed, or the kernel's own default 1/√d."""
        return self.takes_scale or scale is None or abs(scale - head_dim**-0.5) <= 1e-6 * head_dim**-0.5

    def __call__(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, max_len: int, scale: float | None
    ) -> torch.Tensor:
        """Causal attention within each sequence of packed [T, heads, d] tensors (kv heads may be fewer)."""
        kw: dict[str, Any] = {self.causal[0]: self.causal[1]}
        if scale is not None and self.takes_scale:
            kw["scale"] = scale
        if k.shape[1] != q.shape[1]:
            if self.takes_gqa:
                kw["enable_gqa"] = True
            else:
                rep = q.shape[1] // k.shape[1]
                k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        out = self.fn(q, k, v, cu, cu, max_len, max_len, **kw)
        return out[0] if isinstance(out, tuple) else out


def varlen_api(fn: Callable[..., Any]) -> Varlen | str:
    """How to call `fn` causally, read from its signature; a string says why it cannot be."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        return f"varlen_attn has no readable signature ({_err(e)})"
    params = sig.parameters
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 7:
        return f"varlen_attn{sig} does not take (q, k, v, cu_seq_q, cu_seq_k, max_q, max_k)"
    if "is_causal" in params:
        causal: tuple[str, Any] = ("is_causal", True)
    elif "window_size" in params:
        causal = ("window_size", (-1, 0))
    else:
        return f"varlen_attn{sig} takes neither is_causal nor window_size"
    return Varlen(fn, causal, "scale" in params, "enable_gqa" in params)


def check_varlen(api: Varlen, device: torch.device) -> str | None:
    """None when a causal GQA call of two sequences runs forward and backward on `device` with a gradient for every
    input (meta: the op's fake kernels and autograd's own checks); else why not."""
    try:
        q = torch.randn(6, 2, 64, device=device, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(6, 1, 64, device=device, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(6, 1, 64, device=device, dtype=torch.bfloat16, requires_grad=True)
        cu = torch.tensor([0, 2, 6], dtype=torch.int32, device=device)
        out = api(q, k, v, cu, 4, 64**-0.5)
        if tuple(out.shape) != (6, 2, 64):
            return f"varlen_attn returned shape {tuple(out.shape)} for (6, 2, 64) queries"
        out.float().sum().backward()
    except Exception as e:  # noqa: BLE001 — whatever the release does wrong, the step falls back and says why
        return f"varlen_attn failed a causal forward + backward ({_err(e)})"
    if any(x.grad is None or x.grad.shape != x.shape for x in (q, k, v)):
        return "varlen_attn's backward gave no gradient for the queries, keys or values"
    return None


def probe_varlen(device_type: str) -> Varlen | str:
    """The installed torch's varlen_attn, checked on CUDA when `device_type` is cuda, on meta otherwise."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return f"torch {torch.__version__} has no torch.nn.attention.varlen (2.9 or newer has)"
    except Exception as e:  # noqa: BLE001
        return f"torch {torch.__version__}: torch.nn.attention.varlen failed to import ({_err(e)})"
    api = varlen_api(varlen_attn)
    if isinstance(api, str):
        return f"torch {torch.__version__}: {api}"
    why = check_varlen(api, torch.device("cuda" if device_type == "cuda" else "meta"))
    return api if why is None else f"torch {torch.__version__}: {why}"


@functools.cache
def installed_varlen(device_type: str) -> Varlen | str:
    return probe_varlen(device_type)


def varlen_plan(q: torch.Tensor, scale: float | None) -> tuple[Varlen, torch.dtype] | str:
    """(kernel, dtype to run it in) for packed attention over `q`, or why the padded path runs instead. Half-precision
    queries run as they are; fp32 queries under CUDA autocast run in autocast's dtype, as SDPA would (a model kept
    in fp32 under bf16 autocast reaches attention with fp32 queries: the rotary embedding promotes them)."""
    if not q.is_cuda:
        return f"{q.device.type.upper()}: torch's varlen flash attention runs on CUDA only"
    api = installed_varlen("cuda")
    if isinstance(api, str):
        return api
    dtype = (
        q.dtype
        if q.dtype in HALF
        else (torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else q.dtype)
    )
    if dtype not in HALF:
        return (
            f"{dtype} queries without autocast: flash attention runs in bf16 / fp16 (set dtype or model.dtype "
            "to bfloat16)"
        )
    if not api.scale_ok(scale, q.shape[-1]):
        return f"this varlen_attn takes no scale and the model's attention scale {scale} is not 1/√d"
    return api, dtype


# ------------------------------------------------------------------ torch: fused AdamW


def probe_fused_adamw(device: str | torch.device, dtype: torch.dtype) -> str | None:
    """None when torch's fused AdamW steps a parameter of `device` and `dtype`; else why not."""
    try:
        p = torch.zeros(4, device=device, dtype=dtype, requires_grad=True)
        p.grad = torch.ones_like(p)
        torch.optim.AdamW([p], lr=1e-3, fused=True).step()
    except Exception as e:  # noqa: BLE001
        return f"torch {torch.__version__}: AdamW(fused=True) on {torch.device(device).type} {dtype} failed ({_err(e)})"
    if p.device.type != "meta" and not bool((p.detach() != 0).all()):  # a step of lr 1e-3 moves every element
        return f"torch {torch.__version__}: AdamW(fused=True) left a {dtype} parameter unchanged"
    return None


@functools.cache
def fused_adamw(device_type: str, dtype: torch.dtype) -> str | None:
    return probe_fused_adamw(device_type, dtype)


# ------------------------------------------------------------------ Liger-Kernel

LIGER_NOTES: list[str] = []  # said beside the choices: Liger imported with peft hidden
_ABSENT = object()


def _import_failure(what: str, e: BaseException) -> str:
    if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == "liger_kernel":
        return "liger-kernel is not installed"
    return f"{what} failed to import ({_err(e)})"


def _peft_import_error() -> str | None:
    try:
        import peft  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return _err(e)
    return None


def _import_liger(what: str, importer: Callable[[], Any]) -> Any:
    """importer()'s result, or why it failed. Liger-Kernel imports peft at module level (liger_kernel/utils.py,
    monkey_patch.py) and takes only ImportError as "no peft"; a peft that fails otherwise — built against another
    transformers — would take every Liger kernel with it. When that is the failure, Liger is imported again with peft
    hidden (an ImportError to it), as on an install without peft: only its handling of peft-wrapped modules is lost,
    and peft is unusable in this process anyway."""
    try:
        return importer()
    except Exception as e:  # noqa: BLE001 — ImportError or whatever its imports raise
        first = e
    peft_error = _peft_import_error()
    if peft_error is None:
        return _import_failure(what, first)
    saved = sys.modules.get("peft", _ABSENT)
    sys.modules["peft"] = None  # type: ignore[assignment]  (`import peft` raises ModuleNotFoundError)
    try:
        out = importer()
    except Exception as e:  # noqa: BLE001
        return _import_failure(what, e)
    finally:
        if saved is _ABSENT:
            sys.modules.pop("peft", None)
        else:
            sys.modules["peft"] = saved  # type: ignore[assignment]
    note = f"peft failed to import ({peft_error}): Liger-Kernel imported without its peft support"
    if note not in LIGER_NOTES:
        LIGER_NOTES.append(note)
    return out


def probe_liger_linear_ce() -> Any:
    """Liger's fused linear cross-entropy class, or why not."""

    def load() -> Any:
        from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

        return LigerFusedLinearCrossEntropyLoss

    cls = _import_liger("liger-kernel's fused linear cross-entropy", load)
    if isinstance(cls, str):
        return cls
    params = list(inspect.signature(cls.forward).parameters)[1:4]
    if params != ["lin_weight", "_input", "target"]:
        return (
            f"LigerFusedLinearCrossEntropyLoss.forward takes ({', '.join(params)}, …), not (lin_weight, _input, target)"
        )
    return cls


@dataclass(frozen=True)
class LigerModules:
    patch_rms_norm: Callable[..., Any]
    patch_swiglu: Callable[..., Any]
    swiglu_mlp: type


def probe_liger_modules() -> LigerModules | str:
    """Liger's RMSNorm / SwiGLU module patches (liger_kernel.transformers.monkey_patch), or why not."""

    def load() -> Any:
        from liger_kernel.transformers import monkey_patch
        from liger_kernel.transformers.swiglu import LigerSwiGLUMLP

        return monkey_patch, LigerSwiGLUMLP

    found = _import_liger("liger-kernel's monkey_patch", load)
    if isinstance(found, str):
        return found
    monkey_patch, swiglu = found
    missing = [
        n for n in ("_patch_rms_norm_module", "_patch_swiglu_module") if not callable(getattr(monkey_patch, n, None))
    ]
    if missing:
        return f"liger-kernel's monkey_patch has no {' or '.join(missing)}"
    return LigerModules(monkey_patch._patch_rms_norm_module, monkey_patch._patch_swiglu_module, swiglu)


def probe_liger_rope() -> Callable[..., Any] | str:
    """Liger's fused RoPE, `(q, k, cos, sin, …, unsqueeze_dim=…)`, or why not."""

    def load() -> Any:
        from liger_kernel.transformers.rope import liger_rotary_pos_emb

        return liger_rotary_pos_emb

    fn = _import_liger("liger-kernel's rope", load)
    if isinstance(fn, str):
        return fn
    params = inspect.signature(fn).parameters
    if list(params)[:4] != ["q", "k", "cos", "sin"] or "unsqueeze_dim" not in params:
        return f"liger_rotary_pos_emb{inspect.signature(fn)} does not take (q, k, cos, sin, …, unsqueeze_dim)"
    return fn


liger_linear_ce = functools.cache(probe_liger_linear_ce)
liger_modules = functools.cache(probe_liger_modules)
liger_rope = functools.cache(probe_liger_rope)


# ------------------------------------------------------------------ transformers

MASK_ARGS = ("batch_size", "q_length", "kv_length", "q_offset", "kv_offset", "attention_mask")


def mask_function_problem(fn: Callable[..., Any]) -> str | None:
    """None when transformers' mask functions take the arguments packed attention's mask function reads."""
    params = inspect.signature(fn).parameters
    missing = [n for n in MASK_ARGS if n not in params]
    if missing:
        return f"its mask functions take no {', '.join(missing)}"
    return None


def probe_attention_registry() -> str | None:
    """None when transformers has what packed attention registers with; else why not."""
    import transformers

    try:
        from transformers import AttentionInterface  # noqa: F401
        from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: F401
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"transformers {transformers.__version__}: {_err(e)}"
    why = mask_function_problem(sdpa_mask)
    return None if why is None else f"transformers {transformers.__version__}: {why}"


attention_registry = functools.cache(probe_attention_registry)


def rope_site(attn_modules: list[Any]) -> tuple[Any, Callable[..., Any]] | str:
    """(modeling module, its apply_rotary_pos_emb) when every attention module's class calls that module-level
    function from its forward — the place a fused RoPE can be bound; else why not."""
    if not attn_modules:
        return "no attention modules"
    cls = type(attn_modules[0])
    if any(type(a) is not cls for a in attn_modules):
        return "attention modules of several classes"
    module = sys.modules.get(cls.__module__)
    fn = getattr(module, "apply_rotary_pos_emb", None)
    if fn is None:
        return f"{cls.__module__} has no apply_rotary_pos_emb"
    fn = getattr(fn, "coa_original", fn)  # already bound by us: the function it wraps
    if list(inspect.signature(fn).parameters)[:4] != ["q", "k", "cos", "sin"]:
        return f"{cls.__module__}.apply_rotary_pos_emb{inspect.signature(fn)} does not take (q, k, cos, sin, …)"
    forward = inspect.unwrap(cls.forward)
    if "apply_rotary_pos_emb" not in getattr(getattr(forward, "__code__", None), "co_names", ()):
        return f"{cls.__name__}.forward does not call {cls.__module__}.apply_rotary_pos_emb"
    return module, fn
