#!/usr/bin/env bash
# Issue 11 on the GPU machine: 10,000,000 empty kernels from 8 threads and
# from 1 thread under `gpu-trace record` with default settings, peak RSS
# traced and untraced, the counts as Perfetto's trace processor sees them;
# a JAX program's trace (kept); the launch workloads of the harness with
# this build and an earlier one side by side.
#
#   bash benches/gpu/lossless.sh BIN [OLD_BIN] [TP]
#
# BIN: libgpu_trace_cuda.so, gpu-trace, gpu-check of this build; OLD_BIN:
# an earlier build's libgpu_trace_cuda.so (omit to skip the comparison);
# TP: trace_processor_shell (default BIN/trace_processor_shell). Everything
# goes into $OUT/lossless.tar.gz ($OUT defaults to .). Steps are skipped
# with LOSSLESS_SKIP="big,jax,harness" (comma list).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "$1" && pwd)"
old="${2:+$(cd "$2" && pwd)}"
tp="${3:-$bin/trace_processor_shell}"
dest="${OUT:-.}"
skip=",${LOSSLESS_SKIP:-},"
n="${LOSSLESS_KERNELS:-10000000}"
work="$(mktemp -d -t lossless.XXXXXX)"
out="$work/lossless"
mkdir -p "$out"
trap 'tar -czf "$dest/lossless.tar.gz" -C "$work" lossless; rm -rf "$work"' EXIT
say() { echo "== $*"; }

python3 "$here/harness.py" --build-only "$work/b" >"$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
loop="$work/b/launch_loop"

if [[ "$skip" != *,big,* ]]; then
    for t in 8 1; do
        say "launch_loop $n kernels, $t threads"
        python3 "$here/maxrss.py" "$loop" "$n" "$t" >"$out/untraced_${t}t.txt" 2>&1
        tail -2 "$out/untraced_${t}t.txt"
        tr="$work/big_${t}t.pftrace"
        python3 "$here/maxrss.py" "$bin/gpu-trace" record --no-stats -o "$tr" -- "$loop" "$n" "$t" >"$out/traced_${t}t.txt" 2>&1
        echo "rc=$?"; tail -4 "$out/traced_${t}t.txt"
        ls -la "$tr"
        # What the writer says it wrote (the summary line near the end).
        grep -a -o "gpu-trace summary: [a-z_=0-9 ]*" "$tr" | tail -1
        grep -a -o "gpu-trace dropped: [a-z_=0-9 ]*" "$tr" | tail -1
        if [ "$t" != "${LOSSLESS_TP_THREADS:-8}" ]; then rm -f "$tr"; continue; fi
        cat >"$work/q.sql" <<'SQL'
select
  (select count(*) from gpu_slice where name like '%empty%') as kernels,
  (select count(*) from slice where name = 'cuLaunchKernel') as launches,
  (select count(*) from flow f join slice s on f.slice_in = s.id where s.name like '%empty%') as arrows;
select name, idx, severity, value from stats where value > 0 and severity in ('error', 'data_loss');
SQL
        python3 "$here/maxrss.py" "$tp" -q "$work/q.sql" "$tr" 2>&1 | grep -v "^\[" | tee "$out/tp_${t}t.txt"
        rm -f "$tr"
    done
fi

if [[ "$skip" != *,jax,* ]]; then
    say "jax"
    INJECTION_VERBOSE=0 "$bin/gpu-trace" record --no-stats -o "$out/jax.pftrace" -- python3 "$here/jax_steps.py" --steps 40 >"$out/jax.txt" 2>&1
    echo "rc=$?"; tail -3 "$out/jax.txt"
    "$bin/gpu-trace" stats --strict "$out/jax.pftrace" >"$out/jax_stats.txt" 2>&1; echo "stats rc=$?"
    grep -E "^Losses|point at" "$out/jax_stats.txt"
fi

if [[ "$skip" != *,harness,* ]]; then
    modes="baseline,floor,gt_gpu,gt_full"
    [ -n "$old" ] && modes="$modes,gt_gpu_old,gt_full_old"
    say "harness $modes"
    python3 "$here/harness.py" --bin "$bin" ${old:+--old-bin "$old"} --reps "${LOSSLESS_REPS:-4}" \
        --workloads launch_1t,launch_4t --modes "$modes" --out "$out/harness" 2>&1 | tail -40
fi
