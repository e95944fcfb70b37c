#!/usr/bin/env bash
# Prepare bench/gpu/device-check.sh for a lent GPU machine. Run HERE (a machine with the repo's .venv, node and
# PyPI), from anywhere; it writes only ignored paths:
#   .whl/                                   wheels of the pure-Python pins the device image lacks or has older
#                                           (its image: torch 2.11, transformers 5.17 and a peft built against it, no
#                                           pydantic/jsonschema/liger)
#   src/trainer/coa_trainer/contracts/json  the generated contracts (npm run build), checked, not rebuilt
#   .cache/bench-gpu/data                   the embedded benchmark with the environment server's observations
#                                           (observations.json: the device has no node to run the server)
# Then, with the device tool: run(command="bash bench/gpu/device-check.sh", timeout_s=480,
#   carry=[".whl", "src/trainer/coa_trainer/contracts/json", ".cache/bench-gpu/data"])
# and, back here, `.venv/bin/python bench/gpu/results.py <files_at>/gpu-0.5b-*.json` (and 1.5b) to write the sections.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python

grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir -p .whl
# the pins (requirements.txt) and, for their own dependencies, the versions this .venv runs the tests with
pinned() { grep -i "^$1==" src/trainer/requirements.txt; }
frozen() { "$PY" -m pip freeze 2>/dev/null | grep -i "^$1=="; }
# peft too: Liger's monkey_patch imports it, and the image's peft was built against its older transformers
pkgs=("$(pinned transformers)" "$(pinned peft)" "$(pinned liger-kernel)" "$(pinned pydantic)" "$(pinned jsonschema)"
      "$(frozen pydantic_core)" "$(frozen annotated-types)" "$(frozen typing-inspection)" "$(frozen typing_extensions)"
      "$(frozen jsonschema-specifications)" "$(frozen referencing)" "$(frozen rpds-py)" "$(frozen regex)"
      "$(frozen tokenizers)")
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${pkgs[@]}"

test -f src/trainer/coa_trainer/contracts/json/run-config.schema.json || { echo "run npm run build first" >&2; exit 2; }
"$PY" -m coa_trainer data --out .cache/bench-gpu/data >/dev/null
test -f .cache/bench-gpu/data/observations.json
du -sh .whl src/trainer/coa_trainer/contracts/json .cache/bench-gpu/data
ls .whl
