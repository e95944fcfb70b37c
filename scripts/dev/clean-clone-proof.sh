#!/bin/bash
# Developer aid (proof that a fresh clone works on its own): clones this checkout into an empty directory with nothing beside it and runs, in
# sequence, what a new user runs — `npm install`, `npm run demo`, then `npm test` four times: twice as it is, once
# with OMP_NUM_THREADS=1, once with 2. One line per step (exit status, seconds) in LOGS/summary.txt, each step's
# output in LOGS/<step>.log.
# Keep the machine otherwise quiet while it runs (~80 min on 2 cores): contention changes e2e timings.
# Usage: scripts/dev/clean-clone-proof.sh [DIR] [LOGS]   (defaults: a new /tmp/coa-proof.XXXX/coa-studio, alone in its
# directory, and a new /tmp/coa-proof-logs.XXXX)
set -u
src=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
dir=${1:-$(mktemp -d /tmp/coa-proof.XXXX)/coa-studio}
logs=${2:-$(mktemp -d /tmp/coa-proof-logs.XXXX)}
mkdir -p "$(dirname "$dir")" "$logs"
git clone -q "$src" "$dir" || exit 1
cd "$dir" || exit 1
echo "start $(date +%H:%M:%S) $(git log --oneline -1)" > "$logs/summary.txt"
step() {
  local name=$1 start rc
  shift
  start=$(date +%s)
  "$@" > "$logs/$name.log" 2>&1
  rc=$?
  echo "$name exit=$rc $(( $(date +%s) - start ))s $(date +%H:%M:%S)" >> "$logs/summary.txt"
}
step install npm install
step demo npm run demo
step test1 npm test
step test2 npm test
step test-omp1 env OMP_NUM_THREADS=1 npm test
step test-omp2 env OMP_NUM_THREADS=2 npm test
echo "done $(date +%H:%M:%S)" >> "$logs/summary.txt"
cat "$logs/summary.txt"
