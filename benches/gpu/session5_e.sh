#!/usr/bin/env bash
# Prepared in session 5, not run (its device time ran out): the emitter-delivery
# change on real CUPTI. Two train.py processes, full tracing, toggled every
# 60 ms from their start for 30 s at once (run 41 hung one such process):
# windows, alive, steps trained, the trace's windows and dangling arrows.
#
#   bash benches/gpu/session5_e.sh BIN     (writes $OUT/s5e.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s5e"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s5e.tar.gz" -C "$w" s5e; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; train="$here/examples/train.py"
toggled() {
    local label="$1"
    "$gt" record --paused --no-stats -o "$o/$label.pftrace" -- python3 "$train" --steps 1000000 --tag "$label" >"$o/$label.txt" 2>&1 &
    local job=$! pid=""
    for _ in $(seq 100); do sleep 0.1; pid=$(pgrep -f "^python3 .*train.py --steps 1000000 --tag $label"); [ -n "$pid" ] && break; done
    local t0=$SECONDS n=0
    while [ $((SECONDS - t0)) -lt 30 ] && kill -0 "$pid" 2>/dev/null; do
        "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
    done
    local alive; alive=$(kill -0 "$pid" 2>/dev/null && echo yes || echo no)
    local steps; steps=$(grep -c "^step" "$o/$label.txt")
    kill -TERM "$pid" 2>/dev/null; wait $job; local rc=$?
    echo "$label: $n windows in $((SECONDS - t0)) s; alive: $alive; loss lines: $steps; rc=$rc"
    "$gt" stats "$o/$label.pftrace" 2>&1 | grep -E "^Recording|point at" | head -3
}
toggled a & toggled b & wait
