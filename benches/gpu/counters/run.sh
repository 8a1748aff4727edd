#!/usr/bin/env bash
# Per-kernel counters on the GPU machine: values against ncu, cost per
# profiled kernel against ncu, bad metrics, threads, graphs, filters,
# `gpu-trace metrics`. Writes $OUT/counters.tar.gz.
#
#   bash benches/gpu/counters/run.sh BIN    (~10 min on the H200)
#
# BIN: gpu-trace and libgpu_trace_cuda.so, and Perfetto's
# trace_processor_shell if at hand (for the per-launch values and the
# trace processor's sorter stats; without it the values are each kernel
# name's mean from `gpu-trace stats --json` and the stats lines say
# skipped). Needs nvcc and ncu (CUDA 13.0, sm_90), counter permission, and a
# python3 with CUDA PyTorch for the matmul. Recorded results and the
# machine they ran on: docs/src/measurements/counters.md.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "$1" && pwd)"
dest="${OUT:-.}"
w="$(mktemp -d -t counters.XXXXXX)"
o="$w/counters"; mkdir -p "$o"
trap 'tar -czf "$dest/counters.tar.gz" -C "$w" counters; rm -rf "$w"' EXIT
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
ncu="${NCU:-$(command -v ncu || echo $cuda/bin/ncu)}"
$cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/kernels" "$here/kernels.cu" || exit 1
K="$w/kernels"
# shellcheck source=common.sh
. "$here/common.sh"
M="gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum"
say() { echo "== $*"; }
gt() { "$bin/gpu-trace" record --no-stats "$@"; }

say "check: default metrics, gpu-trace vs ncu --clock-control none"
gt -v -t gpu,counters -o "$o/check.pftrace" -- "$K" check >"$o/check.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/check.txt" | grep -E "counters|metric|EXPECT|incomplete|replay|profiled|wrote"
q "$o/check.pftrace" >"$o/check_ours.csv"; wc -l <"$o/check_ours.csv"
"$ncu" --clock-control none --metrics "$M" --csv --print-units base "$K" check >"$o/check_ncu.csv" 2>"$o/check_ncu.err"; echo "ncu rc=$?"
python3 "$here/compare.py" $by "$o/check_ours.csv" "$o/check_ncu.csv" | tee "$o/check_table.md" | tail -14

say "torch matmul"
cat >"$w/mm.py" <<'PY'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    c = a @ a
torch.cuda.synchronize()
print("EXPECT case=mm kernels_at_least=3")
PY
gt -t gpu,counters --kernels '*gemm*,*sm90*,*nvjet*,*cutlass*' -o "$o/mm.pftrace" -- python3 "$w/mm.py" >"$o/mm.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/mm.txt" | tail -3
q "$o/mm.pftrace" >"$o/mm_ours.csv"
"$ncu" --clock-control none --metrics "$M" --csv --print-units base -k 'regex:gemm|sm90|nvjet|cutlass' python3 "$w/mm.py" >"$o/mm_ncu.csv" 2>"$o/mm_ncu.err"; echo "ncu rc=$?"
python3 "$here/compare.py" $by "$o/mm_ours.csv" "$o/mm_ncu.csv" | tee "$o/mm_table.md" | tail -12

say "bad metrics"
gt -m "sm__cycles_elapsed.avg,not_a_metric,dram__bytes_readd.sum,smsp__inst_executed" -o "$o/bad.pftrace" -- "$K" check >"$o/bad.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/bad.txt"
grep -a -o "metric \"[^;]*" "$o/bad.pftrace" | head -5
samples "$o/bad.pftrace"

