"""bench/gpu's sections of bench/RESULTS.md, from run.py's results: `## bench/gpu (<device type>, <shape>)` (decode,
host time) and `## bench/gpu training (<device type>, <shape>)` (SFT and the RL update beside their HF + Liger
anchors, the RL step split, packed attention). A run that measured only one part writes only its section."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "—"


def _decode(r: dict) -> str:
    sz = r["sizes"]
    lines = [
        "| batch | run | tokens/s | ours ÷ this | of floor | peak memory (GiB) | ours agrees with the reference |",
        "|---|---|---|---|---|---|---|",
    ]
    for batch in sorted({d["batch"] for d in r["decode"]}):
        rows = [d for d in r["decode"] if d["batch"] == batch]
        ours = next(d for d in rows if d["who"].startswith("ours"))
        for d in rows:
            agree = "" if d["agrees_with_reference"] is None else f"{d['agrees_with_reference']:.1%} of tokens"
            lines.append(
                f"| {batch} | {d['who']} | {d['tokens_per_s']:,} | "
                f"{'' if d is ours else _ratio(ours['tokens_per_s'], d['tokens_per_s'])} | "
                f"{d['of_floor']:.1%} | {d['peak_gib']} | {agree} |"
            )
    floor = (
        "(weight bytes + mean KV bytes) ÷ the copy bandwidth measured here"
        if r["device_type"] == "cuda"
        else "on CPU there is no HBM: the floor uses this machine's measured memcpy bandwidth"
    )
    best = " best of 3 calls each;" if r["device_type"] == "cpu" else ""
    return (
        f"Decode (greedy, prompt {sz['prompt']} + {sz['new']} new tokens per row, prefill included;{best} floor = {floor}):"
        f"\n\n" + "\n".join(lines) + _ops(r) + _gpu_rows(r)
    )


def _gpu_rows(r: dict) -> str:
    """On CPU, the GPU figures the decode targets are read on, each unmeasured (never estimated from CPU figures)."""
    if r["device_type"] != "cpu":
        return ""
    rows = [
        "ours, 0.5B, batch 256, 256 + 128 tokens (tokens/s)",
        "ours ÷ HF generate, static cache + torch.compile, same run",
        "ours, 1.5B, batch 256 (tokens/s)",
        "decode_ops_per_layer on CUDA (the profiler's kernels)",
        "generation ÷ a steady RL step (graphs warm)",
    ]
    return (
        "\n\nOn a GPU (H100/H200) — this is a CPU run; bench/gpu/device-check.sh measures these first on a lent GPU "
        "and writes `## bench/gpu (cuda, <shape>)`:\n\n| GPU measure | figure |\n|---|---|\n"
        + "\n".join(f"| {x} | unmeasured |" for x in rows)
    )


def _ops(r: dict) -> str:
    """decode_ops_per_layer of ours at each batch and at 0.5B's shape (rollout/kernels.py)."""
    ours = [d for d in r.get("decode", []) if "decode_ops_per_layer" in d]
    if not ours and "decode_ops" not in r:
        return ""
    how = (
        "the profiler's kernel events of one replayed block"
        if r["device_type"] == "cuda"
        else "inductor's generated C++ kernels (fused ones and templates: graph_<n>_kernel is flex attention) + the "
        "extern calls of its wrapper (matrix products) in the profile of one block"
    )
    out = [
        f"\n\nOurs' **decode_ops_per_layer** (kernels per decode step ÷ layers, the step's embedding, head, "
        f"sampling and stops included; {how}):"
    ]
    for d in ours:
        mode = ("compiled" if d["compiled"] else "eager") + (", graphs" if d["graphs"] else "")
        out.append(
            f" batch {d['batch']}: **{d['decode_ops_per_layer']}** ({d['kernels_per_step']} per step, {mode}; "
            f"first call, compilation and captures included: {d['first_call_s']} s);"
        )
    x = r.get("decode_ops")
    if x:
        mode = "compiled" if x["compiled"] else f"eager (compilation failed: {x['compile_error']})"
        top = ", ".join(f"{n} × {v:g}" for n, v in x["top"][:6])
        few = (
            f"{x['layers']} of its {x['of_layers']} layers: the step's embedding, head and sampling spread over "
            f"{x['layers']} layers, a higher figure than the whole model's"
            if x.get("of_layers", x["layers"]) != x["layers"]
            else f"{x['layers']} layers"
        )
        out.append(
            f" at Qwen2.5-0.5B's layer shape ({few}; the full vocabulary, 4 slots, {mode}): "
            f"**{x['per_layer']}** ({x['kernels_per_step']} per step; most frequent: {top})."
        )
    return "".join(out)


