#!/usr/bin/env bash
# Compiles the CUDA test programs in parallel.
#
#   bash gpu-tests/build.sh [OUT_DIR]        (default: gpu-tests/build)
#
# Environment:
#   CUDA_ROOT    default /usr/local/cuda-13.0, else /usr/local/cuda
#   NVCC         default $CUDA_ROOT/bin/nvcc, else nvcc on PATH
#   GPU_ARCH     default sm_90
#   NVCC_FLAGS   extra flags for every program (e.g. -L for a pip toolkit)
# Prints one line per program and exits non-zero if any failed; each
# compiler's output is in OUT_DIR/<program>.build.log.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/build}"
cuda="${CUDA_ROOT:-/usr/local/cuda-13.0}"
[ -d "$cuda" ] || cuda=/usr/local/cuda
nvcc="${NVCC:-$cuda/bin/nvcc}"
[ -x "$nvcc" ] || nvcc="$(command -v nvcc || true)"
arch="${GPU_ARCH:-sm_90}"
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "build: nvcc not found (set NVCC or CUDA_ROOT)" >&2
    exit 1
fi
mkdir -p "$out"
# -lcuda: the driver's libcuda.so, or the toolkit's stub (same soname,
# libcuda.so.1, so the real driver is loaded at run time).
drv="-lcuda"
for d in "$cuda/lib64/stubs" "$cuda/targets/x86_64-linux/lib/stubs"; do
    [ -d "$d" ] && drv="-L$d $drv"
done

# program  source  extra flags
programs=(
    "empty_kernels empty_kernels.cu"
    "memops memops.cu"
    "graph graph.cu"
    "graph_copies graph_copies.cu"
    "launch_paths launch_paths.cu $drv"
    "launch_paths_ptsz launch_paths.cu --default-stream per-thread $drv"
    "nosync_exit nosync_exit.cu"
    "device_reset device_reset.cu"
    "nvtx nvtx.cu -ldl"
    "multi_stream_sync multi_stream_sync.cu"
    "occupancy occupancy.cu"
    "multi_context multi_context.cu $drv"
    "capture_range capture_range.cu $drv"
    "alloc alloc.cu $drv"
    "managed managed.cu"
)

pids=()
names=()
for p in "${programs[@]}"; do
    read -r name src extra <<<"$p"
    # shellcheck disable=SC2086
    ( "$nvcc" -arch="$arch" -O2 -std=c++17 -lineinfo ${NVCC_FLAGS:-} -o "$out/$name" "$here/cuda/$src" $extra \
        >"$out/$name.build.log" 2>&1 ) &
    pids+=("$!")
    names+=("$name")
done
fail=0
for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
        echo "built ${names[$i]}"
    else
        echo "BUILD FAILED ${names[$i]} (see $out/${names[$i]}.build.log):"
        sed 's/^/    /' "$out/${names[$i]}.build.log" | head -30
        fail=1
    fi
done
exit "$fail"
