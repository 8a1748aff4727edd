#!/usr/bin/env bash
# Per-kernel counters on the GPU machine: values against ncu, cost per
# profiled kernel against ncu, bad metrics, threads, graphs, filters,
# `gpu-trace metrics`. Writes $OUT/counters.tar.gz.
#
#   bash benches/gpu/counters/run.sh BIN    (BIN: gpu-trace, libgpu_trace_cuda.so, trace_processor_shell)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "$1" && pwd)"
tp="$bin/trace_processor_shell"
dest="${OUT:-.}"
w="$(mktemp -d -t counters.XXXXXX)"
o="$w/counters"; mkdir -p "$o"
trap 'tar -czf "$dest/counters.tar.gz" -C "$w" counters; rm -rf "$w"' EXIT
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
ncu="${NCU:-$(command -v ncu || echo $cuda/bin/ncu)}"
$cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/kernels" "$here/kernels.cu" || exit 1
K="$w/kernels"
M="gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum"
q() {  # trace -> per-kernel counters CSV
    cat >"$w/q.sql" <<'SQL'
select s.name as kernel, s.ts as ts, t.name as metric, c.value as value
from gpu_slice s join counter c on c.ts = s.ts join track t on c.track_id = t.id
order by s.ts, t.name;
SQL
    "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | sed 's/^"//; s/"$//; s/","/,/g' | sed 's/"//g'
}
say() { echo "== $*"; }
gt() { "$bin/gpu-trace" record --no-stats "$@"; }

say "check: default metrics, gpu-trace vs ncu --clock-control none"
gt -v -t gpu,counters -o "$o/check.pftrace" -- "$K" check >"$o/check.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/check.txt" | grep -E "counters|metric|EXPECT|incomplete|replay|profiled|wrote"
q "$o/check.pftrace" >"$o/check_ours.csv"; wc -l <"$o/check_ours.csv"
"$ncu" --clock-control none --metrics "$M" --csv --print-units base "$K" check >"$o/check_ncu.csv" 2>"$o/check_ncu.err"; echo "ncu rc=$?"
python3 "$here/compare.py" "$o/check_ours.csv" "$o/check_ncu.csv" | tee "$o/check_table.md" | tail -14

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
python3 "$here/compare.py" "$o/mm_ours.csv" "$o/mm_ncu.csv" | tee "$o/mm_table.md" | tail -12

say "bad metrics"
gt -m "sm__cycles_elapsed.avg,not_a_metric,dram__bytes_readd.sum,smsp__inst_executed" -o "$o/bad.pftrace" -- "$K" check >"$o/bad.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/bad.txt"
grep -a -o "metric \"[^;]*" "$o/bad.pftrace" | head -5
q "$o/bad.pftrace" | cut -d, -f3 | sort | uniq -c

cost() {  # label, N, metrics
    local label="$1" n="$2" m="$3"
    t0=$(date +%s.%N); "$K" many "$n" >/dev/null; t1=$(date +%s.%N)
    gt -v -t gpu,counters -m "$m" -o "$o/many_$label.pftrace" -- "$K" many "$n" >"$o/many_$label.txt" 2>&1; t2=$(date +%s.%N)
    "$ncu" --clock-control none --metrics "$m" "$K" many "$n" >"$o/many_${label}_ncu.txt" 2>&1; t3=$(date +%s.%N)
    gt -t gpu -o "$o/many_gpu.pftrace" -- "$K" many "$n" >/dev/null 2>&1; t4=$(date +%s.%N)
    grep -E "replay pass|profiled" "$o/many_$label.txt" | grep -v '^\[' | head -3
    python3 - "$label" "$n" "$t0" "$t1" "$t2" "$t3" "$t4" <<'PY'
import sys
label, n = sys.argv[1], int(sys.argv[2])
t0, t1, t2, t3, t4 = map(float, sys.argv[3:])
base, ours, ncu, gpu = t1 - t0, t2 - t1, t3 - t2, t4 - t3
print(f"{label}: wall s untraced {base:.2f}, gpu-trace -t gpu {gpu:.2f}, gpu-trace counters {ours:.2f}, ncu {ncu:.2f}")
print(f"{label}: per profiled kernel ms: gpu-trace {(ours - gpu) / n * 1e3:.2f}, ncu {(ncu - base) / n * 1e3:.2f}, ratio ncu/gpu-trace {(ncu - base) / max(ours - gpu, 1e-9):.1f}")
PY
    q "$o/many_$label.pftrace" | cut -d, -f3 | sort | uniq -c | head -4
}
say "cost per profiled kernel: 100 tiny kernels, default metrics"
cost default 100 "$M"
say "cost per profiled kernel: 100 tiny kernels, 3 metrics"
cost three 100 "sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum"

say "threads: 4 x 25 tiny kernels"
gt -t gpu,counters -o "$o/threads.pftrace" -- "$K" threads 4 25 >"$o/threads.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/threads.txt"
q "$o/threads.pftrace" | cut -d, -f3 | sort | uniq -c | head -3

say "graph"
gt -t gpu,counters -o "$o/graph.pftrace" -- "$K" graph >"$o/graph.txt" 2>&1; echo "rc=$?"; grep -v '^\[' "$o/graph.txt"
q "$o/graph.pftrace" | cut -d, -f3 | sort | uniq -c | head -3
"$bin/gpu-trace" stats "$o/graph.pftrace" 2>&1 | head -12

say "filter: 1 of 1000"
gt -t gpu,counters --kernel-skip 500 --kernel-count 1 -o "$o/filter.pftrace" -- "$K" many 1000 >"$o/filter.txt" 2>&1; echo "rc=$?"
q "$o/filter.pftrace" | cut -d, -f3 | sort | uniq -c | head -3

say "gpu-trace metrics"
"$bin/gpu-trace" metrics 2>&1 | head -3
"$bin/gpu-trace" metrics --chip GH100 dram__bytes 2>&1 | head -6
"$bin/gpu-trace" metrics --chip GH100 >"$o/metrics_gh100.txt" 2>&1; wc -l <"$o/metrics_gh100.txt"
say "validate"
for t in "$o"/*.pftrace; do python3 -c "import perfetto" 2>/dev/null && true; done
ls -la "$o"/*.pftrace | awk '{print $5, $9}'
