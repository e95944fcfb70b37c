"""The rollout engine (static KV cache, device-side sampling and stops, continuous batching, observations appended
to the cache) against the reference loop (`reference_generate`, `run_turns` with the reference sampler): greedy
rollouts equal token for token — with refilled slots, stop strings that byte-level BPE merges with what follows,
tool observations appended without re-encoding earlier turns, simulated observations — and log-probs within float
tolerance. Sampled rows depend on their own seed only."""

from __future__ import annotations

import pytest
import torch

import agent_model
from conftest import malloc_in_use
from coa_trainer.data.dialects import tags
from coa_trainer.model.load import Runtime, load_model
from coa_trainer.rollout.agentio import AgentIO
from coa_trainer.rollout.generate import StringStops, engine_for, generate, reference_generate
from coa_trainer.rollout.loop import retok_mismatch, rollout
from coa_trainer.rollout.sampling import choose
from coa_trainer.rollout.stoptable import StopTable

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: a second thread only contends (several times slower on a loaded 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _random_qwen2(vocab: int = 500, seed: int = 1, family: str = "qwen2"):
    import transformers

    torch.manual_seed(seed)
    config_cls, model_cls = {
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
        "mistral": ("MistralConfig", "MistralForCausalLM"),
    }[family]
    extra = {"sliding_window": None} if family == "mistral" else {}
    cfg = getattr(transformers, config_cls)(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        **extra,
    )
    return getattr(transformers, model_cls)(cfg).eval()


def _prompts(n: int, vocab: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(5, vocab, (int(k),), generator=g).tolist() for k in torch.randint(1, 40, (n,), generator=g)]


@pytest.fixture(scope="module")
def agent_dirs(realistic_model_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("agent")
    return {
        special: agent_model.write(d / f"special-{special}", realistic_model_dir, special) for special in (False, True)
    }


def _load(path, special):
    return load_model(path, Runtime(CPU, None), None, trainable=False, special_tags=special)


def test_engine_equals_the_reference_loop_greedy_with_refilled_slots():
    model = _random_qwen2()
    prompts = _prompts(20, 500)
    ref = reference_generate(model, prompts, 60, {3, 4}, 0, CPU)
    eng = engine_for(model, CPU, None)
    assert eng is not None
    for slots in (None, 3):  # 3 slots for 20 rows: most rows start in a slot another row has just left
        out = generate(model, prompts, 60, {3, 4}, 0, CPU, slots=slots)
        assert out[0] == ref[0] and out[2] == ref[2]
        for a, b in zip(out[1], ref[1]):
            assert a == pytest.approx(b, abs=1e-4)
    assert any(ref[2]) and not all(ref[2])  # some rows stopped, others ran to the budget


@pytest.mark.parametrize("family", ["llama", "qwen3", "mistral"])
def test_every_supported_family_and_lora_equal_the_reference(family):
    """The forward the engine runs over the model's own modules matches each family's (Qwen3's q/k norms) and a
    LoRA-wrapped model's."""
    from peft import LoraConfig, get_peft_model

    model = _random_qwen2(vocab=300, seed=3, family=family)
    prompts = _prompts(6, 300, seed=2)
    assert engine_for(model, CPU, None) is not None
    base = reference_generate(model, prompts, 20, {3}, 0, CPU)[0]
    assert generate(model, prompts, 20, {3}, 0, CPU)[0] == base
    lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"]))
    for name, p in lora.named_parameters():
        if "lora_B" in name:  # non-zero adapters, so that they change what is generated
            torch.nn.init.normal_(p, std=0.5, generator=torch.Generator().manual_seed(len(name)))
    lora.eval()
    ref = reference_generate(lora, prompts, 20, {3}, 0, CPU)[0]
    assert ref != base  # the adapters are in the forward
    assert engine_for(lora, CPU, None) is not None
    assert generate(lora, prompts, 20, {3}, 0, CPU)[0] == ref


@pytest.mark.parametrize("error", [AttributeError, TypeError, RuntimeError, ImportError])
def test_a_peft_that_fails_at_import_leaves_the_engine_running_and_is_named(monkeypatch, error):
    """A peft built against another transformers fails at import with more than ImportError: the engine still runs a
    plain model (equal to the reference loop), a LoRA model made before goes through the reference loop with why, and
    the stage's first event names the fallback."""
    import builtins

    from peft import LoraConfig, get_peft_model

    from coa_trainer.rollout import kvmodel
    from coa_trainer.rollout.generate import engine_path

    model = _random_qwen2(vocab=300, seed=3)
    lora = get_peft_model(_random_qwen2(vocab=300, seed=4), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"]))
    real_import = builtins.__import__

    def broken(name, *args, **kwargs):
        if name.startswith("peft"):
            raise error("module 'transformers' has no attribute 'Cache'")  # as a peft for another transformers does
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    monkeypatch.setattr(kvmodel, "_LORA", None)  # found again, under the broken import
    prompts = _prompts(3, 300, seed=2)
    assert engine_for(model, CPU, None) is not None
    assert generate(model, prompts, 6, {3}, 0, CPU)[0] == reference_generate(model, prompts, 6, {3}, 0, CPU)[0]
    why = f"LoRA layers not recognised: peft cannot be imported ({error.__name__}: module 'transformers' has no"
    assert why in engine_path(model, CPU, None)["rollout engine"]
    assert engine_for(lora, CPU, None) is None
    path = engine_path(lora, CPU, None)["rollout engine"]
    assert path.startswith("reference loop (layer 0 q_proj is a Linear, not a linear layer") and why in path


def test_bf16_autocast_runs_with_a_bf16_cache():
    model = _random_qwen2(vocab=300, seed=4)
    prompts = _prompts(4, 300, seed=5)
    out, lps, _ = generate(model, prompts, 12, set(), 0, CPU, dtype=torch.bfloat16)
    eng = engine_for(model, CPU, torch.bfloat16)
    assert eng.kv.k[0].dtype == torch.bfloat16 and all(len(o) == 12 for o in out)
    assert all(-30 < x <= 0 for row in lps for x in row)


def test_stop_table_equals_string_stops_on_real_bpe_text(realistic_model_dir):
    """Every prefix of real transcripts: the device automaton hits exactly where StringStops.hit does."""
    from transformers import AutoTokenizer

    from realistic_model import training_texts

    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    strings = ["</search>", "</answer>", "</information>", "\n\n"]
    ref = StringStops(tok, strings)
    table = StopTable(tok, [({tok.eos_token_id}, strings)], len(tok), CPU)
    texts = [t for t in training_texts() if "</" in t][:12] + [agent_model.transcript(q) for q in agent_model.QUESTIONS]
    merged = hits = 0
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"][:400]
        state = table.fresh_state(1)
        since = 0  # a hit starts a new phase: both checks then look at the tokens after it only
        for k, t in enumerate(ids):
            hit, state = table.step(torch.tensor([t]), state, torch.zeros(1, dtype=torch.long))
            want = t == tok.eos_token_id or ref.hit(ids[since : k + 1])
            assert bool(hit) == want, (text[:60], k, tok.decode(ids[since : k + 1]))
            if want:
                hits += 1
                merged += not any(tok.decode([t]).endswith(s) for s in strings)
                state, since = table.fresh_state(1), k + 1
    assert hits > 40 and merged > 5  # stops inside merged tokens (`>\n\n`, `>\n`) were exercised


def test_engine_stops_on_strings_however_bpe_merged_them(agent_dirs):
    model, tok = _load(agent_dirs[False], False)
    prompts = [tok(agent_model.prompt(q), add_special_tokens=False)["input_ids"] for q in agent_model.QUESTIONS]
    stops = StringStops(tok, ["</search>"])
    ref = reference_generate(model, prompts, 40, {tok.eos_token_id}, tok.pad_token_id, CPU, stop_strings=stops)
    out = generate(model, prompts, 40, {tok.eos_token_id}, tok.pad_token_id, CPU, stop_strings=stops, slots=4)
    assert out[0] == ref[0] and out[2] == ref[2]
    assert all(ref[2])
    # the trained model writes `</search>` + `\n\n` as `</`, `search`, `>\n\n`: the stop is inside the last token
    assert any(tok.decode([ids[-1]]) != ">" for ids in ref[0])


@pytest.mark.parametrize("special", [False, True], ids=["text-tags", "special-tags"])
def test_multi_turn_rollouts_equal_the_reference_and_never_re_encode_a_turn(agent_dirs, special):
    model, tok = _load(agent_dirs[special], special)
    t = tags("search-r1")
    io = AgentIO.make(tok, t)
    assert io.special == special
    qs = agent_model.QUESTIONS + ["Who built Gamma Tower", "Where is Helix"]
    prompts = [tok(agent_model.prompt(q), add_special_tokens=False)["input_ids"] for q in qs]
    calls: list[list[str]] = []

    def tool(queries):
        calls.append(list(queries))
        return [agent_model.observation(q) if "Delta" not in q else None for q in queries]  # one failing query

    kw = dict(max_turns=3, max_new_tokens=40, max_obs_tokens=30, max_len=400, device=CPU, dtype=None, temperature=0.0)
    ref = rollout(model, tok, prompts, t, tool, engine=False, **kw)
    eng = engine_for(model, CPU, None)
    before = eng.stats.prefill_tokens
    out = rollout(model, tok, prompts, t, tool, slots=3, **kw)
    # and with blocks captured and read while the next one runs (tool calls answered meanwhile)
    eng.graphs_on = eng.overlap = True
    try:
        overlapped = rollout(model, tok, prompts, t, tool, slots=3, **kw)
    finally:
        eng.graphs_on = eng.overlap = False
        eng.drop_graphs()
    for a, b, c in zip(ref, out, overlapped):
        assert (b.ids, b.loss_mask, b.queries, b.contexts) == (a.ids, a.loss_mask, a.queries, a.contexts)
        assert (b.truncated, b.finished, b.tool_failures) == (a.truncated, a.finished, a.tool_failures)
        assert [x is None for x in b.logprobs] == [x is None for x in a.logprobs]
        assert [x for x in b.logprobs if x is not None] == pytest.approx(
            [x for x in a.logprobs if x is not None], abs=1e-4
        )
        assert not retok_mismatch(b)
        assert (c.ids, c.loss_mask, c.queries, c.truncated, c.finished) == (
            b.ids,
            b.loss_mask,
            b.queries,
            b.truncated,
            b.finished,
        )
    n_calls = sum(len(tr.queries) for tr in out)
    assert n_calls >= 8 and sum(tr.finished for tr in out) >= 1 and sum(tr.tool_failures for tr in out) >= 1
    # each chunk the cache received: the prompt once, then per call the turn's last sampled token and the
    # observation — never an earlier turn again
    obs = sum(
        len(io.observation_ids(agent_model.observation(q) if "Delta" not in q else "", 30)[0])
        for tr in out
        for q in tr.queries
    )
    assert eng.stats.prefill_tokens - before == 2 * (sum(map(len, prompts)) + n_calls + obs)  # two engine runs


def test_simulated_observations_equal_the_reference(agent_dirs):
    model, tok = _load(agent_dirs[True], True)
    t = tags("search-r1")
    prompts = [tok(agent_model.prompt(q), add_special_tokens=False)["input_ids"] for q in agent_model.QUESTIONS]
    kw = dict(
        max_turns=2,
        max_new_tokens=40,
        max_obs_tokens=12,
        max_len=400,
        device=CPU,
        dtype=None,
        temperature=0.0,
        simulate=True,
    )
    ref = rollout(model, tok, prompts, t, None, engine=False, **kw)
    out = rollout(model, tok, prompts, t, None, slots=4, **kw)
    o_open = tok.convert_tokens_to_ids(t.obs_open)
    assert sum(tr.ids.count(o_open) for tr in ref) >= 6  # the policy wrote observations
    for a, b in zip(ref, out):
        assert (b.ids, b.loss_mask, b.queries, b.contexts, b.truncated, b.finished) == (
            a.ids,
            a.loss_mask,
            a.queries,
            a.contexts,
            a.truncated,
            a.finished,
        )


def test_sampled_rows_depend_on_their_own_seed_only():
    """Same seed → same trajectories with 2 slots or all at once; log-probs are the temperature's log-softmax."""
    model = _random_qwen2(vocab=300, seed=2)
    prompts = _prompts(9, 300, seed=4)
    runs = [
        generate(
            model,
            prompts,
            24,
            {7},
            0,
            CPU,
            temperature=0.8,
            top_p=top_p,
            generator=torch.Generator().manual_seed(5),
            slots=slots,
        )
        for top_p in (1.0, 0.9)
        for slots in (None, 2)
    ]
    for a, b in (runs[:2], runs[2:]):
        assert a[0] == b[0] and a[2] == b[2]
        assert [x for r in a[1] for x in r] == pytest.approx([x for r in b[1] for x in r], abs=1e-4)
    assert runs[0][0] != runs[2][0]  # top-p changed what was drawn
    other = generate(model, prompts, 24, {7}, 0, CPU, temperature=0.8, generator=torch.Generator().manual_seed(6))
    assert other[0] != runs[0][0]
    for p, new, lp in zip(prompts, runs[0][0], runs[0][1]):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p + new])).logits[0].float()
        want = torch.log_softmax(logits / 0.8, -1)[len(p) - 1 : -1].gather(-1, torch.tensor(new)[:, None]).squeeze(-1)
        assert lp == pytest.approx(want.tolist(), abs=1e-4)


