"""Shared fixtures: tiny configs, a trainer subprocess runner, and the generated schemas (made on the fly from
src/core when `npm run build` has not written schemas/ yet)."""

from __future__ import annotations

import json
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PY = sys.executable
# This checkout's trainer first: the venv's .pth may point at another checkout of the repository (a worktree).
sys.path.insert(0, str(REPO / "src" / "trainer"))
# Under CI a skipped test fails unless test/skip-allowlist.json lists it (test/skip_policy.py): a missing
# prerequisite must not pass as a skip.
sys.path.append(str(REPO / "test"))
from skip_policy import pytest_runtest_makereport  # noqa: E402,F401


def _ensure_schemas() -> None:
    # every file gen-schemas writes: a schemas/ from an older build lacks the newer ones
    needed = (
        "run-config.schema.json",
        "events.schema.json",
        "record.schema.json",
        "codes.json",
        "dialects.json",
        "prompts.json",
        "stages.json",
        "search.json",
        "names.json",
        "rewards.json",
        "config-paths.json",
        "python/run-config.schema.json",
    )
    packaged = REPO / "src" / "trainer" / "coa_trainer" / "contracts" / "json"  # what the package reads
    if os.environ.get("COA_SCHEMAS_DIR") or all((packaged / n).is_file() for n in needed):
        return
    out = REPO / ".cache" / "schemas"
    node = os.environ.get("COA_NODE") or shutil.which("node")
    if node is None:
        raise RuntimeError("schemas/ is missing and node is not available to generate it (run npm run build)")
    subprocess.run(
        [node, "--import", "tsx", "scripts/gen-schemas.ts", str(out)], cwd=REPO, check=True, capture_output=True
    )
    os.environ["COA_SCHEMAS_DIR"] = str(out)


_ensure_schemas()

import torch  # noqa: E402

torch.set_num_threads(2)

TINY = {
    "seed": 3,
    "threads": 1,
    "device": "cpu",
    "benchmark": {"persons": 24, "companies": 6, "cities": 6, "countries": 3, "famous_fraction": 0.5},
    "model": {
        "embedded": {
            "hidden_size": 32,
            "num_layers": 2,
            "num_heads": 2,
            "num_kv_heads": 1,
            "intermediate_size": 64,
            "max_position": 256,
        }
    },
    "stages": {
        "pretrain": {"steps": 6, "batch_size": 4, "log_every": 1, "warmup_steps": 2},
        "sft1": {"steps": 4, "batch_size": 4, "log_every": 1, "warmup_steps": 1},
        "sft2": {"steps": 4, "batch_size": 4, "log_every": 1, "warmup_steps": 1},
        "sft3": {"steps": 4, "batch_size": 4, "log_every": 1, "warmup_steps": 1},
    },
    "eval": {"limit": 12, "max_new_tokens": 24, "max_turns": 2},
}


def merge(base: dict, over: dict) -> dict:
    out = json.loads(json.dumps(base))
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@pytest.fixture
def tiny_config():
    return json.loads(json.dumps(TINY))


@pytest.fixture
def write_config(tmp_path):
    def write(config: dict, name: str = "run.json") -> Path:
        p = tmp_path / name
        p.write_text(json.dumps(config))
        return p

    return write


def run_trainer(*args: str, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [PY, "-m", "coa_trainer", *args], cwd=REPO, env=e, capture_output=True, text=True, timeout=timeout
    )


