import re

from coa_trainer.data.benchmark import generate, write_benchmark
from coa_trainer.base.config import validate_config
from coa_trainer.data.dialects import tags
from conftest import TINY, observed


def params(**over):
    return validate_config(TINY).benchmark.model_copy(update=over)


def test_same_seed_same_files_other_seed_differs(tmp_path):
    a = write_benchmark(observed(generate(params(), 7)), tmp_path / "a")
    b = write_benchmark(observed(generate(params(), 7)), tmp_path / "b")
    c = write_benchmark(observed(generate(params(), 8)), tmp_path / "c")
    names = ["corpus.jsonl", "pretrain.txt", "questions.jsonl", "oracle_train.jsonl", "oracle_dev.jsonl", "kb.json"]
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n
    assert (a / "questions.jsonl").read_bytes() != (c / "questions.jsonl").read_bytes()


def test_known_facts_are_pretrained_and_unknown_ones_only_in_the_corpus():
    bench = generate(params(persons=40), 1)
    text = "\n".join(bench.pretrain_lines())
    corpus = "\n".join(d.contents for d in bench.corpus)
    for (s, rel), o in bench.facts.items():
        stmt = bench.statement(s, rel)
        assert stmt in corpus
        assert (stmt in text) == (s in bench.famous), stmt
        if s not in bench.famous:
            assert not re.search(rf"\b{s}\b.*\b{o}\b", text), f"unknown fact {s} {rel} {o} leaked"


def test_every_split_has_known_unknown_and_two_hop_questions():
    bench = generate(params(persons=40), 2)
    seen = set()
    for split in ("train", "dev", "test"):
        qs = bench.split(split)
        assert any(q.known for q in qs) and any(not q.known for q in qs), split
        assert any(len(q.hops) == 2 and q.optimal_tool_calls == 2 for q in qs), split
        ids = {q.id for q in qs}
        assert not ids & seen
        seen |= ids
    assert len(seen) == len(bench.questions)


def test_corpus_is_flashrag():
    bench = generate(params(), 3)
    ids = set()
    for d in bench.corpus:
        assert list(d.json()) == ["id", "contents"] and isinstance(d.id, str)
        title, _, text = d.contents.partition("\n")
        assert title.startswith('"') and title.endswith('"') and text
        ids.add(d.id)
    assert len(ids) == len(bench.corpus)


def test_oracle_searches_exactly_the_unknown_hops_and_answers_correctly():
    bench = observed(generate(params(persons=40), 4))
    t = tags("coa")
    n_two_unknown = 0
    for q in bench.questions:
        segs = bench.oracle(q, t)
        actions = [s for s in segs if s.kind == "action"]
        observations = [s for s in segs if s.kind == "observation"]
        assert len(actions) == len(observations) == q.optimal_tool_calls
        assert segs[-1].kind == "answer" and segs[-1].text == f"{t.answer_open} {q.answer} {t.answer_close}"
        for a, o in zip(actions, observations):
            query = a.text[len(t.action_open) : -len(t.action_close)].strip()
            subject = query.split()[0]
            assert f"\n[1] {subject}\n" in o.text, "the searched entity's passage ranks first"
        n_two_unknown += len(q.hops) == 2 and q.optimal_tool_calls == 2
        known_think = " ".join(s.text for s in segs if s.kind == "think")
        for h in q.hops:
            assert h.prefix in known_think
    assert n_two_unknown > 0, "two searches for two-hop questions on unknown facts"


def test_sft1_pairs_share_prefix_and_flip_the_decision():
    import random

    bench = observed(generate(params(persons=30), 5))
    t = tags("coa")
    for q in bench.questions:
        for p in bench.pairs(q, t, random.Random(0)):
            # the decision token: `?` (then search this hop) or the object (answer it from memory)
            assert p.chosen.startswith("?") == p.act
            assert p.rejected.startswith("?") != p.act
            if p.act:
                assert p.chosen.endswith(t.action_close)
                assert t.action_open not in p.rejected, "rejected answers without acting"
            else:
                assert p.rejected.endswith(t.action_close)
