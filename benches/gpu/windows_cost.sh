#!/usr/bin/env bash
# What recording windows cost a training loop: the harness on one workload
# (torch: torch_mlp.py, gpt2: gpt2_train.py), tool-free / paused / 1 s every
# 20 s / full tracing, interleaved, pinned to CPUs 2-9, stopped after LIMIT
# seconds (the harness still summarises what finished), then the cost
# targets over its pairs (windows_targets.py). Repetitions of several runs
# pool: windows_targets.py A/harness/results.json B/harness/results.json.
#
#   bash benches/gpu/windows_cost.sh BIN torch|gpt2 REPS LIMIT [MODES]
#                                   (writes $OUT/cost-WORKLOAD.tar.gz)
#
# Needs nvcc, a python3 with CUDA PyTorch (gpt2: also transformers) and 10
# CPUs. A repetition of the four default modes takes ~2 min (each duty run
# spans a period). Environment:
#   DUTY=250ms/5s, STEPS=N   the cycle and the loop's length: the same
#                            traced share over shorter runs, so more pairs
#                            an hour (each attach and detach then weighs 4x
#                            as much: a conservative stand-in for 1s/20s)
#   INPROCESS=1              also log every step and open the first window
#                            20 s in, so that each window's excess is read
#                            inside its process (duty_excess.py; use STEPS
#                            for a loop of several periods)
#   TAG=NAME                 names the tarball cost-WORKLOAD-TAG.tar.gz, so
#                            that several runs fit in one call
#   CONCURRENT=2-5/6-9       run the two MODES of each repetition at the
#                            same time on those CPUs (swapped every
#                            repetition; harness.py --concurrent): the
#                            host's slow stretches then hit both runs of a
#                            pair (paused_cost.sh does this)
#
# Recorded results: docs/src/measurements/windows.md.
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"; wl="$2"; reps="$3"; limit="$4"
modes="${5:-baseline,gt_paused_ctl,gt_duty,gt_full}"
name="cost-$wl${TAG:+-$TAG}"
w="$(mktemp -d)"; o="$w/$name"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/$name.tar.gz" -C "$w" "$name"; rm -rf "$w"' EXIT
extra=()
[ "${INPROCESS:-0}" = 1 ] && extra=(--step-logs --duty-delay 20s)
cpus=(--taskset 2-9)
[ -n "${CONCURRENT:-}" ] && cpus=(--concurrent "$CONCURRENT")
duty="${DUTY:-1s/20s}"
case "$wl" in
    torch) steps=(--torch-steps "${STEPS:-7000}") ;;
    gpt2) steps=(--gpt2-steps "${STEPS:-1500}") ;;
    *) echo "workload: torch or gpt2, not $wl" >&2; exit 2 ;;
esac
timeout -s TERM "$limit" python3 "$here/harness.py" --bin "$bin" --reps "$reps" --workloads "$wl" "${steps[@]}" \
    --duty "$duty" --modes "$modes" "${cpus[@]}" "${extra[@]}" --out "$o/harness" >"$o/harness.log" 2>&1
echo "harness rc=$?"; tail -25 "$o/harness.log"
python3 "$here/windows_targets.py" --duty "$duty" "$o/harness/results.json"
