#!/usr/bin/env bash
# Session 7, call C: a detach after each window while a 200 ms kernel still
# runs at its close (inflight.cu, --window 500ms --every 3s, flushes every
# 200 ms so that the drain is looked at within the pause), detach on and
# off; then more empty-launch repetitions (session7_b.sh's B1).
#
#   bash benches/gpu/session7_c.sh BIN [REPS]
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"; reps="${2:-4}"
w="$(mktemp -d)"; trap 'rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
export XDG_RUNTIME_DIR="$w"
nvcc -arch=sm_90 -O2 -o "$w/launch_loop" "$here/launch_loop.cu" &
nvcc -arch=sm_90 -O2 -o "$w/inflight" "$here/inflight.cu" &
wait
q() { "$tp" -q /dev/stdin "$1" 2>/dev/null <<<"$2" | tail -n +2; }
echo "## C1: inflight.cu 13 s under --window 500ms --every 3s, INJECTION_FLUSH_PERIOD_MS=200"
for d in on off; do
    INJECTION_DETACH=$d INJECTION_FLUSH_PERIOD_MS=200 timeout -s KILL 40 "$gt" record --window 500ms --every 3s -v -o "$w/c1_$d.pftrace" -- "$w/inflight" 13 >"$w/c1_$d.txt" 2>&1
    echo "  detach=$d rc=$? $(grep RESULT "$w/c1_$d.txt")"
    echo "  detaches: $(grep -c 'CUPTI detached' "$w/c1_$d.txt"), attaches: $(grep -c 'attached again' "$w/c1_$d.txt"); $(grep -E 'CUPTI detached' "$w/c1_$d.txt" | head -2 | tr '\n' ' ')"
    grep -E "CUPTI was detached|stays attached|lost|panic|error|violation" "$w/c1_$d.txt" | head -4
    echo "  spin kernels, of 150 ms or more, ending after their window closed:"
    q "$w/c1_$d.pftrace" "select count(*), sum(dur > 150e6) from gpu_slice where name like '%spin%';"
    "$gt" stats "$w/c1_$d.pftrace" 2>&1 | grep -E "^Recording|point at" | head -3
done
echo "## B1: launch_loop 1000000 x1 (ns/launch), $reps reps"
for rep in $(seq "$reps"); do
    for m in baseline paused paused_attached; do
        case $m in
            baseline) e=() ;;
            paused) e=(CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_OUTPUT="$w/b1.pftrace") ;;
            paused_attached) e=(CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_DETACH=off INJECTION_OUTPUT="$w/b1.pftrace") ;;
        esac
        v=$(env "${e[@]}" timeout -s KILL 30 taskset -c 2-9 "$w/launch_loop" 1000000 1 2>/dev/null | grep -o 'ns_per_launch=[0-9.]*' | cut -d= -f2)
        rm -f "$w"/b1*.pftrace
        echo "launch $m $((rep + 4)) $v"
    done
done
echo "## done at $SECONDS s"
