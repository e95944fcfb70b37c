"""Where the CoA Studio CLI is (`dist/cli.js`: the environment server and the core's data importers, both Node).
The trainer never re-implements the core; it runs this program. A trainer inside a checkout of the repository finds
the checkout's build; one installed elsewhere (`pip install ./src/trainer`) is told where it is: the run config's
`env.cli`, or COA_CLI."""

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
    """(the CLI's path, what to do when it is not there). `cli`: the config's env.cli (absolute, relative to the
    working directory, or relative to the checkout), else COA_CLI, else the checkout's dist/cli.js."""
    given = cli or os.environ.get("COA_CLI") or "dist/cli.js"
    path = Path(given)
    root = checkout_root()
    if not path.is_absolute() and not path.exists() and root is not None:
        path = root / path
    if root is not None:
        fix = "build it (npm run build)"
    else:
        fix = "point env.cli in the run config, or COA_CLI, at the CoA Studio CLI (dist/cli.js of a build)"
    return path, fix
