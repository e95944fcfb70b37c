"""TRL for real on CPU: a few GRPOTrainer steps on the realistic tiny model (Qwen2 shape, byte-level BPE, ChatML
template; realistic_model.py) with CoA's reward (the grader through a real `coa env serve`) and callback
(coa_trainer.integrations.trl). Then what the editor does with the run: the events file through the protocol
validator and the live panel in headless Chromium (test/webview/check-events-file.ts), the rollouts through the
notebook codec with rewards equal to `coa score` (test/unit/notebook/check-rollouts-file.ts)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, env_server_available, read_line_index

CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
QUESTIONS = [
    ("Who was Evan Morris a lobbyist for?", ["Genentech"]),
    ("Where did Evan Morris work?", ["Washington, D.C."]),
    ("When was Evan Morris born?", ["1977"]),
    ("Which company owns Genentech?", ["Roche"]),
]
STEPS = 3


def _node() -> str | None:
    return os.environ.get("COA_NODE") or shutil.which("node")


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory, realistic_model_dir):
    why = env_server_available()
    if why:
        pytest.skip(why)
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from coa_trainer.env.client import EnvClient
    from coa_trainer.integrations.trl import CoaRun

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("trl")
    env = EnvClient.start(CORPUS, dialect="search-r1", extra_args=["--index", str(tmp / "idx")])
    try:
        data = Dataset.from_list(
            [{"prompt": [{"role": "user", "content": q}], "question": q, "golden_answers": a} for q, a in QUESTIONS]
        )
        tok = AutoTokenizer.from_pretrained(realistic_model_dir)
        model = AutoModelForCausalLM.from_pretrained(realistic_model_dir)
        args = GRPOConfig(
            output_dir=str(tmp / "out"),
            max_steps=STEPS,
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=24,
            logging_steps=1,
            learning_rate=1e-3,
            use_cpu=True,
            report_to=[],
            save_strategy="steps",
            save_steps=2,
            save_only_model=True,
            seed=0,
            dataloader_num_workers=0,
            disable_tqdm=True,
        )
        # the three lines of docs/integrations.md (env given explicitly here instead of COA_ENV_URL)
        coa = CoaRun(tmp / "runs" / "trl-grpo", env=env, dialect="search-r1")
        trainer = GRPOTrainer(
            model=model,
            processing_class=tok,
            args=args,
            train_dataset=data,
            reward_funcs=[coa.reward],
            callbacks=[coa.callback],
        )
        trainer.train()
    finally:
        env.stop()
    return tmp / "runs" / "trl-grpo"


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]


def test_events_follow_the_protocol_and_carry_trl_and_coa_metrics(trl_run):
    from coa_trainer.base.events import validate_event

    events = _events(trl_run)
    for e in events:
        validate_event(e)
    types = [e["type"] for e in events]
    assert types[0] == "run_started" and types[-1] == "stage_finished"
    metrics = [e for e in events if e["type"] == "metrics"]
    assert [m["step"] for m in metrics if "loss" in m["values"]] == list(range(1, STEPS + 1))
    assert [m["step"] for m in metrics] == list(range(1, STEPS + 1))  # one metrics event per step
    # transformers' end-of-training summary is the run's summary, not a second point at the last step
    (summary,) = [e for e in events if e["type"] == "log" and "training finished" in e["message"]]
    assert "train_runtime" in summary["message"] and "train_loss" in summary["message"]
    first = metrics[0]["values"]
    for key in (
        "loss",
        "reward",
        "rewards/coa_reward/mean",
        "coa/em",
        "coa/tc",
        "coa/all_wrong_groups",
        "coa/format_error_rate",
        "completions/mean_length",
    ):
        assert key in first, key
    assert [e["step"] for e in events if e["type"] == "sample"] == list(range(1, STEPS + 1))
    # an untrained model answers nothing right: every group is all wrong, and the core's alert says so, once
    assert all(m["values"]["coa/all_wrong_groups"] == 1.0 for m in metrics if "coa/all_wrong_groups" in m["values"])
    # … and its groups all got one reward (no gradient): TRL's frac_reward_zero_std raises the zero-variance alert
    assert all(m["values"]["frac_reward_zero_std"] == 1.0 for m in metrics if "frac_reward_zero_std" in m["values"])
    assert sorted(e["kind"] for e in events if e["type"] == "alert") == ["all_wrong_groups", "zero_variance_groups"]


def test_trls_checkpoints_are_in_the_runs_view(trl_run):
    """TRL saves `<output_dir>/checkpoint-N` outside the run directory: the callback announces it and the Runs view
    (src/extension/providers/runs/model.ts, read by node) lists it under the stage, as a model directory."""
    ckpts = [e for e in _events(trl_run) if e["type"] == "checkpoint"]
    assert [(c["step"], Path(c["path"]).name) for c in ckpts] == [(2, "checkpoint-2"), (3, "checkpoint-3")]
    assert all((Path(c["path"]) / "config.json").is_file() for c in ckpts)
    node = _node()
    if node is None:
        pytest.skip("node missing")
    out = subprocess.run(
        [node, "--import", "tsx", "test/unit/extension/read-run-dir.ts", str(trl_run)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    (view,) = json.loads(out.stdout.strip().splitlines()[-1])["stages"]
    assert view == {
        "name": "trl",
        "status": "ok",
        "checkpoints": [[f"checkpoint {c['step']}", c["path"], True, False] for c in ckpts],
    }


def test_rollouts_are_records_with_the_graders_breakdown(trl_run):
    rows = [json.loads(line) for line in (trl_run / "stages" / "trl" / "rollouts.coa.jsonl").read_text().splitlines()]
    assert len(rows) == STEPS * 4
    assert sorted({r["meta"]["step"] for r in rows}) == list(range(1, STEPS + 1))
    assert all(len(r["tokens"]["ids"]) > 0 and r["reward"]["scheme"] == "em" for r in rows)
    assert {r["meta"]["group"] for r in rows if r["meta"]["step"] == 1} == {"1-g0"}  # 4 generations of one prompt
    # their line index: the editor reads a step's rows by it (one entry per reward call, in step order)
    entries = read_line_index(trl_run / "stages" / "trl" / "rollouts.coa.jsonl")
    assert sorted({e["step"] for e in entries}) == list(range(1, STEPS + 1))
    events = _events(trl_run)
    reward_means = {
        e["step"]: e["values"]["rewards/coa_reward/mean"]
        for e in events
        if e["type"] == "metrics" and "rewards/coa_reward/mean" in e["values"]
    }
    for step, mean in reward_means.items():
        got = [r["reward"]["total"] for r in rows if r["meta"]["step"] == step]
        assert abs(sum(got) / len(got) - mean) < 1e-6, step


def test_the_live_panel_draws_the_run(trl_run):
    node = _node()
    if node is None or not Path("/usr/bin/chromium").exists():
        pytest.skip("node or /usr/bin/chromium missing")
    out = subprocess.run(
        [
            node,
            "--import",
            "tsx",
            "test/webview/check-events-file.ts",
            str(trl_run / "events.jsonl"),
            "loss,reward,coa/tc,completions/mean_length",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["tabs"] == ["trl"]
    assert all(points == STEPS for points in result["charts"].values()), result


def test_the_rollouts_open_in_the_notebook_with_the_rewards_of_coa_score(trl_run):
    node = _node()
    if node is None:
        pytest.skip("node missing")
    out = subprocess.run(
        [
            node,
            "--import",
            "tsx",
            "test/unit/notebook/check-rollouts-file.ts",
            str(trl_run / "stages" / "trl" / "rollouts.coa.jsonl"),
            "em",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["records"] == STEPS * 4 and result["byte_identical"] is True
    assert result["notebook_rewards"] == result["coa_score_rewards"] == result["stored_rewards"]
    # Whole breakdowns are compared (total, EM, F1, codes, tool calls). An untrained model writes no answer, so they
    # are alike here (COA006); varied rewards through the same codec: test/unit/notebook/verl-dump.test.ts.
    assert all(b["violations"] for b in result["stored_rewards"])


AUTOCOA_TEST = REPO / "examples" / "data" / "autocoa" / "all_test.parquet"


def test_reward_reads_verl_ground_truth_through_trls_own_call(realistic_model_dir, tmp_path):
    """AutoCoA's published parquet loaded with `datasets` (verl layout: `prompt` chat, `reward_model.ground_truth`, no
    golden_answers column) and GRPOTrainer's own `_calculate_rewards`: right answers earn 1 and the rollouts carry
    the parquet's golden answers (they were [] and every reward 0). A dataset with no golden answers is an error."""
    why = env_server_available()
    if why:
        pytest.skip(why)
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from coa_trainer.env.client import EnvClient
    from coa_trainer.integrations.trl import CoaRun

    data = load_dataset("parquet", data_files=str(AUTOCOA_TEST), split="train").select(range(2))
    assert "golden_answers" not in data.column_names and "reward_model" in data.column_names
    tok = AutoTokenizer.from_pretrained(realistic_model_dir)
    model = AutoModelForCausalLM.from_pretrained(realistic_model_dir)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=8,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
    )
    env = EnvClient.start(CORPUS, dialect="autocoa", extra_args=["--index", str(tmp_path / "idx")])
    try:
        coa = CoaRun(tmp_path / "runs" / "trl-autocoa", env=env, scheme="autocoa")
        trainer = GRPOTrainer(
            model=model,
            processing_class=tok,
            args=args,
            train_dataset=data,
            reward_funcs=[coa.reward],
            callbacks=[coa.callback],
        )
        inputs = [data[0], data[0], data[1], data[1]]
        golds = [list(x["reward_model"]["ground_truth"]) for x in inputs]
        answers = [golds[0][0], "wrong", golds[2][0], "also wrong"]
        completions = [
            [{"role": "assistant", "content": f"Let me think.\n</think>\n\nThe answer is \\boxed{{{a}}}."}]
            for a in answers
        ]
        completion_ids = [tok(c[0]["content"])["input_ids"] for c in completions]
        rewards = trainer._calculate_rewards(inputs, [x["prompt"] for x in inputs], completions, completion_ids)
        assert rewards[:, 0].tolist() == [1.0, 0.0, 1.0, 0.0]
        rows = [json.loads(line) for line in coa.rollouts.read_text().splitlines()]
        assert [r["golden_answers"] for r in rows] == golds
        # the question, not AutoCoA's whole instruction: what `coa convert --from verl-parquet` reads off the row
        converted = tmp_path / "autocoa.coa.jsonl"
        res = subprocess.run(
            [
                _node() or "node",
                str(REPO / "bin" / "coa.js"),
                "convert",
                "--from",
                "verl-parquet",
                str(AUTOCOA_TEST),
                "-o",
                str(converted),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert res.returncode == 0, res.stderr
        with open(converted, encoding="utf-8") as f:
            first = [json.loads(next(f)), json.loads(next(f))]
        assert [r["question"] for r in rows] == [first[0]["question"]] * 2 + [first[1]["question"]] * 2
        assert "web search" not in rows[0]["question"] and rows[0]["question"].endswith("?")

        bare = data.remove_columns(["reward_model"])
        trainer = GRPOTrainer(
            model=model, processing_class=tok, args=args, train_dataset=bare, reward_funcs=[coa.reward]
        )
        with pytest.raises(ValueError, match="no golden answers .*reward_model.ground_truth"):
            trainer._calculate_rewards([bare[0]], [bare[0]["prompt"]], completions[:1], completion_ids[:1])
    finally:
        env.stop()
