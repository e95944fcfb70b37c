"""`coa_trainer collect`, end to end, on the realistic tiny chat model, taught here in a few seconds to search
(so trajectories have real multi-turn structure: a search, the environment server's observation, an answer).

- the model directory (the trainer's own batched loop) and the same directory served by `transformers serve` (a
  real OpenAI-compatible server, started and stopped here on 127.0.0.1) give identical trajectories under greedy
  decoding — one loop, two ways of producing a continuation;
- SIGKILL in the middle of a collection, then --resume: no record lost, none twice (a torn last line included);
- an endpoint that answers 500, times out or closes the connection (a small misbehaving HTTP server of this test —
  someone else's server, not ours) is retried and counted, never a crash; samples whose retries are spent are
  counted and collected by --resume;
- a teacher URL that is not OpenAI-compatible, a model directory without a tokenizer, questions without golden
  answers → one clear error before sampling."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from coa_trainer.base.options import CollectOptions, EnvTarget, TrainOptions
from coa_trainer.stages.collect import collect_command
from coa_trainer.base.events import record_error
from conftest import REPO, needs_env_server, merge, read_events

pytestmark = needs_env_server()

PARQUET = REPO / "examples" / "data" / "autocoa" / "hotpotqa_train.parquet"
CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
NODE = [os.environ.get("COA_NODE") or shutil.which("node") or "node", str(REPO / "dist" / "cli.js")]
# a short user turn (model.user_prompt) keeps sequences short: the test trains and samples on 1 CPU thread
PROMPT = "Search with <search> query </search>, answer in <answer> </answer>. Question: {question}"


# ---------------------------------------------------------------- fixtures: questions, a taught model, a server


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("collect")


@pytest.fixture(scope="module")
def questions(work) -> Path:
    """The first three questions of AutoCoA's parquet, through the core's importer."""
    out = work / "all.questions.jsonl"
    subprocess.run(
        [*NODE, "data", "prepare", "questions", str(PARQUET), "--out", str(out)], check=True, capture_output=True
    )
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[:3]]
    path = work / "questions.jsonl"
    path.write_text("".join(json.dumps({k: r[k] for k in ("id", "question", "golden_answers")}) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def taught_model(realistic_model_dir, questions, work) -> Path:
    """The realistic model after 100 steps on three trajectories: two search (Search-R1 layout), one answers from
    memory. Greedy decoding then searches, reads the server's observation and answers."""
    from coa_trainer.base.config import validate_config
    from coa_trainer.data.prompts import prompt_string
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = work / "taught"
    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(realistic_model_dir))
    config = validate_config(
        {"dialect": "search-r1", "model": {"path": str(realistic_model_dir), "user_prompt": PROMPT}}
    )
    examples = []
    for i, line in enumerate(questions.read_text().splitlines()):
        q = json.loads(line)
        gold = q["golden_answers"][0]
        response = (
            f"<think> I know this. </think>\n<answer> {gold} </answer>"
            if i == 2
            else f"<think> I need to search. </think>\n<search> {q['question'][:30]} </search>\n\n"
            f"<information>Doc 1 text</information>\n\n<think> found it. </think>\n<answer> {gold} </answer>"
        )
        p = tok(prompt_string(tok, config, q["question"]), add_special_tokens=False)["input_ids"]
        r = tok(response, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        examples.append((torch.tensor([p + r]), torch.tensor([[-100] * len(p) + r])))
    torch.manual_seed(0)
    torch.set_num_threads(1)  # under CPU contention 2 threads ran ~15x slower than 1 (docs/NOTES.md)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(100):
        for ids, labels in examples:
            model(input_ids=ids, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    shutil.copy(realistic_model_dir / "generation_config.json", out / "generation_config.json")
    return out


@pytest.fixture(scope="module")
def env(work):
    from coa_trainer.env.client import EnvClient

    client = EnvClient.start(CORPUS, "search-r1")
    yield client
    client.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(questions: Path, teacher: dict, **collect) -> dict:
    base = {"teacher": teacher, "samples": 2, "temperature": 0, "max_new_tokens": 48, "batch_size": 4, "max_turns": 2}
    return {
        "seed": 0,
        "threads": 1,
        "device": "cpu",
        "dialect": "search-r1",
        "model": {"user_prompt": PROMPT},
        "data": {"questions": {"train": str(questions)}, "corpus": str(CORPUS)},
        "collect": merge(base, collect),
    }


def _collect(tmp: Path, config: dict, run: str, env=None, resume: bool = False) -> tuple[int, Path]:
    cfg = tmp / f"{run}.run.json"
    cfg.write_text(json.dumps(config))
    run_dir = tmp / run
    opts = CollectOptions(cfg, run_dir, resume, env=EnvTarget(env.url, env.token) if env else EnvTarget())
    return collect_command(opts), run_dir


def _records(run_dir: Path, name: str = "collection.coa.jsonl") -> list[dict]:
    path = run_dir / "stages" / "collect" / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _same(r: dict) -> tuple:
    """What two teachers must agree on: the text, its grade, and how the loop ended it."""
    return (
        r["response"],
        r["reward"],
        {k: r["meta"][k] for k in ("mode", "sample", "truncated", "finished", "tool_failures")},
    )


# ---------------------------------------------------------------- both teachers, one loop


def test_model_directory_and_transformers_serve_collect_the_same_trajectories(taught_model, questions, env, work):
    code, direct = _collect(work, _config(questions, {"path": str(taught_model)}), "direct", env)
    assert code == 0
    recs = _records(direct)
    assert [r["id"] for r in recs] == [
        f"{json.loads(q)['id']}:{m}:{k}"
        for m in ("coa", "cot")
        for q in questions.read_text().splitlines()
        for k in range(2)
    ]
    assert all(record_error(r) is None for r in recs)
    searched = [r for r in recs if r["meta"]["mode"] == "coa" and r["reward"]["tool_calls"] > 0]
    assert searched and all("</information>" in r["response"] for r in searched)  # observations from the server
    assert any(r["response"].split("</information>")[-1].strip() for r in searched)  # and the model went on
    assert any(r["reward"]["em"] == 1.0 for r in recs)
    r0 = recs[0]
    assert r0["meta"]["teacher"] == {"kind": "model", "path": str(taught_model.resolve())}
    assert r0["meta"]["sampling"]["temperature"] == 0 and r0["meta"]["sampling"]["max_new_tokens"] == 48
    assert r0["tokens"]["ids"] and len(r0["tokens"]["loss_mask"]) == len(r0["tokens"]["ids"])
    events = read_events(direct)
    assert [e["type"] for e in events][:2] == ["run_started", "log"] and events[-1]["type"] == "stage_finished"
    assert events[-1]["status"] == "ok" and events[-1]["stage"] == "collect"
    progress = [e for e in events if e["type"] == "progress"]
    assert progress[-1]["step"] == progress[-1]["total"] == 12
    assert all("samples_per_s" in e["values"] for e in events if e["type"] == "metrics")
    report = json.loads((direct / "stages" / "collect" / "report.json").read_text())
    assert report["collected"] == 12 and report["kept"] + sum(report["dropped"].values()) == 12
    assert report["dropped"]["duplicate"] >= 1  # greedy: K identical samples, one kept
    kept = _records(direct, "selected.coa.jsonl")
    assert len(kept) == report["kept"] and all(r["reward"]["em"] == 1.0 and r["reward"]["format_ok"] for r in kept)
    _sft_on_the_collection(work, questions, taught_model, direct, report)

    port = _free_port()
    cache = work / "hf-cache"
    cache.mkdir(exist_ok=True)
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "transformers"),
            "serve",
            str(taught_model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--device",
            "cpu",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_CACHE": str(cache), "OMP_NUM_THREADS": "1"},
    )
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.time() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/models", timeout=5).read()
                break
            except OSError:
                assert server.poll() is None, "transformers serve exited"
                assert time.time() < deadline, "transformers serve did not start"
                time.sleep(0.5)
        teacher = {"url": url, "tokenizer": str(taught_model), "model": str(taught_model), "concurrency": 4}
        code, served = _collect(work, _config(questions, teacher), "served", env)
        assert code == 0
        got = _records(served)
        assert [r["id"] for r in got] == [r["id"] for r in recs]
        for a, b in zip(recs, got):
            assert _same(a) == _same(b), a["id"]
        assert got[0]["meta"]["teacher"]["url"] == url and "tokens" not in got[0]
        assert any(e["type"] == "log" and "returns matched stop strings" in e["message"] for e in read_events(served))

        # the chat API: observations go back as user turns; the same loop, counted, graded
        code, chat = _collect(
            work, _config(questions, {**teacher, "api": "chat"}, modes=["coa"], samples=1), "chat", env
        )
        assert code == 0
        chats = _records(chat)
        assert len(chats) == 3 and all(r["meta"]["teacher"]["api"] == "chat" for r in chats)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _sft_on_the_collection(work: Path, questions: Path, model: Path, run_dir: Path, report: dict) -> None:
    """The run's SFT stages train on its collection (collect.use_for_sft): SFT-1 on the pairs the core built from
    it, SFT-2 on the kept trajectories."""
    from coa_trainer.stages.train import train_command

    config = merge(
        _config(questions, {"path": str(model)}),
        {
            "model": {"path": str(model)},
            "stages": {
                s: {"steps": 1, "batch_size": 2, "warmup_steps": 1, "log_every": 1, "max_len": 512}
                for s in ("sft1", "sft2")
            },
        },
    )
    cfg = work / "direct-sft.run.json"
    cfg.write_text(json.dumps(config))
    for stage in ("sft1", "sft2"):
        assert train_command(TrainOptions(stage, cfg, run_dir)) == 0, [
            e for e in read_events(run_dir) if e["type"] == "error"
        ]
    logs = [e["message"] for e in read_events(run_dir) if e["type"] == "log"]
    assert any(m.startswith("sft1: SFT data from this run's collection") for m in logs)
    n_pairs = report["pairs"]["pairs"]
    assert any(m.startswith("sft1:") and f"{n_pairs} pairs from your data" in m for m in logs)
    assert any(m.startswith("sft2:") and "trajectories per epoch" in m for m in logs)


# ---------------------------------------------------------------- SIGKILL + resume


def test_sigkill_mid_collection_then_resume_loses_and_repeats_nothing(taught_model, questions, env, work):
    config = _config(questions, {"path": str(taught_model)}, samples=4, batch_size=2, temperature=0.8)
    cfg = work / "kill.run.json"
    cfg.write_text(json.dumps(config))
    run_dir = work / "kill"
    coll = run_dir / "stages" / "collect" / "collection.coa.jsonl"
    e = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1", "COA_ENV_TOKEN": env.token}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coa_trainer",
            "collect",
            "--config",
            str(cfg),
            "--run-dir",
            str(run_dir),
            f"--env-url={env.url}",
        ],
        cwd=REPO,
        env=e,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 240
    while not (coll.is_file() and coll.read_text().count("\n") >= 4):  # two batches written, more to come
        assert proc.poll() is None, "the collection ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = coll.read_text(encoding="utf-8")
    n_before = before.count("\n")
    assert 4 <= n_before < 24
    with open(coll, "a", encoding="utf-8") as f:  # a write torn by the kill: half a line, no newline
        f.write(before.splitlines()[0][:40])

    code, _ = _collect(work, config, "kill", env)  # the same directory without --resume: refused, nothing touched
    assert code == 2 and "--resume" in read_events(run_dir)[-1]["message"]
    code, _ = _collect(work, {**config, "collect": {**config["collect"], "samples": 5}}, "kill", env, resume=True)
    assert code == 2 and "other settings (samples)" in read_events(run_dir)[-1]["message"]

    code, _ = _collect(work, config, "kill", env, resume=True)
    assert code == 0
    after = coll.read_text(encoding="utf-8")
    assert after.startswith(before)  # every record written before the kill is there, unchanged
    ids = [json.loads(line)["id"] for line in after.splitlines()]
    expected = {
        f"{json.loads(q)['id']}:{m}:{k}"
        for m in ("coa", "cot")
        for q in questions.read_text().splitlines()
        for k in range(4)
    }
    assert len(ids) == len(set(ids)) == 24 and set(ids) == expected
    started = [e for e in read_events(run_dir) if e["type"] == "run_started"]
    assert started[-1]["resumed_from"] == n_before
    report = json.loads((run_dir / "stages" / "collect" / "report.json").read_text())
    assert report["collected"] == 24 and report["failed_samples"] == 0


