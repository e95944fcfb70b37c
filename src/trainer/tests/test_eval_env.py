"""Evaluation against the real environment server (src/env, `node dist/cli.js env serve`)."""

import json
import re

import pytest

from coa_trainer.data.benchmark import benchmark_from_config, ensure_benchmark_files, oracle_top_k
from coa_trainer.base.config import validate_config
from coa_trainer.data.dialects import tags
from coa_trainer.env.client import EnvClient, EnvError
from conftest import TINY, needs_env_server, merge, read_events, run_trainer

needs_server = needs_env_server()


@needs_server
def test_oracle_observations_equal_the_servers(tmp_path, monkeypatch):
    """The SFT data's observations are byte-identical to what the server returns at evaluation time: they come from
    one batched call to the server, cached beside the benchmark files for the next stages."""
    config = validate_config(TINY)
    data = tmp_path / "data"
    bench = ensure_benchmark_files(config, data)
    t = tags("coa")
    pairs = []  # (query, observation text) of every oracle action
    for split in ("train", "dev", "test"):
        for line in (data / f"oracle_{split}.jsonl").read_text().splitlines():
            resp = json.loads(line)["response"]
            for m in re.finditer(
                re.escape(t.action_open)
                + r" (.*?) "
                + re.escape(t.action_close)
                + " "
                + re.escape(t.obs_open)
                + r"(.*?)"
                + re.escape(t.obs_close),
                resp,
                re.S,
            ):
                pairs.append((m.group(1), m.group(2)))
    assert len(pairs) > len(bench.questions) // 2
    queries = sorted({q for q, _ in pairs})
    with EnvClient.start(data / "corpus.jsonl", "coa") as env:  # the evaluation's server, on the same corpus
        got = {q: env.search([q], top_k=oracle_top_k(q, bench.top_k), dialect="coa").observations[0] for q in queries}
    for q, obs in pairs:
        assert obs == got[q], q
    # the next stage reads the cache: no server is started (a node that cannot run proves it)
    monkeypatch.setenv("COA_NODE", str(tmp_path / "no-node"))
    again = ensure_benchmark_files(config, data)
    assert again.observations == bench.observations
    assert benchmark_from_config(config, data).observations == bench.observations


@needs_server
def test_eval_command_reports_metrics_per_split(tmp_path, write_config):
    cfg = write_config(merge(TINY, {"stages": {"sft2": {"steps": 8}}, "eval": {"limit": 10}}))
    run = tmp_path / "run"
    for stage in ("pretrain", "sft2"):
        r = run_trainer("train", "--stage", stage, "--config", str(cfg), "--run-dir", str(run))
        assert r.returncode == 0, r.stdout[-2000:]
    r = run_trainer("eval", "--config", str(cfg), "--run-dir", str(run), "--split", "dev", "--split", "test")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    evals = [e for e in read_events(run) if e["type"] == "eval" and e["metrics"].get("mode_agent") == 1.0]
    assert [e["split"] for e in evals] == ["dev", "test"]
    for e in evals:
        m = e["metrics"]
        assert e["stage"] == "sft2" and e["step"] == 8
        for key in ("em", "f1", "tc", "format_error_rate"):
            assert m[key] is not None and 0 <= m[key] <= (10 if key == "tc" else 1), key
        assert "tp" in m and m["questions"] == 10
    assert "| dev |" in r.stderr and (run / "eval" / "sft2-agent.md").is_file()
    graded = [json.loads(line) for line in open(run / "eval" / "sft2-agent-dev.jsonl")]
    assert all("reward" in g and g["tokens"]["ids"] for g in graded)


def test_unreachable_environment_is_one_error_event(tmp_path, write_config):
    bad = write_config(merge(TINY, {"env": {"cli": str(tmp_path / "no-cli.js")}}), "bad.run.json")
    # pretrain writes the benchmark, whose oracle observations come from the server
    first = tmp_path / "first"
    assert run_trainer("train", "--stage", "pretrain", "--config", str(bad), "--run-dir", str(first)).returncode == 3
    (err,) = [e for e in read_events(first) if e["type"] == "error"]
    assert err["code"] == "env_unreachable" and "no-cli.js" in err["message"] and err["stage"] == "pretrain"
    # the benchmark's files (observations cached) are there: eval still needs the server for its searches
    run = tmp_path / "run"
    good = write_config(TINY)
    assert run_trainer("train", "--stage", "pretrain", "--config", str(good), "--run-dir", str(run)).returncode == 0
    r = run_trainer("eval", "--config", str(bad), "--run-dir", str(run))
    assert r.returncode == 3
    (err,) = [e for e in read_events(run) if e["type"] == "error"]
    assert err["code"] == "env_unreachable" and "no-cli.js" in err["message"]


def test_client_reports_a_server_that_dies_before_listening(tmp_path):
    bad_corpus = tmp_path / "corpus.jsonl"
    bad_corpus.write_text("")
    with pytest.raises(EnvError):
        EnvClient.start(bad_corpus, cli=tmp_path / "missing.js")
