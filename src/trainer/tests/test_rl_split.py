"""benchmark.rl_fraction: a fourth question split, `rl`, that no SFT stage trains on and the RL stages sample with
question_split "rl". The split is deterministic per seed, leaves dev and test as they were, and the RL stage's
rollouts come from it only (a real rl1 stage against the real environment server)."""

import json

import pytest
from coa_trainer.data.benchmark import fingerprint, generate, write_benchmark
from coa_trainer.base.config import ConfigError, validate_config
from coa_trainer.data.samples import sft_stream
from coa_trainer.data.dialects import tags
from conftest import TINY, legacy_fingerprint, needs_env_server, merge, observed, read_events, run_trainer

SPLITS = ("train", "rl", "dev", "test")


def params(**over):
    return validate_config(merge(TINY, {"benchmark": {"persons": 40}})).benchmark.model_copy(update=over)


def ids(bench, split):
    return {q.id for q in bench.split(split)}


def test_four_disjoint_splits_with_rl_taken_from_train_only():
    before = generate(params(), 4)
    after = generate(params(rl_fraction=0.25), 4)
    parts = {s: ids(after, s) for s in SPLITS}
    assert all(parts.values())
    assert sum(len(p) for p in parts.values()) == len(after.questions)
    assert len(set().union(*parts.values())) == len(after.questions)  # disjoint and complete
    for s in ("dev", "test"):  # evaluation questions do not move with the fraction
        assert parts[s] == ids(before, s)
    assert parts["rl"] | parts["train"] == ids(before, "train")
    # stratified like the other splits: every kind with each known pattern keeps its share in rl
    strata = {}
    for q in after.questions:
        strata.setdefault((q.kind, tuple(h.known for h in q.hops)), []).append(q)
    for group in strata.values():
        assert sum(q.split == "rl" for q in group) == round(len(group) * 0.25)
    # the same seed gives the same split, another seed another one
    assert {s: ids(generate(params(rl_fraction=0.25), 4), s) for s in SPLITS} == parts
    assert ids(generate(params(rl_fraction=0.25), 5), "rl") != parts["rl"]


def test_sft_data_never_holds_an_rl_question(tmp_path):
    from coa_trainer.data.tokenizer import build_tokenizer, save_hf_tokenizer
    from coa_trainer.data.benchmark import vocabulary_texts
    from transformers import AutoTokenizer

    config = validate_config(
        merge(TINY, {"benchmark": {"persons": 40, "rl_fraction": 0.25, "redundant_search_fraction": 0.5}})
    )
    bench = observed(generate(config.benchmark, 6))  # oracle observations from the environment server
    rl = ids(bench, "rl")
    held_out = rl | ids(bench, "dev") | ids(bench, "test")
    assert not bench.redundant & held_out  # the over-calling teacher only rewrites train questions
    out = write_benchmark(bench, tmp_path / "data")
    oracle = [json.loads(line) for line in (out / "oracle_train.jsonl").read_text().splitlines()]
    assert {r["id"] for r in oracle} == ids(bench, "train")
    assert not (out / "oracle_rl.jsonl").exists()
    questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert {q["id"] for q in questions if q["split"] == "rl"} == rl
    save_hf_tokenizer(build_tokenizer(vocabulary_texts(bench, config)), tmp_path / "tok")
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    for stage in ("sft2", "sft3"):
        stream = sft_stream(bench, tok, config, tags("coa"), stage, 0)
        seen = {e.meta.id for epoch in range(3) for e in stream.make_epoch(epoch)}
        assert seen and not seen & held_out


def test_fraction_enters_the_fingerprint_only_when_set():
    base = params()
    assert base.rl_fraction == 0
    assert fingerprint(base, 7) == legacy_fingerprint(base, 7)  # a run from before the fraction keeps its files
    assert fingerprint(base.model_copy(update={"rl_fraction": 0.2}), 7) != fingerprint(base, 7)


def test_rl_split_is_a_config_value():
    cfg = validate_config({"stages": {"rl2": {"question_split": "rl"}}, "benchmark": {"rl_fraction": 0.2}})
    assert cfg.stages.rl2.question_split == "rl" and cfg.stages.rl1.question_split == "train"
    with pytest.raises(ConfigError, match="benchmark.rl_fraction"):
        validate_config({"benchmark": {"rl_fraction": 0.8}})
    with pytest.raises(ConfigError, match="question_split"):
        validate_config({"stages": {"rl1": {"question_split": "test"}}})


needs_server = needs_env_server()


@needs_server
def test_rl_stage_samples_only_rl_questions(tmp_path, write_config):
    """A real rl1 stage (random tiny model, 3 steps × 4 questions) with question_split rl: every rollout's question
    is an rl question. With rl_fraction 0 the same setting stops with a clear bad_config error."""
    from coa_trainer.data.benchmark import ensure_benchmark_files
    from coa_trainer.model.load import write_embedded_model
    from coa_trainer.data.benchmark import vocabulary_texts

    rl = {
        "steps": 3,
        "prompts_per_step": 4,
        "group_size": 2,
        "max_new_tokens": 12,
        "max_turns": 1,
        "sample_every": 1,
        "heldout_every": 0,
        "warmup_steps": 1,
        "question_split": "rl",
    }
    cfg = merge(
        TINY,
        {
            "benchmark": {"rl_fraction": 0.25, "data_dir": str(tmp_path / "data")},
            "stages": {"rl1": {**rl, "init_from": str(tmp_path / "model")}},
            "eval": {"limit": 2},
        },
    )
    config = validate_config(cfg)
    bench = ensure_benchmark_files(config, tmp_path / "data")
    write_embedded_model(config, vocabulary_texts(bench, config), tmp_path / "model", 0)
    run = tmp_path / "run"
    r = run_trainer("train", "--stage", "rl1", "--config", str(write_config(cfg)), "--run-dir", str(run))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    rollouts = [json.loads(x) for x in (run / "stages" / "rl1" / "rollouts.coa.jsonl").read_text().splitlines()]
    assert len(rollouts) == 3 * 4 * 2
    by_text = {q.question: q.split for q in bench.questions}
    assert {by_text[rec["question"]] for rec in rollouts} == {"rl"}
    assert {rec["id"].split("-")[0] for rec in rollouts} <= ids(bench, "rl")

    bad = merge(cfg, {"benchmark": {"rl_fraction": 0, "data_dir": str(tmp_path / "data0")}})
    r = run_trainer(
        "train", "--stage", "rl1", "--config", str(write_config(bad, "bad.json")), "--run-dir", str(tmp_path / "run0")
    )
    assert r.returncode == 2
    (err,) = [e for e in read_events(tmp_path / "run0") if e["type"] == "error"]
    assert err["code"] == "bad_config" and "question_split" in err["message"] and "rl_fraction" in err["message"]
