"""Client for the environment server (`coa env serve`, src/env): starts it as a child process (argument list, no
shell), reads its `{"event":"listening","url","token"}` line, calls /v1/tools/search and /v1/grade, and stops it.
Or attaches to a server that is already running (url + token). Calls keep one HTTP/1.1 connection alive per
thread (rollout workers call from several threads) and reconnect once when the server has dropped it."""

from __future__ import annotations

import http.client
import json
import os
import queue
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..base.core_cli import find_core_cli, find_node
from ..base.errors import CoaError
from ..contracts.env_protocol import (
    AlertsResponse,
    GradeRequest,
    GradeResponse,
    HealthResponse,
    ScanRequest,
    ScanResponse,
    SearchRequest,
    SearchResponse,
)
from ..contracts.error_code import ErrorCode
from ..contracts.record import RewardBreakdown


Answer = TypeVar("Answer", bound=BaseModel)


class EnvError(CoaError):
    """The environment server could not be started or reached, or answered with an error."""

    code = ErrorCode.env_unreachable
    prefix = "environment server: "


class EnvClient:
    def __init__(self, url: str, token: str, timeout_s: float = 60.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.process: subprocess.Popen | None = None
        self.stderr_tail: list[str] = []
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise EnvError(f"environment server url must be http://host:port, got {url!r}")
        self._host, self._port, self._prefix = parsed.hostname, parsed.port or 80, parsed.path
        self._local = threading.local()  # one kept-alive connection per calling thread
        self.connections_opened = 0

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def start(
        cls,
        corpus: str | Path,
        dialect: str = "coa",
        node: str | None = None,
        cli: str | Path | None = None,
        startup_timeout_s: float = 30.0,
        extra_args: list[str] | None = None,
    ) -> "EnvClient":
        node_exe = find_node(node)
        if not node_exe:
            raise EnvError("node not found: put it on PATH or set COA_NODE (the environment server is Node)")
        cli_path, fix = find_core_cli(cli)
        if not cli_path.is_file():
            raise EnvError(f"{cli_path} not found: {fix}")
        if not Path(corpus).is_file():
            raise EnvError(f"corpus {corpus} not found")
        # --parent-pid: the server stops itself when this process dies, even by SIGKILL (no orphaned servers)
        argv = [
            node_exe,
            str(cli_path),
            "env",
            "serve",
            "--corpus",
            str(corpus),
            "--port",
            "0",
            "--dialect",
            dialect,
            "--parent-pid",
            str(os.getpid()),
            *(extra_args or []),
        ]
        # a server of our own gets a fresh random token (it prints it on stdout), not one meant for another server
        env = {k: v for k, v in os.environ.items() if k != "COA_ENV_TOKEN"}
        # glibc gives each of the server's worker threads a malloc arena of its own and, once a large block has been
        # freed, serves the next ones from its heaps, which it seldom gives back: a few failed 22 MB PUTs left hundreds
        # of MB resident for good. Two arenas and large blocks always mapped apart return it (a user's own values are
        # kept; the extension starts the server alike, src/extension/process/envServer.ts).
        for name, value in (("MALLOC_ARENA_MAX", "2"), ("MALLOC_MMAP_THRESHOLD_", "131072")):
            env.setdefault(name, value)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                env=env,
            )
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
                url, token = msg.get("url"), msg.get("token")
                if not (isinstance(url, str) and isinstance(token, str)):
                    proc.kill()
                    # the line is not shown: it may carry the token
                    raise EnvError("environment server's listening line has no url and token strings")
                client = cls(url, token)
                client.process = proc
                client.stderr_tail = stderr_tail
                # keep draining stdout so the child never blocks on a full pipe
                threading.Thread(target=lambda: [None for _ in iter(lines.get, None)], daemon=True).start()
                return client

    def close(self) -> None:
        """Close this thread's kept-alive connection (a later call opens a new one)."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self.close()
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

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ calls
    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, and whether it was already used (so may have been dropped by the server)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s)
        self._local.conn = conn
        self.connections_opened += 1
        return conn, False

    def _exchange(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            **({"Content-Type": "application/json"} if data is not None else {}),
        }
        for attempt in (0, 1):
            conn, reused = self._connection()
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                if resp.will_close:  # the server closes after this answer (e.g. 413, 504): start afresh next time
                    self.close()
                return resp.status, payload
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                self.close()
                # A kept-alive connection the server closed while idle fails before any answer: reconnect once.
                if reused and attempt == 0:
                    continue
                raise EnvError(f"{method} {path} failed: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                self.close()
                raise EnvError(f"{method} {path} failed: {e}") from e
            except BaseException:  # a stop signal mid-call (lifecycle.StageCancelled): the answer is never read,
                self.close()  # so the connection is not reused with it still pending (the checkpoint's next call)
                raise
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One authenticated JSON request; every failure is an EnvError naming the method and path."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        status, payload = self._exchange(method, path, data)
        if not 200 <= status < 300:
            detail = payload.decode("utf-8", "replace")[:500]
            raise EnvError(f"{method} {path} → HTTP {status}: {detail}")
        try:
            return json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise EnvError(f"{method} {path} → HTTP {status} with a non-JSON body: {payload[:200]!r}") from e

    def _call(self, method: str, path: str, body: BaseModel | dict[str, Any] | None, answer: type[Answer]) -> Answer:
        """A call of the contract: the request built from its generated class (or, where a dump of the class would
        lose what the core requires, its checked JSON), the answer parsed into its class (contracts/env_protocol.py,
        from src/env/protocol.ts), so a drift between the two sides is an error here."""
        data = body.model_dump(mode="json", exclude_none=True) if isinstance(body, BaseModel) else body
        raw = self._json(method, path, data)
        try:
            return answer.model_validate(raw)
        except ValidationError as e:
            raise EnvError(
                f"{method} {path}: the answer is not the protocol's {answer.__name__} "
                f"({str(e).splitlines()[0]}): server and trainer from different builds?"
            ) from e

    def health(self) -> HealthResponse:
        return self._call("GET", "/v1/health", None, HealthResponse)

    def search(self, queries: list[str], top_k: int = 3, dialect: str = "coa") -> SearchResponse:
        """Per query its passages (`results`) and the observation text a rollout appends (`observations`)."""
        if not queries:
            return SearchResponse(results=[], observations=[])
        request = SearchRequest.model_validate({"queries": queries, "top_k": top_k, "dialect": dialect})
        return self._call("POST", "/v1/tools/search", request, SearchResponse)

    def observations(self, queries: list[str], top_k: int, dialect: str) -> list[str | None]:
        """The search tool as a rollout calls it: one observation per query, all None when the call failed — a failed
        call is an observation-less turn the agent metrics count as tool failures, never the end of a rollout."""
        try:
            return list(self.search(queries, top_k=top_k, dialect=dialect).observations)
        except Exception:  # noqa: BLE001 — whatever went wrong, the rollout goes on without observations
            return [None] * len(queries)

    def grade(
        self,
        records: list[dict[str, Any]],
        scheme: str = "em",
        params: dict[str, Any] | None = None,
        run: str | None = None,
    ) -> list[RewardBreakdown]:
        """One breakdown per record (the grader's reward parts and total), in the records' order."""
        try:
            request = GradeRequest.model_validate({"records": records, "scheme": scheme, "params": params, "run": run})
        except ValidationError as e:
            raise EnvError(
                f"POST /v1/grade: not a grade request ({str(e).splitlines()[0]}: "
                f"{e.errors()[0]['loc']} {e.errors()[0]['msg']})"
            ) from e
        breakdowns = self._call("POST", "/v1/grade", request, GradeResponse).breakdowns
        # Callers pair breakdowns with records by position: a short or long answer would drop or misplace grades.
        if len(breakdowns) != len(records):
            raise EnvError(f"POST /v1/grade: {len(breakdowns)} breakdowns for {len(records)} records (one per record)")
        return breakdowns

    def alerts(
        self,
        step: int,
        values: dict[str, float],
        thresholds: dict[str, Any] | None = None,
        state: dict[str, Any] | None = None,
        heldout: float | None = None,
    ) -> AlertsResponse:
        """The core's agent alerts for one step: the alerts that start at it and the monitor's new state."""
        body: dict[str, Any] = {
            "step": step,
            "values": values,
            "thresholds": thresholds or {},
            **({"state": state} if state else {}),
            **({"heldout": heldout} if heldout is not None else {}),
        }
        return self._call("POST", "/v1/alerts", body, AlertsResponse)

    def scan(self, records: list[dict[str, Any]], params: dict[str, Any] | None = None) -> ScanResponse:
        """The core's reward-hacking scanners over one step's graded records (each with its "reward"): counts,
        metrics ({"scan_<rule>": n}), the flagged records' indices and findings, how many were scanned."""
        body: dict[str, Any] = {"records": records, **({"params": params} if params else {})}
        try:
            ScanRequest.model_validate(body)
        except ValidationError as e:
            raise EnvError(f"POST /v1/scan: not a scan request ({str(e).splitlines()[0]})") from e
        # sent as given: a dump of the class would drop the breakdowns' nulls (optimal_tool_calls) the core requires
        return self._call("POST", "/v1/scan", body, ScanResponse)

    # ------------------------------------------------------------ OTC-GRPO state (saved in RL checkpoints)
    def export_otc_state(self, run: str) -> dict[str, Any] | None:
        """The run's running per-question minimum of tool calls; None when the run has no state yet."""
        try:
            return self._json("GET", f"/v1/runs/{run}/otc-state")
        except EnvError as e:
            if "HTTP 404" in str(e):
                return None
            raise

    def import_otc_state(self, run: str, state: dict[str, Any]) -> dict[str, Any]:
        return self._json("PUT", f"/v1/runs/{run}/otc-state", state)
