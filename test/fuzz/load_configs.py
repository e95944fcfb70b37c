"""The trainer's config loader over the fuzz's config files (test/fuzz/run.ts): one JSON line per file on stdout,
`{"verdict": "ok" | "error" | "internal", "message": …}` — `error` is the trainer's ConfigError (a clean refusal),
`internal` anything else (a traceback the user would see). Usage: python load_configs.py <file>… (or @list.txt)."""

import json
import sys
import traceback

from coa_trainer.base.config import ConfigError, load_config


def main(argv: list[str]) -> None:
    files = [
        line for a in argv for line in (open(a[1:], encoding="utf-8").read().splitlines() if a.startswith("@") else [a])
    ]
    out = sys.stdout
    for f in files:
        try:
            load_config(f)
            row = {"verdict": "ok", "message": None}
        except ConfigError as e:
            row = {"verdict": "error", "message": str(e)[:500]}
        except BaseException as e:  # noqa: BLE001 — every other exception is what the fuzz looks for
            row = {"verdict": "internal", "message": "".join(traceback.format_exception(e))[-1500:]}
        out.write(json.dumps(row) + "\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