def test_top_p_draws_from_the_nucleus_in_proportion():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1, 50, generator=g) * 2
    n = 20000
    seeds = torch.full((n,), 12345, dtype=torch.long)
    counters = torch.arange(n, dtype=torch.long)
    for top_p in (1.0, 0.7):
        tok, lp = choose(logits.expand(n, -1), 1.0, top_p, seeds, counters)
        p = torch.softmax(logits[0], -1)
        sp, order = p.sort(descending=True)
        keep = order[(sp.cumsum(0) - sp) < top_p]
        assert set(tok.tolist()) <= set(keep.tolist())
        want = torch.zeros(50)
        want[keep] = p[keep] / p[keep].sum()
        freq = torch.bincount(tok, minlength=50).float() / n
        assert (freq - want).abs().max() < 0.015
        assert torch.allclose(lp, torch.log_softmax(logits[0], -1)[tok], atol=1e-6)


def test_models_the_engine_does_not_run_take_the_reference_loop():
    from transformers import GPT2Config, GPT2LMHeadModel

    from coa_trainer.rollout.kvmodel import engine_support

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=64)).eval()
    assert "gpt2" in engine_support(model) and engine_for(model, CPU, None) is None
    prompts = _prompts(5, 64)
    assert generate(model, prompts, 10, {3}, 0, CPU) == reference_generate(model, prompts, 10, {3}, 0, CPU)


