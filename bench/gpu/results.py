"""bench/gpu's section of bench/RESULTS.md, from run.py's result (`## bench/gpu (<device type>, <shape>)`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "—"


def _decode(r: dict) -> str:
    sz = r["sizes"]
    lines = ["| batch | run | tokens/s | ours ÷ this | of floor | peak memory (GiB) | ours agrees with the reference |",
             "|---|---|---|---|---|---|---|"]
    for batch in sorted({d["batch"] for d in r["decode"]}):
        rows = [d for d in r["decode"] if d["batch"] == batch]
        ours = next(d for d in rows if d["who"].startswith("ours"))
        for d in rows:
            agree = "" if d["agrees_with_reference"] is None else f"{d['agrees_with_reference']:.1%} of tokens"
            lines.append(f"| {batch} | {d['who']} | {d['tokens_per_s']:,} | "
                         f"{'' if d is ours else _ratio(ours['tokens_per_s'], d['tokens_per_s'])} | "
                         f"{d['of_floor']:.1%} | {d['peak_gib']} | {agree} |")
    floor = ("(weight bytes + mean KV bytes) ÷ the copy bandwidth measured here" if r["device_type"] == "cuda"
             else "on CPU there is no HBM: the floor uses this machine's measured memcpy bandwidth")
    best = " best of 3 calls each;" if r["device_type"] == "cpu" else ""
    return (f"Decode (greedy, prompt {sz['prompt']} + {sz['new']} new tokens per row, prefill included;{best} floor = {floor}):"
            f"\n\n" + "\n".join(lines))


def _host(r: dict) -> str:
    h = r.get("host")
    if not h:
        return ""
    b, a = h["before"], h["after"]
    return (f"Host time per decode step outside the model forward (batch {h['batch']}, prompt {h['prompt']} + "
            f"{h['new_tokens']} new; CPU, where host and forward share one clock): **before (reference loop) "
            f"{b['host_ms_per_step']} ms, after (engine) {a['host_ms_per_step']} ms** (the forward itself: "
            f"{b['forward_ms_per_step']} / {a['forward_ms_per_step']} ms per step; whole call {b['wall_s']} / "
            f"{a['wall_s']} s). PyTorch operator calls per step (nested included; each a kernel launch with its host "
            f"work on CUDA): before {b['ops_per_step']:.0f}, after {a['ops_per_step']:.0f} — which the engine captures "
            f"in one CUDA graph per {r['sizes'].get('block', 8)} steps on CUDA. On CPU both spend that time in the same "
            f"arithmetic, the [batch × 152k] log-softmax and argmax of the sampling step (the engine's choice of tokens "
            f"equals the loop's), so parity is the expected CPU result: the per-step host work the engine removes is "
            f"CUDA's (launches, per-token synchronisations).")


def _rl(r: dict) -> str:
    out = []
    sz = r["sizes"]
    if "rl" in r:
        x = r["rl"]
        out.append(f"One RL step, single turn ({x['trajectories']} trajectories = {sz['rl_prompts']} prompts × G "
                   f"{sz['rl_group']}, prompt {sz['prompt']} tokens, ≤ {sz['rl_new']} new sampled, "
                   f"{x['generated_tokens']:,} generated; GRPO update with a KL reference, packed micro-batches): "
                   f"generate {x['generate_s']} s, train {x['train_s']} s — **generation {x['generate_fraction']:.0%} "
                   f"of the step**; peak memory generate {x['generate_peak_gib']} GiB, train {x['train_peak_gib']} GiB; "
                   f"loss finite: {'yes' if x['loss_finite'] else '**no**'}.")
    if "multi" in r:
        x = r["multi"]
        out.append(f"One RL step, multi-turn ({x['trajectories']} trajectories of the embedded benchmark's prompts, "
                   f"two search calls each at most, observations from the embedded corpus ≤ {sz['obs']} tokens, "
                   f"≤ {sz['turn_new']} tokens per turn): {x['tool_calls_per_trajectory']} calls per trajectory "
                   f"({x['trajectories_with_2_calls']} with 2), {x['mean_turn_tokens']} sampled tokens per turn, "
                   f"{x['sampled_tokens']:,} sampled + {x['observation_tokens']:,} observation tokens; generate "
                   f"{x['generate_s']} s (tools {x['tools_s']} s, beside decoding), train {x['train_s']} s — "
                   f"**generation {x['generate_fraction']:.0%} of the step**. **Prefill tokens: {x['prefill_tokens']:,}** "
                   f"(prompts {x['prompt_tokens']:,} + observations and each turn's last sampled token = "
                   f"{x['prefill_expected']:,} expected); a loop re-encoding every turn's context would encode "
                   f"{x['reprefill_tokens']:,}. Peak memory generate {x['generate_peak_gib']} GiB, train "
                   f"{x['train_peak_gib']} GiB; loss finite: {'yes' if x['loss_finite'] else '**no**'}.")
    return "\n\n".join(out)


def _sft(r: dict) -> str:
    if "sft" not in r:
        return ""
    o, b, a, sz = r["sft"], r.get("sft_before"), r.get("sft_anchor"), r["sizes"]
    anchor = "HF + Liger" if a and a.get("liger") else "plain HF"
    rows = [("tokens per step", "tokens_per_step", "{:,}"), ("tokens/s", "tokens_per_s", "{:,}"),
            ("model TFLOP/s", "model_tflops", "{}"), ("MFU (vs the matmul above)", "mfu", "{:.1%}"),
            ("peak memory (GiB)", "peak_gib", "{}")]
    head = "| SFT | ours |" + (" ours, unfused loss |" if b else "") + f" {anchor} | ours ÷ {anchor} |"
    lines = [head, "|---|---|" + ("---|" if b else "") + "---|---|"]
    for name, k, fmt in rows:
        cells = [fmt.format(o[k])] + ([fmt.format(b[k])] if b else []) + [fmt.format(a[k]) if a else "—"]
        ratio = _ratio(o[k], a[k]) if a and k in ("tokens_per_s", "mfu") else ""
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    before = (" The unfused-loss column: the same packed batches through the checkpointed log-prob chunks and "
              "transformers' sdpa with its dense block-diagonal mask." if b else "")
    return (f"SFT — ours: packed micro-batches of {sz['sft_rows']} sequences of ¼…1 × {sz['sft_len']} tokens "
            f"(budget {sz['budget']}), fused head, packed attention {'on' if o['packed_attention'] else 'off'}, "
            f"Liger RMSNorm/SwiGLU {'on' if o['liger'] else 'off'}, fp32 master weights, activation checkpointing "
            f"{'on' if o['activation_checkpointing'] else 'off'}; anchor: {sz['anchor_rows']} × {sz['anchor_len']} "
            f"dense tokens, {anchor}, fused AdamW, no checkpointing; median step of {sz['sft_steps']}.{before} Loss finite: "
            f"{'yes' if o['loss_finite'] and (not a or a['loss_finite']) else '**no**'}.\n\n" + "\n".join(lines))


def _attention(r: dict) -> str:
    x = r.get("attention")
    if not x:
        return ""
    cells = " · ".join(f"{k} {v} ms (max |Δ| {x['max_diff_vs_dense'][k]:.1e})" for k, v in x["ms"].items())
    return (f"Packed attention alone, forward + backward of {x['tokens']:,} packed tokens ({x['sequences']} sequences, "
            f"longest {x['longest']}; {x['heads']} heads / {x['kv_heads']} KV heads × {x['head_dim']}): {cells}.")


def merge(results: list[dict]) -> dict:
    """One result from run.py's processes on the same device and shape (device-check.sh runs the anchors apart):
    decode rows joined, the better matmul figure as every MFU's denominator."""
    r = dict(results[0])
    r["decode"] = [d for x in results for d in x.get("decode", []) + x.get("decode_anchor", [])]
    for x in results[1:]:
        for k in ("host", "rl", "multi", "sft", "sft_before", "sft_anchor", "attention"):
            if k in x:
                r[k] = x[k]
    r["commands"] = [x["command"] for x in results]
    r["matmul_tflops"] = max(x["matmul_tflops"] for x in results)
    r["matmul_tflops_before_after"] = [v for x in results for v in x["matmul_tflops_before_after"]]
    for k in ("sft", "sft_before", "sft_anchor"):
        if k in r:
            r[k] = {**r[k], "mfu": round(r[k]["model_tflops"] / r["matmul_tflops"], 4)}
    if not r["decode"]:
        del r["decode"]
    return r


