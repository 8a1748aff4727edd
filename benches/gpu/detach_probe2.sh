#!/usr/bin/env bash
# Session 7, call 2: detach_probe.cpp's cycle with the race fixed, and with
# kernels still running at each detach (inflight.cu), with and without a
# forced flush before cuptiFinalize.
#
#   bash benches/gpu/detach_probe2.sh     (writes $OUT/probe2.tar.gz)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/probe2"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/probe2.tar.gz" -C "$w" probe2; rm -rf "$w"' EXIT
cuda=/usr/local/cuda; inc="$cuda/extras/CUPTI/include"; lib="$cuda/targets/x86_64-linux/lib"
nvcc -arch=sm_90 -O2 -o "$w/launch_loop" "$here/launch_loop.cu" &
nvcc -arch=sm_90 -O2 -o "$w/inflight" "$here/inflight.cu" &
nvcc -O2 -shared -Xcompiler -fPIC -o "$w/libprobe.so" "$here/detach_probe.cpp" -I"$inc" -L"$lib" -Xlinker -rpath,"$lib" -lcupti &
wait
p() { env CUDA_INJECTION64_PATH="$w/libprobe.so" PROBE_MODE=cycle "$@"; }
for i in 1 2 3; do
    echo "## launch_loop 3000000, 20 windows of 100 ms, 100 ms apart ($i)"
    p PROBE_CYCLES=20 PROBE_ON_MS=100 PROBE_OFF_MS=100 timeout 60 "$w/launch_loop" 3000000 1 2>&1 | grep -v "window [0-9]*:" ; echo "rc=${PIPESTATUS[0]}"
done
for f in 1 0; do
    echo "## inflight 8 s, 20 windows of 150 ms, 150 ms apart, PROBE_FLUSH=$f"
    p PROBE_FLUSH=$f PROBE_CYCLES=20 PROBE_ON_MS=150 PROBE_OFF_MS=150 timeout 60 "$w/inflight" 8 2>&1 | tail -8; echo "rc=${PIPESTATUS[0]}"
done
