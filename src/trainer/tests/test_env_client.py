"""The Python environment client against the real server: one kept-alive connection per thread, a new one
when the server has dropped it, and errors that name the method and path."""

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from coa_trainer.env.client import EnvClient, EnvError
from conftest import needs_env_server

pytestmark = needs_env_server()

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "data" / "search-r1" / "corpus_example.jsonl"


class Relay:
    """A TCP relay in front of the server: counts connections and can drop them all (as an idle timeout would)."""

    def __init__(self, port: int):
        self.port_out = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inbound, _ = self.listener.accept()
            except OSError:
                return
            outbound = socket.create_connection(("127.0.0.1", self.port_out))
            with self.lock:
                self.connections += 1
                self.sockets += [inbound, outbound]
            for a, b in ((inbound, outbound), (outbound, inbound)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop_all(self) -> None:
        with self.lock:
            for s in self.sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.sockets.clear()

    def close(self) -> None:
        self.listener.close()
        self.drop_all()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    corpus = tmp_path_factory.mktemp("env") / "corpus.jsonl"  # its index is written beside it, not in the repo
    corpus.write_bytes(CORPUS.read_bytes())
    with EnvClient.start(corpus, "coa") as env:
        yield env


def test_the_server_runs_with_few_malloc_arenas_and_large_blocks_mapped_apart(server):
    """Memory the server freed goes back to the system only with few glibc arenas and large blocks mapped apart
    (a user's own values are kept)."""
    environ = open(f"/proc/{server.process.pid}/environ", "rb").read().split(b"\0")
    assert f"MALLOC_ARENA_MAX={os.environ.get('MALLOC_ARENA_MAX', '2')}".encode() in environ
    assert f"MALLOC_MMAP_THRESHOLD_={os.environ.get('MALLOC_MMAP_THRESHOLD_', '131072')}".encode() in environ


def test_calls_share_one_connection_per_thread_and_reconnect_after_a_drop(server):
    port = int(server.url.rsplit(":", 1)[1])
    relay = Relay(port)
    client = EnvClient(f"http://127.0.0.1:{relay.port}", server.token)
    try:
        for _ in range(10):
            assert client.search(["Evan Morris"], top_k=1).results[0][0].id == "0"
        assert client.health().passages == 10
        assert relay.connections == 1 and client.connections_opened == 1

        relay.drop_all()  # the server side goes away while the client keeps its socket
        assert client.health().passages == 10
        assert relay.connections == 2 and client.connections_opened == 2

        # Threads each get their own connection, kept across their calls.
        errors: list[BaseException] = []

        def worker() -> None:
            try:
                for _ in range(5):
                    client.search(["Pavia Cathedral"], top_k=1)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert client.connections_opened == 6
    finally:
        client.close()
        relay.close()


def test_errors_name_method_path_and_status(server):
    with pytest.raises(EnvError, match=r"POST /v1/tools/search → HTTP 400: .*top_k"):
        server._json("POST", "/v1/tools/search", {"queries": ["x"], "top_k": 0})
    assert server.export_otc_state("never-graded") is None
    bad = EnvClient(server.url, "wrong-token")
    with pytest.raises(EnvError, match="HTTP 401"):
        bad.health()
    with pytest.raises(EnvError, match="must be http://"):
        EnvClient("https://127.0.0.1:1", "t")
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(EnvError, match="GET /v1/health failed"):
        EnvClient(f"http://127.0.0.1:{port}", "t").health()


def test_a_listening_line_without_url_and_token_strings_is_refused_without_showing_it(tmp_path):
    """A server of another build announcing itself with a listening line of another shape: an EnvError that does not
    repeat the line (it may carry the token), and the process is stopped rather than left running."""
    other_build = tmp_path / "other-build.js"
    other_build.write_text(
        "console.log(JSON.stringify({ event: 'listening', url: 8080, token: 'secret-token-1234' }));\n"
        "setInterval(() => {}, 1000);\n",
        encoding="utf-8",
    )
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(CORPUS.read_bytes())
    started = set(_node_children())
    with pytest.raises(EnvError, match="listening line has no url and token strings") as caught:
        EnvClient.start(corpus, cli=other_build, startup_timeout_s=30)
    assert "secret-token-1234" not in str(caught.value)
    # SIGKILL lands asynchronously: the child is gone (a zombie) within moments, not at the instant start() raises
    deadline = time.monotonic() + 10
    while set(_node_children()) - started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(_node_children()) - started == set(), "the server of another build was left running"


def _node_children() -> list[int]:
    """This process's live child processes, from /proc (zombies left out: a killed child not yet reaped is not
    running)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out
