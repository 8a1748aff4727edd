#!/usr/bin/env bash
# Session 7, call B: session7_a.sh's correctness part again, each step
# bounded in time and reported as it goes (call A's pgrep matched the
# launcher, a background job ignores SIGINT, and the call ran out of time
# with nothing back). Then empty launches: tool-free, paused detached,
# paused attached.
#
#   bash benches/gpu/session7_b.sh BIN [REPS]   (writes $OUT/s7b.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"; reps="${2:-4}"
w="$(mktemp -d)"; o="$w/s7b"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s7b.tar.gz" -C "$w" s7b; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
export XDG_RUNTIME_DIR="$w"
nvcc -arch=sm_90 -O2 -o "$w/launch_loop" "$here/launch_loop.cu" &
nvcc -arch=sm_90 -O2 -o "$w/inflight" "$here/inflight.cu" &
wait
q() { "$tp" -q /dev/stdin "$1" 2>/dev/null <<<"$2" | tail -n +2; }
ctl() { echo "  [$SECONDS s] gpu-trace $*: $(timeout 15 "$gt" "$@" 2>&1)"; }
# Ends job $1 (pid $2 of the program): SIGINT, then TERM, then KILL.
end() {
    kill -INT "$2" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$2" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$1" 2>/dev/null && { echo "  STILL RUNNING after INT and TERM: threads:"; for t in /proc/"$2"/task/*; do echo "   $(cat "$t/comm") $(cat "$t/wchan")"; done; kill -KILL "$2"; }
    wait "$1"; echo "  [$SECONDS s] record rc=$?"
}

echo "## A1: train.py, paused, two windows from outside"
timeout -s KILL 60 "$gt" record --paused -v -o "$o/a1.pftrace" -- python3 "$here/examples/train.py" --steps 100000 >"$o/a1_run.txt" 2>&1 &
job=$!; pid=""
for _ in $(seq 100); do pid=$(pgrep -f "^python3 .*examples/train.py --steps 100000" | head -1); [ -n "$pid" ] && break; sleep 0.1; done
echo "  program pid $pid"
sleep 4; ctl status "$pid"; ctl start "$pid"; sleep 2; ctl stop "$pid"; sleep 4; ctl status "$pid"
ctl start "$pid"; sleep 2; ctl stop "$pid"; sleep 2
end "$job" "$pid"
grep -E "detach|attached again|stays attached|window|lost|panic|error" "$o/a1_run.txt" | head -20
grep -c "^step\|loss" "$o/a1_run.txt" | sed 's/^/  output lines with steps: /'
timeout 60 "$gt" stats "$o/a1.pftrace" 2>&1 | grep -E "^Recording|point at|lost|Kernels" | head -5

echo "## A2: inflight.cu (200 ms kernels) under --window 500ms --every 2s, detach on and off"
for d in on off; do
    INJECTION_DETACH=$d timeout -s KILL 40 "$gt" record --window 500ms --every 2s -v -o "$o/a2_$d.pftrace" -- "$w/inflight" 9 >"$o/a2_run_$d.txt" 2>&1
    echo "  detach=$d rc=$? $(grep RESULT "$o/a2_run_$d.txt")"
    echo "  detaches: $(grep -c 'CUPTI detached' "$o/a2_run_$d.txt"), attaches: $(grep -c 'attached again' "$o/a2_run_$d.txt")"
    grep -E "CUPTI was detached|lost|panic|error" "$o/a2_run_$d.txt" | head -3
    echo "  spin kernels, those of 150 ms or more: $(q "$o/a2_$d.pftrace" "select count(*), sum(dur > 150e6) from gpu_slice where name like '%spin%';")"
    timeout 60 "$gt" stats "$o/a2_$d.pftrace" 2>&1 | grep -E "^Recording|point at" | head -3
done

echo "## B1: launch_loop 1000000 x1 (ns/launch), $reps reps"
for rep in $(seq "$reps"); do
    for m in baseline paused paused_attached; do
        case $m in
            baseline) e=() ;;
            paused) e=(CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_OUTPUT="$w/b1.pftrace") ;;
            paused_attached) e=(CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_DETACH=off INJECTION_OUTPUT="$w/b1.pftrace") ;;
        esac
        v=$(env "${e[@]}" timeout -s KILL 30 taskset -c 2-9 "$w/launch_loop" 1000000 1 2>>"$o/b1_stderr.txt" | grep -o 'ns_per_launch=[0-9.]*' | cut -d= -f2)
        rm -f "$w"/b1*.pftrace
        echo "launch $m $rep $v"
    done
done
echo "## done at $SECONDS s"
