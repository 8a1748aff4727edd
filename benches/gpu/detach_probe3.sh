#!/usr/bin/env bash
# Session 7, call 3: are the kernels still running at a detach delivered
# complete (a forced flush, then cuptiFinalize, at an API exit)?
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; w="$(mktemp -d)"
cuda=/usr/local/cuda; inc="$cuda/extras/CUPTI/include"; lib="$cuda/targets/x86_64-linux/lib"
nvcc -arch=sm_90 -O2 -o "$w/inflight" "$here/inflight.cu" &
nvcc -O2 -shared -Xcompiler -fPIC -o "$w/libprobe.so" "$here/detach_probe.cpp" -I"$inc" -L"$lib" -Xlinker -rpath,"$lib" -lcupti &
wait
env CUDA_INJECTION64_PATH="$w/libprobe.so" PROBE_MODE=cycle PROBE_CYCLES=25 PROBE_ON_MS=150 PROBE_OFF_MS=150 timeout 60 "$w/inflight" 14 2>&1; echo "rc=$?"
rm -rf "$w"
