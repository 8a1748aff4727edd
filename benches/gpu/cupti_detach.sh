#!/usr/bin/env bash
# What CUPTI itself does when it is detached (cuptiFinalize) and attached
# again, measured with a bare injection (detach_probe.cpp, no gpu-trace in
# the process), so that gpu-trace's choices rest on CUPTI's behaviour, not
# on ours. Output lines as it goes; logs in $OUT/cupti-detach.tar.gz.
#
#   bash benches/gpu/cupti_detach.sh BIN [STEP...]     (default: every step)
#
# BIN holds gpu-trace's libgpu_trace_cuda.so (the `cost` step's paused row).
# Needs nvcc and CUPTI of CUDA 13.0 (sm_90), and a python3 with CUDA PyTorch
# for torch_mlp.py. Steps:
#
#   cost      what an idle, attached CUPTI costs each call, and whether a
#             detach takes it away: launch_loop 200,000 x1 (10 repetitions)
#             and torch_mlp.py 2,500 steps (3), interleaved and pinned to
#             CPUs 2-9: tool-free, CUPTI attached idle (subscriber, timestamp
#             callback, no activity kind), detached at the first driver-call
#             exit, and gpu-trace paused, CUPTI detached (the default) and
#             attached (INJECTION_DETACH=off). The same for gpu-trace alone
#             on 1,000,000 launches:
#               python3 benches/gpu/harness.py --bin BIN --reps 8 \
#                   --workloads launch_1t --launches 1000000 --taskset 2-9 \
#                   --modes baseline,gt_paused_ctl,gt_paused_attached
#   cycle     CUPTI attached and detached 20 times in one process:
#             launch_loop (windows of 100 ms, 100 ms apart) and torch_mlp
#             (200 ms): each window's kernel records against its launches,
#             attach and detach times
#   inflight  windows that close while a 200 ms kernel runs (inflight.cu,
#             25 windows of 150 ms), with a forced flush before the detach
#             and without: which records survive cuptiFinalize
#   memory    300 windows of 20 ms, 50 ms apart, on launch_loop: the
#             process's RSS after windows 0, 9, 49, 99 ... 299 (does CUPTI's
#             memory grow with each detach, and level off?)
#
# Recorded results and the machine they ran on: docs/src/measurements/windows.md.
set -uo pipefail
# shellcheck source=device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_setup cupti-detach "$1"; shift
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(cost cycle inflight memory)
build launch_loop inflight libprobe.so
probe() { env CUDA_INJECTION64_PATH="$w/libprobe.so" "$@"; }
pinned=(taskset -c 2-9)

envfor() {  # mode -> environment assignments
    case "$1" in
        baseline) ;;
        attached) echo "CUDA_INJECTION64_PATH=$w/libprobe.so PROBE_MODE=attached" ;;
        detached) echo "CUDA_INJECTION64_PATH=$w/libprobe.so PROBE_MODE=detached" ;;
        paused) echo "CUDA_INJECTION64_PATH=$bin/libgpu_trace_cuda.so NVTX_INJECTION64_PATH=$bin/libgpu_trace_cuda.so INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_OUTPUT=$w/p.pftrace" ;;
        paused_attached) echo "CUDA_INJECTION64_PATH=$bin/libgpu_trace_cuda.so NVTX_INJECTION64_PATH=$bin/libgpu_trace_cuda.so INJECTION_TRACE=gpu,api,nvtx INJECTION_PAUSED=1 INJECTION_DETACH=off INJECTION_OUTPUT=$w/p.pftrace" ;;
    esac
}

