#!/usr/bin/env bash
# User replay on the GPU machine: kernel replay against user replay (auto) (values
# against ncu, cost per profiled kernel), CUPTI's own kernels, threads,
# graphs. Prints a summary; logs and tables go to $OUT/replay/.
#
#   bash benches/gpu/counters/replay.sh BIN    (~5 min on the H200)
#
# BIN: gpu-trace and libgpu_trace_cuda.so, and Perfetto's
# trace_processor_shell if at hand (see common.sh). Needs nvcc and ncu (CUDA
# 13.0, sm_90) and counter permission. Recorded results:
# docs/src/measurements/counters.md.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "$1" && pwd)"
o="${OUT:-.}/replay"; mkdir -p "$o"
w="$(mktemp -d -t replay.XXXXXX)"; trap 'rm -rf "$w"' EXIT
cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
ncu="${NCU:-$(command -v ncu || echo $cuda/bin/ncu)}"
$cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/kernels" "$here/kernels.cu" || exit 1
K="$w/kernels"
# shellcheck source=common.sh
. "$here/common.sh"
M3="sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum"
wall() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.3f}')"; }
gt() { "$bin/gpu-trace" record --no-stats "$@"; }

"$ncu" --clock-control none --metrics "$M3" --csv --print-units base "$K" check >"$o/check_ncu.csv" 2>"$o/check_ncu.err"
for r in kernel auto; do
    echo "== check, replay $r"
    INJECTION_COUNTERS_REPLAY=$r gt -v -t gpu,counters -m "$M3" -o "$w/check_$r.pftrace" -- "$K" check >"$o/check_$r.txt" 2>&1; echo "rc=$?"
    grep -E "pass\(es\)|profiled;|WaitNs|GPU timestamps|missing|fail" "$o/check_$r.txt" | grep -v '^\['
    q "$w/check_$r.pftrace" >"$o/check_${r}_ours.csv"
    python3 "$here/compare.py" $by "$o/check_${r}_ours.csv" "$o/check_ncu.csv" >"$o/check_${r}_table.md"; grep inst_exec "$o/check_${r}_table.md" | head -3; tail -3 "$o/check_${r}_table.md"
    echo "kernels: $(kernels "$w/check_$r.pftrace") | TP: $(tpstats "$w/check_$r.pftrace")"
done
n=100; base=$(wall "$K" many $n); nt=$(wall "$ncu" --clock-control none --metrics "$M3" "$K" many $n)
echo "ncu many $n: untraced $base s, ncu $nt s; per kernel $(python3 -c "print(f'{($nt-$base)/$n*1e3:.2f}')") ms"
n=300
g=$(wall "$bin/gpu-trace" record --no-stats -t gpu -o "$w/g.pftrace" -- "$K" many $n)
for r in kernel auto; do
    t0=$(date +%s.%N); INJECTION_COUNTERS_REPLAY=$r gt -v -t gpu,counters -m "$M3" -o "$w/many_$r.pftrace" -- "$K" many $n >"$o/many_$r.txt" 2>&1; t1=$(date +%s.%N)
    echo "many $n, replay $r: -t gpu $g s, counters $(python3 -c "print(f'{$t1-$t0:.3f} s; per profiled kernel {($t1-$t0-$g)/$n*1e3:.3f} ms')")"
    grep -E "profiled;|WaitNs" "$o/many_$r.txt" | grep -v '^\['
    echo "kernels: $(kernels "$w/many_$r.pftrace") | TP: $(tpstats "$w/many_$r.pftrace")"
done
for r in kernel auto; do
    echo "== threads 4x25 and graph, replay $r"
    INJECTION_COUNTERS_REPLAY=$r gt -t gpu,counters -m "$M3" -o "$w/th_$r.pftrace" -- "$K" threads 4 25 >"$o/th_$r.txt" 2>&1; echo "threads rc=$? kernels: $(kernels "$w/th_$r.pftrace") counters: $(samples "$w/th_$r.pftrace" inst_exec)"
    INJECTION_COUNTERS_REPLAY=$r gt -t gpu,counters -m "$M3" -o "$w/gr_$r.pftrace" -- "$K" graph >"$o/gr_$r.txt" 2>&1; echo "graph rc=$? kernels: $(kernels "$w/gr_$r.pftrace") counters: $(samples "$w/gr_$r.pftrace" inst_exec)"
done
echo "== 10 of 20000 profiled (skip 10000), wall"
n=20000
for i in 1 2 3; do
    a=$(wall "$bin/gpu-trace" record --no-stats --force-overwrite -t gpu -o "$w/a.pftrace" -- "$K" many $n)
    b=$(wall "$bin/gpu-trace" record --no-stats --force-overwrite -t gpu,counters -m "$M3" --kernel-skip 10000 --kernel-count 10 -o "$w/b.pftrace" -- "$K" many $n)
    c=$(wall "$bin/gpu-trace" record --no-stats --force-overwrite -t gpu,counters -m "$M3" --kernels nothing_matches -o "$w/c.pftrace" -- "$K" many $n)
    echo "rep $i: -t gpu $a s, 10 profiled $b s, filter matching none $c s"
done
echo "b kernels: $(kernels "$w/b.pftrace") counters: $(samples "$w/b.pftrace" inst_exec)"
