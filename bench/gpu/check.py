"""Correctness on the CUDA device before its speed is believed (bench/gpu/device-check.sh runs it first; CPU tests
cover the same paths eagerly):

1. the engine (compiled, with CUDA graphs) equals the reference loop greedy, token for token, in fp32 on a tiny Qwen2
   (stop ids, refilled slots), and equals itself eager without graphs, sampled;
2. Liger-Kernel's fused linear cross-entropy (what TokenScorer's `nll` uses on CUDA) equals the chunked PyTorch
   function: loss and gradients, fp32 and bf16;
3. packed attention on CUDA (torch's varlen flash attention when this torch has it: its probe) equals the padded
   batch, and an fp32 model under bf16 autocast takes it too;
4. Liger's RMSNorm / SwiGLU / RoPE bound to a model leave its log-probs where they were, and a bf16 model's training
   forward names every part fast (model/fastpath.py's probes on this device);
5. GRPO through the fused head equals the checkpointed chunks, and fused AdamW the for-each update.

Prints one JSON object; exit status 1 if any check failed.

    python3 bench/gpu/check.py [--out check.json]"""

from __future__ import annotations

import argparse
import json
import random
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "trainer"))

import torch

DEV = torch.device("cuda")


def qwen2(seed: int, vocab: int = 503, dtype: torch.dtype = torch.float32, tied: bool = True):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=tied,
    )
    return Qwen2ForCausalLM(cfg).to(DEV, dtype)


def check_engine() -> dict:
    from coa_trainer.rollout.engine import Engine
    from coa_trainer.rollout.generate import _ENGINES, engine_for, generate, reference_generate

    torch.backends.cuda.matmul.allow_tf32 = False
    lm = qwen2(1).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(5, 503, (int(n),), generator=g).tolist() for n in torch.randint(1, 60, (24,), generator=g)]
    ref = reference_generate(lm, prompts, 80, {3, 4}, 0, DEV)
    out = generate(lm, prompts, 80, {3, 4}, 0, DEV, slots=5)
    eng = engine_for(lm, DEV, None)
    greedy_equal = out[0] == ref[0] and out[2] == ref[2]
    lp_err = max(abs(a - b) for x, y in zip(out[1], ref[1]) for a, b in zip(x, y))
    sampled = generate(
        lm, prompts, 80, {3}, 0, DEV, temperature=0.9, top_p=0.95, generator=torch.Generator(device=DEV).manual_seed(1)
    )
    # the same without graphs nor compilation (CUDA's default engine compiles its steps: a compile error is said)
    _ENGINES[lm] = {(str(DEV), None): Engine(lm, DEV, None, graphs=False, compiled=False)}
    eager = generate(
        lm, prompts, 80, {3}, 0, DEV, temperature=0.9, top_p=0.95, generator=torch.Generator(device=DEV).manual_seed(1)
    )
    return {
        "ok": greedy_equal and lp_err < 1e-3 and sampled[0] == eager[0] and eng.stats.compile_error is None,
        "compiled": eng.compiled,
        "compile_error": eng.stats.compile_error,
        "greedy_equal_to_reference": greedy_equal,
        "max_logprob_diff": lp_err,
        "sampled_graphs_equal_eager": sampled[0] == eager[0],
        "graphs_captured": eng.stats.graphs_captured,
        "graph_replays": eng.stats.graph_replays,
    }


