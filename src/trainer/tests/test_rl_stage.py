"""The RL stages end to end on the tiny config against the real environment server: events, metrics, samples and
rollouts.coa.jsonl, --label, OTC-GRPO state through checkpoints, SIGTERM → checkpoint → resume, and torchrun."""

import json
import os
import signal
import subprocess
import urllib.request

import pytest

from coa_trainer.env.client import EnvClient
from coa_trainer.base.events import event_error, record_error
from coa_trainer.model.statefile import read_state_file, write_state_file
from conftest import PY, REPO, TINY, needs_env_server, merge, read_events, read_line_index, run_trainer

pytestmark = needs_env_server()

RL = {
    "prompts_per_step": 2,
    "group_size": 4,
    "max_new_tokens": 16,
    "max_turns": 2,
    "max_obs_tokens": 24,
    "sample_every": 1,
    "heldout_every": 2,
    "heldout_limit": 4,
    "warmup_steps": 1,
}
METRICS = (
    "reward_mean",
    "reward_std",
    "em",
    "f1",
    "tc",
    "tp",
    "tool_failure_rate",
    "malformed_call_rate",
    "truncation_ratio",
    "all_correct_groups",
    "all_wrong_groups",
    "response_len",
    "think_len",
    "kl",
    "entropy",
    "clip_frac",
    "grad_norm",
    "gen_tokens_per_s",
    "train_tokens_per_s",
    "retok_mismatches",
    "zero_variance_groups",
    "logprob_diff_mean",
    "logprob_diff_max",
    "scan_format_gate",
    "scan_answer_in_query",
    "scan_repeated_query",
    "scan_answer_before_thought",
    "scan_length_outlier",
)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The tiny embedded model (random weights: RL only needs a policy), the benchmark files and an env server on
    its corpus, shared by the tests."""
    from coa_trainer.data.benchmark import ensure_benchmark_files
    from coa_trainer.base.config import validate_config
    from coa_trainer.model.load import write_embedded_model
    from coa_trainer.data.benchmark import vocabulary_texts

    d = tmp_path_factory.mktemp("rlbase")
    config = validate_config(TINY)
    bench = ensure_benchmark_files(config, d / "data")
    write_embedded_model(config, vocabulary_texts(bench, config), d / "model", 0)
    env = EnvClient.start(d / "data" / "corpus.jsonl", "coa")
    yield d, env
    env.stop()


def _config(tmp_path, base_run, name="run.json", **rl):
    cfg = merge(
        TINY,
        {
            "benchmark": {"data_dir": str(base_run / "data")},
            "stages": {
                "rl1": {**RL, "init_from": str(base_run / "model"), **rl},
                "rl2": {**RL, "init_from": str(base_run / "model"), **rl},
            },
        },
    )
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def _env_args(env):
    return [f"--env-url={env.url}"]


def _env_vars(env):
    """The server's token travels in the environment, never on the command line."""
    return {"COA_ENV_TOKEN": env.token}


def _metrics(run_dir, stage):
    return {e["step"]: e["values"] for e in read_events(run_dir) if e["type"] == "metrics" and e["stage"] == stage}


