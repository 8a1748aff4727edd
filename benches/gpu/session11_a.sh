#!/usr/bin/env bash
# Next session, call A (prepared in session 10, not yet run): is GPT-2
# slower while gpu-trace is paused (CUPTI detached), or was session 10's
# gap host noise?
#   Session 10: GPT-2's steps before the first window of a duty run (the
#   paused state) ran 1.077x the paired tool-free run's over 5 pairs
#   (0.991-1.139), and its duty runs 1.060 (1.010-1.112) over 8 pairs,
#   while inside each process the windows cost +1.65% of the period and
#   left little behind (level before the later windows over before the
#   first: 1.009, tool-free at the same offsets 0.991; duty_excess.py
#   --pool). Sequential pairs on this host vary 10-40%.
#  0. The detach limit's line in the trace, through Perfetto's engine
#     (session 10 ran the limit, but its query read the slice's name, not
#     the GpuLog message): 40 socket windows, INJECTION_DETACH=5.
#  0b. --capture-count with cudaProfilerApi (new in session 10): 10 ranges,
#     count 3: exactly 60 k_inside, said once in --verbose.
#  1. GPT-2 (1,500 steps) tool-free and paused AT THE SAME TIME, on CPUs
#     2-5 and 6-9, swapped every repetition (harness.py --concurrent), so
#     that the host's slow stretches hit both runs of a pair; then the null
#     control, two tool-free runs at once (baseline_b).
# Calls B and C, if A shows a paused cost or its null is wide:
#   CONCURRENT=2-5/6-9 STEPS=7000 TAG=p bash benches/gpu/windows_cost.sh \
#       gpu-tests/bin torch 14 560 baseline,gt_paused_ctl
#   CONCURRENT=2-5/6-9 INPROCESS=1 STEPS=6800 TAG=d bash benches/gpu/windows_cost.sh \
#       gpu-tests/bin gpt2 4 560 baseline,gt_duty
#
#   bash benches/gpu/session11_a.sh BIN   (~9 min; writes $OUT/s11a.tar.gz
#                                          and $OUT/cost-gpt2-{p,n}.tar.gz)
set -uo pipefail
. "$(dirname "$0")/device_lib.sh"
device_setup s11a "$1"

say "0. the detach limit in the trace: 40 socket windows, INJECTION_DETACH=5"
detach_limit 40 5 200 90

say "0b. --capture-count with cudaProfilerApi (cc2ab5c): 10 ranges of 20 kernels, count 3"
timeout -s KILL 60 "$gt" record -v --capture-range cudaProfilerApi --capture-count 3 -o "$o/count.pftrace" -- "$w/toggles" profiler 10 20 20 >"$o/count.txt" 2>&1
echo "rc=$? $(grep -E "^EXPECT" "$o/count.txt") $(grep -m1 'recording stays off' "$o/count.txt")"
echo "TP kernels (expect k_inside 60 only): $(sql "$o/count.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
rm -f "$o/count.pftrace"

say "1. GPT-2 tool-free and paused at once, 8 pairs"
CONCURRENT=2-5/6-9 STEPS=1500 TAG=p bash "$here/windows_cost.sh" "$bin" gpt2 8 380 baseline,gt_paused_ctl 2>&1 | tail -8
say "1b. the null control: two tool-free runs at once, 3 pairs"
CONCURRENT=2-5/6-9 STEPS=1500 TAG=n bash "$here/windows_cost.sh" "$bin" gpt2 3 150 baseline,baseline_b 2>&1 | tail -6
say "done"
