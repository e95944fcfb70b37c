"""Client for the environment server (`coa env serve`, src/env): starts it as a child process (argument list, no
shell), reads its `{"event":"listening","url","token"}` line, calls /v1/tools/search and /v1/grade with urllib,
and stops it. Or attaches to a server that is already running (url + token)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .schemas import REPO_ROOT


class EnvError(RuntimeError):
    """The environment server could not be started or reached, or answered with an error."""


class EnvClient:
    def __init__(self, url: str, token: str, timeout_s: float = 60.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.process: subprocess.Popen | None = None
        self.stderr_tail: list[str] = []

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def start(cls, corpus: str | Path, dialect: str = "coa", node: str | None = None, cli: str | Path | None = None,
              startup_timeout_s: float = 30.0, extra_args: list[str] | None = None) -> "EnvClient":
        node_exe = node or os.environ.get("COA_NODE") or shutil.which("node")
        if not node_exe:
            raise EnvError("node not found: put it on PATH or set COA_NODE (the environment server is Node)")
        cli_path = Path(cli) if cli else REPO_ROOT / "dist" / "cli.js"
        if not cli_path.is_absolute() and not cli_path.exists():
            cli_path = REPO_ROOT / cli_path
        if not cli_path.is_file():
            raise EnvError(f"{cli_path} not found: build the CLI first (npm run build)")
        if not Path(corpus).is_file():
            raise EnvError(f"corpus {corpus} not found")
        # --parent-pid: the server stops itself when this process dies, even by SIGKILL (no orphaned servers)
        argv = [node_exe, str(cli_path), "env", "serve", "--corpus", str(corpus), "--port", "0",
                "--dialect", dialect, "--parent-pid", str(os.getpid()), *(extra_args or [])]
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, bufsize=1)
        except OSError as e:
            raise EnvError(f"cannot start {node_exe}: {e.strerror}") from e
        lines: "queue.Queue[str | None]" = queue.Queue()
        stderr_tail: list[str] = []

        def pump_stdout() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        def pump_stderr() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                stderr_tail.append(line.rstrip())
                del stderr_tail[:-20]

        threading.Thread(target=pump_stdout, daemon=True).start()
        threading.Thread(target=pump_stderr, daemon=True).start()
        deadline = time.time() + startup_timeout_s
        while True:
            remaining = deadline - time.time()
            if remaining <= 0:
                proc.kill()
                raise EnvError(f"environment server did not report listening within {startup_timeout_s:.0f}s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                proc.wait(timeout=5)
                tail = "\n".join(stderr_tail[-5:])
                raise EnvError(f"environment server exited with code {proc.returncode} before listening: {tail}")
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(msg, dict) and msg.get("event") == "listening":
                client = cls(msg["url"], msg["token"])
                client.process = proc
                client.stderr_tail = stderr_tail
                # keep draining stdout so the child never blocks on a full pipe
                threading.Thread(target=lambda: [None for _ in iter(lines.get, None)], daemon=True).start()
                return client

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def __enter__(self) -> "EnvClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------ calls
    def _json(self, method: str, path: str, body: dict | None = None) -> dict:
        """One authenticated JSON request; every failure is an EnvError naming the method and path."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:500]
            raise EnvError(f"{method} {path} → HTTP {e.code}: {detail}") from e
        except (urllib.error.URLError, OSError) as e:
            raise EnvError(f"{method} {path} failed: {getattr(e, 'reason', e)}") from e

    def _post(self, path: str, body: dict) -> dict:
        return self._json("POST", path, body)

    def health(self) -> dict:
        return self._json("GET", "/v1/health")

    def search(self, queries: list[str], top_k: int = 3, dialect: str = "coa") -> dict:
        """{"results": [[{id,title,contents,score}]], "observations": [text between the observation tags]}"""
        if not queries:
            return {"results": [], "observations": []}
        return self._post("/v1/tools/search", {"queries": queries, "top_k": top_k, "dialect": dialect})

    def grade(self, records: list[dict], scheme: str = "em", params: dict | None = None, run: str | None = None
              ) -> list[dict]:
        body: dict[str, Any] = {"records": records, "scheme": scheme}
        if params is not None:
            body["params"] = params
        if run is not None:
            body["run"] = run
        return self._post("/v1/grade", body)["breakdowns"]

    def alerts(self, step: int, values: dict, thresholds: dict | None = None, state: dict | None = None,
               heldout: float | None = None) -> dict:
        """The core's agent alerts for one step: {"alerts": [{kind, severity, message}], "state": new state}."""
        body: dict[str, Any] = {"step": step, "values": values, "thresholds": thresholds or {}}
        if state:
            body["state"] = state
        if heldout is not None:
            body["heldout"] = heldout
        return self._post("/v1/alerts", body)

    # ------------------------------------------------------------ OTC-GRPO state (saved in RL checkpoints)
    def export_otc_state(self, run: str) -> dict | None:
        """The run's running per-question minimum of tool calls; None when the run has no state yet."""
        try:
            return self._json("GET", f"/v1/runs/{run}/otc-state")
        except EnvError as e:
            if "HTTP 404" in str(e):
                return None
            raise

    def import_otc_state(self, run: str, state: dict) -> dict:
        return self._json("PUT", f"/v1/runs/{run}/otc-state", state)
