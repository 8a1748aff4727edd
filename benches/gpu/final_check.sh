#!/usr/bin/env bash
# One device call that checks a build end to end: the GPU suite (with
# Perfetto's trace processor when carried), the harness's launch and
# PyTorch workloads against an older build side by side, and a counters
# run with its per-kernel values. Everything lands in $OUT.
#
#   bash benches/gpu/final_check.sh BIN OLD_BIN [REPS]
set -uo pipefail
bin="$1"; old="$2"; reps="${3:-3}"
GPU_TRACE_BIN="$bin" timeout 200 bash gpu-tests/run.sh 2>&1 | tail -26
timeout 300 python3 benches/gpu/harness.py --bin "$bin" --old-bin "$old" --reps "$reps" \
    --workloads launch_1t,launch_4t,torch --modes baseline,gt_gpu,gt_full,gt_gpu_old,gt_full_old \
    --out "${OUT:-.}/harness" 2>&1 | grep -E "^\| (baseline|gt_)|^### " | head -40
w=$(mktemp -d); nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc); "$nvcc" -arch=sm_90 -O2 -o "$w/k" benches/gpu/counters/kernels.cu &&
"$bin/gpu-trace" record -t gpu,counters -o "$w/c.pftrace" -- "$w/k" check 2>&1 | grep -v '^\[' | tail -3 &&
"$bin/gpu-trace" stats "$w/c.pftrace" 2>&1 | sed -n '/Per-kernel counters/,$p' | head -14
