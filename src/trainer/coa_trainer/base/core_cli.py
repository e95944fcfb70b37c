"""Where the CoA Studio CLI is (`dist/cli.js`: the environment server and the core's data importers, both Node).
The trainer never re-implements the core; it runs this program: the run config's `env.cli` when it names one, else
COA_CLI, else the build of the checkout the package sits in (an installed package, `pip install ./src/trainer`, has
none: it is told where the CLI is by one of the first two)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# src/trainer/coa_trainer/base/core_cli.py → the repository root, when the package sits in a checkout
_CHECKOUT = Path(__file__).resolve().parents[4]


def checkout_root() -> Path | None:
    """The repository this package sits in (it has the CLI's package.json), or None when installed elsewhere."""
    return _CHECKOUT if (_CHECKOUT / "package.json").is_file() and (_CHECKOUT / "src" / "core").is_dir() else None


def find_node(node: str | None) -> str | None:
    """The node executable: the config's `env.node`, else COA_NODE, else PATH."""
    return node or os.environ.get("COA_NODE") or shutil.which("node")


def find_core_cli(cli: str | Path | None) -> tuple[Path, str]:
    """(the CLI's path, what to do when it is not there). `cli`: the run config's env.cli (made absolute against the
    config file's directory when the config is loaded), else COA_CLI (relative: to the working directory), else the
    checkout's dist/cli.js."""
    given = cli or os.environ.get("COA_CLI")
    root = checkout_root()
    if given:
        path = Path(given)
        fix = (
            "point env.cli in the run config (relative: to the config file) or COA_CLI at the CoA Studio CLI "
            "(dist/cli.js of a build)"
        )
    elif root is not None:
        path = root / "dist" / "cli.js"
        fix = "build it (npm run build), or set COA_CLI to a built CLI"
    else:
        path = Path("dist") / "cli.js"
        fix = "point env.cli in the run config, or COA_CLI, at the CoA Studio CLI (dist/cli.js of a build)"
    return path, fix
