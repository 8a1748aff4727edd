#!/usr/bin/env bash
# A build checked end to end on the GPU machine, in one call: the GPU test
# suite (gpu-tests/run.sh; with Perfetto's trace processor when BIN holds
# one), the harness's launch and PyTorch workloads against an older build
# side by side, and a counters run with its per-kernel values. With `user`
# also the commands a new user types first: record a PyTorch training
# script, its summary as a table and as CSV, and Ctrl-C to the process group
# mid-run (exit 130 and a complete trace).
#
#   bash benches/gpu/check_build.sh BIN OLD_BIN [REPS]      (~8 min on the H200)
#
# BIN: this build's gpu-trace, libgpu_trace_cuda.so and gpu-check (see
# gpu-tests/README.md); OLD_BIN: an earlier build's, for the side-by-side
# rows (modes ending in _old); REPS: the harness's repetitions (3).
# STEPS="suite harness counters user" picks the parts (default: all but
# user). Needs nvcc (CUDA 13.0, sm_90) and a python3 with CUDA PyTorch.
# Output on stdout; the harness's tables in $OUT/harness.
#
# Recorded results: docs/src/measurements/overhead.md and counters.md.
set -uo pipefail
bin="$1"; old="$2"; reps="${3:-3}"
here="$(cd "$(dirname "$0")" && pwd)"; root="$(cd "$here/../.." && pwd)"
for step in ${STEPS:-suite harness counters}; do
    case "$step" in
    suite)
        echo "== GPU test suite"
        GPU_TRACE_BIN="$bin" timeout 200 bash "$root/gpu-tests/run.sh" 2>&1 | tail -26
        ;;
    harness)
        echo "== harness: launch loops and torch_mlp, this build and OLD_BIN side by side, $reps repetitions"
        timeout 300 python3 "$here/harness.py" --bin "$bin" --old-bin "$old" --reps "$reps" \
            --workloads launch_1t,launch_4t,torch --modes baseline,gt_gpu,gt_full,gt_gpu_old,gt_full_old \
            --out "${OUT:-.}/harness" 2>&1 | grep -E "^\| (baseline|gt_)|^### |^GPU" | head -40
        ;;
    counters)
        echo "== counters: the default set on counters/kernels.cu check"
        w=$(mktemp -d); nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
        "$nvcc" -arch=sm_90 -O2 -o "$w/k" "$here/counters/kernels.cu" &&
        "$bin/gpu-trace" record -t gpu,counters -o "$w/c.pftrace" -- "$w/k" check 2>&1 | grep -v '^\[' | tail -3 &&
        "$bin/gpu-trace" stats "$w/c.pftrace" 2>&1 | sed -n '/Per-kernel counters/,$p' | head -14
        rm -rf "$w"
        ;;
    user)
        echo "== a new user's first commands: record train.py, stats as a table and as CSV"
        w=$(mktemp -d); gt="$(cd "$bin" && pwd)/gpu-trace"
        (cd "$w" && "$gt" record -- python3 "$here/examples/train.py" >"$w/train.stdout" 2>"$w/train.stderr"); echo "rc=$?"
        cat "$w/train.stderr"; tail -2 "$w/train.stdout"
        f=$(ls -t "$w"/train-*.pftrace | head -1)
        "$gt" stats "$f" 2>&1 | head -40; echo "stats rc=${PIPESTATUS[0]}"
        "$gt" stats --format csv "$f" >"$w/stats.csv" 2>"$w/stats_csv.err"; echo "csv rc=$? lines=$(wc -l <"$w/stats.csv")"
        echo "== Ctrl-C to the process group 10 s into a long run"
        setsid bash -c "exec '$gt' record -o '$w/ctrlc.pftrace' -- python3 '$here/examples/train.py' --steps 100000" \
            >"$w/ctrlc.stdout" 2>"$w/ctrlc.stderr" &
        pid=$!; sleep 10; kill -INT -- -"$pid"; wait "$pid"; echo "launcher rc=$? (130 expected)"
        head -4 "$w/ctrlc.stderr"
        "$gt" stats --strict "$w/ctrlc.pftrace" 2>&1 | grep -E "^Losses|warning" | head -3; echo "stats --strict rc=${PIPESTATUS[0]}"
        rm -rf "$w"
        ;;
    *) echo "unknown step $step (suite harness counters user)"; exit 2 ;;
    esac
done
