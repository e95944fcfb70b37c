"""Real inputs, no silent wrongness, end to end: the realistic tiny chat model (Qwen2 shape, byte-level
BPE, ChatML), AutoCoA's published test parquet (2,936 rows, ids repeated across its seven source files, one row
repeated) as the questions, Search-R1's corpus, AutoCoA's own ~730-token instruction as the prompt, and the
documented config (docs/training.md, "Train your own model": no length settings) through collect → SFT-2 → RL-2 as
separate commands. Every stage trains non-zero tokens; a cap that would leave nothing to train, or no SFT data, is
one clear error instead of an "ok" stage that trained nothing."""

from __future__ import annotations

import json
from pathlib import Path


from conftest import REPO, needs_env_server, read_events, run_trainer

pytestmark = needs_env_server()

PARQUET = REPO / "examples" / "data" / "autocoa" / "all_test.parquet"
CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"


def _config(model: Path, **over) -> dict:
    """The documented user config (dialect, model.path, data) plus only what keeps a CPU test short."""
    small = {"steps": 1, "log_every": 1, "warmup_steps": 1}
    config = {
        "seed": 0,
        "threads": 1,
        "device": "cpu",
        "dialect": "autocoa",
        "model": {"path": str(model)},
        # the collection keeps what a tiny random model writes, and SFT-2 trains on all of it (the test is about tokens)
        "data": {
            "questions": {"train": str(PARQUET)},
            "corpus": str(CORPUS),
            "sft_filter": {"correct": False, "format_ok": False},
        },
        "collect": {
            "limit": 2,
            "samples": 1,
            "modes": ["coa"],
            "max_new_tokens": 24,
            "max_turns": 1,
            "batch_size": 2,
            "select": {"correct_only": False, "format_clean": False},
        },
        "stages": {
            "sft2": {**small, "batch_size": 2, "sample_every": 1},
            "rl2": {
                **small,
                "prompts_per_step": 2,
                "group_size": 2,
                "max_new_tokens": 16,
                "max_turns": 1,
                "max_obs_tokens": 32,
                "heldout_every": 0,
                "sample_every": 1,
                "kl_coef": 0.0,
            },
        },
    }
    for key, value in over.items():
        config[key] = value
    return config


def _run(tmp: Path, name: str, config: dict, *args: str) -> tuple[int, list[dict]]:
    cfg = tmp / f"{name}.run.json"
    cfg.write_text(json.dumps(config))
    run_dir = tmp / name
    res = run_trainer(*args, "--config", str(cfg), "--run-dir", str(run_dir), timeout=600)
    return res.returncode, read_events(run_dir)


def _errors(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "error"]


def test_collect_sft2_rl2_on_autocoas_parquet_train_tokens_at_every_stage(realistic_model_dir, tmp_path):
    config = _config(realistic_model_dir)
    code, events = _run(tmp_path, "run", config, "collect")
    assert code == 0, _errors(events)
    ids_note = "ids: 1 exact repeat row(s) dropped; 343 id(s) repeated: the first row keeps each, 369 later row(s)"
    assert any(e["type"] == "log" and e["level"] == "warning" and ids_note in e["message"] for e in events)
    coll = [
        json.loads(line)
        for line in (tmp_path / "run" / "stages" / "collect" / "collection.coa.jsonl").read_text().splitlines()
    ]
    assert len(coll) == 2 and all(r["response"].strip() and r["tokens"]["ids"] for r in coll)

    code, events = _run(tmp_path, "run", config, "train", "--stage", "sft2")
    assert code == 0, _errors(events)
    trained = [e["values"]["trained_tokens"] for e in events if e["type"] == "metrics" and e["stage"] == "sft2"]
    assert trained and all(n > 0 for n in trained)
    sft2_logs = [e for e in events if e["type"] == "log" and e["message"].startswith("sft2:")]
    assert any("trajectories per epoch" in e["message"] and "max_len " in e["message"] for e in sft2_logs)
    assert not any(e["level"] == "warning" for e in sft2_logs)  # nothing cut: max_len followed the data

    code, events = _run(tmp_path, "run", config, "train", "--stage", "rl2")
    assert code == 0, _errors(events)
    assert any(e["type"] == "stage_finished" and e["stage"] == "rl2" and e["status"] == "ok" for e in events)
    rollouts = [
        json.loads(line)
        for line in (tmp_path / "run" / "stages" / "rl2" / "rollouts.coa.jsonl").read_text().splitlines()
    ]
    assert len(rollouts) == 4 and all(sum(r["tokens"]["loss_mask"]) > 0 for r in rollouts)
    assert any(e["type"] == "log" and e["message"].startswith("rl2:") and ids_note in e["message"] for e in events)
    # the core's data importers wrote MaxListenersExceededWarning on big files, repeated here as warning events
    assert not any("MaxListeners" in e.get("message", "") for e in events)


