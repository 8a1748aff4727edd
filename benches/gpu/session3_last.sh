#!/usr/bin/env bash
# The session's last call: the GPU suite with GPM every 100 ms, telemetry
# values and cost, unified memory and allocations (gpu-tests/activity.sh),
# and the paused/duty-cycle costs against tool-free runs at 5 repetitions.
#
#   bash benches/gpu/session3_last.sh BIN
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"; root="$(pwd)"
w="$(mktemp -d)"; o="$w/last"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/last.tar.gz" -C "$w" last; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"; gt="$bin/gpu-trace"
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
echo "== GPU suite"; GPU_TRACE_BIN="$bin" timeout 150 bash gpu-tests/run.sh 2>&1 | tail -25 | tee "$o/suite.txt" | grep -E "FAIL|total"
echo "== activity cases (alloc, managed, multi_stream_sync, memops)"
[ -f gpu-tests/activity.sh ] && GPU_TRACE_BIN="$bin" timeout 120 bash gpu-tests/activity.sh 2>&1 | tail -60 | tee "$o/activity.txt"
echo "== telemetry on a bf16 matmul loop"
cat >"$w/mm.py" <<'PY'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize(); time.sleep(0.5)
t0 = time.time()
while time.time() - t0 < 3:
    c = a @ a
torch.cuda.synchronize(); time.sleep(0.5)
PY
"$gt" record -v -o "$w/tel.pftrace" -- python3 "$w/mm.py" >/dev/null 2>"$o/tel.stderr"; echo "rc=$?"; grep -E "gpu-trace telemetry" "$o/tel.stderr"
echo "gpm during the loop: $(sql "$w/tel.pftrace" "select t.name, count(*), round(avg(c.value),1), round(min(c.value),1), round(max(c.value),1) from counter c join track t on c.track_id=t.id where t.name like 'gpm.%' and c.ts between (select min(ts) from gpu_slice where name like 'nvjet%') + 200000000 and (select max(ts) from gpu_slice where name like 'nvjet%') - 200000000 group by 1")"
echo "kernel busy over the same window: $(sql "$w/tel.pftrace" "with w as (select min(ts) + 200000000 as a, max(ts) - 200000000 as b from gpu_slice where name like 'nvjet%') select round(100.0 * sum(min(s.ts + s.dur, w.b) - max(s.ts, w.a)) / (w.b - w.a), 1) from gpu_slice s, w where s.ts < w.b and s.ts + s.dur > w.a and s.name like 'nvjet%'")"
cp "$w/tel.pftrace" "$o/"
echo "== harness: paused and duty-cycled against tool-free, torch_mlp, 5 reps"
timeout 330 python3 benches/gpu/harness.py --bin "$bin" --reps 5 --workloads torch --torch-steps 1200 --duty 100ms/2s \
  --modes baseline,gt_gpu,gt_paused,gt_paused_ctl,gt_duty --out "$o/harness" 2>&1 | grep -E "^\| |^### " | head -20