def test_a_sliding_window_keeps_a_model_off_the_engine_and_packed_attention_alike():
    """A Mistral window lives in `sliding_window` with no `layer_types`: the engine, packed attention and the
    full-attention check must all see it, or a model would be sampled by one attention and scored by another."""
    from coa_trainer.model.family import full_attention_reason
    from coa_trainer.model.packing import PACKED_ATTENTION, use_packed_attention
    from coa_trainer.rollout.kvmodel import engine_support

    windowed = _random_qwen2(family="mistral")
    windowed.config.sliding_window = 16
    windowed.config._attn_implementation = "sdpa"
    assert full_attention_reason(windowed) == engine_support(windowed) == "sliding-window attention"
    assert not use_packed_attention(windowed) and windowed.config._attn_implementation == "sdpa"
    full = _random_qwen2(family="mistral")
    full.config._attn_implementation = "sdpa"
    assert full_attention_reason(full) is None and engine_support(full) is None
    assert use_packed_attention(full) and full.config._attn_implementation == PACKED_ATTENTION


def test_each_sampled_token_is_the_inverse_cdf_draw_at_its_own_counter():
    """Token k of trajectory i is the tempered distribution's inverse CDF at uniform(seed_i, k), k = 0, 1, … — in a
    slot the row was refilled into as in one it started in. A counter that did not advance (every draw of a
    trajectory the same random input) or restarted would draw other tokens."""
    from coa_trainer.rollout.generate import seed_base
    from coa_trainer.rollout.sampling import trajectory_seed, uniform

    model = _random_qwen2(vocab=300, seed=2)
    prompts = _prompts(5, 300, seed=7)
    out, _, _ = generate(
        model, prompts, 16, set(), 0, CPU, temperature=1.3, generator=torch.Generator().manual_seed(11), slots=2
    )
    base = seed_base(torch.Generator().manual_seed(11), 1.3)
    for i, (p, new) in enumerate(zip(prompts, out)):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p + new])).logits[0, len(p) - 1 : -1].float()
        cdf = torch.softmax(logits / 1.3, -1).cumsum(-1)
        u = uniform(torch.full((len(new),), trajectory_seed(base, i)), torch.arange(len(new)))
        want = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None]).squeeze(-1).clamp(max=299)
        assert new == want.tolist()
    assert len({tuple(o) for o in out}) == len(out)