def section(results: list[dict], shapes: dict, vocab: int) -> tuple[str, str]:
    """(title, markdown) of the results of one device and shape."""
    r = merge(results)
    title = f"## bench/gpu ({r['device_type']}, {r['shape']})"
    cmds = "; ".join(f"`.venv/bin/python {c}`" for c in r["commands"])
    if len(r["commands"]) > 1:
        cmds += " (bench/gpu/device-check.sh; the section written by `bench/gpu/results.py <the JSON files>`)"
    shp = shapes[r["shape"]]
    shape_note = (f"Qwen2.5-{r['shape'].upper()}-shaped" if r["shape"] != "tiny" else "a tiny Qwen2 shape") + \
        f" ({shp['num_hidden_layers']} layers × {shp['hidden_size']} hidden, {shp['num_attention_heads']} heads / " \
        f"{shp['num_key_value_heads']} KV heads)"
    parts = [p for p in (_decode(r) if "decode" in r else "", _host(r), _rl(r), _sft(r), _attention(r)) if p]
    cpu_note = ("\n\nPeak memory on CPU is the process's peak RSS (it never goes down), not per phase. glibc malloc's "
                "mmap/trim thresholds were fixed at 1 GiB for the run (run.py steady_allocator: otherwise whether a "
                "step's [batch × 152k] temporaries are page-faulted in afresh each step depends on earlier "
                f"allocations; set: {r.get('steady_allocator')})." if r["device_type"] == "cpu" else "")
    matmul = " / ".join(str(v) for v in r["matmul_tflops_before_after"])
    section = f"""{title}

_Last run: {r['date']}_ — device: **{r['device']}**, {r['threads']} threads, {r['dtype']}, torch {r['torch']},
transformers {r['transformers']} (machine shared: figures vary run to run; 1-minute load average at the start
{r['load_avg']}).

Command: {cmds}

Model: {shape_note}, Qwen2.5's {vocab:,}-entry vocabulary, random init (never downloaded). Measured in the same
process: matmul {r['matmul_tflops']} TFLOP/s ({r['dtype']}; before / after each process's work {matmul}: the highest
is the MFU denominator), copy bandwidth {r['bandwidth_gb_s']} GB/s.

""" + "\n\n".join(parts) + cpu_note + "\n"
    return title, section


def write_section(results: list[dict], shapes: dict, vocab: int) -> None:
    title, text_of = section(results, shapes, vocab)
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text() if path.is_file() else "# Benchmarks\n"
    pattern = re.compile(r"^" + re.escape(title) + r"\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    text = pattern.sub(text_of + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + text_of
    path.write_text(text)


if __name__ == "__main__":
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import SHAPES, VOCAB

    if len(sys.argv) < 2:
        sys.exit("usage: python bench/gpu/results.py RESULT.json [RESULT.json …]  (one device and shape)")
    write_section([json.loads(Path(p).read_text()) for p in sys.argv[1:]], SHAPES, VOCAB)
