#!/usr/bin/env bash
# Session 7, call 1: does detaching CUPTI between windows take the paused
# cost away (detach_probe.cpp), and does CUPTI attached again record every
# kernel? Then the emitter-delivery check (session5_e.sh).
#
#   bash benches/gpu/detach_probe.sh BIN     (writes $OUT/probe.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/probe"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/probe.tar.gz" -C "$w" probe; rm -rf "$w"' EXIT
cuda=/usr/local/cuda; inc="$cuda/extras/CUPTI/include"; lib="$cuda/targets/x86_64-linux/lib"
nvcc -arch=sm_90 -O2 -o "$w/launch_loop" "$here/launch_loop.cu" &
nvcc -O2 -shared -Xcompiler -fPIC -o "$w/libprobe.so" "$here/detach_probe.cpp" -I"$inc" -L"$lib" -Xlinker -rpath,"$lib" -lcupti &
wait
ls -la "$w" >"$o/build.txt"
ts=(taskset -c 2-9)
envfor() { # mode -> env assignments
    case "$1" in
        baseline) ;;
        attached) echo "CUDA_INJECTION64_PATH=$w/libprobe.so PROBE_MODE=attached" ;;
        detached) echo "CUDA_INJECTION64_PATH=$w/libprobe.so PROBE_MODE=detached" ;;
        paused) echo "CUDA_INJECTION64_PATH=$bin/libgpu_trace_cuda.so NVTX_INJECTION64_PATH=$bin/libgpu_trace_cuda.so INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_OUTPUT=$w/p.pftrace" ;;
    esac
}
echo "## launch_loop 200000 x1 (ns/launch)" | tee -a "$o/cost.txt"
for rep in $(seq 10); do
    for m in baseline attached detached paused; do
        v=$(env $(envfor $m) "${ts[@]}" "$w/launch_loop" 200000 1 2>>"$o/stderr_launch.txt" | grep -o 'ns_per_launch=[0-9.]*' | cut -d= -f2)
        echo "launch $m $rep $v" | tee -a "$o/cost.txt"
    done
done
echo "## torch_mlp 2500 steps (ms/step)" | tee -a "$o/cost.txt"
for rep in $(seq 3); do
    for m in baseline attached detached paused; do
        v=$(env $(envfor $m) "${ts[@]}" python3 "$here/torch_mlp.py" --steps 2500 2>>"$o/stderr_torch.txt" | grep -o 'ms_per_step=[0-9.]*' | cut -d= -f2)
        echo "torch $m $rep $v" | tee -a "$o/cost.txt"
    done
done
echo "## cycle: launch_loop 3000000, 20 windows of 100 ms every 200 ms" | tee -a "$o/cycle.txt"
CUDA_INJECTION64_PATH="$w/libprobe.so" PROBE_MODE=cycle PROBE_CYCLES=20 PROBE_ON_MS=100 PROBE_OFF_MS=100 \
    timeout 60 "$w/launch_loop" 3000000 1 >>"$o/cycle.txt" 2>&1; echo "rc=$?" >>"$o/cycle.txt"
echo "## cycle: torch_mlp 4000 steps, 20 windows" | tee -a "$o/cycle.txt"
CUDA_INJECTION64_PATH="$w/libprobe.so" PROBE_MODE=cycle PROBE_CYCLES=20 PROBE_ON_MS=200 PROBE_OFF_MS=200 \
    timeout 90 python3 "$here/torch_mlp.py" --steps 4000 >>"$o/cycle.txt" 2>&1; echo "rc=$?" >>"$o/cycle.txt"
cat "$o/cycle.txt" | tail -50
ls "$cuda/extras/CUPTI/samples/cupti_finalize" >"$o/sample_ls.txt" 2>&1
cp "$cuda"/extras/CUPTI/samples/cupti_finalize/*.cpp "$o/" 2>/dev/null
OUT="$o" timeout 120 bash "$here/session5_e.sh" "$bin" >"$o/s5e.txt" 2>&1; echo "s5e rc=$?" >>"$o/s5e.txt"
cat "$o/s5e.txt"
