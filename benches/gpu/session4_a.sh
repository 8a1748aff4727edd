#!/usr/bin/env bash
# Session 4, first GPU call: what this session changed, checked on the H200.
#  1. NVML: each telemetry reading's cost, and the injection's fast round.
#  2. Counters under kernel replay: every placed kernel survives Perfetto's
#     trace processor now that its record is flushed at the launch's exit.
#  3. Unified memory (the managed case) and allocations, through gpu-tests.
#  4. Recording windows toggled 100 times (cudaProfilerStart/Stop, NVTX
#     ranges, and from outside through the socket): exact contents, no leak.
#  5. Telemetry's steady cost on train.py; the GPT-2 loop's step time.
#
#   bash benches/gpu/session4_a.sh BIN     (writes $OUT/a.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/a"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/a.tar.gz" -C "$w" a; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"; gt="$bin/gpu-trace"
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
tpstats() { sql "$1" "select name, idx, value from stats where value > 0 and (name like 'sorter%' or name like '%lost%' or name like '%drop%' or severity in ('error','data_loss'))"; }
say() { echo "== $*"; }

say "1. NVML costs (idle GPU)"
"$bin/nvml_cost" 500 2>&1 | tee "$o/nvml_cost.txt"

say "2. counters under kernel replay: placed kernels in Perfetto's trace processor"
$cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/kernels" "$here/counters/kernels.cu" || exit 1
K="$w/kernels"
M3="sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum"
kr() {  # label, trace args..., -- program
    local label="$1"; shift
    "$gt" record --no-stats -v -o "$o/$label.pftrace" "$@" >"$o/$label.txt" 2>&1; echo "$label rc=$?"
    grep -E "profiled;|GPU timestamps|replay failed|missing|EXPECT" "$o/$label.txt" | grep -v '^\[' | head -4
    echo "$label TP kernels: $(sql "$o/$label.pftrace" "select count(*) from gpu_slice where name not like 'Memcpy%' and name not like 'Memset%'")"
    echo "$label TP stats: $(tpstats "$o/$label.pftrace")"
}
INJECTION_COUNTERS_REPLAY=kernel kr kr_three_300 -t gpu,counters -m "$M3" -- "$K" many 300
kr kr_default_100 -t gpu,counters -- "$K" many 100
kr kr_default_threads -t gpu,counters -- "$K" threads 4 25
kr user_three_1000 -t gpu,counters -m "$M3" -- "$K" many 1000

say "3. unified memory and allocations (gpu-tests/activity.sh)"
GPU_TRACE_BIN="$bin" timeout 150 bash gpu-tests/activity.sh 2>&1 | tail -45 | tee "$o/activity.txt"

say "4. windows toggled 100 times"
$cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl || exit 1
T="$w/toggles"
echo "no tool: $("$T" profiler 100 5 3 | tr '\n' ' ')"
tog() {  # label, capture range, mode
    "$gt" record -o "$o/$1.pftrace" --capture-range "$2" -- "$T" "$3" 100 5 3 >"$o/$1.txt" 2>&1; echo "$1 rc=$?"
    grep -E "LEAK|EXPECT|^gpu-trace:" "$o/$1.txt" | head -8
    echo "$1 TP kernels: $(sql "$o/$1.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
    echo "$1 TP stats: $(tpstats "$o/$1.pftrace")"
    "$gt" stats "$o/$1.pftrace" 2>&1 | grep -iE "window|recorded" | head -3
}
tog toggles_profiler cudaProfilerApi profiler
tog toggles_nvtx nvtx:win nvtx
say "4b. 100 toggles from outside (gpu-trace start/stop) on train.py"
"$gt" record --paused -o "$o/socket.pftrace" -- python3 "$here/examples/train.py" --steps 100000 >"$o/socket.txt" 2>&1 &
rec=$!
for _ in $(seq 50); do sleep 0.2; pid=$(pgrep -f "^python3 .*examples/train.py" | head -1); [ -n "$pid" ] && "$gt" status "$pid" >/dev/null 2>&1 && break; done
echo "status: $("$gt" status "$pid" 2>&1)"; rss0=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
ok=0
for i in $(seq 100); do "$gt" start "$pid" >/dev/null 2>&1 && ok=$((ok+1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03; done
rss1=$(awk '/VmRSS/{print $2}' /proc/$pid/status); echo "starts ok: $ok of 100; RSS kB before $rss0 after $rss1; fds $(ls /proc/$pid/fd | wc -l) threads $(ls /proc/$pid/task | wc -l)"
kill -INT "$pid"; wait $rec; echo "record rc=$? (Ctrl-C to the program)"; grep -E "^gpu-trace:|EXPECT" "$o/socket.txt" | tail -5
"$gt" stats "$o/socket.pftrace" 2>&1 | grep -iE "window|recorded" | head -3
echo "socket TP stats: $(tpstats "$o/socket.pftrace")"

say "5. telemetry's steady cost on train.py; GPT-2 loop step time"
"$gt" record -v -o "$o/train.pftrace" -- python3 "$here/examples/train.py" --steps 300 >/dev/null 2>"$o/train.stderr"; echo "rc=$?"
grep -E "gpu-trace telemetry" "$o/train.stderr"
"$gt" stats "$o/train.pftrace" >"$o/train_stats.txt" 2>&1; head -60 "$o/train_stats.txt"
python3 "$here/gpt2_train.py" --steps 120 2>&1 | grep RESULT
