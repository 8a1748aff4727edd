#!/usr/bin/env bash
# Session 4, second GPU call:
#  1. NVML: GPM's compute cost by metric count; the probe's GPM rounds apart.
#  2. Windows toggled 100 times again: cudaProfilerApi windows now marked,
#     the NVTX range that closes a window ended; 100 toggles from outside
#     with the RSS taken after window 10 and after window 100.
#  3. The harness on the GPT-2 training loop: tool-free, paused (socket on),
#     `--window 1s --every 20s`, and full tracing, interleaved, 3 reps; runs
#     long enough (about 25 s timed) to hold one scheduled window.
#
#   bash benches/gpu/session4_b.sh BIN     (writes $OUT/b.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/b"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/b.tar.gz" -C "$w" b; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"; gt="$bin/gpu-trace"
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
tpstats() { sql "$1" "select name, idx, value from stats where value > 0 and (name like 'sorter%' or name like '%lost%' or name like '%drop%' or severity in ('error','data_loss'))"; }
say() { echo "== $*"; }

say "1. NVML and GPM costs"
"$bin/nvml_cost" 500 2>&1 | tee "$o/nvml_cost.txt"

say "2. windows toggled 100 times"
$cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl || exit 1
T="$w/toggles"
tog() {  # label, capture range, mode
    "$gt" record -t gpu,api,markers -o "$o/$1.pftrace" --capture-range "$2" -- "$T" "$3" 100 5 3 >"$o/$1.txt" 2>&1; echo "$1 rc=$?"
    grep -E "LEAK|EXPECT|unterminated|lost" "$o/$1.txt" | head -4
    echo "$1 TP kernels: $(sql "$o/$1.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
    echo "$1 TP windows: $(sql "$o/$1.pftrace" "select count(*) from gpu_slice where name = 'INFO'") log lines; stats: $(tpstats "$o/$1.pftrace")"
    "$gt" stats "$o/$1.pftrace" 2>&1 | grep -iE "^Recording windows" | head -2
}
tog toggles_profiler cudaProfilerApi profiler
tog toggles_nvtx nvtx:win nvtx
say "2b. 100 toggles from outside (gpu-trace start/stop) on train.py, warmed up first"
"$gt" record --paused -o "$o/socket.pftrace" -- python3 "$here/examples/train.py" --steps 100000 >"$o/socket.txt" 2>&1 &
rec=$!
for _ in $(seq 60); do sleep 0.2; pid=$(pgrep -f "^python3 .*examples/train.py" | head -1); [ -n "$pid" ] && "$gt" status "$pid" >/dev/null 2>&1 && break; done
sleep 6
rss() { awk '/VmRSS/{print $2}' "/proc/$pid/status"; }
echo "paused, warmed up: RSS $(rss) kB"
ok=0
for i in $(seq 100); do
    "$gt" start "$pid" >/dev/null 2>&1 && ok=$((ok+1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
    [ "$i" = 10 ] && r10=$(rss)
done
r100=$(rss); echo "starts ok: $ok of 100; RSS kB after window 10: $r10, after window 100: $r100; fds $(ls /proc/$pid/fd | wc -l) threads $(ls /proc/$pid/task | wc -l)"
kill -INT "$pid"; wait $rec; echo "record rc=$? (train.py exits 130 on Ctrl-C)"
"$gt" stats "$o/socket.pftrace" 2>&1 | grep -iE "^Recording windows" | head -2
echo "socket TP stats: $(tpstats "$o/socket.pftrace")"

say "3. harness: GPT-2 loop, tool-free / paused / 1s every 20s / full, 3 reps"
timeout 420 python3 "$here/harness.py" --bin "$bin" --reps 3 --workloads gpt2 --gpt2-steps 1750 --duty 1s/20s \
  --modes baseline,gt_paused_ctl,gt_duty,gt_full --out "$o/harness" 2>&1 | grep -E "^\| |^### |^GPU" | head -20
