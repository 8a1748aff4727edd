#!/usr/bin/env bash
# Does a complete trace of 10,000,000 launches repeat? 10,000,000 empty
# kernels from T threads under `gpu-trace record` with default settings,
# REPS times, with CUPTI's buffer statistics (verbose), the writer's own
# summary line, peak RSS and wall time; one untraced run first. With
# BIG_STATS=1 also `gpu-trace stats --strict` on each trace, with its time
# and peak memory.
#
#   bash benches/gpu/big_reps.sh BIN [THREADS] [REPS]     (defaults 8 3)
#
# BIN holds gpu-trace and libgpu_trace_cuda.so. Needs nvcc and CUPTI (CUDA
# 13.0, sm_90) and ~2 GB of disk for a trace.
# BIG_KERNELS sets the count. Recorded results and the machine they ran on:
# docs/src/measurements/lossless.md and stats.md.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "$1" && pwd)"
t="${2:-8}"
reps="${3:-3}"
n="${BIG_KERNELS:-10000000}"
work="$(mktemp -d -t bigreps.XXXXXX)"
trap 'rm -rf "$work"' EXIT
python3 "$here/harness.py" --build-only "$work/b" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
loop="$work/b/launch_loop"
echo "== untraced, $t threads"
python3 "$here/maxrss.py" "$loop" "$n" "$t" 2>&1 | tail -2
for r in $(seq 1 "$reps"); do
    echo "== traced, $t threads, repetition $r"
    INJECTION_VERBOSE=1 python3 "$here/maxrss.py" "$bin/gpu-trace" record --no-stats -o "$work/t.pftrace" -- "$loop" "$n" "$t" >"$work/v.txt" 2>&1
    echo "rc=$?"
    grep -v "^\[" "$work/v.txt" | grep -E "CUPTI buffers|incomplete|RESULT|MAXRSS"
    grep -a -o "gpu-trace summary: [a-z_=0-9 ]*" "$work/t.pftrace" | tail -1
    grep -a -o "gpu-trace dropped: [a-z_=0-9 ]*" "$work/t.pftrace" | tail -1
    if [ -n "${BIG_STATS:-}" ]; then
        # What a user sees: the summary's header and its verdict.
        python3 "$here/maxrss.py" "$bin/gpu-trace" stats --strict "$work/t.pftrace" >"$work/s.txt" 2>"$work/s.err"
        echo "stats --strict rc=$?"; head -3 "$work/s.txt"; grep -A3 "GPU kernels" "$work/s.txt" | tail -2; cat "$work/s.err"
    fi
    rm -f "$work/t.pftrace"
done