def test_a_cap_that_leaves_nothing_to_train_stops_the_stage_saying_why(realistic_model_dir, tmp_path):
    """The old defaults (SFT-2 320, RL-2 384 tokens) under a ~730-token prompt: SFT-2 trained 0 tokens and said "ok",
    RL-2 generated empty responses. Now both stop before training, with the counts."""
    trajectories = tmp_path / "traj.coa.jsonl"
    trajectories.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"t{i}",
                    "question": q,
                    "golden_answers": [a],
                    "dialect": "autocoa",
                    "response": f"Let me look.\n<begin_search> {q} </end_search>\n<search_result> text </search_result>\n"
                    f"</think>\n\nThe answer is \\boxed{{{a}}}.",
                }
            )
            + "\n"
            for i, (q, a) in enumerate([("Who wrote Chocolat?", "Joanne Harris"), ("Where is Pavia?", "Italy")])
        )
    )
    data = {"questions": {"train": str(PARQUET)}, "sft": [str(trajectories)], "corpus": str(CORPUS)}
    base = _config(realistic_model_dir, data=data)
    capped = {
        **base,
        "stages": {
            "sft2": {**base["stages"]["sft2"], "max_len": 320},
            "rl2": {**base["stages"]["rl2"], "max_len": 384},
        },
    }
    for stage in ("sft2", "rl2"):
        code, events = _run(tmp_path, f"capped-{stage}", capped, "train", "--stage", stage)
        (err,) = _errors(events)
        assert code == 2 and err["code"] == "bad_data", err
        assert f"{stage} would train on no tokens:" in err["message"]
        assert "lose their whole response at max_len" in err["message"] and "the prompt alone is" in err["message"]
        assert not any(e["type"] == "stage_finished" and e["status"] == "ok" for e in events)

    no_sft = _config(realistic_model_dir)  # no data.sft and no collection in this run
    code, events = _run(tmp_path, "no-sft", no_sft, "train", "--stage", "sft2")
    (err,) = _errors(events)
    assert code == 2 and err["code"] == "bad_data" and "sft2 has no trajectories to train on" in err["message"]
    assert "Traceback" not in json.dumps(events)


def test_results_without_test_questions_say_so(realistic_model_dir, tmp_path):
    """A run on its own data with no data.questions.test: the results table cannot be filled, and says why (it was
    all "—" without a word)."""
    code, events = _run(tmp_path, "no-test", _config(realistic_model_dir), "pipeline", "--stages", "results")
    assert code == 0, _errors(events)
    warned = [e["message"] for e in events if e["type"] == "log" and e["level"] == "warning"]
    assert any(m.startswith("results: the run config names no data.questions.test") for m in warned)
    md = (tmp_path / "no-test" / "results.md").read_text()
    assert "- **No questions**: the run config names no data.questions.test" in md


def test_sft_data_is_filtered_with_counts_and_a_mix_of_dialects_is_refused(realistic_model_dir, tmp_path):
    """SFT-2 trained on wrong answers, broken formats and four dialects' tags without a word. data.sft_filter keeps
    the run's dialect, format-clean, correct trajectories by default and says what it kept when the stage starts."""

    def autocoa(q: str, a: str) -> str:
        return (
            f"Let me look.\n<begin_search> {q} </end_search>\n<search_result> text </search_result>\n</think>\n\n"
            f"The answer is \\boxed{{{a}}}."
        )

    rows = [
        ("c1", "autocoa", "Who wrote Chocolat?", "Joanne Harris", autocoa("Who wrote Chocolat?", "Joanne Harris")),
        ("c2", "autocoa", "Where is Pavia?", "Italy", autocoa("Where is Pavia?", "Italy")),
        ("w1", "autocoa", "Where is Pavia?", "Italy", autocoa("Where is Pavia?", "France")),
        (
            "f1",
            "autocoa",
            "Where is Pavia?",
            "Italy",
            "Let me look.\n<begin_search> Pavia </end_search>\n</think>\n\nThe answer is \\boxed{Italy}.",
        ),
        (
            "s1",
            "search-r1",
            "Where is Pavia?",
            "Italy",
            "<think> search </think>\n<search> Pavia </search>\n\n"
            "<information>Doc 1 text</information>\n\n<think> ok </think>\n<answer> Italy </answer>",
        ),
        (
            "s2",
            "search-r1",
            "Who wrote Chocolat?",
            "Joanne Harris",
            "<think> I know </think>\n<answer> Joanne Harris </answer>",
        ),
    ]
    trajectories = tmp_path / "mixed.coa.jsonl"
    trajectories.write_text(
        "".join(
            json.dumps({"id": i, "dialect": d, "question": q, "golden_answers": [a], "response": r}) + "\n"
            for i, d, q, a, r in rows
        )
    )
    data = {"questions": {"train": str(PARQUET)}, "sft": [str(trajectories)], "corpus": str(CORPUS)}
    base = _config(realistic_model_dir, data=data)
    code, events = _run(tmp_path, "filtered", base, "train", "--stage", "sft2")
    assert code == 0, _errors(events)
    said = (
        "sft2 data: 2 of 6 trajectories kept by data.sft_filter (dialect autocoa); dropped: 2 in other dialects "
        "(search-r1 2), 1 with format errors, 1 with a wrong answer"
    )
    start = next(i for i, e in enumerate(events) if e["type"] == "run_started")
    assert any(e["type"] == "log" and e["level"] == "info" and said in e["message"] for e in events[start : start + 3])
    assert any(e["type"] == "log" and e["level"] == "warning" and said in e["message"] for e in events)
    samples = [e["record"] for e in events if e["type"] == "sample" and e["stage"] == "sft2"]
    assert samples and all(r["id"] in ("c1", "c2") for r in samples)

    mixed = _config(realistic_model_dir, data={**data, "sft_filter": {"dialect": "any"}})
    code, events = _run(tmp_path, "mixed", mixed, "train", "--stage", "sft2")
    (err,) = _errors(events)
    assert code == 2 and err["code"] == "bad_data"
    assert "the trajectories mix dialects (autocoa 2, search-r1 2)" in err["message"]
    assert not any(e["type"] == "stage_finished" and e["status"] == "ok" for e in events)

    none_left = _config(realistic_model_dir, data={**data, "sft_filter": {"dialect": "hermes"}})
    code, events = _run(tmp_path, "none-left", none_left, "train", "--stage", "sft2")
    (err,) = _errors(events)
    assert code == 2 and "sft2 data: 0 of 6 trajectories kept" in err["message"]
    assert "nothing left to train on" in err["message"]
