#!/usr/bin/env bash
# Next session, call A (prepared in session 8, not yet run): whose memory
# grows with each CUPTI detach and attach, and does it level off?
#  1. The bare probe (detach_probe.cpp, no gpu-trace): 300 windows of 20 ms,
#     50 ms apart, on launch_loop; its RSS after each window.
#  2. gpu-trace: toggles.cu socket, 200 windows, 500 ms of driver calls
#     after each (a detach and an attach per window); RSS every 50 windows.
#  3. The detaches' stall budget on inflight.cu (200 ms kernels, 500 ms
#     every 3 s): a ~195 ms detach, then CUPTI stays attached after the
#     next windows (0.5% of 13 s is 65 ms).
#
#   bash benches/gpu/session9_a.sh BIN     (writes $OUT/s9a.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s9a"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s9a.tar.gz" -C "$w" s9a; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
export XDG_RUNTIME_DIR="$w" GPU_TRACE="$gt"
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
inc="$cuda/extras/CUPTI/include"; lib="$cuda/targets/x86_64-linux/lib"
say() { echo "== $* (at $SECONDS s)"; }
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
timeout 120 $cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl &
timeout 120 $cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/launch_loop" "$here/launch_loop.cu" &
timeout 120 $cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/inflight" "$here/inflight.cu" &
timeout 120 $cuda/bin/nvcc -O2 -shared -Xcompiler -fPIC -o "$w/libprobe.so" "$here/detach_probe.cpp" -I"$inc" -L"$lib" -Xlinker -rpath,"$lib" -lcupti &
wait

say "1. bare probe: 300 detach cycles"
CUDA_INJECTION64_PATH="$w/libprobe.so" PROBE_MODE=cycle PROBE_CYCLES=300 PROBE_ON_MS=20 PROBE_OFF_MS=50 \
    timeout -s KILL 90 "$w/launch_loop" 12000000 1 >"$o/probe.txt" 2>&1; echo "rc=$?"
grep -E "window (0|9|49|99|149|199|249|299):|cycles done|NOT DONE|failed" "$o/probe.txt" | sed -E 's/launches [0-9]+, kernel records [0-9]+ \([^)]*\), //'

say "2. gpu-trace: 200 socket windows, a detach and an attach each"
timeout -s KILL 200 "$gt" record --paused -v -t gpu,api,nvtx -o "$o/socket.pftrace" -- "$w/toggles" socket 200 20 20 500 >"$o/socket.txt" 2>&1
echo "rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/socket.txt" | tr '\n' ' ')"
grep -E "^RSS after" "$o/socket.txt" | tr '\n' ' '; echo
echo "detaches: $(grep -c 'CUPTI detached (time' "$o/socket.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/socket.txt")"
echo "TP kernels: $(sql "$o/socket.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
rm -f "$o/socket.pftrace"

say "3. the stall budget: inflight.cu, 500 ms every 3 s, 13 s"
INJECTION_FLUSH_PERIOD_MS=200 timeout -s KILL 40 "$gt" record --window 500ms --every 3s -v -o "$o/inflight.pftrace" -- "$w/inflight" 13 >"$o/inflight.txt" 2>&1
echo "rc=$? $(grep RESULT "$o/inflight.txt")"
grep -E "CUPTI detached|attached again|held the application|stays attached|lost" "$o/inflight.txt" | head -8
"$gt" stats "$o/inflight.pftrace" 2>&1 | grep -E "^Recording|^Losses" | head -2
rm -f "$o/inflight.pftrace"
say "done"
