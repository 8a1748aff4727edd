#!/usr/bin/env bash
# Python call sites on the GPU: what `-t python` costs the PyTorch MLP loop
# (torch_mlp.py) and the GPT-2 loop (gpt2_train.py), and whether the
# matmul kernels name the model's forward line.
#
#   bash benches/gpu/callsites_cost.sh BIN [REPS]     (writes $OUT/callsites.tar.gz)
#
# BIN holds release builds of gpu-trace, libgpu_trace_cuda.so and
# gpu-check. Needs nvcc (the harness builds its other workloads), a
# python3 with CUDA PyTorch and transformers, and 10 CPUs.
#  1. harness.py, REPS (default 4) repetitions, each running tool-free,
#     full tracing (gt_full: gpu,api,nvtx) and full tracing with call sites
#     (gt_python: gpu,api,nvtx,python) side by side, in separate processes,
#     pinned to CPUs 2-9;
#  2. one traced run of each loop with call sites, kept, summarised by
#     `gpu-trace stats --report python --format json`;
#     its LAYOUT line: the layout self-check's outcome (PyTorch launches
#     with the GIL released, so their stacks are read by layout);
#  3. callsites_check.py: the COST lines (gt_python against tool-free and
#     against gt_full; target: at most +3% over gt_full), the CALLSITES
#     lines (the innermost frame of the matmul kernels) and the VERDICT.
# About 5 minutes on an H200.
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"; reps="${2:-4}"
for f in gpu-trace libgpu_trace_cuda.so gpu-check; do
    [ -e "$bin/$f" ] || { echo "$bin/$f missing" >&2; exit 2; }
done
w="$(mktemp -d)"; o="$w/callsites"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/callsites.tar.gz" -C "$w" callsites; rm -rf "$w"' EXIT
python3 "$here/harness.py" --bin "$bin" --reps "$reps" --workloads torch,gpt2 \
    --torch-steps "${TORCH_STEPS:-300}" --gpt2-steps "${GPT2_STEPS:-60}" \
    --modes baseline,gt_full,gt_python --taskset 2-9 --out "$o/harness" >"$o/harness.log" 2>&1
echo "harness rc=$?"; tail -12 "$o/harness.log"
reports=()
for wl in torch gpt2; do
    case "$wl" in
        torch) prog=("$here/torch_mlp.py" --steps 60) ;;
        gpt2) prog=("$here/gpt2_train.py" --steps 20) ;;
    esac
    (cd "$here" && env CUDA_INJECTION64_PATH="$bin/libgpu_trace_cuda.so" INJECTION_VERBOSE=1 \
        INJECTION_TRACE=gpu,api,python INJECTION_OUTPUT="$o/$wl.pftrace" \
        python3 "${prog[@]}") >"$o/$wl.log" 2>&1 || { echo "$wl traced run failed:"; tail -5 "$o/$wl.log"; }
    "$bin/gpu-trace" stats --report python --format json "$o/$wl.pftrace" >"$o/$wl-python.json" 2>>"$o/$wl.log" \
        && reports+=("$wl=$o/$wl-python.json")
    "$bin/gpu-trace" stats --report python "$o/$wl.pftrace" 2>/dev/null | head -16 >"$o/$wl-python.txt"
    # PyTorch launches with the GIL released: their stacks are read by
    # layout once the self-check matched; its one line, or none.
    echo "LAYOUT $wl: $(grep -h 'read by layout' "$o/$wl.log" | head -1)"
done
python3 "$here/callsites_check.py" "$o/harness/results.json" "${reports[@]}"
