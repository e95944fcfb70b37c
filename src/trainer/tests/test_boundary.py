"""The search boundary meter (evaluation/boundary.py): its classes and minimal tool calls on constructed cases whose
answer is known before it runs (a scripted policy with set knowledge and habits, through the real rollout loop and
environment server), its agreement with the embedded benchmark's fact-by-fact truth (on those cases and on the demo
run's real RL-2-OTC checkpoint), its report, the command on the run's split and on a user's verl parquet, and the
meter inside RL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coa_trainer.evaluation.boundary import Meter, Outcome, classify, fixed_sample, zero_runs
from coa_trainer.contracts.boundary_report import BoundaryTruthRow
from coa_trainer.evaluation.boundary_report import check_report, live_metrics, summarise
from coa_trainer.evaluation.boundary_truth import agreement, truth_rows
from conftest import REPO, TINY, merge, needs_env_server, observed, read_events, run_trainer
from scripted_agent import Habits, ScriptedAgent, question_index, samplers

DEMO = REPO / "test" / "fixtures" / "demo-run"


# ---------------------------------------------------------------- the rules alone


def test_each_class_follows_from_what_was_measured():
    assert classify(True, True, False, None) == "no-search"
    assert classify(True, True, True, None) == "over-search"
    assert classify(True, False, True, None) == "over-search"  # knew it, searched, and the search misled it
    assert classify(False, True, True, None) == "needed-search"
    assert classify(False, False, False, True) == "under-search"
    assert classify(False, False, True, True) == "under-search"  # stopped searching too soon
    assert classify(False, False, True, False) == "unreachable"
    assert classify(False, False, False, None) == "unreachable"


def test_real_searches_are_the_runs_the_model_did_not_write():
    assert zero_runs([1, 1, 0, 0, 0, 1, 1, 0, 1, 0]) == [2, 7, 9]
    assert zero_runs([0, 0, 1]) == [0]
    assert zero_runs([1, 1]) == []


def test_the_fixed_sample_is_the_same_every_time_and_keeps_order():
    qs = list(range(100))
    a, b = fixed_sample(qs, 10, 7), fixed_sample(qs, 10, 7)
    assert a == b and len(a) == 10 and a == sorted(a)
    assert fixed_sample(qs, 10, 8) != a
    assert fixed_sample(qs[:5], 10, 7) == qs[:5]


def _outcome(cls: str, cb: float, right: float, tc: float, mn: int | None) -> Outcome:
    return Outcome(cb, right, float(tc > 0), tc, mn, None, cls)


def test_summary_and_agreement_arithmetic():
    outs = [
        _outcome("over-search", 1, 1, 2, 0),
        _outcome("needed-search", 0, 1, 2, 1),
        _outcome("unreachable", 0, 0, 1, None),
        _outcome("no-search", 1, 1, 0, 0),
    ]
    s = summarise(outs)
    assert s.classes == {"no-search": 1, "over-search": 1, "needed-search": 1, "under-search": 0, "unreachable": 1}
    assert s.over_search_rate == 0.25 and s.under_search_rate == 0.0
    assert s.tc == 5 / 4 and s.min_tc == 1 / 3 and s.min_tc_questions == 3
    assert s.tc_over_min == (4 - 1) / 3 and s.avoidable_share == 3 / 4
    assert live_metrics(s)["boundary_over_search"] == 0.25
    truth = [
        BoundaryTruthRow.model_validate(t)
        for t in (
            {"class": "needed-search", "min_calls": 1, "facts_known": [False], "optimal": 1},
            {"class": "needed-search", "min_calls": 2, "facts_known": [False, False], "optimal": 2},
            {"class": "unreachable", "min_calls": 1, "facts_known": [False], "optimal": 0},
            {"class": "no-search", "min_calls": 0, "facts_known": [True], "optimal": 0},
        )
    ]
    a = agreement(outs, truth)
    assert a.class_agreement == 0.75
    assert a.min_tc_meter == 1 / 3 and a.min_tc_truth == 1.0 and a.min_tc_truth_all == 1.0
    assert a.optimal_tc == 3 / 4 and a.optimal_tc_same == 1.0 and a.optimal_agreement == 1 / 3
    assert a.confusion == {
        "needed-search": {"over-search": 1, "needed-search": 1},
        "unreachable": {"unreachable": 1},
        "no-search": {"no-search": 1},
    }


def test_a_report_that_breaks_the_schema_names_the_field():
    with pytest.raises(ValueError, match=r"summary.*questions"):
        check_report(
            {
                "version": 1,
                "run": None,
                "stage": "rl2",
                "step": 1,
                "split": "test",
                "checkpoint": "x",
                "samples": 1,
                "temperature": 0.0,
                "seconds": 1.0,
                "summary": {},
                "truth": None,
                "rows": [],
            }
        )


# ---------------------------------------------------------------- constructed cases


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """The tiny benchmark, the embedded tokenizer, the environment server on its corpus (one person's passage
    left out: nothing can find that fact), and nine questions whose class and minimum are set by the policy."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import generate, vocabulary_texts
    from coa_trainer.data.dialects import tags
    from coa_trainer.env.client import EnvClient
    from coa_trainer.model.load import load_tokenizer, setup_runtime, write_embedded_model
    from coa_trainer.rollout.agentio import AgentIO

    d = tmp_path_factory.mktemp("boundary")
    config = validate_config(
        merge(
            TINY,
            {
                "benchmark": {"cities": 12, "persons": 40},
                "eval": {"max_turns": 4, "max_new_tokens": 32, "batch_size": 4},
            },
        )
    )
    bench = observed(generate(config.benchmark, config.seed))
    write_embedded_model(config, vocabulary_texts(bench, config), d / "m", 0)
    tok = load_tokenizer(d / "m")
    # persons with distinct birth cities (the second hop of "which country was x born in ?")
    persons, cities = [], set()
    for p in bench.entities["person"]:
        c = bench.facts[(p, "born_in")]
        if c not in cities:
            persons.append(p)
            cities.add(c)
    p = persons[:9]
    city = {x: bench.facts[(x, "born_in")] for x in p}
    mem = {(p[0], "born_in"), (p[1], "born_in"), (p[4], "born_in"), (p[7], "born_in"), (p[8], "born_in")}
    memory = {k: bench.facts[k] for k in mem} | {
        (city[x], "located_in"): bench.facts[(city[x], "located_in")] for x in (p[7], p[8])
    }
    habits = Habits(memory, verify={p[1], p[4], p[7], city[p[7]]}, guess={p[3]}, stop={p[8]})
    ask = lambda kind, s: next(q for q in bench.questions if q.kind == kind and q.hops[0].subject == s)  # noqa: E731
    cases = [  # question, class, minimum, tool calls — what the habits make them
        (ask("born_in", p[0]), "no-search", 0, 0),
        (ask("born_in", p[1]), "over-search", 0, 1),
        (ask("born_in", p[2]), "needed-search", 1, 1),
        (ask("born_in", p[3]), "under-search", 1, 0),
        (ask("born_country", p[4]), "needed-search", 1, 2),
        (ask("born_country", p[5]), "needed-search", 2, 2),
        (ask("born_in", p[6]), "unreachable", None, 1),
        (ask("born_country", p[7]), "over-search", 0, 2),
        # knows both facts, answers the city without a search: wrong closed-book whatever its facts say, so it needs
        # a search (its own, of the next hop, makes it right — though its memory then answers that search)
        (ask("born_country", p[8]), "under-search", 1, 0),
    ]
    corpus = d / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps(c.json()) + "\n" for c in bench.corpus if not c.contents.startswith(f'"{p[6]}"'))
    )
    env = EnvClient.start(corpus, "coa")
    agent = ScriptedAgent(AgentIO.make(tok, tags("coa")), habits, question_index(bench))
    meter = Meter(None, tok, config, setup_runtime(config), env, samplers=samplers(agent))
    yield bench, meter, cases
    env.stop()


