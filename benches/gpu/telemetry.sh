#!/usr/bin/env bash
# GPU telemetry on a real GPU: what each NVML reading costs, what the
# sampler's thread costs a training script (its own `gpu-trace telemetry:`
# line: CPU time as a share of one core, against the 1% budget), and
# whether the values are plausible: GPM's SM activity against the kernels'
# own busy time on a bf16 matmul loop. Logs in $OUT/telemetry.tar.gz.
#
#   bash benches/gpu/telemetry.sh BIN [STEP...]     (default: every step)
#
# BIN holds gpu-trace and libgpu_trace_cuda.so, and for `nvml` the probe
# built from benches/examples/nvml_cost.rs
# (cargo build --release -p gpu-trace-benches --example nvml_cost, then copy
# target/release/examples/nvml_cost into BIN). Needs the NVIDIA driver's
# NVML and a python3 with CUDA PyTorch. Steps:
#
#   nvml      nvml_cost 500: each reading in a tight loop and once every
#             10 ms (cold), a GPM sample and its metrics, the probe's rounds
#   sampler   train.py, 300 steps, traced with --verbose: the sampler's line
#             and `gpu-trace stats --report telemetry`
#   values    a bf16 8192x8192 matmul loop for 3 s: every telemetry track's
#             mean, min and max (gpu-trace stats), and gpm.sm_active during
#             the loop against the kernels' busy share of the same stretch
#             (trace processor; skipped without one)
#   cost      the sampler's cost across processes: harness.py on torch_mlp,
#             full tracing with and without telemetry, 5 repetitions
#
# Recorded results and the machine they ran on: docs/src/measurements/telemetry.md.
set -uo pipefail
# shellcheck source=device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_setup telemetry "$1"; shift
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(nvml sampler values cost)

for step in "${steps[@]}"; do
    case "$step" in
    nvml)
        say "nvml: each reading's cost"
        if [ -x "$bin/nvml_cost" ]; then "$bin/nvml_cost" 500 2>&1 | tee "$o/nvml_cost.txt"
        else echo "skipped: no $bin/nvml_cost (see the head of this script)"; fi
        ;;
    sampler)
        say "sampler: train.py, 300 steps"
        "$gt" record -v -o "$w/train.pftrace" -- python3 "$here/examples/train.py" --steps 300 >/dev/null 2>"$o/train.stderr"
        echo "rc=$?"; grep -E "gpu-trace telemetry" "$o/train.stderr"
        "$gt" stats --report telemetry "$w/train.pftrace" 2>&1 | tee "$o/train_telemetry.txt" | head -30
        rm -f "$w/train.pftrace"
        ;;
    values)
        say "values: a bf16 matmul loop, 3 s"
        cat >"$w/mm.py" <<'PY'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize(); time.sleep(0.5)
t0 = time.time()
while time.time() - t0 < 3:
    c = a @ a
torch.cuda.synchronize(); time.sleep(0.5)
PY
        "$gt" record -v -o "$o/mm.pftrace" -- python3 "$w/mm.py" >/dev/null 2>"$o/mm.stderr"; echo "rc=$?"
        grep -E "gpu-trace telemetry|NVML|GPM" "$o/mm.stderr" | head -4
        "$gt" stats --report telemetry,devices "$o/mm.pftrace" 2>&1 | head -40
        # The middle of the loop: 200 ms in from its first and last kernel.
        echo "gpm during the loop (name, samples, mean, min, max): $(sql "$o/mm.pftrace" "select t.name, count(*), round(avg(c.value),1), round(min(c.value),1), round(max(c.value),1) from counter c join track t on c.track_id = t.id where t.name like 'gpm.%' and c.ts between (select min(ts) from gpu_slice where name like 'nvjet%') + 200000000 and (select max(ts) from gpu_slice where name like 'nvjet%') - 200000000 group by 1")"
        echo "kernel busy % over the same stretch: $(sql "$o/mm.pftrace" "with w as (select min(ts) + 200000000 as a, max(ts) - 200000000 as b from gpu_slice where name like 'nvjet%') select round(100.0 * sum(min(s.ts + s.dur, w.b) - max(s.ts, w.a)) / (w.b - w.a), 1) from gpu_slice s, w where s.ts < w.b and s.ts + s.dur > w.a and s.name like 'nvjet%'")"
        ;;
    cost)
        say "cost: torch_mlp, full tracing with and without telemetry, 5 repetitions"
        timeout 330 python3 "$here/harness.py" --bin "$bin" --reps 5 --workloads torch --torch-steps 1200 \
            --modes baseline,gt_full,gt_full_notel --out "$o/harness" 2>&1 | grep -E "^\| |^### " | head -12
        ;;
    *) echo "unknown step $step (nvml sampler values cost)"; exit 2 ;;
    esac
done
say "done"