# ---------------------------------------------------------------- a misbehaving endpoint


class Flaky(BaseHTTPRequestHandler):
    """An OpenAI-compatible completions server that misbehaves on purpose: per prompt, the first requests answer
    HTTP 500, hang past the client's timeout, or close the connection without an answer; then it answers. Prompts
    naming `always_fail` fail every time while `broken` is set. Stop strings are dropped from the text and named in
    `stop_reason`, as vLLM does."""

    seen: ClassVar[dict[str, int]] = {}
    lock = threading.Lock()
    always_fail = "\0"
    broken = True

    def log_message(self, *_):
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "flaky-teacher", "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["prompt"]
        searched = "</search>" in prompt.split("<|im_start|>assistant")[-1]  # the instruction names the tags too
        with self.lock:
            n = self.seen[prompt] = self.seen.get(prompt, 0) + 1
        if self.broken and self.always_fail in prompt:
            return self._send(503, {"error": "overloaded"})
        if not searched:  # first turns misbehave, once each way
            if n == 1:
                return self._send(500, {"error": "boom"})
            if n == 2:
                time.sleep(1.5)  # past the client's timeout
                return self._send(500, {"error": "late"})
            if n == 3:
                self.connection.shutdown(socket.SHUT_RDWR)  # closed without an answer
                return
        text = (
            "\n\n<think> done </think>\n<answer> Joanne Harris </answer>"
            if searched
            else "<think> look it up </think>\n<search> Chocolat author </search>"
        )
        stop = next((s for s in body.get("stop") or [] if s in text), None)
        if stop:
            text = text[: text.index(stop)]
        self._send(
            200,
            {
                "object": "text_completion",
                "model": "flaky-teacher",
                "choices": [{"index": 0, "text": text, "finish_reason": "stop", "stop_reason": stop}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
            },
        )


def test_misbehaving_endpoint_is_retried_and_counted_never_a_crash(realistic_model_dir, questions, env, work):
    Flaky.seen, Flaky.broken = {}, True
    Flaky.always_fail = json.loads(questions.read_text().splitlines()[1])["question"][:20]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        teacher = {
            "url": url,
            "tokenizer": str(realistic_model_dir),
            "timeout_s": 0.5,
            "max_retries": 3,
            "backoff_s": 0.01,
            "concurrency": 3,
        }
        # Every answer is "Joanne Harris", wrong for the other questions: kept anyway, as what is tested is the endpoint.
        config = _config(questions, teacher, modes=["coa"], samples=1, temperature=0.7, select={"correct_only": False})
        code, run_dir = _collect(work, config, "flaky", env)
        assert code == 0
        recs = _records(run_dir)
        assert len(recs) == 2  # the always-failing question is left out, not a crash
        assert all(r["reward"]["tool_calls"] == 1 and r["reward"]["format_ok"] for r in recs)
        assert all(
            r["response"].startswith("<think> look it up </think>\n<search> Chocolat author </search><information>")
            for r in recs
        )  # the dropped stop string put back
        events = read_events(run_dir)
        last = [e for e in events if e["type"] == "metrics"][-1]["values"]
        assert last["teacher_timeouts"] >= 2 and last["teacher_connection_errors"] >= 2
        assert last["teacher_http_errors"] >= 2 and last["teacher_retries"] >= 6 and last["failed"] == 1
        assert any(e["type"] == "alert" and "failed at the teacher" in e["message"] for e in events)
        assert events[-1]["type"] == "stage_finished" and events[-1]["status"] == "ok"
        report = json.loads((run_dir / "stages" / "collect" / "report.json").read_text())
        assert report["failed_samples"] == 1 and report["teacher"]["failed"] == 1

        Flaky.broken = False  # the server recovers: --resume collects what failed, and nothing else
        code, _ = _collect(work, config, "flaky", env, resume=True)
        assert code == 0
        ids = [r["id"] for r in _records(run_dir)]
        assert len(ids) == len(set(ids)) == 3
    finally:
        server.shutdown()
        server.server_close()


class Blank(Flaky):
    """A well-behaved completions server that answers some prompts with nothing: "" for one question, whitespace for
    another (an API, or `transformers serve` when the model stops at once, can do either)."""

    blanks: ClassVar[dict[str, str]] = {}

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = next(
            (t for marker, t in self.blanks.items() if marker in body["prompt"]),
            "<think> I know it. </think>\n<answer> Joanne Harris </answer>",
        )
        self._send(
            200,
            {
                "object": "text_completion",
                "model": "blank-teacher",
                "choices": [{"index": 0, "text": text, "finish_reason": "stop", "stop_reason": None}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 0 if not text.strip() else 8, "total_tokens": 18},
            },
        )


def test_empty_teacher_responses_are_failed_samples_and_the_report_is_written(
    realistic_model_dir, questions, env, work
):
    qs = [json.loads(line)["question"] for line in questions.read_text().splitlines()]
    Blank.blanks = {qs[0][:20]: "", qs[1][:20]: "  \n"}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Blank)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        teacher = {
            "url": f"http://127.0.0.1:{server.server_address[1]}/v1",
            "tokenizer": str(realistic_model_dir),
            "max_retries": 0,
        }
        config = _config(questions, teacher, modes=["coa"], samples=1)
        for resume in (False, True):  # the resume meets the same empty answers: the same outcome, not a crash
            code, run_dir = _collect(work, config, "blank", env, resume=resume)
            events = read_events(run_dir)
            # the one answer that came back is wrong: nothing is kept, which is an error, not "ok"
            assert code == 2, [e for e in events if e["type"] == "error"]
            err = [e for e in events if e["type"] == "error"][-1]
            assert err["message"].startswith(
                "collect kept 0 of 3 samples: 2 failed at the teacher (2 empty "
                "responses); 1 graded and dropped by collect.select (1 incorrect)"
            )
            assert [r["question"] for r in _records(run_dir)] == [qs[2]]
            report = json.loads((run_dir / "stages" / "collect" / "report.json").read_text())
            assert report["failed_samples"] == 2 and report["empty_responses"] == 2 and report["collected"] == 1
            assert (
                "| teacher answered nothing (empty response; `--resume` samples them again) | 2 |"
                in (run_dir / "stages" / "collect" / "report.md").read_text()
            )
            assert any(e["type"] == "alert" and "empty response" in e["message"] for e in events)
    finally:
        server.shutdown()
        server.server_close()


