#!/usr/bin/env bash
# Next session, call A (prepared in session 9, not yet run):
#  1. The detach limit on real CUPTI (d25186a): toggles.cu, 150 socket
#     windows with 500 ms of driver calls after each, INJECTION_DETACH=25:
#     25 detaches, then "CUPTI stays attached from now on"; exactly the
#     3,000 k_inside and no k_outside; RSS flat after the limit (run 52:
#     +2.5-3.3 MB every 50 detach cycles; without detaching run 48 grew
#     ~1 MB over 90 windows).
#  2. (the same call, after it) more torch_mlp windows for the duty
#     cycle's cost inside the process (duty_excess.py: runs 52-55 gave
#     +0.93% +- 0.90% of the period over 20 windows; the target allows
#     1.7%; ~45 more windows would put the interval inside it):
#       INPROCESS=1 STEPS=28000 TAG=e bash benches/gpu/windows_cost.sh \
#           gpu-tests/bin torch 2 480 gt_duty,baseline
#
#   bash benches/gpu/session10_a.sh BIN   (~2 min; writes $OUT/s10a.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s10a"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s10a.tar.gz" -C "$w" s10a; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
export XDG_RUNTIME_DIR="$w" GPU_TRACE="$gt"
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
say() { echo "== $* (at $SECONDS s)"; }
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
timeout 120 $cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl || exit 1

say "1. the detach limit: 150 socket windows, INJECTION_DETACH=25"
INJECTION_DETACH=25 timeout -s KILL 200 "$gt" record --paused -v -t gpu,api,nvtx -o "$o/limit.pftrace" -- "$w/toggles" socket 150 20 20 500 >"$o/limit.txt" 2>&1
echo "rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/limit.txt" | tr '\n' ' ')"
grep -E "^RSS after" "$o/limit.txt" | tr '\n' ' '; echo
echo "detaches: $(grep -c 'CUPTI detached (time' "$o/limit.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/limit.txt")"
grep -m1 "stays attached from now on" "$o/limit.txt"
echo "TP kernels: $(sql "$o/limit.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
echo "TP log: $(sql "$o/limit.pftrace" "select substr(display_value, 1, 400) from slice join args using(arg_set_id) where key = 'message' and display_value like 'CUPTI was detached%'")"
rm -f "$o/limit.pftrace"
say "1 done"
