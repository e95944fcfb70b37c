#!/usr/bin/env bash
# The bench/gpu device check, ON a lent GPU machine (the device tool's `run`), from the repository root, after
# bench/gpu/prepare-device.sh here (it says what to carry). Run it first on any lent GPU.
#
# One global deadline (DEADLINE seconds from the start, 420 by default: a task's device time is 15 minutes, the
# machine's start included) and each part in its own process under its own limit, never past the deadline: a part
# cut short loses only itself, a part that cannot get 20 s is skipped and says so. Every part warms up (compiles,
# captures) before its timed calls, inside its own limit (run.py). The parts, most needed first:
#   check                bench/gpu/check.py: the compiled engine = reference loop, Liger = chunked loss, varlen = padded
#   decode 0.5b          ours (the compiled engine) at two batches + decode_ops_per_layer at 0.5B (profiler kernels)
#   anchor-decode 0.5b   HF generate, static cache + torch.compile (a cold inductor compile: its own, longer limit)
#   rl 0.5b              the RL step twice, the second's generate / train split (and with graphs warm)
#   anchor-rl 0.5b       HF + Liger GRPO update of the same shape
#   sft 1.5b, anchor-sft 1.5b, sft 0.5b, decode 1.5b, anchor-decode 1.5b, multi 0.5b
# Into $OUT: env.txt (the GPU and the Python stack actually used), check.json, gpu-<shape>-<part>.json (each part's
# result, written after every section: a part cut short keeps what it measured), log.txt (each part's exit status,
# seconds and output tail). Back here: `.venv/bin/python bench/gpu/results.py <files_at>/gpu-0.5b-*.json` (and 1.5b).
#
# Dry run here, on CPU at the tiny shape (no wheels, no check.py: its checks need CUDA; the same parts, limits and
# deadline): DEVICE=cpu OUT=/tmp/device-dry DEADLINE=300 bash bench/gpu/device-check.sh
# Env: DEADLINE (s), SCALE (every part's limit × SCALE), PARTS (space-separated names to run, default all).
set -uo pipefail
DEVICE=${DEVICE:-cuda}
DEADLINE=${DEADLINE:-420}
SCALE=${SCALE:-1}
OUT=${OUT:-$PWD/.cache/device-out}
mkdir -p "$OUT"
log="$OUT/log.txt"
: > "$log"
start=$(date +%s)
if [ "$DEVICE" = cuda ]; then
  PY=python3
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >> "$log" 2>&1 || { echo "wheel install failed" >> "$log"; exit 3; }
  export PYTHONPATH=/tmp/site
  small=0.5b big=1.5b threads=8
else
  PY=${PY:-.venv/bin/python}
  export PYTHONPATH=$PWD/src/trainer
  small=tiny big=tiny threads=1
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
{
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  "$PY" -c "import sys, torch, transformers, peft; print(sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__)"
  "$PY" -c "import liger_kernel, triton; print('liger-kernel', getattr(liger_kernel, '__version__', '?'), 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1

done=""
left() { echo $(( start + DEADLINE - $(date +%s) )); }

part() {  # part <own limit s> <name> <command…>: min(own limit × SCALE, what the deadline leaves), output tail kept
  local own=$(( $1 * SCALE )) name=$2 rest
  shift 2
  if [ -n "${PARTS:-}" ] && [[ " $PARTS " != *" $name "* ]]; then return; fi
  if [[ "$done" == *"|$name|"* ]]; then return; fi  # the dry run's shapes are one: each part once
  done="$done|$name|"
  rest=$(left)
  local limit=$(( own < rest ? own : rest ))
  if (( limit < 20 )); then
    echo "=== $name: skipped, $rest s left of the $DEADLINE s deadline" >> "$log"
    return
  fi
  local t0
  t0=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$OUT/.part.txt" 2>&1
  local rc=$?
  local why=""
  (( rc == 124 || rc == 137 )) && why=" (cut at its limit of $limit s)"
  { echo "=== $name: exit $rc$why, $(( $(date +%s) - t0 )) s, at $(( $(date +%s) - start )) s of $DEADLINE"
    tail -n 25 "$OUT/.part.txt"; } >> "$log"
  rm -f "$OUT/.part.txt"
}

bench() {  # bench <own limit> <shape> <sections> <file part>
  part "$1" "$4 $2" "$PY" bench/gpu/run.py --device "$DEVICE" --shape "$2" --threads "$threads" \
    --data .cache/bench-gpu/data --only "$3" --out "$OUT/gpu-$2-$4.json"
}

if [ "$DEVICE" = cuda ]; then
  part 90 check "$PY" bench/gpu/check.py --out "$OUT/check.json"
else
  echo "=== check: not run (bench/gpu/check.py's checks need CUDA; the CPU tests cover the same paths)" >> "$log"
fi
bench 120 "$small" decode,ops decode
bench 150 "$small" anchor-decode anchor-decode
bench 90 "$small" rl rl
bench 60 "$small" anchor-rl anchor-rl
bench 90 "$big" sft sft
bench 60 "$big" anchor-sft anchor-sft
bench 60 "$small" sft sft
bench 90 "$big" decode decode
bench 150 "$big" anchor-decode anchor-decode
bench 60 "$small" multi multi
echo "=== total $(( $(date +%s) - start )) s of $DEADLINE" >> "$log"
