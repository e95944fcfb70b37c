"""The one way a command gets its environment server: the running one it was pointed at (`--env-url`, token from
COA_ENV_TOKEN), or one of its own started for the run's corpus with the run config's `env` settings. Either way the
caller ends it with `client.stop()`, which stops a server only when this process started it (a server it was
pointed at belongs to someone else and keeps running)."""

from __future__ import annotations

from pathlib import Path

from ..base.options import EnvTarget
from ..base.runlayout import corpus_path
from ..contracts.run_config import RunConfig
from .client import EnvClient, EnvError


def open_env(target: EnvTarget, config: RunConfig, run_dir: Path, *, check: bool = False) -> EnvClient:
    """A client of `target`'s server (asked for /v1/health first when `check`, so a wrong url or token fails before
    any work), or of a new server over `run_dir`'s corpus when no url was given."""
    if target.url:
        return connect_env(target, check=check)
    return EnvClient.start(
        corpus_path(config, run_dir), config.dialect, config.env.node, config.env.cli, config.env.startup_timeout_s
    )


def connect_env(target: EnvTarget, *, check: bool = False) -> EnvClient:
    """A client of the running server `target` names (other engines' reward hooks have no run to start one for)."""
    if not target.url:
        raise EnvError("no environment server url given")
    client = EnvClient(target.url, target.token)
    if check:
        client.health()
    return client


def started_here(client: EnvClient) -> bool:
    """Whether this process started the client's server (and so stops it)."""
    return client.process is not None
