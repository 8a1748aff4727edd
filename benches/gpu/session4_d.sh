#!/usr/bin/env bash
# Session 4, last GPU call: telemetry's cost with the two cadences on
# train.py, then the harness on the GPT-2 loop (tool-free / paused /
# 1s every 20s / full, 3 interleaved reps; a time limit summarises the
# runs that finished).
#
#   bash benches/gpu/session4_d.sh BIN     (writes $OUT/d.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/d"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/d.tar.gz" -C "$w" d; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"
echo "== telemetry cost on train.py"
"$gt" record -v -o "$w/train.pftrace" -- python3 "$here/examples/train.py" --steps 300 >/dev/null 2>"$o/train.stderr"; echo "rc=$?"
grep -E "gpu-trace telemetry" "$o/train.stderr"
"$gt" stats --report telemetry "$w/train.pftrace" >"$o/train_telemetry.txt" 2>&1; head -30 "$o/train_telemetry.txt"
echo "== harness: GPT-2 loop"
timeout 320 python3 "$here/harness.py" --bin "$bin" --reps 3 --workloads gpt2 --gpt2-steps 1400 --duty 1s/20s \
  --modes baseline,gt_paused_ctl,gt_duty,gt_full --out "$o/harness" 2>&1 | tee "$o/harness.log" | grep -vE "^\s*$"
