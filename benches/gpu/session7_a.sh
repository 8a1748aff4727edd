#!/usr/bin/env bash
# Session 7, call A (ran into the call's time limit: A1's pgrep matched the
# launcher, whose SIGINT a background job ignores; nothing came back; see
# session7_b.sh). CUPTI detached between windows (INJECTION_DETACH, on by
# default), on real CUPTI. Correctness first (train.py switched from outside,
# a kernel still running at each close, two processes toggled fast), then
# what paused costs: empty launches, detached against attached, and the
# harness on torch_mlp (tool-free / paused / 1 s every 20 s).
#
#   bash benches/gpu/session7_a.sh BIN     (writes $OUT/s7a.tar.gz)
set -uo pipefail
t_start=$SECONDS
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s7a"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s7a.tar.gz" -C "$w" s7a; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
nvcc -arch=sm_90 -O2 -o "$w/launch_loop" "$here/launch_loop.cu" &
nvcc -arch=sm_90 -O2 -o "$w/inflight" "$here/inflight.cu" &
wait
q() { "$tp" -q /dev/stdin "$1" 2>/dev/null <<<"$2" | tail -n +2; }

echo "## A1: train.py, paused, two windows from outside (3-5 s, 9-11 s)" | tee -a "$o/a1.txt"
XDG_RUNTIME_DIR="$w" "$gt" record --paused -v -o "$o/a1.pftrace" -- python3 "$here/examples/train.py" --steps 100000 >"$o/a1_run.txt" 2>&1 &
job=$!
sleep 1; pid=""; for _ in $(seq 100); do pid=$(pgrep -f "examples/train.py --steps 100000" | head -1); [ -n "$pid" ] && break; sleep 0.1; done
sleep 2; XDG_RUNTIME_DIR="$w" "$gt" start "$pid" >>"$o/a1.txt" 2>&1
sleep 2; XDG_RUNTIME_DIR="$w" "$gt" stop "$pid" >>"$o/a1.txt" 2>&1
sleep 4; XDG_RUNTIME_DIR="$w" "$gt" start "$pid" >>"$o/a1.txt" 2>&1
sleep 2; XDG_RUNTIME_DIR="$w" "$gt" stop "$pid" >>"$o/a1.txt" 2>&1
sleep 2; kill -INT "$pid"; wait $job; echo "record rc=$?" >>"$o/a1.txt"
grep -E "detach|attached again|stays attached|window|lost|kernels" "$o/a1_run.txt" | grep -v "^step" | tail -30 >>"$o/a1.txt"
"$gt" stats "$o/a1.pftrace" >"$o/a1_stats.txt" 2>&1
grep -E "^Recording|point at|kernels" "$o/a1_stats.txt" | head -5 >>"$o/a1.txt"
cat "$o/a1.txt"

echo "## A2: inflight.cu (200 ms kernels) under --window 500ms --every 2s, detach on and off" | tee -a "$o/a2.txt"
for d in on off; do
    INJECTION_DETACH=$d XDG_RUNTIME_DIR="$w" "$gt" record --window 500ms --every 2s -v -o "$o/a2_$d.pftrace" -- "$w/inflight" 9 >"$o/a2_run_$d.txt" 2>&1
    echo "detach=$d rc=$? $(grep RESULT "$o/a2_run_$d.txt")" >>"$o/a2.txt"
    grep -cE "CUPTI detached" "$o/a2_run_$d.txt" | sed 's/^/  detaches: /' >>"$o/a2.txt"
    grep -E "CUPTI was detached|lost|error" "$o/a2_run_$d.txt" | head -3 >>"$o/a2.txt"
    # Long kernels per window, and those still running at the window's close.
    q "$o/a2_$d.pftrace" "select count(*) as spin, sum(dur > 150e6) as long_full from gpu_slice where name like '%spin%';" >>"$o/a2.txt"
    "$gt" stats "$o/a2_$d.pftrace" 2>&1 | grep -E "^Recording|point at" >>"$o/a2.txt"
done
cat "$o/a2.txt"

echo "## A3: two train.py toggled every 60 ms (session5_e.sh)" | tee -a "$o/a3.txt"
OUT="$o" timeout 100 bash "$here/session5_e.sh" "$bin" >>"$o/a3.txt" 2>&1; echo "rc=$?" >>"$o/a3.txt"
cat "$o/a3.txt"

echo "## B1: launch_loop 1000000 x1 (ns/launch): tool-free, paused detached, paused attached" | tee -a "$o/b1.txt"
for rep in $(seq 8); do
    for m in baseline paused paused_attached; do
        case $m in
            baseline) e=() ;;
            paused) e=(CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_OUTPUT="$w/b1.pftrace" XDG_RUNTIME_DIR="$w") ;;
            paused_attached) e=(CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_DETACH=off INJECTION_OUTPUT="$w/b1.pftrace" XDG_RUNTIME_DIR="$w") ;;
        esac
        v=$(env "${e[@]}" taskset -c 2-9 "$w/launch_loop" 1000000 1 2>>"$o/b1_stderr.txt" | grep -o 'ns_per_launch=[0-9.]*' | cut -d= -f2)
        rm -f "$w"/b1*.pftrace
        echo "launch $m $rep $v" | tee -a "$o/b1.txt"
    done
done

left=$((540 - (SECONDS - t_start)))
echo "## B2: harness torch, tool-free / paused / duty, limit ${left}s" | tee -a "$o/b2.txt"
OUT="$o" bash "$here/windows_cost.sh" "$bin" torch 6 "$left" baseline,gt_paused_ctl,gt_duty >>"$o/b2.txt" 2>&1
tail -20 "$o/b2.txt"
