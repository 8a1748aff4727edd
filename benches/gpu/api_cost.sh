#!/usr/bin/env bash
# Where the cost of tracing API calls goes: the host's clock source and what
# clock_gettime costs there; which callback domain's correlation ids CUPTI
# puts on kernels launched through the runtime (runtime, driver or both:
# why gpu-trace records the driver layer); and CUPTI's features priced one
# by one with the bare floor injection (harness.py's cfg_* modes: a
# subscriber, the timestamp callback, launch callbacks per domain, API
# activity records) beside gpu-trace's GPU-only, full and runtime-layer
# modes, on the launch loops (100,000 launches) and torch_mlp.
#
#   bash benches/gpu/api_cost.sh BIN     (~10 min; results under $OUT/api-cost)
#
# BIN holds gpu-trace and libgpu_trace_cuda.so. Needs gcc, nvcc and CUPTI
# (CUDA 13.0, sm_90) and a python3 with CUDA PyTorch.
# PROBE_LAUNCH_REPS and PROBE_TORCH_REPS set the repetitions (5 each).
# Recorded results: docs/src/measurements/overhead.md.
set -u
BIN=${1:-gpu-tests/bin}
OUT=${OUT:-api-cost-results}
R=$OUT/api-cost
mkdir -p "$R"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d -t gt-probe-XXXX)
{
  echo "== host"; nproc; cat /sys/devices/system/clocksource/clocksource0/current_clocksource
  lscpu | grep -E 'Model name|NUMA|Socket|MHz' ; nvidia-smi topo -m | head -5
  cat > "$W/clk.c" <<'C'
#include <stdio.h>
#include <time.h>
int main(void) {
  struct timespec t, a, b; long n = 2000000;
  clockid_t ids[] = {CLOCK_BOOTTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW};
  const char* names[] = {"BOOTTIME", "MONOTONIC", "MONOTONIC_RAW"};
  for (int k = 0; k < 3; k++) {
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) clock_gettime(ids[k], &t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("clock_gettime(%s): %.1f ns\n", names[k], ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  }
  return 0;
}
C
  gcc -O2 -o "$W/clk" "$W/clk.c" && "$W/clk"
} > "$R/host.txt" 2>&1
cat "$R/host.txt"

# Correlation ids: the floor library and the launch loop, built as the
# harness builds them.
python3 "$HERE/harness.py" --build-only "$W" || exit 1
{
  for cb in runtime driver both; do
    echo "== FLOOR_CALLBACKS=$cb"
    CUDA_INJECTION64_PATH=$W/libfloor.so FLOOR_VERBOSE=1 FLOOR_CALLBACKS=$cb "$W/launch_loop" 2000 1 2>&1 | tail -2
  done
  for act in runtime driver both; do
    echo "== FLOOR_API_ACTIVITY=$act"
    CUDA_INJECTION64_PATH=$W/libfloor.so FLOOR_VERBOSE=1 FLOOR_API_ACTIVITY=$act "$W/launch_loop" 2000 1 2>&1 | tail -2
  done
} > "$R/correlation.txt" 2>&1
cat "$R/correlation.txt"

python3 "$HERE/harness.py" --bin "$BIN" --reps "${PROBE_LAUNCH_REPS:-5}" --launches 100000 \
  --workloads launch_1t,launch_4t \
  --modes baseline,floor,cfg_sub,cfg_ts,cfg_gpu,cfg_cb_runtime,cfg_cb_driver,cfg_cb_both,cfg_act_both,gt_gpu,gt_full,gt_full_rt \
  --out "$R/launch" > "$R/launch.log" 2>&1
tail -40 "$R/launch.log"
python3 "$HERE/harness.py" --bin "$BIN" --reps "${PROBE_TORCH_REPS:-5}" --workloads torch \
  --modes baseline,floor,gt_gpu,gt_full,gt_full_rt \
  --out "$R/torch" > "$R/torch.log" 2>&1
tail -14 "$R/torch.log"
rm -rf "$W"
