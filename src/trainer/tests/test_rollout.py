"""RL rollouts with a real (random) tiny model and the real environment server: observation ids are exactly the
server's observation encoded once, mask 0 with no log-prob; simulated observations likewise; no token drift."""

import json

import pytest
import torch

from coa_trainer.data.benchmark import generate as make_bench
from coa_trainer.base.config import validate_config
from coa_trainer.data.samples import encode_text, prompt_text
from coa_trainer.data.dialects import tags
from coa_trainer.env.client import EnvClient
from coa_trainer.model.load import Runtime, load_model, write_embedded_model
from coa_trainer.rollout.loop import retok_drift, retok_mismatch, rollout, token_offsets
from coa_trainer.data.benchmark import vocabulary_texts
from conftest import TINY, needs_env_server, observed

needs_server = needs_env_server()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("rollout")
    config = validate_config(TINY)
    bench = observed(make_bench(config.benchmark, config.seed))
    write_embedded_model(config, vocabulary_texts(bench, config), d / "model", 0)
    rt = Runtime(torch.device("cpu"), None)
    model, tok = load_model(d / "model", rt, None, trainable=False)
    corpus = d / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(x.json()) + "\n" for x in bench.corpus))
    prompts = [encode_text(tok, prompt_text(config, q.question))[0] for q in bench.split("train")[:8] for _ in range(4)]
    return config, bench, model, tok, rt, corpus, prompts


def _segments(tr, open_id, close_id):
    """(start, end) of each observation in the response ids (end exclusive, close tag included when present)."""
    out, i = [], 0
    while i < len(tr.ids):
        if tr.ids[i] == open_id and tr.loss_mask[i] == 0:
            j = i + 1
            while j < len(tr.ids) and tr.loss_mask[j] == 0:
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


@needs_server
def test_real_observations_are_the_servers_ids(setup):
    config, bench, model, tok, rt, corpus, prompts = setup
    t = tags("coa")
    o_open, o_close = tok.convert_tokens_to_ids(t.obs_open), tok.convert_tokens_to_ids(t.obs_close)
    gen = torch.Generator().manual_seed(0)
    with EnvClient.start(corpus, "coa") as env:

        def tool(queries):
            return env.search(queries, top_k=2, dialect="coa").observations

        trajs = rollout(
            model,
            tok,
            prompts,
            t,
            tool,
            max_turns=2,
            max_new_tokens=30,
            max_obs_tokens=400,
            max_len=10_000,
            device=rt.device,
            dtype=None,
            temperature=1.0,
            generator=gen,
        )
        calls = [q for tr in trajs for q in tr.queries]
        assert calls, "no trajectory called the tool (the sampled seed should produce some)"
        expected = env.search(calls, top_k=2, dialect="coa").observations
    k = 0
    for tr in trajs:
        assert len(tr.ids) == len(tr.loss_mask) == len(tr.logprobs)
        segs = _segments(tr, o_open, o_close)
        assert len(segs) == len(tr.queries)
        for a, b in segs:
            body = tok(expected[k], add_special_tokens=False)["input_ids"]
            assert tr.ids[a:b] == [o_open, *body, o_close]
            assert all(lp is None for lp in tr.logprobs[a:b])
            k += 1
        assert all((lp is None) == (m == 0) for lp, m in zip(tr.logprobs, tr.loss_mask))
        assert not retok_mismatch(tr) and not retok_drift(tok, tr.ids)
        offsets = token_offsets(tok, tr.ids, tok.decode(tr.ids, skip_special_tokens=False))
        assert offsets is not None and len(offsets) == len(tr.ids)
    assert k == len(calls)
    assert sum(tr.truncated for tr in trajs) > 0  # a random model runs out of turn tokens: flagged