def _scripted(succ: dict[str, str]):
    """(model, tokenizer): a one-layer Qwen2 whose greedy next token is succ[current token] (its layer adds nothing:
    logits are the head over the normalised one-hot embedding), and a word-level tokenizer of its single-letter
    tokens whose decoder joins them without spaces."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    names = ["<pad>", *sorted(set(succ) | set(succ.values()))]
    vocab = {n: i for i, n in enumerate(names)}
    V = len(names)
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.decoder = decoders.Fuse()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", unk_token="<pad>")
    cfg = transformers.Qwen2Config(
        vocab_size=V,
        hidden_size=V + 1,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=8,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(V, V + 1))
        head = torch.zeros(V, V + 1)
        for a, b in succ.items():
            head[vocab[b], vocab[a]] = 10.0
        head[vocab[succ[names[1]]], 0] = 10.0  # <pad> continues like the first letter
        model.lm_head.weight.copy_(head)
    return model, tok, vocab


def test_a_stop_string_counts_only_the_tokens_of_its_own_phase():
    """`ab` is a stop string. A phase that ran out of tokens right after `a` leaves the automaton half-way; the next
    phase of the slot — another trajectory refilled into it, or the same trajectory's next turn — starts from
    nothing, so its first token `b` is not a stop (as StringStops in the reference loop)."""
    from coa_trainer.rollout.engine import Engine

    model, tok, v = _scripted({"x": "a", "a": "b", "b": "c", "c": "c"})
    stops = StringStops(tok, ["ab"])
    prompts = [[v["x"]], [v["a"]]]
    ref = reference_generate(model, prompts, 1, set(), 0, CPU, stop_strings=stops)
    assert ref[0] == [[v["a"]], [v["b"]]] and ref[2] == [False, False]
    out = generate(model, prompts, 1, set(), 0, CPU, stop_strings=stops, slots=1)  # the second refills the first's slot
    assert out[0] == ref[0] and out[2] == ref[2]
    eng = Engine(model, CPU, None)
    s = eng.session(2, eng.stop_table(tok, [(set(), ["ab"])]), 0.0, 1.0, None, 0)
    eng.sync_weights()
    eng.reserve(2, 64)
    for chunk, start in (([v["x"]], 0), ([v["a"]], 1)):  # a turn of one token `a`, then the next turn of the slot
        eng.clear_column0(s)
        eng.prefill(s, [0], [chunk], [start], [1], [0])
        tok_, _, live, hit = eng.read(s)
        assert live[0, 0] and not hit[0, 0], (tok_[0, 0], start)
    assert tok_[0, 0] == v["b"]


@pytest.mark.parametrize("graphs,overlap", [(True, False), (False, True)], ids=["captured", "overlapped"])
def test_captured_blocks_and_overlapped_reads_equal_the_reference(graphs, overlap):
    """`graphs`: the capture protocol (warm-up blocks from a snapshot of the slots' state, restored before the
    capture and after it), the captured block replayed; `overlap`: the host reads a block while the next one runs.
    Both with slots refilled, sampled rows equal to the plain engine's."""
    from coa_trainer.rollout import generate as gen
    from coa_trainer.rollout.engine import Engine

    model = _random_qwen2()
    prompts = _prompts(12, 500, seed=3)
    ref = reference_generate(model, prompts, 40, {3, 4}, 0, CPU)
    plain = generate(
        model, prompts, 40, {7}, 0, CPU, temperature=0.9, generator=torch.Generator().manual_seed(1), slots=3
    )
    eng = Engine(model, CPU, None, graphs=graphs, overlap=overlap)
    gen._ENGINES[model] = {(str(CPU), None): eng}
    out = generate(model, prompts, 40, {3, 4}, 0, CPU, slots=3)
    assert out[0] == ref[0] and out[2] == ref[2]
    for a, b in zip(out[1], ref[1]):
        assert a == pytest.approx(b, abs=1e-4)
    sampled = generate(
        model, prompts, 40, {7}, 0, CPU, temperature=0.9, generator=torch.Generator().manual_seed(1), slots=3
    )
    assert sampled[0] == plain[0]
    assert (eng.stats.graphs_captured > 0) == graphs and (eng.stats.graph_replays > eng.stats.graphs_captured) == graphs


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "reference"])
def test_rollouts_sample_the_eval_mode_policy_and_leave_the_model_training(engine):
    """A LoRA model with dropout, in train mode as the RL loop keeps it: what is sampled is scored by the policy
    without dropout (the log-probs the trainer compares with its own), and every module's mode is as it was."""
    from peft import LoraConfig, get_peft_model

    model = _random_qwen2(vocab=300, seed=3)
    model.config.attention_dropout = 0.3
    lora = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.5, target_modules=["q_proj", "v_proj", "up_proj"])
    )
    for name, p in lora.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.5, generator=torch.Generator().manual_seed(len(name)))
    lora.train()
    lora.base_model.model.lm_head.eval()  # one module in eval mode: restored as it was, not to train
    modes = [m.training for m in lora.modules()]
    prompts = _prompts(4, 300, seed=9)
    fn = generate if engine else reference_generate
    out, lps, _ = fn(lora, prompts, 12, set(), 0, CPU, temperature=1.0, generator=torch.Generator().manual_seed(2))
    assert [m.training for m in lora.modules()] == modes
    lora.eval()
    for p, new, lp in zip(prompts, out, lps):
        with torch.no_grad():
            logits = lora(input_ids=torch.tensor([p + new])).logits[0, len(p) - 1 : -1].float()
        want = torch.log_softmax(logits, -1).gather(-1, torch.tensor(new)[:, None]).squeeze(-1)
        assert lp == pytest.approx(want.tolist(), abs=1e-4)


