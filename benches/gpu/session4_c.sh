#!/usr/bin/env bash
# Session 4, third GPU call:
#  1. Does toggling from outside leak? train.py's RSS every second for 24 s
#     after it appears: without the tool, paused and never switched, and
#     switched on and off continuously (gpu-trace start/stop, about 12
#     windows a second), traced fully and GPU work only.
#  2. The harness on the GPT-2 loop: tool-free / paused / 1s every 20s /
#     full, 3 interleaved reps, about 20 s timed each (one scheduled window).
#
#   bash benches/gpu/session4_c.sh BIN     (writes $OUT/c.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/c"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/c.tar.gz" -C "$w" c; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"
say() { echo "== $*"; }

say "0. NVML costs"; "$bin/nvml_cost" 300 2>&1 | tee "$o/nvml_cost.txt"
say "1. RSS (MB, every second from when train.py appears)"
series() {  # label, toggle (0/1), command...
    local label="$1" toggle="$2"; shift 2
    "$@" >"$o/$label.txt" 2>&1 &
    local job=$! pid="" s=""
    for _ in $(seq 100); do sleep 0.1; pid=$(pgrep -f "^python3 .*examples/train.py" | head -1); [ -n "$pid" ] && break; done
    local t0=$SECONDS n=0
    while [ $((SECONDS - t0)) -lt 24 ]; do
        if [ "$toggle" = 1 ]; then
            "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
        else
            sleep 0.1
        fi
        local e=$((SECONDS - t0))
        if [ "$e" != "${last:-}" ]; then last=$e; s="$s $(($(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || echo 0) / 1024))"; fi
    done
    kill -INT "$pid" 2>/dev/null; wait $job
    echo "$label (windows opened: $n):$s"
    unset last
}
series bare 0 python3 "$here/examples/train.py" --steps 100000
series paused 0 "$gt" record --paused --no-stats -o "$w/p.pftrace" -- python3 "$here/examples/train.py" --steps 100000
series toggled_full 1 "$gt" record --paused --no-stats -o "$w/t.pftrace" -- python3 "$here/examples/train.py" --steps 100000
series toggled_gpu 1 "$gt" record --paused --no-stats -t gpu -o "$w/g.pftrace" -- python3 "$here/examples/train.py" --steps 100000
series full 0 "$gt" record --no-stats -o "$w/f.pftrace" -- python3 "$here/examples/train.py" --steps 100000
ls -la "$w"/*.pftrace | awk '{print $5, $9}'

say "2. harness: GPT-2 loop, 3 reps"
timeout 450 python3 "$here/harness.py" --bin "$bin" --reps 3 --workloads gpt2 --gpt2-steps 1400 --duty 1s/20s \
  --modes baseline,gt_paused_ctl,gt_duty,gt_full --out "$o/harness" >"$o/harness.log" 2>&1
echo "harness rc=$?"; tail -25 "$o/harness.log"
