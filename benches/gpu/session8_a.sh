#!/usr/bin/env bash
# Session 8, call A: CUPTI detached between socket windows, on the H200.
#  1. 100 windows by `gpu-trace start/stop` from inside the program
#     (toggles.cu socket mode), each followed by 800 ms of driver calls so
#     that CUPTI detaches after every window and attaches for the next:
#     every k_inside (20 a window, the last still running at the stop) in
#     the trace, no k_outside, RSS/fds/threads after window 10 and 100.
#     Then the same with no gap (windows open while a detach is pending),
#     and with INJECTION_DETACH=off.
#  2. session7_c.sh: a detach after windows that close while a 200 ms
#     kernel runs (inflight.cu), detach on and off, and empty-launch reps.
#
#   bash benches/gpu/session8_a.sh BIN     (writes $OUT/s8a.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s8a"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s8a.tar.gz" -C "$w" s8a; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
export XDG_RUNTIME_DIR="$w" GPU_TRACE="$gt"
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
tpstats() { sql "$1" "select name, idx, value from stats where value > 0 and (name like 'sorter%' or name like '%lost%' or name like '%drop%' or severity in ('error','data_loss'))"; }
say() { echo "== $* (at $SECONDS s)"; }
timeout 120 $cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl || exit 1

say "1. 100 socket windows from inside the program"
tog() {  # label, gap ms, extra env
    local label=$1 gap=$2; shift 2
    env "$@" timeout -s KILL 150 "$gt" record --paused -v -t gpu,api,nvtx -o "$o/$label.pftrace" -- "$w/toggles" socket 100 20 20 "$gap" >"$o/$label.txt" 2>&1
    echo "$label rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/$label.txt" | tr '\n' ' ')"
    echo "  detaches: $(grep -c 'CUPTI detached (time' "$o/$label.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/$label.txt"), stays: $(grep -c 'stays attached' "$o/$label.txt")"
    grep -E "CUPTI was detached|lost|panic|violation|cannot" "$o/$label.txt" | head -4
    echo "  TP kernels: $(sql "$o/$label.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
    echo "  TP stats: $(tpstats "$o/$label.pftrace")"
    "$gt" stats "$o/$label.pftrace" 2>&1 | grep -E "^Recording|point at|^Losses" | head -3
}
tog socket_gap800 800
tog socket_gap0 0
tog socket_gap50_off 50 INJECTION_DETACH=off

say "2. session7_c: inflight drains, launch loop"
timeout -s KILL 200 bash "$here/session7_c.sh" "$bin" 3 2>&1 | tee "$o/s7c.txt"
say "done"
