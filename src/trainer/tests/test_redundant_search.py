"""benchmark.redundant_search_fraction: an over-calling SFT teacher (so OTC-GRPO has calls to cut). The share of
train questions with a known hop whose SFT data searches known facts is as configured; 0 changes nothing."""

import json
import random

import pytest

from coa_trainer.data.benchmark import fingerprint, generate, write_benchmark
from coa_trainer.base.config import ConfigError, validate_config
from coa_trainer.data.samples import oracle_examples
from coa_trainer.data.dialects import tags
from conftest import TINY, legacy_fingerprint, observed


def params(**over):
    return validate_config(TINY).benchmark.model_copy(update=over)


def actions(segments):
    return sum(1 for s in segments if s.kind == "action")


@pytest.mark.parametrize("fraction", [0.25, 0.6, 1.0])
def test_share_of_redundant_trajectories_is_as_configured(fraction):
    bench = observed(generate(params(persons=40, redundant_search_fraction=fraction), 5))
    t = tags("coa")
    eligible = [q for q in bench.split("train") if any(h.known for h in q.hops)]
    over = [q for q in eligible if actions(bench.oracle(q, t)) > q.optimal_tool_calls]
    assert len(eligible) > 20
    assert len(over) == round(fraction * len(eligible))
    for q in bench.split("train"):
        segs = bench.oracle(q, t)
        # a redundant teacher searches every hop (known ones too) and still answers correctly
        assert actions(segs) == (len(q.hops) if q.id in bench.redundant else q.optimal_tool_calls)
        assert segs[-1].text == f"{t.answer_open} {q.answer} {t.answer_close}"
        # ... and states every known fact before its verifying search: the fact is never replaced by `?`
        first_think = segs[0].text
        for h in bench.hops_for(q):
            if h.known:
                assert f"{h.prefix} {h.object} ." in " ".join(s.text for s in segs if s.kind == "think")
        if q.hops[0].known:
            assert first_think.startswith(f"{t.think_open} {q.hops[0].prefix} {q.hops[0].object} .")
    for split in ("dev", "test"):  # evaluation data and the optimum stay tool-optimal
        for q in bench.split(split):
            assert actions(bench.oracle(q, t)) == q.optimal_tool_calls


def test_sft1_pairs_follow_the_teacher():
    """The decision a pair teaches stays "state what you know, search what you do not"; on a redundant question the
    chosen continuation states the known fact and then runs the teacher's verifying search."""
    bench = observed(generate(params(persons=40, redundant_search_fraction=0.5), 6))
    t = tags("coa")
    rng = random.Random(0)
    seen_redundant = 0
    for q in bench.split("train"):
        pairs = bench.pairs(q, t, rng)
        assert len(pairs) == len(q.hops)
        for p, h in zip(pairs, bench.hops_for(q)):
            redundant = q.id in bench.redundant and h.known
            seen_redundant += redundant
            assert p.act == (not h.known)
            assert p.chosen.lstrip().startswith("?") == p.act
            assert p.rejected.lstrip().startswith("?") != p.act
            if redundant:
                assert p.chosen == f"{h.object} . {t.think_close} {t.action_open} {h.prefix} {t.action_close}"
    assert seen_redundant > 0


def test_a_third_of_the_teachers_observations_hold_one_document():
    """oracle_top_k: the teacher's searches return one document for about a third of its queries (by a hash of the
    query, so every trajectory searching it sees the same observation), top_k for the others."""
    from coa_trainer.data.benchmark import oracle_top_k

    bench = observed(generate(params(persons=40), 6))
    ks = [oracle_top_k(q, bench.top_k) for q in bench.queries()]
    assert set(ks) == {1, bench.top_k} and 0.25 < ks.count(1) / len(ks) < 0.42
    for q, k in zip(bench.queries(), ks):
        assert bench.observation(q).count("[") == k  # one "[ i ]" header per document
    assert oracle_top_k("x born in", 1) == 1


def test_default_zero_changes_nothing(tmp_path):
    base = params()
    assert base.redundant_search_fraction == 0
    a = write_benchmark(observed(generate(base, 7)), tmp_path / "a")
    assert generate(base, 7).redundant == set()
    assert fingerprint(base, 7) == legacy_fingerprint(base, 7)  # a run from before the fraction keeps its files
    half = base.model_copy(update={"redundant_search_fraction": 0.5})
    assert fingerprint(half, 7) != fingerprint(base, 7)
    # the knowledge base and the splits do not depend on the fraction
    c = write_benchmark(observed(generate(half, 7)), tmp_path / "c")
    for n in ["corpus.jsonl", "questions.jsonl", "kb.json", "oracle_dev.jsonl", "oracle_test.jsonl"]:
        assert (a / n).read_bytes() == (c / n).read_bytes(), n
    rows = [json.loads(line) for line in (c / "oracle_train.jsonl").read_text().splitlines()]
    assert any(r.get("redundant_searches", 0) > 0 for r in rows)


def test_redundant_trajectories_count_as_chain_of_action(tmp_path):
    """The SFT-2/3 mix puts a known question that the teacher searched with the chain-of-action samples."""
    from coa_trainer.data.tokenizer import build_tokenizer, save_hf_tokenizer
    from coa_trainer.data.benchmark import vocabulary_texts
    from transformers import AutoTokenizer

    config = validate_config(
        {**TINY, "benchmark": {**TINY.get("benchmark", {}), "persons": 40, "redundant_search_fraction": 1.0}}
    )
    bench = observed(generate(config.benchmark, 8))
    save_hf_tokenizer(build_tokenizer(vocabulary_texts(bench, config)), tmp_path)
    tok = AutoTokenizer.from_pretrained(str(tmp_path))
    examples = oracle_examples(bench, tok, config, tags("coa"), "train", frozenset({"observation"}), 512)
    by_id = {q.id: q for q in bench.split("train")}
    known_coa = [e for e in examples if by_id[e.meta.id].known and e.meta.coa]
    assert known_coa and all(by_id[e.meta.id].id in bench.redundant for e in known_coa)
    assert all(e.meta.coa == (by_id[e.meta.id].id in bench.redundant or not by_id[e.meta.id].known) for e in examples)


def test_fraction_out_of_range_is_a_config_error():
    with pytest.raises(ConfigError, match="benchmark.redundant_search_fraction"):
        validate_config({**TINY, "benchmark": {**TINY.get("benchmark", {}), "redundant_search_fraction": 1.5}})