def check_fused_ce() -> dict:
    from coa_trainer.model.linear_ce import ChunkedLinearNLL, linear_nll_sum

    out: dict = {"ok": True}
    for dtype, tol in ((torch.float32, 2e-3), (torch.bfloat16, 3e-2)):
        g = torch.Generator(device=DEV).manual_seed(0)
        h = torch.randn(3000, 256, device=DEV, dtype=dtype, generator=g).requires_grad_(True)
        head = torch.nn.Linear(256, 32000, bias=False).to(DEV, dtype)
        t = torch.randint(0, 32000, (3000,), device=DEV, generator=g)
        a = linear_nll_sum(h, head, t, 500, kernel="liger")
        ga = torch.autograd.grad(a, (h, head.weight))
        b = ChunkedLinearNLL.apply(h, head.weight, None, t, 500, True)
        gb = torch.autograd.grad(b, (h, head.weight))
        rel = [float((x.float() - y.float()).norm() / y.float().norm()) for x, y in zip((a, *ga), (b, *gb))]
        out[str(dtype)] = {"loss_liger": float(a), "loss_chunked": float(b), "rel_err_loss_grad_h_grad_w": rel}
        out["ok"] &= max(rel) < tol
    return out


def check_packed_attention() -> dict:
    from coa_trainer.model.fastpath import installed_varlen, varlen_plan
    from coa_trainer.model.packing import layout
    from coa_trainer.model.scoring import TokenScorer

    api = installed_varlen("cuda")  # the probe: signature read, a causal GQA forward + backward on this device
    lm = qwen2(2, tied=False, dtype=torch.bfloat16)  # varlen flash attention runs in half precision only
    scorer = TokenScorer(lm)
    r = random.Random(5)
    seqs = [[r.randrange(1, 503) for _ in range(n)] for n in (90, 7, 300, 41, 1, 128)]
    packed, padded = layout(seqs, 0, True, DEV), layout(seqs, 0, False, DEV)
    with torch.no_grad():
        lp, _ = scorer(packed.ids, None, packed.pos)
        lu, _ = scorer(padded.ids, padded.attn, None)
    err = max(
        float((lp[0, a : a + n - 1] - lu[row, : n - 1]).abs().max()) if n > 1 else 0.0
        for (_, a, n), (row, _, _) in zip(packed.spans, padded.spans)
    )
    # an fp32 model under bf16 autocast: its queries reach attention in fp32 (the rotary embedding promotes them),
    # and still take varlen flash, in autocast's dtype
    q32 = torch.zeros(4, 2, 64, device=DEV)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        plan = varlen_plan(q32, None)
    autocast_ok = not isinstance(plan, str) and plan[1] == torch.bfloat16
    # the attention outputs themselves (O(1) values): varlen and unpacked against transformers' dense mask, bf16
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import attention

    att = attention.measure(DEV, torch.bfloat16, 14, 2, 64, 4096, reps=1)
    worst = max(att["max_diff_vs_dense"].values())
    return {
        "ok": scorer.packed_attention and not isinstance(api, str) and autocast_ok and err < 0.1 and worst < 0.05,
        "varlen": "ok" if not isinstance(api, str) else api,
        "fp32_under_autocast_takes_varlen": autocast_ok,
        "max_logprob_diff": err,
        "attention_max_diff_vs_dense": att["max_diff_vs_dense"],
        "attention_ms": att["ms"],
    }


def check_liger_modules() -> dict:
    """Liger's RMSNorm / SwiGLU / RoPE bound to a model leave its log-probs (fp32) where they were, and the model's
    training forward reports every fast part on this device."""
    from coa_trainer.model.liger import patch_model
    from coa_trainer.model.packing import layout
    from coa_trainer.model.scoring import TokenScorer, full_token_logprobs

    lm = qwen2(3, tied=False)
    lay = layout([[random.Random(i).randrange(1, 503) for _ in range(64)] for i in range(4)], 0, False, DEV)
    with torch.no_grad():
        before, _ = full_token_logprobs(lm, lay.ids, lay.attn)
        norms, rope = patch_model(lm)
        after, _ = full_token_logprobs(lm, lay.ids, lay.attn)
    err = float((before - after).abs().max())
    fast = TokenScorer(qwen2(4, tied=False, dtype=torch.bfloat16)).fast_path(torch.bfloat16, True, "lm")
    all_fast = all("(" not in v for v in fast.values())
    return {
        "ok": norms.fast and rope.fast and err < 2e-3 and all_fast,
        "rms_norm_swiglu": str(norms),
        "rope": str(rope),
        "max_logprob_diff": err,
        "fast_path_bf16": fast,
    }