def test_a_collection_that_keeps_nothing_fails_with_the_reason(realistic_model_dir, questions, env, work):
    """Nothing kept is not "ok": SFT would train on nothing. Every answer empty (the teacher's fault), or every answer
    wrong (dropped by selection): an error naming the counts, the report still written, no collect.json marker."""
    qs = [json.loads(line)["question"] for line in questions.read_text().splitlines()]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Blank)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        teacher = {
            "url": f"http://127.0.0.1:{server.server_address[1]}/v1",
            "tokenizer": str(realistic_model_dir),
            "max_retries": 0,
        }
        config = _config(questions, teacher, modes=["coa"], samples=2)
        for run, answer, code, message in [
            (
                "all-empty",
                "",
                "bad_teacher",
                "collect kept 0 of 6 samples: 6 failed at the teacher (6 empty "
                "responses) — nothing for SFT to train on",
            ),
            (
                "all-wrong",
                "<think> no idea </think>\n<answer> nobody </answer>",
                "bad_data",
                "collect kept 0 of 6 samples: 6 graded and dropped by collect.select (6 incorrect) — nothing for "
                "SFT to train on",
            ),
        ]:
            Blank.blanks = {q[:20]: answer for q in qs}
            status, run_dir = _collect(work, config, run, env)
            events = read_events(run_dir)
            assert status == 2
            (err,) = [e for e in events if e["type"] == "error"]
            assert err["code"] == code and message in err["message"], err
            assert not any(e["type"] == "stage_finished" and e["status"] == "ok" for e in events)
            cdir = run_dir / "stages" / "collect"
            assert (cdir / "report.md").is_file() and not (cdir / "collect.json").exists()
            assert json.loads((cdir / "report.json").read_text())["kept"] == 0
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- bad input: one clear error before sampling


