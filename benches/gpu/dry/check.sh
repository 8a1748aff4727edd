#!/usr/bin/env bash
# The GPU harness without a GPU, so that it does not rot between device
# sessions (CI runs this): fake nvcc, nvidia-smi, gpu-trace and torch
# (fake/) under the real harness.py, duty_excess.py and windows_targets.py.
#  1. torch_mlp tool-free and in a duty cycle of 1 s every 20 s
#     (--step-logs): on the fake's virtual clock a step takes 2 ms instead
#     of 1 inside each window, so each window's excess must come out at
#     +0.5 s (half the window's steps' time), and the tool-free run's null
#     at 0;
#  2. --concurrent: two modes at once, two repetitions, paired;
#  3. the pooling scripts over both results.
#
#   bash benches/gpu/dry/check.sh     (seconds)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; gpu="$(dirname "$here")"
w="$(mktemp -d)"; trap 'rm -rf "$w"' EXIT
mkdir "$w/bin"; cp "$here/fake/gpu-trace" "$w/bin/"; : >"$w/bin/libgpu_trace_cuda.so"
export PATH="$here/fake:$PATH" PYTHONPATH="$here/fake"
harness() { python3 "$gpu/harness.py" --bin "$w/bin" --workloads torch "$@"; }

echo "== 1. duty cycle inside the process"
harness --reps 1 --torch-steps 42000 --modes baseline,gt_duty --duty 1s/20s --duty-delay 10s \
    --step-logs --out "$w/duty" >"$w/duty.log" 2>&1 || { cat "$w/duty.log"; exit 1; }
echo "== 2. two modes at once"
harness --reps 2 --torch-steps 300 --modes baseline,gt_paused_ctl --concurrent 0/0 \
    --out "$w/both" >"$w/both.log" 2>&1 || { cat "$w/both.log"; exit 1; }
echo "== 3. pooled"
python3 "$gpu/duty_excess.py" --every 20s --pool "$w/duty/results.json" | tee "$w/pool.txt"
python3 "$gpu/windows_targets.py" --duty 1s/20s "$w/duty/results.json" "$w/both/results.json" | tee "$w/targets.txt"

python3 - "$w" <<'PY'
import json, statistics, sys
w = sys.argv[1]
raw = json.load(open(f"{w}/duty/results.json"))["raw"]
duty, null = raw["torch/gt_duty"][0], raw["torch/baseline"][0]
assert duty.get("windows") == 2, duty
ex, nx = duty.get("excess_s") or [], null.get("excess_s") or []
assert len(ex) == 2 and len(nx) == 2, (ex, nx)
# 1 s of 2 ms steps that would have taken 1 ms: +0.5 s a window (to a step).
assert all(abs(x - 0.5) <= 0.002 for x in ex), ex
assert all(abs(x) <= 0.002 for x in nx), nx
both = json.load(open(f"{w}/both/results.json"))
assert [r["rep"] for r in both["raw"]["torch/gt_paused_ctl"]] == [0, 1], both["raw"]
assert len(both["summary"]["torch/gt_paused_ctl"]["paired_ratios"]) == 2, both["summary"]
pool = open(f"{w}/pool.txt").read()
assert "gt_duty: +" in pool and "before its first window (paused)" in pool, pool
assert "gt_paused_ctl:" in open(f"{w}/targets.txt").read()
print(f"dry harness: ok (excess {statistics.mean(ex) * 1e3:+.0f} ms a window, null {statistics.mean(nx) * 1e3:+.0f} ms)")
PY