def _host(r: dict) -> str:
    h = r.get("host")
    if not h:
        return ""
    b, a = h["before"], h["after"]
    return (
        f"Host time per decode step outside the model forward (batch {h['batch']}, prompt {h['prompt']} + "
        f"{h['new_tokens']} new; CPU, where host and forward share one clock): **before (reference loop) "
        f"{b['host_ms_per_step']} ms, after (engine) {a['host_ms_per_step']} ms** (the forward itself: "
        f"{b['forward_ms_per_step']} / {a['forward_ms_per_step']} ms per step; whole call {b['wall_s']} / "
        f"{a['wall_s']} s). PyTorch operator calls per step (nested included; each a kernel launch with its host "
        f"work on CUDA): before {b['ops_per_step']:.0f}, after {a['ops_per_step']:.0f} — which the engine captures "
        f"in one CUDA graph per {r['sizes'].get('block', 8)} steps on CUDA. On CPU both spend that time in the same "
        f"arithmetic, the [batch × 152k] log-softmax and argmax of the sampling step (the engine's choice of tokens "
        f"equals the loop's); the per-step host work the engine removes is CUDA's (launches, per-token "
        f"synchronisations), so on CPU these figures say little, and on a loaded machine they move run to run."
    )


def _rl(r: dict) -> str:
    out = []
    sz = r["sizes"]
    if "rl" in r:
        x = r["rl"]
        first = x.get("first_step")
        captured = "graphs captured, " if first and first.get("captures") else ""
        was = (
            f" (first step, {captured}kernels compiled and the optimiser's state allocated: generate "
            f"{first['generate_s']} s, train {first['train_s']} s, generation {first['generate_fraction']:.0%})"
            if first
            else ""
        )
        out.append(
            f"One RL step, single turn, in steady state — the second of two steps on one optimiser "
            f"({x['trajectories']} trajectories = {sz['rl_prompts']} prompts × G {sz['rl_group']}, prompt "
            f"{sz['prompt']} tokens, ≤ {sz['rl_new']} new sampled, {x['generated_tokens']:,} generated; GRPO "
            f"update with a KL reference, packed micro-batches of ≤ {sz['budget']:,} tokens): generate "
            f"{x['generate_s']} s, train {x['train_s']} s — **generation {x['generate_fraction']:.0%} of the "
            f"step**{was}{_warm(x)}; peak memory generate {x['generate_peak_gib']} GiB, train "
            f"{x['train_peak_gib']} GiB; "
            f"loss finite: {'yes' if x['loss_finite'] else '**no**'}."
        )
        a = r.get("rl_anchor")
        if "update_tokens_per_s" in x:
            anchor = "HF + Liger" if a and a.get("liger") else "plain HF"
            rows = [
                ("tokens per update", "update_tokens", "{:,}"),
                ("update (s)", "train_s", "{}"),
                ("tokens/s", "update_tokens_per_s", "{:,}"),
                ("model TFLOP/s", "update_model_tflops", "{}"),
                ("MFU (vs the matmul above)", "mfu", "{:.1%}"),
                ("peak memory (GiB)", "train_peak_gib", "{}"),
            ]
            rows = [row for row in rows if row[1] in x]
            f = x.get("fused_head")
            lines = [
                "| RL update | ours |"
                + (" ours, fused GRPO head (CUDA's path, forced) |" if f else "")
                + f" {anchor} | ours ÷ {anchor} |",
                "|---|---|" + ("---|" if f else "") + "---|---|",
            ]
            for name, k, fmt in rows:
                cell = fmt.format(a[k]) if a and k in a else "—"
                fcell = (f" {fmt.format(f[k])} |" if k in f else " |") if f else ""
                ratio = _ratio(x[k], a[k]) if a and k in ("update_tokens_per_s", "mfu") else ""
                if f and a and k in ("update_tokens_per_s", "mfu") and k in f:
                    ratio += f" (fused: {_ratio(f[k], a[k])})"
                lines.append(f"| {name} | {fmt.format(x[k])} |{fcell} {cell} | {ratio} |")
            anchor_note = (
                f"anchor: the same trajectories' shape as TRL's GRPOTrainer lays them out — "
                f"{a['rows_per_micro_batch']} padded rows per micro-batch, log-probs from the logits "
                f"(log-softmax and gather per row), {anchor} kernels, fused AdamW on CUDA, weights and "
                f"moments in {r['dtype'].removeprefix('torch.')}; its second update"
                if a
                else "anchor not run"
            )
            runs = r.get("rl_update_ratios")
            spread = (
                f" Over {len(runs)} runs ours ÷ {anchor} was {min(runs):.2f}–{max(runs):.2f}× (the table: the last)."
                if runs
                else ""
            )
            out.append(
                f"The update alone (model FLOPs: the policy's forward + backward and the reference's forward, "
                f"8 × parameters per token plus attention; ours: AdamW state in fp32 (fp32 masters of bf16 weights), the "
                f"fast path above; {anchor_note}).{spread}\n\n" + "\n".join(lines)
            )
    if "multi" in r:
        x = r["multi"]
        out.append(
            f"One RL step, multi-turn ({x['trajectories']} trajectories of the embedded benchmark's prompts, "
            f"two search calls each at most, observations from the embedded corpus ≤ {sz['obs']} tokens, "
            f"≤ {sz['turn_new']} tokens per turn): {x['tool_calls_per_trajectory']} calls per trajectory "
            f"({x['trajectories_with_2_calls']} with 2), {x['mean_turn_tokens']} sampled tokens per turn, "
            f"{x['sampled_tokens']:,} sampled + {x['observation_tokens']:,} observation tokens; generate "
            f"{x['generate_s']} s (tools {x['tools_s']} s, beside decoding), train {x['train_s']} s — "
            f"**generation {x['generate_fraction']:.0%} of the step**. **Prefill tokens: {x['prefill_tokens']:,}** "
            f"(prompts {x['prompt_tokens']:,} + observations and each turn's last sampled token = "
            f"{x['prefill_expected']:,} expected); a loop re-encoding every turn's context would encode "
            f"{x['reprefill_tokens']:,}. Peak memory generate {x['generate_peak_gib']} GiB, train "
            f"{x['train_peak_gib']} GiB; loss finite: {'yes' if x['loss_finite'] else '**no**'}."
        )
    return "\n\n".join(out)


