#!/usr/bin/env bash
# GPU smoke test for the `cupti` crate. Needs an NVIDIA GPU, the driver, nvcc
# and CUPTI 13; Rust is NOT needed here: the example binary is built elsewhere
#   cargo build --release --example gpu_smoke   # -> target/release/examples/gpu_smoke
#
# Usage (from the repository root):
#   bash cupti/tests/gpu/run.sh [path/to/gpu_smoke]
# Environment:
#   CUDA_ROOT              default /usr/local/cuda-13.0
#   NVCC                   default $CUDA_ROOT/bin/nvcc, else nvcc on PATH
#   GPU_TRACE_CUPTI_PATH   default $CUDA_ROOT/targets/x86_64-linux/lib/libcupti.so.13
#   SMOKE_ARCH             default sm_90
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cuda="${CUDA_ROOT:-/usr/local/cuda-13.0}"
nvcc="${NVCC:-$cuda/bin/nvcc}"
[ -x "$nvcc" ] || nvcc="$(command -v nvcc || true)"
bin="${1:-$root/target/release/examples/gpu_smoke}"
cupti="${GPU_TRACE_CUPTI_PATH:-$cuda/targets/x86_64-linux/lib/libcupti.so.13}"
arch="${SMOKE_ARCH:-sm_90}"
out="${SMOKE_OUT:-$(mktemp -d)}"

fail() { echo "FAIL: $*"; exit 1; }
[ -n "$nvcc" ] && [ -x "$nvcc" ] || fail "nvcc not found (set NVCC or CUDA_ROOT)"
[ -x "$bin" ] || fail "example binary not found at $bin (cargo build --release --example gpu_smoke)"
[ -e "$cupti" ] || fail "libcupti not found at $cupti (set GPU_TRACE_CUPTI_PATH)"

echo "== building smoke.cu with $nvcc -arch=$arch"
"$nvcc" -arch="$arch" -O2 -shared -Xcompiler -fPIC -o "$out/libgpu_trace_smoke.so" "$here/smoke.cu" \
    || fail "nvcc build of smoke.cu"
echo "PASS: built $out/libgpu_trace_smoke.so"

echo "== running $bin"
GPU_TRACE_CUPTI_PATH="$cupti" "$bin" "$out/libgpu_trace_smoke.so"
rc=$?
if [ "$rc" -eq 0 ]; then echo "PASS: gpu_smoke"; else echo "FAIL: gpu_smoke exited $rc"; fi
exit "$rc"
