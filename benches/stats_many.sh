#!/usr/bin/env bash
# `gpu-trace stats` over many rank files: one by one (--jobs 1) against
# all cores (--jobs 0, the default), wall time and peak RSS of each run.
#
# Usage: bash benches/stats_many.sh [DIR] [FILES] [LAUNCHES] [RUNS]
#   DIR       where the traces go (default target/stats-many)
#   FILES     rank files (default 64)
#   LAUNCHES  launches per file (default 320000: about 50 MB each)
#   RUNS      runs of each mode, interleaved (default 3)
#
# Four traces are recorded by the benches' helper (read_profile: the
# in-process tracer, kernels with their launch calls and copies) and
# copied to FILES rank files; every file is read by every run (the page
# cache holds them after the first).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/stats-many}
files=${2:-64}
launches=${3:-320000}
runs=${4:-3}
cargo build --release -p gpu-trace
cargo build -p gpu-trace-benches --example read_profile
mkdir -p "$dir/src" "$dir/ranks"
for k in 0 1 2 3; do
    target/debug/examples/read_profile $((launches + k)) "$dir/src" visit >/dev/null
done
for i in $(seq 0 $((files - 1))); do
    f="$dir/ranks/rank-$(printf %03d "$i").pftrace"
    [ -f "$f" ] || cp "$dir/src/recorded-$((launches + i % 4)).pftrace" "$f"
done
du -sh "$dir/ranks"
cat "$dir"/ranks/*.pftrace >/dev/null
for _ in $(seq "$runs"); do
    for jobs in 1 0; do
        /usr/bin/time -f "jobs=$jobs: %e s wall, %U s user, %M KiB peak RSS" \
            target/release/gpu-trace stats --jobs "$jobs" --report verdict,ranks \
            "$dir"/ranks/*.pftrace >/dev/null
    done
done
