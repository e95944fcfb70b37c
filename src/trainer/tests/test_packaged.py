"""The trainer as a package of its own: `pip install ./src/trainer` into a fresh virtualenv outside the repository
(the third-party dependencies borrowed from the project's .venv, never the checkout's source), then stages run from a
directory outside the checkout. The contracts it reads (schemas, tables, generated classes) are the ones the wheel
carries; only the core's CLI (the environment server, the data importers) is named, as a user names it."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

from conftest import REPO, TINY, merge


def _site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def test_pip_installed_trainer_runs_outside_the_checkout(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # torch, transformers … from the project's .venv as a plain path (its coa_trainer.pth is not processed there)
    (_site_packages(python) / "deps.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COA_SCHEMAS_DIR")}
    env["OMP_NUM_THREADS"] = "1"
    # a copy of src/trainer, so the build's own files (build/, *.egg-info) never land in the checkout
    source = tmp_path / "trainer-src"
    shutil.copytree(
        REPO / "src" / "trainer", source, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info")
    )
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", str(source)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    where = subprocess.run(
        [str(python), "-c", "import coa_trainer, pathlib; print(pathlib.Path(coa_trainer.__file__).parent)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    installed = Path(where)
    assert installed.is_relative_to(venv) and not installed.is_relative_to(REPO), installed
    for name in ("run-config.schema.json", "events.schema.json", "stages.json", "errors.json", "dialects.json"):
        assert (installed / "contracts" / "json" / name).is_file(), name

    # the embedded default, two stages, with the core's CLI named as a user outside the checkout names it
    config = merge(
        TINY,
        {"env": {"cli": str(REPO / "dist" / "cli.js")}, "stages": {"pretrain": {"steps": 2}, "sft2": {"steps": 2}}},
    )
    (work / "run.json").write_text(json.dumps(config))
    for stage in ("pretrain", "sft2"):
        r = subprocess.run(
            [
                str(python),
                "-m",
                "coa_trainer",
                "train",
                "--stage",
                stage,
                "--config",
                "run.json",
                "--run-dir",
                "runs/packaged",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        assert r.returncode == 0, [e for e in events if e["type"] == "error"] or r.stderr[-2000:]
        assert events[-1]["type"] == "stage_finished" and events[-1]["status"] == "ok", events[-1]

    # without the CLI named, a trainer outside a checkout says where to point it (one error event, exit 3)
    (work / "bare.json").write_text(json.dumps(TINY))
    r = subprocess.run(
        [
            str(python),
            "-m",
            "coa_trainer",
            "train",
            "--stage",
            "pretrain",
            "--config",
            "bare.json",
            "--run-dir",
            "runs/bare",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (err,) = [json.loads(line) for line in r.stdout.splitlines() if '"type": "error"' in line]
    assert r.returncode == 3 and err["code"] == "env_unreachable" and "env.cli" in err["message"], err
