#!/usr/bin/env bash
# Next session, call A (prepared in session 9, not yet run):
#  1. The detach limit on real CUPTI (d25186a): toggles.cu, 150 socket
#     windows with 500 ms of driver calls after each, INJECTION_DETACH=25:
#     25 detaches, then "CUPTI stays attached from now on"; exactly the
#     3,000 k_inside and no k_outside; RSS flat after the limit (run 52:
#     +2.5-3.3 MB every 50 detach cycles; without detaching run 48 grew
#     ~1 MB over 90 windows).
#  2. (the same call, after it) more torch_mlp windows for the duty
#     cycle's cost inside the process (duty_excess.py: runs 52-55 gave
#     +0.93% +- 0.90% of the period over 20 windows; the target allows
#     1.7%; ~45 more windows would put the interval inside it):
#       INPROCESS=1 STEPS=28000 TAG=e bash benches/gpu/windows_cost.sh \
#           gpu-tests/bin torch 2 480 gt_duty,baseline
#
#   bash benches/gpu/session10_a.sh BIN   (~2 min; writes $OUT/s10a.tar.gz)
set -uo pipefail
. "$(dirname "$0")/device_lib.sh"
device_setup s10a "$1"

say "1. the detach limit: 150 socket windows, INJECTION_DETACH=25"
detach_limit 150 25 500 200
say "1 done"
