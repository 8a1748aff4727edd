#!/usr/bin/env bash
# The GPU harness without a GPU, so that it does not rot between runs on
# a GPU machine (CI runs this): fake nvcc, nvidia-smi, gpu-trace and torch
# (fake/) under the real harness.py, duty_excess.py and windows_targets.py.
#  1. torch_mlp tool-free and in a duty cycle of 1 s every 20 s
#     (--step-logs): on the fake's virtual clock a step takes 2 ms instead
#     of 1 inside each window, so each window's excess must come out at
#     +0.5 s (half the window's steps' time), and the tool-free run's null
#     at 0;
#  2. --concurrent: two modes at once, two repetitions, paired;
#  3. the pooling scripts over both results;
#  4. every script in benches/gpu parses (bash -n, py_compile), and the
#     counts the device scripts read without Perfetto's trace processor
#     (device_lib.sh, counters/common.sh, compare.py --by-name) come out of
#     a `gpu-trace stats --json` document.
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

echo "== 4. scripts parse; counts without the trace processor"
for f in "$gpu"/*.sh "$gpu"/counters/*.sh "$here"/*.sh; do bash -n "$f" || { echo "does not parse: $f"; exit 1; }; done
python3 -m py_compile "$gpu"/*.py "$gpu"/counters/*.py "$gpu"/examples/*.py
# What `gpu-trace stats --json` says of a trace (the fake prints its file).
cat >"$w/stats.json" <<'JSON'
{"complete": true, "dropped": {},
 "files": [{"windows": {"count": 3, "recorded_ns": 1500000000, "spans": []}, "dangling_submissions": 0}],
 "kernels": [{"name": "k_inside", "count": 60, "min_ns": 1000, "max_ns": 2000000},
             {"name": "spin", "count": 4, "min_ns": 199000000, "max_ns": 201000000}],
 "counters": [{"name": "smsp__inst_executed.sum", "kernels": 6, "mean": 2.0, "min": 1.0, "max": 3.0}],
 "counters_by_kernel": [{"name": "smsp__inst_executed.sum", "kernel": "fma_kernel(float*, int)", "kernels": 3, "mean": 3.0, "min": 3.0, "max": 3.0},
                        {"name": "smsp__inst_executed.sum", "kernel": "copy_kernel(const float*, float*, unsigned long)", "kernels": 3, "mean": 1.0, "min": 1.0, "max": 1.0}]}
JSON
got=$(
    bash -c '. "$1/device_lib.sh"; w="$2"; gt="$2/bin/gpu-trace"; tp=""
        kernels "$w/stats.json" "k_*"; durations "$w/stats.json" "sp*"; trace_facts "$w/stats.json"
        sql "$w/stats.json" "select 1"' - "$gpu" "$w"
    GPU_TRACE_TP=/nonexistent bash -c 'bin="$2/bin"; w="$2"; . "$1/counters/common.sh" >/dev/null
        q "$w/stats.json" >"$w/ours.csv"; samples "$w/stats.json"; samples "$w/stats.json" inst_exec' - "$gpu" "$w"
)
printf '"ID","Kernel Name","Metric Name","Metric Value"\n"0","copy_kernel(const float *, float *, unsigned long)","smsp__inst_executed.sum","1"\n"1","fma_kernel(float *, int)","smsp__inst_executed.sum","3"\n' >"$w/ncu.csv"
got="$got
$(python3 "$gpu/counters/compare.py" --by-name "$w/ours.csv" "$w/ncu.csv")"
for want in "gpu-trace stats: k_inside=60 (trace processor: skipped (no trace processor))" \
    "spin: 4, 199.0-201.0 ms" "windows=3 recorded_s=1.500 dropped=none dangling_submissions=0 complete=True" \
    "skipped (no trace processor)" "6 smsp__inst_executed.sum" "| 0 | fma_kernel | smsp__inst_executed.sum | 3 | 3 | 1.0000 |" \
    "| 1 | copy_kernel | smsp__inst_executed.sum | 1 | 1 | 1.0000 |"; do
    grep -qxF -- "$want" <<<"$got" || { echo "missing: $want"; echo "$got"; exit 1; }
done
grep -qx 6 <<<"$got" || { echo "samples inst_exec: not 6"; echo "$got"; exit 1; }
echo "dry scripts: ok"

echo "== 5. call sites: gt_python runs, and callsites_check.py's verdicts"
harness --reps 2 --torch-steps 300 --modes baseline,gt_full,gt_python \
    --out "$w/py" >"$w/py.log" 2>&1 || { cat "$w/py.log"; exit 1; }
# What `gpu-trace stats --report python --format json` says: the forward
# matmuls under Linear.forward (passes); no stack at all (fails, saying why).
python3 - "$w" <<'PY'
import json, sys
w = sys.argv[1]
row = lambda fn, file, line, kernels: {"site": {"function": fn, "file": file, "line": line}, "depth": 0,
    "count": sum(k["count"] for k in kernels), "total_ns": sum(k["total_ns"] for k in kernels), "share": 0.5, "kernels": kernels}
good = {"kernels": 10, "kernel_ns": 2000, "attributed": 6, "attributed_ns": 1500, "every_launch": True, "depth": 4, "top_down": [],
        "by_line": [row("Linear.forward", "/x/torch/nn/modules/linear.py", 125,
                        [{"name": "nvjet_tst_128x64_64x8_1x1_v_bz_TNT", "count": 5, "total_ns": 1400}]),
                    row("LayerNorm.forward", "/x/torch/nn/modules/normalization.py", 217,
                        [{"name": "vectorized_layer_norm_kernel", "count": 1, "total_ns": 100}])]}
none = dict(good, attributed=0, attributed_ns=0, by_line=[])
json.dump(good, open(f"{w}/good.json", "w"))
json.dump(none, open(f"{w}/none.json", "w"))
PY
python3 "$gpu/callsites_check.py" --workloads torch "$w/py/results.json" "torch=$w/good.json" >"$w/py-pass.txt" \
    || { cat "$w/py-pass.txt"; exit 1; }
! python3 "$gpu/callsites_check.py" --workloads torch,gpt2 "$w/py/results.json" "torch=$w/good.json" "gpt2=$w/none.json" >"$w/py-fail.txt" \
    || { echo "a report without stacks passed"; cat "$w/py-fail.txt"; exit 1; }
grep -q "^VERDICT PASS" "$w/py-pass.txt" && grep -q "100.0% of it on the model's forward line" "$w/py-pass.txt" \
    && grep -q "^VERDICT FAIL (.*gpt2: no launch carried a Python stack" "$w/py-fail.txt" \
    && grep -q "^COST torch: .*gt_python vs gt_full +0.00%" "$w/py-pass.txt" \
    || { cat "$w/py-pass.txt" "$w/py-fail.txt"; exit 1; }
echo "dry call sites: ok"
