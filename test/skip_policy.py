"""Under CI (CI=true, as .ci/run sets it) a skipped test fails unless test/skip-allowlist.json lists it with a reason.

A test that skips because a prerequisite is missing (no environment server bundle, no node) would otherwise turn a
broken tree into a green suite. The conftest.py of each pytest suite imports `pytest_runtest_makereport` from here;
scripts/skips.mjs applies the same list to every suite's report and prints each skip with its reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ALLOWLIST = REPO / "test" / "skip-allowlist.json"


def under_ci(env: dict[str, str] | None = None) -> bool:
    return (env if env is not None else os.environ).get("CI", "").strip().lower() in ("1", "true", "yes")


def allow_list() -> list[dict[str, str]]:
    return json.loads(ALLOWLIST.read_text(encoding="utf-8"))["skips"]


def allowed(path: Path, name: str, entries: list[dict[str, str]]) -> dict[str, str] | None:
    """The entry covering the test `name` of the file at `path` (the entry's file is a repository path)."""
    rel = path.resolve().relative_to(REPO).as_posix() if path.resolve().is_relative_to(REPO) else path.as_posix()
    return next((e for e in entries if e["test"] == name and e.get("file", rel) == rel), None)


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail") or not under_ci():
        return
    if allowed(item.path, item.name, allow_list()):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI: {_reason(report)}\n"
        f"A missing prerequisite fails in CI (`npm install` makes .venv, dist/ and schemas/); a skip that "
        f"is right belongs in {ALLOWLIST.relative_to(REPO)} with its reason."
    )
