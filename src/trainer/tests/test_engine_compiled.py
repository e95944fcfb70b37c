"""The rollout engine's compiled path (torch.compile through inductor's C++ backend: the code CUDA runs through
Triton) on a model with Qwen2.5-0.5B's layer shape: a decode step is at most 12 kernels per layer, counted from the
profile (inductor's generated kernels plus its extern calls), and the compiled decode and prefill equal the reference
loop token for token and in log-probs — slots refilled, blocks captured and replayed, the host reading a block while
the next one runs, an observation appended to a slot's cache. One compilation serves the module's tests."""

from __future__ import annotations

import pytest
import torch

from coa_trainer.rollout import generate as gen
from coa_trainer.rollout.engine import Engine
from coa_trainer.rollout.generate import generate, reference_generate
from coa_trainer.rollout.kernels import decode_kernels

CPU = torch.device("cpu")
VOCAB = 512


def _model(hidden: int, mlp: int, seed: int = 0):
    """A Qwen2 with 0.5B's attention (14 query heads over 2 KV heads of 64), two layers, a small vocabulary."""
    import transformers

    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=mlp,
        num_hidden_layers=2,
        num_attention_heads=14,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=512,
    )
    return transformers.Qwen2ForCausalLM(cfg).eval()


def _compiled_engine(model):
    eng = Engine(model, CPU, None, compiled=True, graphs=True, overlap=True)
    gen._ENGINES[model] = {(str(CPU), None): eng}
    return eng


@pytest.fixture(scope="module")
def compiled():
    """(model, engine): Qwen2.5-0.5B's layer shape (hidden 896, MLP 4864), two layers; the engine compiled, its
    blocks captured (on CPU a replay of the compiled steps) and read while the next one runs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    # The mode a stage runs in by default (deterministic: true, model/load.py): the engine's compiled calls turn it
    # off inside (engine.fusible), so the count and the equality below hold in it; the caller's mode is restored
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch._dynamo.reset()
    model = _model(896, 4864)
    with torch.no_grad():  # logits further apart than the init's: fewer near-ties for a greedy comparison
        model.lm_head.weight.mul_(20)
    yield model, _compiled_engine(model)
    torch.set_num_threads(threads)
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(deterministic, warn_only=warn)


def _prompts(n: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(5, VOCAB, (int(k),), generator=g).tolist() for k in torch.randint(2, 40, (n,), generator=g)]


def test_compiled_decode_equals_the_reference_loop(compiled):
    model, eng = compiled
    prompts = _prompts(5, 1)
    ref = reference_generate(model, prompts, 20, {3, 4}, 0, CPU)
    out = generate(model, prompts, 20, {3, 4}, 0, CPU, slots=3)  # most rows start in a slot another has just left
    assert eng.compiled and eng.stats.compile_error is None
    assert eng.stats.graphs_captured >= 1 and eng.stats.graph_replays > eng.stats.graphs_captured
    assert out[0] == ref[0] and out[2] == ref[2]
    for a, b in zip(out[1], ref[1]):
        assert a == pytest.approx(b, abs=1e-4)


def test_compiled_prefill_appends_an_observation_to_a_slot(compiled):
    """A turn, then the turn's last token and an observation appended to the slot's cache (starts > 0, as after a
    tool call), then the next turn: both turns equal the reference loop over the whole context."""
    model, eng = compiled
    p = _prompts(2, 2)
    obs = _prompts(2, 3)
    s = eng.session(2, eng.stop_table(None, [(set(), [])]), 0.0, 1.0, None, 0)
    eng.sync_weights()
    eng.reserve(2, 256)
    s.active.zero_()
    turns = []
    starts = [0, 0]
    chunks = p
    for _ in range(2):
        eng.clear_column0(s)
        eng.prefill(s, [0, 1], chunks, starts, [eng.block + 1] * 2, [0, 0])
        need = max(st + len(c) for st, c in zip(starts, chunks)) + eng.block
        eng.decode(s, eng.attention_length(need))
        tok, lp, live, _ = eng.read(s)
        assert live.all()  # column 0 (the prefill's token) and every step of the block
        turns.append((tok.tolist(), lp.tolist()))
        # the cache now holds the chunk and every token but the last sampled one
        starts = [st + len(c) + eng.block for st, c in zip(starts, chunks)]
        chunks = [[row[-1]] + o for row, o in zip(tok.tolist(), obs)]
    first = reference_generate(model, p, eng.block + 1, set(), 0, CPU)
    second = reference_generate(
        model, [a + t + o for a, t, o in zip(p, turns[0][0], obs)], eng.block + 1, set(), 0, CPU
    )
    for (tok, lp), ref in zip(turns, (first, second)):
        assert tok == ref[0]
        assert [x for r in lp for x in r] == pytest.approx([x for r in ref[1] for x in r], abs=1e-4)


def test_a_compiled_decode_step_is_at_most_12_kernels_per_layer(compiled):
    """Counted from the profile of one block: inductor's generated C++ kernels and the extern calls of its wrapper
    (matrix products, attention), divided by the layers — the step's embedding, head and sampling included, so two
    layers overstate a 24-layer model's figure."""
    from torch._dynamo.utils import counters

    model, eng = compiled
    # Compiled at one slot count first (whichever of the module's tests ran before in this process, if any)
    generate(model, _prompts(3, 4), 4, set(), 0, CPU, slots=3)
    compiled_before = counters["stats"]["unique_graphs"]
    generate(model, _prompts(4, 4), 4, set(), 0, CPU)
    s = next(x for x in eng.sessions.values() if x.slots == 4)
    s.active.fill_(True)
    s.budget.fill_(10**6)
    k = decode_kernels(eng, s, 64)
    names = dict(k["top"])
    assert any("cpp_fused" in n or "fused" in n for n in names) or any(not n.startswith("aten::") for n in names)
    assert sum(v for n, v in names.items() if n in ("aten::mm", "aten::addmm")) >= 4 * 2  # 4 products per layer
    assert k["kernels_per_step"] >= 4 * 2 + 2 and k["per_layer"] <= 12, k
    assert eng.stats.compile_error is None
    assert counters["stats"]["unique_graphs"] == compiled_before  # another slot count: the same compilation