def _warm(x: dict) -> str:
    """The steady step's generate with the engine's graphs warm: the stage frees them (KV cache, graphs, packed
    weights) before each update, so each step captures its blocks again."""
    if "generate_warm_s" not in x:
        return ""
    if x["captures"] == 0 and x["captures_warm"] == 0:  # no CUDA graphs (CPU): nothing is captured again
        return (
            f"; no block graphs on this device (CUDA only), so the steady step captures nothing and its generate "
            f"is the warm one; the same rollout again {x['generate_warm_s']} s — generation "
            f"{x['generate_fraction_warm']:.0%} of such a step"
        )
    return (
        f"; its generate captured {x['captures']} block graph(s) again (the stage frees the engine's memory before "
        f"each update); the same rollout with graphs warm {x['generate_warm_s']} s "
        f"({x['captures_warm']} captures) — generation {x['generate_fraction_warm']:.0%} of such a step"
    )


def _fast_path(r: dict) -> str:
    fast = (r.get("sft") or {}).get("fast_path")
    if not fast:
        return ""
    rl = (r.get("rl") or {}).get("fast_path") or {}
    cells = "; ".join(f"{k}: {v}" for k, v in fast.items())
    extra = f" (the RL update's loss head: {rl['loss head']})" if "loss head" in rl else ""
    return f"Ours' fast path on this install (model/fastpath.py's probes, as a stage's run_started names it): {cells}{extra}."