def test_the_engine_memory_is_freed_before_training_and_allocated_again_after():
    """What the RL step calls around its update: the KV cache, the captured blocks and the packed weights are really
    freed — the allocator's own count of bytes in use drops by at least what the engine held, and no tensor of them
    survives — then the cache comes back at its size (the allocator's count rises by it) and the engine generates as
    before."""
    import gc
    import weakref

    from coa_trainer.rollout import generate as gen
    from coa_trainer.rollout.engine import Engine
    from coa_trainer.rollout.generate import restore_engine_memory
    from coa_trainer.stages.rl import release_cached_memory

    model = _random_qwen2(vocab=300, seed=5)
    prompts = _prompts(6, 300, seed=6)
    first = generate(model, prompts, 20, {3}, 0, CPU)
    eng = Engine(model, CPU, None, graphs=True)  # blocks captured (on CPU, replays of the block's steps)
    gen._ENGINES[model] = {(str(CPU), None): eng}
    eng.reserve(32, 1024)  # a cache of 16 MiB, far above the allocator's background churn
    assert generate(model, prompts, 20, {3}, 0, CPU) == first
    assert any(s.graphs for s in eng.sessions.values())
    held = eng.kv.k + eng.kv.v + eng.kv.weights.tensors()
    kv_bytes = sum(t.untyped_storage().nbytes() for t in eng.kv.k + eng.kv.v)
    shape = eng.kv.k[0].shape
    assert kv_bytes >= 16 << 20 and eng.held_bytes() > kv_bytes  # the packed q|k|v and gate|up copies on top
    engine_bytes = eng.held_bytes()
    params = {p.data_ptr() for p in model.parameters()}
    refs = [weakref.ref(t) for t in held if t.data_ptr() not in params]
    del held
    gc.collect()
    before = malloc_in_use()
    release_cached_memory(CPU, model)
    gc.collect()
    freed = before - malloc_in_use()
    assert freed >= engine_bytes - (256 << 10), (freed, engine_bytes)
    assert [r for r in refs if r() is not None] == [] and eng.held_bytes() == 0 and eng.kv.k == []
    assert eng.pool is None and not any(s.graphs for s in eng.sessions.values())
    before = malloc_in_use()
    restore_engine_memory(model)
    allocated = malloc_in_use() - before
    assert kv_bytes - (256 << 10) <= allocated <= kv_bytes + (4 << 20), (allocated, kv_bytes)
    assert eng.kv.k[0].shape == shape and eng.held_bytes() == kv_bytes
    assert generate(model, prompts, 20, {3}, 0, CPU) == first
