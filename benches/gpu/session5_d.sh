#!/usr/bin/env bash
# Session 5, fourth GPU call.
#  1. Two train.py processes at once, each toggled from the moment it
#     appears (full tracing and GPU-only, as session5_a's two that died),
#     45 s, backtrace handler preloaded, RSS every 5 s.
#  2. The harness on the GPT-2 loop: tool-free, paused, 1 s every 20 s,
#     full, interleaved, pinned to CPUs 2-9, under a time limit.
#
#   bash benches/gpu/session5_d.sh BIN     (writes $OUT/s5d.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s5d"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s5d.tar.gz" -C "$w" s5d; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; train="$here/examples/train.py"
gcc -O1 -g -shared -fPIC -o "$w/cb.so" "$here/crash_backtrace.c" -ldl || echo "no backtrace handler"

echo "== 1. two processes toggled from the start, 45 s"
toggled() {  # label, record flags...
    local label="$1"; shift
    LD_PRELOAD="$w/cb.so" PYTHONFAULTHANDLER=1 "$gt" record --paused --no-stats "$@" -o "$o/$label.pftrace" -- \
        python3 "$train" --steps 1000000 --tag "$label" >"$o/$label.txt" 2>&1 &
    local job=$! pid=""
    for _ in $(seq 100); do sleep 0.1; pid=$(pgrep -f "^python3 .*train.py --steps 1000000 --tag $label"); [ -n "$pid" ] && break; done
    local t0=$SECONDS last="" s="" n=0
    while [ $((SECONDS - t0)) -lt 45 ] && kill -0 "$pid" 2>/dev/null; do
        "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
        local e=$(((SECONDS - t0) / 5)); if [ "$e" != "$last" ]; then last=$e; s="$s $(($(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || echo 0) / 1024))"; fi
    done
    local alive; alive=$(kill -0 "$pid" 2>/dev/null && echo yes || echo no)
    kill -TERM "$pid" 2>/dev/null; wait $job; local rc=$?
    echo "$label: $n windows in $((SECONDS - t0)) s; alive at the end: $alive; record rc=$rc; RSS MB every 5 s:$s"
    grep -v "^step" "$o/$label.txt" | head -60
}
toggled full &
toggled gpu -t gpu &
wait

echo "== 2. harness: gpt2"
timeout -s TERM 390 python3 "$here/harness.py" --bin "$bin" --reps 3 --workloads gpt2 --gpt2-steps 1500 \
    --duty 1s/20s --modes baseline,gt_paused_ctl,gt_duty,gt_full --taskset 2-9 --out "$o/harness" >"$o/harness.log" 2>&1
echo "harness rc=$?"; tail -32 "$o/harness.log"