@needs_env_server()
def test_constructed_cases_get_their_class_minimum_and_calls(scripted):
    bench, meter, cases = scripted
    outs = meter.measure([q for q, *_ in cases])
    got = [(q.question, o.cls, o.min_calls, o.tool_calls) for (q, *_), o in zip(cases, outs)]
    assert got == [(q.question, c, m, t) for q, c, m, t in cases]
    # the trajectories that decided: the unneeded search of a two-hop question is gone from its minimal trajectory,
    # and the under-searcher's forced search found the fact
    minimal = outs[4].made().minimal
    assert minimal is not None and minimal.searches and len(minimal.searches) == 1
    assert outs[3].reachable is True and outs[3].made().forced is not None
    s = summarise(outs)
    assert s.over_search_rate == 2 / 9 and s.under_search_rate == 2 / 9
    assert s.em_closed_book == 3 / 9 and s.em == 6 / 9 and s.tc == 9 / 9
    assert s.min_tc == 6 / 8 and s.tc_over_min == 2 / 8 and s.avoidable_share == 2 / 8


@needs_env_server()
def test_the_meter_agrees_with_the_benchmark_truth_on_a_consistent_policy(scripted):
    bench, meter, cases = scripted
    qs = [q for q, *_ in cases]
    outs = meter.measure(qs)
    truth = truth_rows(meter, bench, qs, outs)
    assert [t.class_ for t in truth] == [c for _, c, _, _ in cases]
    assert [t.min_calls for t in truth] == [1 if m is None else m for _, _, m, _ in cases]
    a = agreement(outs, truth)
    assert a.class_agreement == 1.0 and a.min_tc_meter == a.min_tc_truth


@needs_env_server()
def test_k_samples_each_way_give_shares_and_the_same_classes(scripted):
    bench, meter, cases = scripted
    outs = meter.measure([q for q, *_ in cases], samples=3, temperature=1.0, seed=1)
    assert [o.cls for o in outs] == [c for _, c, _, _ in cases]
    assert {o.closed_book for o in outs} <= {0.0, 1.0}