def _sft(r: dict) -> str:
    if "sft" not in r:
        return ""
    o, b, a, sz = r["sft"], r.get("sft_before"), r.get("sft_anchor"), r["sizes"]
    anchor = "HF + Liger" if a and a.get("liger") else "plain HF"
    rows = [
        ("tokens per step", "tokens_per_step", "{:,}"),
        ("tokens/s", "tokens_per_s", "{:,}"),
        ("model TFLOP/s", "model_tflops", "{}"),
        ("MFU (vs the matmul above)", "mfu", "{:.1%}"),
        ("peak memory (GiB)", "peak_gib", "{}"),
    ]
    rows = [row for row in rows if row[1] in o]
    head = "| SFT | ours |" + (" ours, unfused loss |" if b else "") + f" {anchor} | ours ÷ {anchor} |"
    lines = [head, "|---|---|" + ("---|" if b else "") + "---|---|"]
    for name, k, fmt in rows:
        cells = [fmt.format(o[k])] + ([fmt.format(b[k])] if b else []) + [fmt.format(a[k]) if a else "—"]
        ratio = _ratio(o[k], a[k]) if a and k in ("tokens_per_s", "mfu") else ""
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    before = (
        " The unfused-loss column: the same packed batches through the checkpointed log-prob chunks and "
        "transformers' sdpa with its dense block-diagonal mask."
        if b
        else ""
    )
    micro = " + ".join(f"{n:,}" for n in o.get("micro_batch_tokens", []))
    decided = o.get("checkpointing_decided") or ("on" if o["activation_checkpointing"] else "off")
    runs = r.get("sft_ratios")
    spread = (
        f" Over {len(runs)} runs of this command ours ÷ {anchor} was {min(runs):.2f}–{max(runs):.2f}× (the "
        f"table: the last)."
        if runs
        else ""
    )
    return (
        f"SFT — ours: sequences of ¼…1 × {sz['sft_len']} tokens up to {sz.get('sft_fill', 1)} × the budget "
        f"{sz['budget']:,}, packed into micro-batches of {micro} tokens, fused head, packed attention "
        f"{'on' if o['packed_attention'] else 'off'}, Liger RMSNorm/SwiGLU {'on' if o['liger'] else 'off'}, AdamW "
        f"state in fp32, activation checkpointing {decided}; "
        f"anchor: {sz['anchor_rows']} × {sz['anchor_len']} dense tokens, {anchor}, fused AdamW on CUDA, no "
        f"checkpointing; "
        f"median step of {sz['sft_steps']}.{before}{spread} Loss finite: "
        f"{'yes' if o['loss_finite'] and (not a or a['loss_finite']) else '**no**'}.\n\n" + "\n".join(lines)
    )


def _attention(r: dict) -> str:
    x = r.get("attention")
    if not x:
        return ""
    cells = " · ".join(f"{k} {v} ms (max |Δ| {x['max_diff_vs_dense'][k]:.1e})" for k, v in x["ms"].items())
    return (
        f"Packed attention alone, forward + backward of {x['tokens']:,} packed tokens ({x['sequences']} sequences, "
        f"longest {x['longest']}; {x['heads']} heads / {x['kv_heads']} KV heads × {x['head_dim']}): {cells}."
    )


def merge(results: list[dict]) -> dict:
    """One result from run.py's processes on the same device and shape (device-check.sh runs the anchors apart):
    decode rows joined, the better matmul figure as every MFU's denominator."""
    r = dict(results[0])
    r["decode"] = [d for x in results for d in x.get("decode", []) + x.get("decode_anchor", [])]
    for x in results[1:]:
        for k in ("host", "decode_ops", "rl", "multi", "sft", "sft_before", "sft_anchor", "attention", "rl_anchor"):
            if k in x:
                r[k] = x[k]
    # runs repeated on one machine (several result files each holding ours and the anchor): the range of ours ÷ anchor
    for key, ours, anchor, k in (
        ("sft_ratios", "sft", "sft_anchor", "tokens_per_s"),
        ("rl_update_ratios", "rl", "rl_anchor", "update_tokens_per_s"),
    ):
        ratios = [x[ours][k] / x[anchor][k] for x in results if ours in x and anchor in x and k in x[ours]]
        if len(ratios) > 1:
            r[key] = ratios
    r["commands"] = list(dict.fromkeys(re.sub(r" --out \S+", "", x["command"]) for x in results))
    r["runs"] = len(results)
    r["load_avgs"] = [x["load_avg"] for x in results]
    if all("load_avg_end" in x for x in results):
        r["load_avgs_end"] = [x["load_avg_end"] for x in results]
    r["matmul_tflops"] = max(x["matmul_tflops"] for x in results)
    r["matmul_tflops_before_after"] = [v for x in results for v in x["matmul_tflops_before_after"]]
    for k in ("sft", "sft_before", "sft_anchor"):
        if k in r:
            r[k] = {**r[k], "mfu": round(r[k]["model_tflops"] / r["matmul_tflops"], 4)}
    for k in ("rl", "rl_anchor"):
        if k in r and "update_model_tflops" in r[k]:
            r[k] = {**r[k], "mfu": round(r[k]["update_model_tflops"] / r["matmul_tflops"], 4)}
    if "fused_head" in r.get("rl", {}):
        f = r["rl"]["fused_head"]
        r["rl"]["fused_head"] = {**f, "mfu": round(f["update_model_tflops"] / r["matmul_tflops"], 4)}
    # A part that reached more model FLOP/s than the best matmul measured means the matmul figure was taken while
    # the machine was busier than during that part (a shared CPU): it is no MFU denominator, so no MFU is written.
    parts = [r[k] for k in ("sft", "sft_before", "sft_anchor", "rl", "rl_anchor") if k in r]
    parts += [r["rl"]["fused_head"]] if "fused_head" in r.get("rl", {}) else []
    over = max((x["mfu"] for x in parts if "mfu" in x), default=0.0)
    if over > 1.0:
        r["mfu_withheld"] = over
        for x in parts:
            x.pop("mfu", None)
    if not r["decode"]:
        del r["decode"]
    return r


