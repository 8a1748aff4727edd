#!/usr/bin/env bash
# Is anything lost at any event rate with default settings? 10,000,000 empty
# kernels from 8 threads and from 1 thread under `gpu-trace record`: what
# the trace holds (the writer's own summary line, and the kernels, launch
# slices and arrows as gpu-trace stats reads them, and Perfetto's trace
# processor where there is one, each with its time and peak memory: the
# summary's speed against the trace processor's on the same file), peak RSS
# traced and untraced, wall time; a JAX program's trace (XLA's many streams
# fill CUPTI's buffers per stream); the launch workloads of the harness
# with this build and an earlier one side by side.
#
#   bash benches/gpu/lossless.sh BIN [OLD_BIN] [TP]      (~10 min on the H200)
#
# BIN: libgpu_trace_cuda.so, gpu-trace, gpu-check of this build; OLD_BIN:
# an earlier build's libgpu_trace_cuda.so (omit to skip the comparison);
# TP: trace_processor_shell (default BIN/trace_processor_shell; absent: its
# lines say "skipped (no trace processor)"). Needs nvcc and CUPTI (CUDA
# 13.0, sm_90), ~2 GB of disk for a trace, and for the jax step a python3
# with CUDA JAX. Everything goes into $OUT/lossless.tar.gz ($OUT defaults
# to .). Environment: LOSSLESS_SKIP="big,jax,harness" skips steps (comma
# list); LOSSLESS_KERNELS (10000000); LOSSLESS_TP_THREADS (8: the thread
# count whose trace is read by stats and the trace processor; none: no
# reading); LOSSLESS_REPS (the harness's, 4).
#
# Recorded results and the machine they ran on:
# docs/src/measurements/lossless.md and stats.md.
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
        say "gpu-trace stats --json on it"
        python3 "$here/maxrss.py" "$bin/gpu-trace" stats --json "$tr" 2>"$out/stats_${t}t.err" >"$work/stats.json"
        echo "stats rc=$?"; tail -1 "$out/stats_${t}t.err"
        python3 - "$work/stats.json" <<'PY' | tee "$out/stats_${t}t.txt"
import fnmatch, json, sys
try:
    j = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit("no stats (gpu-trace stats failed)")
kernels = sum(r["count"] for r in j.get("kernels") or [] if fnmatch.fnmatchcase(r["name"], "*empty*"))
launches = sum(r["count"] for r in j.get("api") or [] if r["name"].startswith("cuLaunchKernel"))
f = (j.get("files") or [{}])[0]
print(f"kernels={kernels} launches={launches} dangling_submissions={f.get('dangling_submissions')} "
      f"dropped={j.get('dropped') or 'none'} complete={j.get('complete')}")
PY
        if [ ! -x "$tp" ]; then echo "trace processor: skipped (no trace processor)"; rm -f "$tr"; continue; fi
        say "the trace processor on it"
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