# ---------------------------------------------------------------- the demo run's real checkpoint


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """The demo run's RL-2-OTC checkpoint, config and corpus, copied (the meter writes the benchmark files)."""
    d = tmp_path_factory.mktemp("demo") / "demo-run"
    shutil.copytree(DEMO / "stages" / "rl2-otc" / "final", d / "stages" / "rl2-otc" / "final")
    (d / "data").mkdir()
    shutil.copy(DEMO / "data" / "corpus.jsonl", d / "data" / "corpus.jsonl")
    cfg = json.loads((DEMO / "pipeline" / "rl2-otc.run.json").read_text())
    cfg.pop("$schema", None)
    (d / "run.json").write_text(json.dumps(cfg))
    return d


@needs_env_server()
def test_the_command_on_the_demo_checkpoint_agrees_with_the_truth(demo_run):
    r = run_trainer(
        "boundary",
        "--config",
        str(demo_run / "run.json"),
        "--run-dir",
        str(demo_run),
        "--stage",
        "rl2-otc",
        "--limit",
        "40",
        env={"OMP_WAIT_POLICY": "PASSIVE"},
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads((demo_run / "eval" / "boundary-rl2-otc-test.json").read_text())
    check_report(report)
    assert report["summary"]["questions"] == 40 and "classes:" in r.stdout
    t = report["truth"]
    # measured on these 40 questions: 0.90 and −0.14 (a tiny model's recall of a fact is not the same in every form
    # it is asked; bench/boundary measures the targets on 5 seeds' test splits)
    assert t["class_agreement"] >= 0.8 and abs(t["min_tc_meter"] - t["min_tc_truth"]) <= 0.2
    # a one-hop question is its own fact: the meter and the truth ask it the same way, so they never differ there
    for row in report["rows"]:
        if len(row["truth"]["facts_known"]) == 1:
            assert (row["closed_book"] == 1.0) == row["truth"]["facts_known"][0], row["id"]


@needs_env_server()
def test_the_command_measures_a_users_verl_parquet_and_refuses_a_missing_file(demo_run):
    parquet = REPO / "examples" / "data" / "autocoa" / "all_test.parquet"
    out = demo_run / "user.json"
    r = run_trainer(
        "boundary",
        "--config",
        str(demo_run / "run.json"),
        "--run-dir",
        str(demo_run),
        "--stage",
        "rl2-otc",
        "--questions",
        str(parquet),
        "--limit",
        "3",
        "-o",
        str(out),
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["truth"] is None and len(report["rows"]) == 3  # not the embedded benchmark: no truth
    assert all(row["golden_answers"] for row in report["rows"])
    r = run_trainer(
        "boundary",
        "--config",
        str(demo_run / "run.json"),
        "--run-dir",
        str(demo_run),
        "--stage",
        "rl2-otc",
        "--questions",
        str(demo_run / "missing.parquet"),
    )
    error = json.loads(r.stdout.strip().splitlines()[-1])  # the one error event, with the file named
    assert r.returncode != 0 and error["code"] == "bad_data" and "missing.parquet" in error["message"]
    assert "Traceback" not in r.stdout + r.stderr


# ---------------------------------------------------------------- inside RL


@needs_env_server()
def test_rl_logs_the_meter_every_n_steps(tmp_path):
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.benchmark import ensure_benchmark_files, vocabulary_texts
    from coa_trainer.model.load import write_embedded_model

    config = validate_config(TINY)
    bench = ensure_benchmark_files(config, tmp_path / "data")
    write_embedded_model(config, vocabulary_texts(bench, config), tmp_path / "model", 0)
    rl = {
        "prompts_per_step": 2,
        "group_size": 2,
        "max_new_tokens": 12,
        "max_turns": 2,
        "max_obs_tokens": 16,
        "steps": 2,
        "heldout_every": 0,
        "warmup_steps": 1,
        "init_from": str(tmp_path / "model"),
        "boundary_every": 2,
        "boundary_sample": 3,
    }
    cfg = tmp_path / "run.json"
    cfg.write_text(
        json.dumps(
            merge(
                TINY,
                {
                    "benchmark": {"data_dir": str(tmp_path / "data")},
                    "eval": {"max_new_tokens": 12, "max_turns": 2},
                    "stages": {"rl2": rl},
                },
            )
        )
    )
    r = run_trainer("train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr[-2000:]
    steps = [e for e in read_events(tmp_path / "run") if e["type"] == "metrics" and e.get("stage") == "rl2"]
    names = {
        "boundary_over_search",
        "boundary_under_search",
        "boundary_em_closed_book",
        "boundary_tc",
        "boundary_min_tc",
        "boundary_tc_over_min",
        "boundary_s",
    }
    assert [bool(names & set(e["values"])) for e in steps] == [False, True]
    assert names <= set(steps[1]["values"]) and 0 <= steps[1]["values"]["boundary_tc"]