def check_fused_grpo_head() -> dict:
    """GRPO through the fused head (CUDA's path) equals the checkpointed chunks: loss and gradients, fp32."""
    from coa_trainer.algos.grpo import Sample, grpo_loss_parts
    from coa_trainer.model import scoring

    torch.backends.cuda.matmul.allow_tf32 = False
    lm, ref = qwen2(5, tied=False), qwen2(6, tied=False)
    r = random.Random(9)
    samples = [
        Sample(
            [r.randrange(5, 503) for _ in range(8)],
            [r.randrange(5, 503) for _ in range(40)],
            [1] * 40,
            [-r.random() * 5 for _ in range(40)],
            r.uniform(-1, 1),
        )
        for _ in range(6)
    ]
    out = {}
    for mode in ("never", "cuda"):
        scoring.FUSED_TOKEN_LOSS = mode
        loss, _, _ = grpo_loss_parts(lm, ref, samples, 0, DEV, None, 0.2, 0.05, 0.9, True)
        loss.backward()
        out[mode] = (float(loss.detach()), {n: p.grad.detach().clone() for n, p in lm.named_parameters()})
        lm.zero_grad(set_to_none=True)
    scoring.FUSED_TOKEN_LOSS = "cuda"
    (l0, g0), (l1, g1) = out["never"], out["cuda"]
    rel = max(float((g1[n] - g0[n]).norm() / g0[n].norm().clamp(min=1e-12)) for n in g0)
    return {
        "ok": abs(l1 - l0) <= 1e-4 * max(1.0, abs(l0)) and rel < 1e-3,
        "loss_checkpointed": l0,
        "loss_fused": l1,
        "max_rel_grad_diff": rel,
    }


def check_fused_adamw() -> dict:
    """The stages' optimiser takes torch's fused AdamW here (over fp32 masters of bf16 weights), and the fused update
    equals the for-each one to float tolerance."""
    from coa_trainer.model.optim import make_optimizer

    choice = str(
        make_optimizer([torch.nn.Parameter(torch.zeros(8, device=DEV, dtype=torch.bfloat16))], 1e-3, 0.0).coa_adamw
    )
    out = []
    for kw in ({"fused": True}, {"foreach": True}):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(1000, 64, device=DEV))
        opt = torch.optim.AdamW([w], lr=1e-3, weight_decay=0.01, betas=(0.9, 0.95), **kw)
        for i in range(3):
            w.grad = torch.randn(1000, 64, device=DEV, generator=torch.Generator(device=DEV).manual_seed(i))
            opt.step()
        out.append(w.detach().clone())
    err = float((out[0] - out[1]).abs().max())
    return {"ok": choice == "fused" and err < 1e-6, "make_optimizer": choice, "max_diff_fused_vs_foreach": err}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    results: dict = {"device": torch.cuda.get_device_name(DEV), "torch": torch.__version__}
    for name, fn in (
        ("engine", check_engine),
        ("fused_ce", check_fused_ce),
        ("packed_attention", check_packed_attention),
        ("liger_modules", check_liger_modules),
        ("fused_grpo_head", check_fused_grpo_head),
        ("fused_adamw", check_fused_adamw),
    ):
        try:
            results[name] = fn()
        except Exception:  # noqa: BLE001 — every check reports, the others still run
            results[name] = {"ok": False, "error": traceback.format_exc()[-2000:]}
        print(json.dumps({name: results[name]}), flush=True)
    results["ok"] = all(v["ok"] for v in results.values() if isinstance(v, dict))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    sys.exit(0 if results["ok"] else 1)


if __name__ == "__main__":
    main()
