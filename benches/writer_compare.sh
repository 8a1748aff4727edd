#!/usr/bin/env bash
# The standalone writer as a whole process, side by side in one run: the
# direct file writer and the in-process Perfetto service of this build,
# and the service path of an earlier build (BASE, the writer before the
# direct one), each run a process of its own, in alternation.
#
# Usage: bash benches/writer_compare.sh [LAUNCHES] [RUNS] [THREADS] [BASE]
#   LAUNCHES  launches, an API slice and a kernel each (default 4000000)
#   RUNS      runs of each writer (default 5)
#   THREADS   recording threads (default 1)
#   BASE      the earlier commit (default 51c4d82: the service path as it
#             was, with this commit's measuring program)
#
# Prints the medians (events/s to the synced file, CPU per event from
# getrusage, peak RSS) and what each trace holds; see
# docs/src/measurements/writer.md.
set -euo pipefail
cd "$(dirname "$0")/.."
launches=${1:-4000000}
runs=${2:-5}
threads=${3:-1}
base=${4:-51c4d82}
# The earlier build lives under target/ (WRITER_BASE_DIR to put it elsewhere).
src=${WRITER_BASE_DIR:-$PWD/target/writer-base-$base}
mkdir -p "$src"
git archive "$base" | tar -x -C "$src"
# This commit's measuring program over the earlier writer.
cp benches/examples/emit_profile.rs "$src/benches/examples/emit_profile.rs"
(cd "$src" && CARGO_TARGET_DIR="$src-target" cargo build -q --release -p gpu-trace-benches --example emit_profile)
cargo build -q --release -p gpu-trace-benches --example emit_profile
EMIT_PROFILE_BASELINE="$src-target/release/examples/emit_profile" \
    target/release/examples/emit_profile compare "$launches" "$runs" "$threads"