for step in "${steps[@]}"; do
    case "$step" in
    cost)
        say "cost: launch_loop 200000 x1, ns per launch"
        for rep in $(seq 10); do
            for m in baseline attached detached paused paused_attached; do
                # shellcheck disable=SC2046 # assignments, split on purpose
                v=$(env $(envfor $m) "${pinned[@]}" "$w/launch_loop" 200000 1 2>>"$o/cost_stderr.txt" | grep -o 'ns_per_launch=[0-9.]*' | cut -d= -f2)
                rm -f "$w/p.pftrace"; echo "launch $m $rep $v" | tee -a "$o/cost.txt"
            done
        done
        say "cost: torch_mlp 2500 steps, ms per step"
        for rep in $(seq 3); do
            for m in baseline attached detached paused paused_attached; do
                # shellcheck disable=SC2046
                v=$(env $(envfor $m) "${pinned[@]}" python3 "$here/torch_mlp.py" --steps 2500 2>>"$o/cost_stderr.txt" | grep -o 'ms_per_step=[0-9.]*' | cut -d= -f2)
                rm -f "$w/p.pftrace"; echo "torch $m $rep $v" | tee -a "$o/cost.txt"
            done
        done
        python3 - "$o/cost.txt" <<'PY'
import math, statistics, sys
v = {}
for line in open(sys.argv[1]):
    wl, m, rep, x = (line.split() + [""])[:4]
    if x:
        v.setdefault(wl, {}).setdefault(m, {})[rep] = float(x)
for wl, modes in v.items():
    base = modes.get("baseline", {})
    print(f"{wl}: tool-free median {statistics.median(base.values()):.4g}" if base else wl)
    for m, reps in modes.items():
        rs = [x / base[r] for r, x in reps.items() if r in base and m != "baseline"]
        if len(rs) > 1:
            logs = [math.log(x) for x in rs]
            print(f"  {m}: paired geometric mean {math.exp(statistics.mean(logs)):.3f} (log sd {statistics.stdev(logs):.2f}) over {len(rs)} pairs")
PY
        ;;
    cycle)
        say "cycle: launch_loop 3000000, 20 windows of 100 ms, 100 ms apart"
        probe PROBE_MODE=cycle PROBE_CYCLES=20 PROBE_ON_MS=100 PROBE_OFF_MS=100 \
            timeout -s KILL 60 "$w/launch_loop" 3000000 1 >"$o/cycle_launch.txt" 2>&1; echo "rc=$?"
        grep -v "window [0-9]*:" "$o/cycle_launch.txt" | tail -6
        say "cycle: torch_mlp 4000 steps, 20 windows of 200 ms"
        probe PROBE_MODE=cycle PROBE_CYCLES=20 PROBE_ON_MS=200 PROBE_OFF_MS=200 \
            timeout -s KILL 90 python3 "$here/torch_mlp.py" --steps 4000 >"$o/cycle_torch.txt" 2>&1; echo "rc=$?"
        tail -8 "$o/cycle_torch.txt"
        ;;
    inflight)
        for f in 1 0; do
            say "inflight: 14 s, 25 windows of 150 ms, 150 ms apart, PROBE_FLUSH=$f"
            probe PROBE_MODE=cycle PROBE_FLUSH=$f PROBE_CYCLES=25 PROBE_ON_MS=150 PROBE_OFF_MS=150 \
                timeout -s KILL 60 "$w/inflight" 14 >"$o/inflight_$f.txt" 2>&1; echo "rc=$?"
            tail -8 "$o/inflight_$f.txt"
        done
        ;;
    memory)
        say "memory: 300 detach cycles on launch_loop"
        probe PROBE_MODE=cycle PROBE_CYCLES=300 PROBE_ON_MS=20 PROBE_OFF_MS=50 \
            timeout -s KILL 90 "$w/launch_loop" 12000000 1 >"$o/memory.txt" 2>&1; echo "rc=$?"
        grep -E "window (0|9|49|99|149|199|249|299):|cycles done|NOT DONE|failed" "$o/memory.txt" \
            | sed -E 's/launches [0-9]+, kernel records [0-9]+ \([^)]*\), //'
        ;;
    *) echo "unknown step $step (cost cycle inflight memory)"; exit 2 ;;
    esac
done
say "done"
