#!/usr/bin/env bash
# Session 5, third GPU call.
#  1. train.py under socket toggling from the moment the process appears (as
#     in session5_a, where two such processes died after ~14 s; session5_b,
#     which waited 8 s before toggling, saw none die), with a backtrace
#     handler preloaded (crash_backtrace.c; no gdb there) and Python's
#     faulthandler; RSS every second with an 8 MiB trace buffer (does RSS
#     level off once the buffer is full?).
#  2. The harness on torch_mlp: tool-free, paused, 1 s every 20 s, full,
#     interleaved, pinned to CPUs 2-9, under a time limit that still
#     summarises.
#
#   bash benches/gpu/session5_c.sh BIN     (writes $OUT/s5c.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s5c"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s5c.tar.gz" -C "$w" s5c; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; train="$here/examples/train.py"
say() { echo "== $*"; }
lscpu | grep -E "^CPU\(s\)|NUMA|Model name|Thread" ; nproc
gcc -O1 -g -shared -fPIC -o "$w/cb.so" "$here/crash_backtrace.c" -ldl || echo "no backtrace handler"

say "1. toggling from the start, 40 s"
LD_PRELOAD="$w/cb.so" PYTHONFAULTHANDLER=1 INJECTION_BUFFER_SIZE=8192 \
    "$gt" record --paused --no-stats -o "$o/t.pftrace" -- python3 "$train" --steps 1000000 >"$o/t.txt" 2>&1 &
job=$!; pid=""
for _ in $(seq 100); do sleep 0.1; pid=$(pgrep -nx python3); [ -n "$pid" ] && break; done
t0=$SECONDS; last=""; s=""; n=0
while [ $((SECONDS - t0)) -lt 40 ] && kill -0 "$pid" 2>/dev/null; do
    "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
    e=$((SECONDS - t0)); if [ "$e" != "$last" ]; then last=$e; s="$s $(($(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || echo 0) / 1024))"; fi
done
echo "windows: $n in $((SECONDS - t0)) s; alive: $(kill -0 "$pid" 2>/dev/null && echo yes || echo no); RSS MB:$s"
kill -TERM "$pid" 2>/dev/null; wait $job; echo "record rc=$?"
grep -v "^step" "$o/t.txt" | head -80
"$gt" stats "$o/t.pftrace" 2>&1 | grep -E "^Recording|^Losses|^Span|unterminated|point at" | head -6

say "2. harness: torch_mlp"
timeout -s TERM 470 python3 "$here/harness.py" --bin "$bin" --reps 4 --workloads torch --torch-steps 7000 \
    --duty 1s/20s --modes baseline,gt_paused_ctl,gt_duty,gt_full --taskset 2-9 --out "$o/harness" >"$o/harness.log" 2>&1
echo "harness rc=$?"; cat "$o/harness.log" | tail -40