M3="sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum"
wall() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.3f}')"; }
cost() {  # label, N, metrics, env...: per profiled kernel against -t gpu, the same N
    local label="$1" n="$2" m="$3"; shift 3
    local base gpu ours
    base=$(wall "$K" many "$n")
    gpu=$(wall "$bin/gpu-trace" record --no-stats -t gpu -o "$o/many_gpu.pftrace" -- "$K" many "$n")
    t0=$(date +%s.%N)
    env "$@" "$bin/gpu-trace" record --no-stats -v -t gpu,counters -m "$m" -o "$o/many_$label.pftrace" -- "$K" many "$n" >"$o/many_$label.txt" 2>&1
    t1=$(date +%s.%N); ours=$(python3 -c "print(f'{$t1-$t0:.3f}')")
    grep -E "pass\(es\)|profiled;|GPU timestamps|replay failed|missing" "$o/many_$label.txt" | grep -v '^\[' | head -4
    python3 -c "print(f'$label N=$n: wall s untraced {$base}, -t gpu {$gpu}, counters {$ours}; per profiled kernel {($ours-$gpu)/$n*1e3:.3f} ms')"
    echo "$label counters per metric: $(samples "$o/many_$label.pftrace")"
    echo "$label TP stats: $(tpstats "$o/many_$label.pftrace")"
}
ncucost() {  # N, metrics
    local n="$1" m="$2" base nt
    base=$(wall "$K" many "$n")
    nt=$(wall "$ncu" --clock-control none --metrics "$m" "$K" many "$n")
    python3 -c "print(f'ncu N=$n: wall s untraced {$base}, ncu {$nt}; per profiled kernel {($nt-$base)/$n*1e3:.3f} ms')"
}
say "cost per profiled kernel, 3 one-pass metrics ($M3)"
ncucost 100 "$M3"
cost three_kernel_replay 100 "$M3" INJECTION_COUNTERS_REPLAY=kernel
cost three_user_b1 1000 "$M3" INJECTION_COUNTERS_BATCH=1
cost three_user 1000 "$M3"
cost three_user_big 10000 "$M3"
say "cost per profiled kernel, default metrics (kernel replay)"
ncucost 50 "$M"
cost default 50 "$M"
say "values under user replay: check, 3 metrics, against ncu"
gt -v -t gpu,counters -m "$M3" -o "$o/check3.pftrace" -- "$K" check >"$o/check3.txt" 2>&1; echo "rc=$?"; grep -E "pass\(es\)|profiled;|GPU timestamps" "$o/check3.txt" | grep -v '^\['
q "$o/check3.pftrace" >"$o/check3_ours.csv"
"$ncu" --clock-control none --metrics "$M3" --csv --print-units base "$K" check >"$o/check3_ncu.csv" 2>"$o/check3_ncu.err"; echo "ncu rc=$?"
python3 "$here/compare.py" $by "$o/check3_ours.csv" "$o/check3_ncu.csv" | tee "$o/check3_table.md" | tail -6
echo "check3 TP stats: $(tpstats "$o/check3.pftrace")"; echo "check (default) TP stats: $(tpstats "$o/check.pftrace")"

say "threads: 4 x 25 tiny kernels, 3 metrics (user replay across threads)"
gt -t gpu,counters -m "$M3" -o "$o/threads3.pftrace" -- "$K" threads 4 25 >"$o/threads3.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/threads3.txt"
samples "$o/threads3.pftrace"
echo "threads3 TP stats: $(tpstats "$o/threads3.pftrace")"
say "graph, 3 metrics"
gt -t gpu,counters -m "$M3" -o "$o/graph3.pftrace" -- "$K" graph >"$o/graph3.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/graph3.txt"
samples "$o/graph3.pftrace"
say "filter: 1 of 1000, 3 metrics"
gt -t gpu,counters -m "$M3" --kernel-skip 500 --kernel-count 1 -o "$o/filter3.pftrace" -- "$K" many 1000 >"$o/filter3.txt" 2>&1; echo "rc=$?"
samples "$o/filter3.pftrace"

say "threads: 4 x 25 tiny kernels"
gt -t gpu,counters -o "$o/threads.pftrace" -- "$K" threads 4 25 >"$o/threads.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/threads.txt"
samples "$o/threads.pftrace"

say "graph"
gt -t gpu,counters -o "$o/graph.pftrace" -- "$K" graph >"$o/graph.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/graph.txt"
samples "$o/graph.pftrace"
"$bin/gpu-trace" stats "$o/graph.pftrace" 2>&1 | head -12

say "filter: 1 of 1000"
gt -t gpu,counters --kernel-skip 500 --kernel-count 1 -o "$o/filter.pftrace" -- "$K" many 1000 >"$o/filter.txt" 2>&1; echo "rc=$?"
samples "$o/filter.pftrace"

say "gpu-trace metrics"
"$bin/gpu-trace" metrics 2>&1 | head -3
"$bin/gpu-trace" metrics --chip GH100 dram__bytes 2>&1 | head -6
"$bin/gpu-trace" metrics --chip GH100 >"$o/metrics_gh100.txt" 2>&1; wc -l <"$o/metrics_gh100.txt"
say "trace sizes"
ls -la "$o"/*.pftrace | awk '{print $5, $9}'