def read_events(run_dir: Path) -> list[dict]:
    with open(run_dir / "events.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def assert_typed_round_trip(run_dir: Path) -> int:
    """Every line of a run's events.jsonl and of its record files (rollouts, samples: *.coa.jsonl) reads into the class
    generated for it from the core's schemas (contracts/events.py, contracts/record.py) and writes back as the same
    JSON value — nothing the trainer writes is outside the classes, nothing is lost reading it. Returns the lines read."""
    from coa_trainer.base.events import event_json, read_event
    from coa_trainer.contracts.record import TrajectoryRecord

    events = read_events(run_dir)
    for e in events:
        assert event_json(read_event(e)) == e, e
    records = sorted(run_dir.rglob("*.coa.jsonl"))
    assert any(p.name == "rollouts.coa.jsonl" for p in records), f"no rollouts under {run_dir}"
    n = len(events)
    for path in records:
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            assert TrajectoryRecord.model_validate(rec).model_dump(exclude_unset=True) == rec, (path, rec)
            n += 1
    return n


_OBSERVED: dict[str, dict[str, str]] = {}


def read_line_index(path: Path) -> list[dict]:
    """The entries of a record file's line index (base/line_index.py), checked to describe the file: each entry's
    lines are records of its step at its byte offsets, entries follow one another, the last ends where the file ends."""
    from coa_trainer.base.line_index import index_path

    data = path.read_bytes()
    entries = [json.loads(x) for x in index_path(path).read_text().splitlines()]
    line = end = 0
    for e in entries:
        assert e["line"] == line and e["offsets"][0] == end, (e, line, end)
        bounds = [*e["offsets"], e["end"]]
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            row = data[a:b]
            assert row.endswith(b"\n") and b"\n" not in row[:-1]
            assert json.loads(row)["meta"]["step"] == e["step"]
            assert data[:a].count(b"\n") == e["line"] + i
        line, end = e["line"] + len(e["offsets"]), e["end"]
    assert end == len(data)
    return entries


def observed(bench):
    """`bench` with its oracle observations from the real environment server on its corpus (one batched call; one
    server per distinct corpus in a test session). Fails, never skips, when the server cannot run."""
    import hashlib
    import tempfile

    from coa_trainer.data.benchmark import fetch_observations
    from coa_trainer.env.client import EnvClient

    key = hashlib.sha256(
        json.dumps([[p.json() for p in bench.corpus], bench.top_k, bench.queries()]).encode()
    ).hexdigest()
    if key not in _OBSERVED:
        why = env_server_available()
        if why is not None:
            raise RuntimeError(f"the benchmark's observations come from the environment server: {why}")
        with tempfile.TemporaryDirectory() as d:
            corpus = Path(d) / "corpus.jsonl"
            corpus.write_text("".join(json.dumps(c.json()) + "\n" for c in bench.corpus), encoding="utf-8")
            with EnvClient.start(corpus, "coa") as env:
                _OBSERVED[key] = fetch_observations(bench, env)
    bench.observations = _OBSERVED[key]
    return bench


def legacy_fingerprint(params, seed: int) -> str:
    """A benchmark's fingerprint as written before the fractions added later (redundant_search_fraction,
    rl_fraction) existed, for the test that a run whose fractions are 0 keeps its files."""
    import hashlib

    from coa_trainer.data.benchmark import BENCHMARK_VERSION

    keys = ("persons", "companies", "cities", "countries", "famous_fraction", "dev_fraction", "test_fraction", "top_k")
    blob = {"v": BENCHMARK_VERSION, "seed": seed, **{k: getattr(params, k) for k in keys}}
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def env_server_available() -> str | None:
    """Why the real environment server cannot be used here (None when it can)."""
    node = os.environ.get("COA_NODE") or shutil.which("node")
    if node is None:
        return "node not on PATH"
    if not (REPO / "dist" / "cli.js").is_file():
        return "dist/cli.js missing (npm run build)"
    r = subprocess.run(
        [node, str(REPO / "dist" / "cli.js"), "env", "serve", "--help"], capture_output=True, text=True, timeout=30
    )
    if "--corpus" not in (r.stdout + r.stderr):
        return "dist/cli.js has no `env serve` yet"
    return None


def needs_env_server() -> pytest.MarkDecorator:
    """Skip a test that needs the real environment server (node and the built CLI) where there is none; under CI its
    absence is an error instead, so the suite cannot pass by skipping what it exists to check."""
    why = env_server_available()
    if why is not None and os.environ.get("CI"):
        raise RuntimeError(f"environment server unavailable under CI: {why}")
    return pytest.mark.skipif(why is not None, reason=f"environment server: {why}")


def malloc_in_use() -> int:
    """Bytes glibc's malloc has handed out and not had back (mallinfo2: heap chunks in use + mmapped chunks) — the
    accounting of the allocator torch's CPU tensors come from."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (n, ctypes.c_size_t)
            for n in (
                "arena",
                "ordblks",
                "smblks",
                "hblks",
                "hblkhd",
                "usmblks",
                "fsmblks",
                "uordblks",
                "fordblks",
                "keepcost",
            )
        ]

    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("no glibc mallinfo2 on this platform")
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


@pytest.fixture(scope="session")
def realistic_model_dir(tmp_path_factory) -> Path:
    """The realistic tiny chat model (tests/realistic_model.py): Qwen2 shape, byte-level BPE, ChatML template."""
    from realistic_model import write

    return write(tmp_path_factory.mktemp("realistic") / "model")