def test_simulated_observations_are_masked_and_bounded(setup):
    config, bench, model, tok, rt, corpus, prompts = setup
    t = tags("coa")
    o_open, o_close = tok.convert_tokens_to_ids(t.obs_open), tok.convert_tokens_to_ids(t.obs_close)
    gen = torch.Generator().manual_seed(0)
    trajs = rollout(
        model,
        tok,
        prompts,
        t,
        None,
        max_turns=2,
        max_new_tokens=30,
        max_obs_tokens=6,
        max_len=10_000,
        device=rt.device,
        dtype=None,
        temperature=1.0,
        generator=gen,
    )
    segs = [(tr, s) for tr in trajs for s in _segments(tr, o_open, o_close)]
    assert segs, "no simulated observation in 32 random rollouts"
    for tr, (a, b) in segs:
        assert tr.simulated
        assert tr.ids[a] == o_open and b - a <= 6 + 2
        assert tr.ids[b - 1] == o_close  # cut at max_obs_tokens: the closing tag is still written
        assert all(lp is None for lp in tr.logprobs[a:b])
    for tr in trajs:
        assert not retok_mismatch(tr) and not retok_drift(tok, tr.ids)


def test_max_len_truncates_and_flags(setup):
    config, bench, model, tok, rt, corpus, prompts = setup
    t = tags("coa")
    trajs = rollout(
        model,
        tok,
        prompts[:8],
        t,
        None,
        max_turns=2,
        max_new_tokens=30,
        max_obs_tokens=6,
        max_len=len(max(prompts[:8], key=len)) + 5,
        device=rt.device,
        dtype=None,
        temperature=1.0,
        generator=torch.Generator().manual_seed(1),
    )
    limit = len(max(prompts[:8], key=len)) + 5
    for tr in trajs:
        assert len(tr.prompt_ids) + len(tr.ids) <= limit
        # cut at the limit and flagged, unless it ended on its own before (a random model may write EOS early)
        assert tr.truncated or (tr.finished and len(tr.prompt_ids) + len(tr.ids) < limit)
    assert sum(tr.truncated for tr in trajs) >= 6


@needs_server
def test_greedy_rollouts_of_the_embedded_model_equal_the_reference_loop(setup):
    """What evaluation runs (greedy, the real server's observations) is the same on the rollout engine as on the
    plain loop it replaced, token for token — the embedded demo's evaluation does not move with it. The model is
    first fitted for a few seconds to the benchmark's oracle transcripts, so that it searches."""
    import copy

    from coa_trainer.data.benchmark import join_segments

    config, bench, model, tok, rt, corpus, prompts = setup
    t = tags("coa")
    model = copy.deepcopy(model).train()
    model.requires_grad_(True)
    texts = [
        prompt_text(config, q.question) + " " + join_segments(bench.oracle(q, t)) for q in bench.split("train")[:16]
    ]
    seqs = [encode_text(tok, x)[0] for x in texts]
    T = max(map(len, seqs))
    ids = torch.tensor([s + [tok.pad_token_id] * (T - len(s)) for s in seqs])
    attn = torch.tensor([[1] * len(s) + [0] * (T - len(s)) for s in seqs])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        for _ in range(120):
            loss = model(input_ids=ids, attention_mask=attn, labels=ids.masked_fill(attn == 0, -100)).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        kw = dict(
            max_turns=2,
            max_new_tokens=30,
            max_obs_tokens=400,
            max_len=10_000,
            device=rt.device,
            dtype=None,
            temperature=0.0,
        )
        with EnvClient.start(corpus, "coa") as env:

            def tool(queries):
                return env.search(queries, top_k=2, dialect="coa").observations

            ref = rollout(model, tok, prompts, t, tool, engine=False, **kw)
            out = rollout(model, tok, prompts, t, tool, slots=5, **kw)
    finally:
        torch.set_num_threads(threads)

    def fields(tr):
        return tr.ids, tr.loss_mask, tr.queries, tr.contexts, tr.truncated, tr.finished

    assert sum(len(tr.queries) for tr in ref) >= 8  # it searched, and read the server's observations
    assert [fields(tr) for tr in out] == [fields(tr) for tr in ref]
    for a, b in zip(ref, out):
        assert [x for x in b.logprobs if x is not None] == pytest.approx(
            [x for x in a.logprobs if x is not None], abs=1e-4
        )