def _otc_state(env, run):
    req = urllib.request.Request(f"{env.url}/v1/runs/{run}/otc-state", headers={"Authorization": f"Bearer {env.token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _check_events_and_rollouts(run, label, steps, group):
    events = read_events(run)
    assert all(event_error(e) is None for e in events)
    assert {e.get("stage") for e in events if "stage" in e} == {label}
    m = _metrics(run, label)
    assert sorted(m) == list(range(1, steps + 1))
    for values in m.values():
        assert all(k in values for k in METRICS), [k for k in METRICS if k not in values]
        assert values["retok_mismatches"] == 0
        assert values["trajectories"] == 2 * group
    assert "heldout_em" in m[2]
    assert len([e for e in events if e["type"] == "sample"]) == steps
    rollouts = [json.loads(x) for x in (run / "stages" / label / "rollouts.coa.jsonl").read_text().splitlines()]
    # The line index beside it: one entry per sampled step (sample_every 1), what the editor reads a step's rows by.
    assert [e["step"] for e in read_line_index(run / "stages" / label / "rollouts.coa.jsonl")] == list(
        range(1, steps + 1)
    )
    if (run / "stages" / label / "flagged.coa.jsonl").is_file():
        read_line_index(run / "stages" / label / "flagged.coa.jsonl")
    # The sampler's log-probs against the trainer's before each step's update: one histogram per logged step over
    # every trained token, fp32 on one CPU agreeing to far below the alert's 0.05 nats.
    hist = {e["step"]: e for e in events if e["type"] == "histogram"}
    assert sorted(hist) == list(range(1, steps + 1)) and {e["name"] for e in hist.values()} == {"logprob_diff"}
    for step, e in hist.items():
        trained = sum(sum(r["tokens"]["loss_mask"]) for r in rollouts if r["meta"]["step"] == step)
        assert sum(e["counts"]) == trained and len(e["counts"]) == len(e["edges"]) + 1
        assert 0 <= m[step]["logprob_diff_mean"] <= m[step]["logprob_diff_max"] < 1e-3
    # Zero-variance groups: those whose G rewards are all equal, from the stored rewards of each step.
    for step in m:
        groups: dict = {}
        for r in rollouts:
            if r["meta"]["step"] == step:
                groups.setdefault(r["meta"]["group"], set()).add(r["reward"]["total"])
        assert m[step]["zero_variance_groups"] == sum(len(v) == 1 for v in groups.values()) / len(groups)
    assert all(r["meta"]["kind"] and r["meta"]["hops"] in (1, 2) for r in rollouts), "the question's kind and hops"
    assert len(rollouts) == steps * 2 * group
    for rec in rollouts:
        assert record_error(rec) is None
        tk = rec["tokens"]
        assert rec["reward"]["scheme"] == "otc-grpo"
        for m_, lp, a in zip(tk["loss_mask"], tk["logprobs"], tk["advantages"]):
            assert (lp is None) == (m_ == 0) and (m_ == 1 or a == 0.0)
    for g in range(0, len(rollouts), group):  # GRPO: the advantages of a group sum to 0
        advs = [
            next((a for a, m_ in zip(r["tokens"]["advantages"], r["tokens"]["loss_mask"]) if m_), 0.0)
            for r in rollouts[g : g + group]
        ]
        assert abs(sum(advs)) < 1e-5
    assert (run / "stages" / label / "final" / "config.json").is_file()
    assert [e["split"] for e in events if e["type"] == "eval"] == ["dev"]


def test_rl2_label_events_sigterm_and_bit_exact_resume(tmp_path, base):
    """a: 4 uninterrupted steps of `--stage rl2 --label rl2-otc` with OTC-GRPO. b: the same, SIGTERM after the
    first metrics event → checkpoint, exit 130; an OTC running minimum is planted in that checkpoint; --resume
    finishes with exactly a's numbers and hands the OTC state back to the server."""
    base_run, env = base
    steps = 4
    cfg = _config(tmp_path, base_run, steps=steps, checkpoint_every=2, reward={"scheme": "otc-grpo", "params": {}})
    label = ["--stage", "rl2", "--label", "rl2-otc", "--config", str(cfg)]
    a = tmp_path / "a"
    r = run_trainer("train", *label, "--run-dir", str(a), *_env_args(env), env=_env_vars(env))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    _check_events_and_rollouts(a, "rl2-otc", steps, RL["group_size"])

    b = tmp_path / "b"
    e = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1", **_env_vars(env)}
    proc = subprocess.Popen(
        [PY, "-m", "coa_trainer", "train", *label, "--run-dir", str(b), *_env_args(env)],
        cwd=REPO,
        env=e,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "metrics":
            proc.send_signal(signal.SIGTERM)
            break
    proc.stdout.read()
    assert proc.wait(timeout=120) == 130
    done = [x for x in read_events(b) if x["type"] == "stage_finished"]
    assert done and done[-1]["status"] == "cancelled"
    k = done[-1]["step"]
    assert 1 <= k < steps
    ckpt = b / "stages" / "rl2-otc" / "checkpoints" / f"step-{k:06d}.safetensors"
    info, tree = read_state_file(ckpt)
    assert info["step"] == k and "otc_state" in tree["extra"]
    tree["extra"]["otc_state"] = {"version": 1, "min_tool_calls": {"a question from before the restart ?": 1}}
    write_state_file(ckpt, tree, info)

    r = run_trainer("train", *label, "--run-dir", str(b), "--resume", *_env_args(env), env=_env_vars(env))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert [x["resumed_from"] for x in read_events(b) if x["type"] == "run_started"] == [None, k]
    ma, mb = _metrics(a, "rl2-otc"), _metrics(b, "rl2-otc")
    for step in range(k + 1, steps + 1):
        for key in ("loss", "reward_mean", "response_len", "tc", "entropy", "kl", "grad_norm"):
            assert mb[step][key] == ma[step][key], (step, key, ma[step][key], mb[step][key])
    assert _otc_state(env, "b.rl2-otc")["min_tool_calls"].get("a question from before the restart ?") == 1
    # The resumed stage cut its record files and their indexes back to the checkpoint and wrote the rest again: the
    # same files, the same indexes as the run that was never stopped.
    for name in ("rollouts.coa.jsonl", "flagged.coa.jsonl"):
        fa, fb = a / "stages" / "rl2-otc" / name, b / "stages" / "rl2-otc" / name
        assert fa.is_file() == fb.is_file()
        if fa.is_file():
            assert read_line_index(fb) == read_line_index(fa), name


def test_torchrun_two_processes_equal_one(tmp_path, base):
    """Groups stay whole on each rank and sums are global: near-greedy sampling gives the same trajectories
    whatever the process count, so the logged metrics agree."""
    base_run, env = base
    cfg = _config(tmp_path, base_run, steps=2, temperature=0.001, heldout_every=0, sample_every=0)
    one = tmp_path / "one"
    r = run_trainer(
        "train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(one), *_env_args(env), env=_env_vars(env)
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    two = tmp_path / "two"
    e = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    r = subprocess.run(
        [
            PY,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "coa_trainer",
            "train",
            "--stage",
            "rl2",
            "--config",
            str(cfg),
            "--run-dir",
            str(two),
        ],
        cwd=REPO,
        env=e,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert [x["world_size"] for x in read_events(two) if x["type"] == "run_started"] == [2]
    m1, m2 = _metrics(one, "rl2"), _metrics(two, "rl2")
    assert sorted(m1) == sorted(m2) == [1, 2]
    for step in (1, 2):
        assert m2[step]["trajectories"] == 8
        for k in ("reward_mean", "tc", "response_len", "truncation_ratio", "all_wrong_groups", "think_len"):
            assert m2[step][k] == m1[step][k], (step, k)
        assert m2[step]["loss"] == pytest.approx(m1[step]["loss"], rel=1e-4, abs=1e-6)


def test_the_rl_step_frees_the_engine_for_its_update_and_reserves_it_again(tmp_path, base):
    """One RL step of the stage's own code (rollout, grading, GRPO update) in this process, with an engine that
    captures its decode blocks and holds a 64 MiB cache: when the update's first forward starts, the cache, the
    captured blocks and the packed weights are gone — no tensor of them survives and glibc's count of bytes in use
    is down by the cache — and after the step the cache is allocated again at its size (the count up by it)."""
    import gc
    import signal
    import weakref

    from coa_trainer.base.config import validate_config
    from coa_trainer.base.distributed import DistInfo
    from coa_trainer.base.events import EventWriter
    from coa_trainer.base.lifecycle import STOP_SIGNALS
    from coa_trainer.base.options import EnvTarget, TrainOptions
    from coa_trainer.rollout import generate as gen
    from coa_trainer.rollout.engine import Engine
    from coa_trainer.stages.rl import GrpoSteps
    from coa_trainer.stages.setup import setup_stage
    from conftest import malloc_in_use

    base_run, env = base
    cfg = _config(tmp_path, base_run, steps=1, heldout_every=0, sample_every=0)
    config = validate_config(json.loads(cfg.read_text()))
    run_dir = tmp_path / "run"
    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    try:
        with EventWriter(run_dir, echo=None) as writer:
            run = setup_stage(
                config,
                TrainOptions("rl1", cfg, run_dir, env=EnvTarget(env.url, env.token)),
                run_dir,
                writer,
                DistInfo(),
            )
            steps = GrpoSteps(run)
            policy, dev = run.model.policy, run.rt.device
            eng = Engine(policy, dev, run.rt.autocast_dtype, graphs=True)  # blocks captured (CPU: replayed steps)
            gen._ENGINES[policy] = {(str(dev), run.rt.autocast_dtype): eng}
            eng.reserve(64, 4096)  # far above what the step's rollout asks: it decodes in this very cache
            kv_bytes = eng.held_bytes()
            shape = eng.kv.k[0].shape
            assert kv_bytes >= 64 << 20
            refs = [weakref.ref(t) for t in eng.kv.k + eng.kv.v]
            at_update: dict = {}

            def first_forward(*_):
                if not at_update:
                    gc.collect()
                    at_update.update(
                        in_use=malloc_in_use(),
                        held=eng.held_bytes(),
                        cache=len(eng.kv.k),
                        alive=sum(r() is not None for r in refs),
                        graphs=eng.pool is not None or any(s.graphs for s in eng.sessions.values()),
                        captured=eng.stats.graphs_captured,
                    )

            hook = run.model.trained.register_forward_pre_hook(first_forward)
            gc.collect()
            before = malloc_in_use()
            try:
                steps.step(0)
            finally:
                hook.remove()
                steps.close()
            gc.collect()
            after = malloc_in_use()
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert at_update, "the update made no forward"
    assert at_update["captured"] > 0, "the rollout decoded in the engine's captured blocks"
    # the allocator's own accounting first, then the engine's tensors by identity and size
    assert before - at_update["in_use"] >= kv_bytes - (4 << 20), (before, at_update["in_use"], kv_bytes)
    assert (at_update["held"], at_update["cache"], at_update["alive"], at_update["graphs"]) == (0, 0, 0, False)
    assert kv_bytes - (4 << 20) <= after - at_update["in_use"] <= kv_bytes + (8 << 20), (after, at_update, kv_bytes)
    assert eng.kv.k[0].shape == shape and eng.held_bytes() == kv_bytes  # the packed weights follow at the next call
