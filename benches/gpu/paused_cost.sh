#!/usr/bin/env bash
# Is a training loop slower while gpu-trace is paused (loaded, CUPTI
# detached, no window open)? The loop runs tool-free and paused AT THE SAME
# TIME, on CPUs 2-5 and 6-9, swapped every repetition (harness.py
# --concurrent through windows_cost.sh), so that the host's slow stretches
# hit both runs of a pair; then the null control, two tool-free runs at
# once (baseline_b), which says how far such pairs stray with no tool.
#
#   bash benches/gpu/paused_cost.sh BIN [WORKLOAD [PAIRS [LIMIT_S]]]
#       default: gpt2 8 380 (1,500 steps a run), then 3 null pairs (150 s);
#       ~9 min on the H200. Writes $OUT/cost-WORKLOAD-p.tar.gz and
#       $OUT/cost-WORKLOAD-n.tar.gz
#
# STEPS sets the loop's length (windows_cost.sh's default: torch 7,000,
# gpt2 1,500); NULL_PAIRS and NULL_LIMIT the null control's (0: none).
# Needs what harness.py needs (nvcc, a python3 with CUDA PyTorch; GPT-2
# also needs transformers) and 10 CPUs.
#
# Why: sequential pairs on the H200 host disagree by 10-40%, and GPT-2's
# duty-cycled runs measured 1.06x their tool-free pairs, already before
# their first window opened, while the windows themselves cost +1.65% of
# the period inside the process (docs/src/measurements/windows.md).
#
# When the GPT-2 pairs show a paused cost, or the null control is wide:
#   STEPS=7000 NULL_PAIRS=0 bash benches/gpu/paused_cost.sh BIN torch 14 560
#   CONCURRENT=2-5/6-9 INPROCESS=1 STEPS=6800 TAG=d \
#       bash benches/gpu/windows_cost.sh BIN gpt2 4 560 baseline,gt_duty
# (torch_mlp the same way; GPT-2's duty cycle in pairs run at once, each
# window's excess read inside its process).
#
# The detach limit and --capture-count checks that ran in the same device
# call: bash benches/gpu/windows_check.sh BIN limit count (~1 min).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1"; wl="${2:-gpt2}"; pairs="${3:-8}"; limit="${4:-380}"
export CONCURRENT=2-5/6-9
echo "== $wl tool-free and paused at once, $pairs pairs (at $SECONDS s)"
TAG=p bash "$here/windows_cost.sh" "$bin" "$wl" "$pairs" "$limit" baseline,gt_paused_ctl 2>&1 | tail -8
if [ "${NULL_PAIRS:-3}" != 0 ]; then
    echo "== the null control: two tool-free runs at once, ${NULL_PAIRS:-3} pairs (at $SECONDS s)"
    TAG=n bash "$here/windows_cost.sh" "$bin" "$wl" "${NULL_PAIRS:-3}" "${NULL_LIMIT:-150}" baseline,baseline_b 2>&1 | tail -6
fi
echo "== done (at $SECONDS s)"