DECODE_KEYS, TRAINING_KEYS = (
    ("decode", "host", "decode_ops"),
    ("rl", "multi", "sft", "sft_before", "sft_anchor", "rl_anchor", "attention"),
)


def sections(results: list[dict], shapes: dict, vocab: int) -> list[tuple[str, str]]:
    """[(title, markdown)] of the results of one device and shape: the decode section and the training section, each
    where the results hold its parts."""
    r = merge(results)
    out = []
    if any(k in r for k in DECODE_KEYS):
        parts = [_decode(r) if "decode" in r else "", _host(r)]
        out.append(_section(r, f"## bench/gpu ({r['device_type']}, {r['shape']})", parts, shapes, vocab))
    if any(k in r for k in TRAINING_KEYS):
        parts = [_sft(r), _fast_path(r), _rl(r), _attention(r)]
        out.append(_section(r, f"## bench/gpu training ({r['device_type']}, {r['shape']})", parts, shapes, vocab))
    return out


def _section(r: dict, title: str, parts: list[str], shapes: dict, vocab: int) -> tuple[str, str]:
    cmds = "; ".join(f"`.venv/bin/python {c}`" for c in r["commands"])
    if len(r["commands"]) > 1:
        cmds += " (bench/gpu/device-check.sh; the section written by `bench/gpu/results.py <the JSON files>`)"
    elif r.get("runs", 1) > 1:
        cmds += f", {r['runs']} runs one after another (`--out` files; the section written by `bench/gpu/results.py`)"
    shp = shapes[r["shape"]]
    shape_note = (
        (f"Qwen2.5-{r['shape'].upper()}-shaped" if r["shape"] != "tiny" else "a tiny Qwen2 shape")
        + f" ({shp['num_hidden_layers']} layers × {shp['hidden_size']} hidden, {shp['num_attention_heads']} heads / "
        f"{shp['num_key_value_heads']} KV heads)"
    )
    cpu_note = (
        "\n\nPeak memory on CPU is the process's peak RSS (it never goes down), not per phase. glibc malloc's "
        "mmap/trim thresholds were fixed at 1 GiB for the run (run.py steady_allocator: otherwise whether a "
        "step's [batch × 152k] temporaries are page-faulted in afresh each step depends on earlier "
        f"allocations; set: {r.get('steady_allocator')})."
        if r["device_type"] == "cpu"
        else ""
    )
    matmul = " / ".join(str(v) for v in r["matmul_tflops_before_after"])
    withheld = (
        f"; no MFU is written: a part reached {r['mfu_withheld']:.0%} of it, so the matmul figure was "
        f"measured while the machine was busier than during that part"
        if r.get("mfu_withheld")
        else ""
    )
    end_load = f", at the end {' / '.join(str(x) for x in r['load_avgs_end'])}" if r.get("load_avgs_end") else ""
    text = (
        f"""{title}

_Last run: {r["date"]}_ — device: **{r["device"]}**, {r["threads"]} threads, {r["dtype"]}, torch {r["torch"]},
transformers {r["transformers"]} (machine shared: figures vary run to run; 1-minute load average at the start
{" / ".join(str(x) for x in r.get("load_avgs", [r["load_avg"]]))}{end_load}).

Command: {cmds}

Model: {shape_note}, Qwen2.5's {vocab:,}-entry vocabulary, random init (never downloaded). Measured in the same
process: matmul {r["matmul_tflops"]} TFLOP/s ({r["dtype"]}; before / after each process's work {matmul}: the highest
is the MFU denominator{withheld}), copy bandwidth {r["bandwidth_gb_s"]} GB/s.

"""
        + "\n\n".join(p for p in parts if p)
        + cpu_note
        + "\n"
    )
    return title, text


def write_section(results: list[dict], shapes: dict, vocab: int) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    for title, text_of in sections(results, shapes, vocab):
        pattern = re.compile(r"^" + re.escape(title) + r"\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
        new = text_of + "\n"
        text = (
            pattern.sub(lambda _, new=new: new, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + text_of
        )
    path.write_text(text)


if __name__ == "__main__":
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import SHAPES, VOCAB

    if len(sys.argv) < 2:
        sys.exit("usage: python bench/gpu/results.py RESULT.json [RESULT.json …]  (one device and shape)")
    write_section([json.loads(Path(p).read_text()) for p in sys.argv[1:]], SHAPES, VOCAB)