def _attention_ops(names) -> list[str]:
    return [n for n in names if "scaled_dot_product" in n]


def test_compiled_decode_and_prefill_call_no_sdpa_with_a_dense_mask(compiled):
    """Compiled, attention is flex attention over a block mask made from the slots' positions: neither a decode
    block nor a prefill dispatches scaled_dot_product_attention (whose boolean mask keeps CUDA's flash kernel out and
    makes it read every position up to the attention length)."""
    from coa_trainer.rollout.kernels import count_kernels

    model, eng = compiled
    s = eng.session(2, eng.stop_table(None, [(set(), [])]), 0.0, 1.0, None, 0)
    eng.sync_weights()
    eng.reserve(2, 256)
    s.active.zero_()
    p = _prompts(2, 5)
    eng.clear_column0(s)
    _, prefill = count_kernels(lambda: eng.prefill(s, [0, 1], p, [0, 0], [eng.block + 1] * 2, [0, 0]), CPU)
    eng.decode(s, 64)  # compiled and captured outside the count
    _, decode = count_kernels(lambda: eng.decode(s, 64), CPU)
    assert eng.compiled and eng.stats.compile_error is None
    assert not _attention_ops(prefill) and not _attention_ops(decode), (prefill, decode)
    assert sum(prefill.values()) > 0 and sum(decode.values()) > 0


def test_a_slot_never_reads_keys_past_its_own_block(compiled):
    """One slot 150 tokens long (its second key block), one 12 long, attending over 256 positions: the short slot's
    cache from position 128 on (its second block, which the long slot reads) is poisoned with NaN, keys and values
    alike — its tokens and log-probs are those of the clean cache, bit for bit. A masked read of those positions
    would give NaN (0 · NaN in the attention's weighted sum)."""
    from coa_trainer.rollout.kvmodel import KV_BLOCK

    model, eng = compiled
    s = eng.session(2, eng.stop_table(None, [(set(), [])]), 0.0, 1.0, None, 0)
    eng.sync_weights()
    eng.reserve(2, 256)
    s.active.zero_()
    g = torch.Generator().manual_seed(6)
    long, short = (torch.randint(5, VOCAB, (k,), generator=g).tolist() for k in (150, 12))
    eng.clear_column0(s)
    eng.prefill(s, [0, 1], [long, short], [0, 0], [eng.block + 1] * 2, [0, 0])
    state = [t.clone() for t in s.state()]
    caches = [c.clone() for c in eng.kv.k + eng.kv.v]

    def block() -> tuple[list, list]:
        for t, v in zip(s.state(), state):
            t.copy_(v)
        eng.decode(s, 256)
        tok, lp, live, _ = eng.read(s)
        assert live.all()
        return tok.tolist(), lp.tolist()

    clean = block()
    for c, v in zip(eng.kv.k + eng.kv.v, caches):
        c.copy_(v)
        c[1, :, KV_BLOCK:256] = float("nan")
    assert block() == clean