def test_bad_teacher_or_questions_stop_before_sampling(realistic_model_dir, questions, env, work):
    # a URL that is not OpenAI-compatible: the environment server (a real HTTP server of another API)
    code, run_dir = _collect(
        work,
        _config(
            questions, {"url": env.url + "/v1", "tokenizer": str(realistic_model_dir), "model": "x", "max_retries": 0}
        ),
        "bad-url",
        env,
    )
    (err,) = [e for e in read_events(run_dir) if e["type"] == "error"]
    assert code == 2 and err["code"] == "bad_teacher" and "is not OpenAI-compatible" in err["message"]
    assert not (run_dir / "stages" / "collect" / "collection.coa.jsonl").exists()

    bare = work / "no-tokenizer"
    bare.mkdir(exist_ok=True)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(realistic_model_dir / f, bare / f)
    code, run_dir = _collect(work, _config(questions, {"path": str(bare)}), "bad-model", env)
    (err,) = [e for e in read_events(run_dir) if e["type"] == "error"]
    assert code == 2 and err["code"] == "bad_data" and err["message"].startswith(f"teacher {bare}: no tokenizer")
    assert not (run_dir / "stages" / "collect" / "collection.coa.jsonl").exists()

    no_gold = work / "no-gold.jsonl"
    no_gold.write_text(
        '{"question": "Who wrote Chocolat?", "golden_answers": ["Joanne Harris"]}\n{"question": "Where is Pavia?"}\n'
    )
    code, run_dir = _collect(work, _config(no_gold, {"path": str(realistic_model_dir)}), "bad-questions", env)
    (err,) = [e for e in read_events(run_dir) if e["type"] == "error"]
    assert code == 2 and err["code"] == "bad_data"
    assert err["message"].startswith(f"{no_gold}:2:") and "golden_answers" in err["message"]
    assert (
        not (run_dir / "stages" / "collect").exists()
        or not (run_dir / "stages" / "collect" / "collection.coa.jsonl").exists()
    )
