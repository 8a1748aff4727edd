#!/usr/bin/env bash
# The gpu-trace wheel end to end, as a user gets it:
#
#   python/tests/e2e.sh           # builds the wheel (python/build-wheel.sh) first
#   python/tests/e2e.sh WHEEL     # checks that wheel
#
# The wheel is installed into a fresh virtualenv and run with only that
# virtualenv and the system on PATH (no Rust): e2e.py checks `gpu-trace
# check`, records a Python program under the fake CUDA driver and CUPTI
# (cupti-sim, a test library of this workspace, built here if missing) and
# reads its traces with gpu_trace.load(), as lists and then, once pandas is
# installed from PyPI, as DataFrames.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

whl="${1:-}"
if [ -z "$whl" ]; then
    python/build-wheel.sh
    whl="$(ls python/dist/gpu_trace-*.whl)"
fi
whl="$(cd "$(dirname "$whl")" && pwd)/$(basename "$whl")"

# The fake driver: the debug build `cargo test` makes (fresh when it ran).
cargo build --locked -p cupti-sim --lib --quiet
fake="$root/target/debug/libcupti_sim.so"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$whl"

# Only the virtualenv and the system: no cargo, no rustc.
clean_env=(env -i HOME="$HOME" TMPDIR="${TMPDIR:-/tmp}" LANG=C.UTF-8
    PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin"
    GPU_TRACE_TEST_FAKE_CUPTI="$fake" GPU_TRACE_TEST_WHEEL="$whl")
mkdir "$work/out"
"${clean_env[@]}" "$work/venv/bin/python" python/tests/e2e.py lists "$work/out"

"$work/venv/bin/pip" install --quiet --disable-pip-version-check pandas
"${clean_env[@]}" "$work/venv/bin/python" python/tests/e2e.py pandas "$work/out"
