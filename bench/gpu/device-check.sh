#!/usr/bin/env bash
# The bench/gpu device check, ON a lent GPU machine (the device tool's `run`), from the repository root, after
# bench/gpu/prepare-device.sh here (it says what to carry). At most 7.6 minutes (455 s of limits) in all; every step has its
# own time limit and writes its results as it goes, so a step cut short loses only itself. Into $OUT (7 files):
#   env.txt              the GPU (nvidia-smi) and the Python stack actually used
#   check.json           bench/gpu/check.py: engine graphs = reference loop, Liger = chunked loss, varlen = padded
#   gpu-<shape>.json     bench/gpu/run.py: ours, the reference loop and HF generate (dynamic cache); RL steps; SFT
#   gpu-<shape>-anchors.json   the compiled HF generate (static cache + torch.compile), the HF + Liger SFT step and GRPO update,
#                        in their own process (compilation is slow; Liger patches transformers' classes)
#   log.txt              every step's output tail and exit status
set -uo pipefail
OUT=${OUT:-$PWD/.cache/device-out}
mkdir -p "$OUT"
log="$OUT/log.txt"
: > "$log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  >> "$log" 2>&1 || { echo "wheel install failed" >> "$log"; exit 3; }
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import sys, torch, transformers, liger_kernel, pydantic, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__, 'pydantic', pydantic.__version__)"
} > "$OUT/env.txt" 2>&1
start=$(date +%s)

step() {  # step <seconds> <name> <command…>: run with a limit, keep the tail of its output and its exit status
  local limit=$1 name=$2
  shift 2
  timeout "$limit" "$@" > "$OUT/.step.txt" 2>&1
  local rc=$?
  { echo "=== $name: exit $rc after $(( $(date +%s) - start )) s"; tail -n 25 "$OUT/.step.txt"; } >> "$log"
  rm -f "$OUT/.step.txt"
}

step 45 check python3 bench/gpu/check.py --out "$OUT/check.json"
# ours: SFT first (its targets need no anchor to be read), then decode and the RL steps; 1.5B gets the longer limit
for spec in 0.5b:110 1.5b:150; do
  shape=${spec%:*}
  step "${spec#*:}" "ours $shape" python3 bench/gpu/run.py --device cuda --shape "$shape" --threads 8 \
    --data .cache/bench-gpu/data --only sft,decode,multi,rl --out "$OUT/gpu-$shape.json"
  step 75 "anchors $shape" python3 bench/gpu/run.py --device cuda --shape "$shape" --threads 8 \
    --only anchor-sft,anchor-rl,anchor-decode --out "$OUT/gpu-$shape-anchors.json"
done
echo "=== total $(( $(date +%s) - start )) s" >> "$log"
