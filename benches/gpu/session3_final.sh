#!/usr/bin/env bash
# The session's last GPU call: the suite after every merge, the new user's
# commands (record, stats as table and CSV), Ctrl-C, telemetry on a PyTorch
# loop (tracks, GPM against kernel busy, the sampler's cost), unified memory
# and allocations (if their programs exist), kernel replay through the trace
# processor, and the harness with the window modes. Logs: $OUT/final.tar.gz.
#
#   bash benches/gpu/session3_final.sh BIN
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"; root="$(pwd)"
w="$(mktemp -d)"; o="$w/final"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/final.tar.gz" -C "$w" final; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"; gt="$bin/gpu-trace"
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
say() { echo "== $*"; }
say "GPU suite"; GPU_TRACE_BIN="$bin" timeout 150 bash gpu-tests/run.sh 2>&1 | tail -25 | tee "$o/suite.txt" | grep -E "FAIL|total"
cd "$w"
say "record -- python3 train.py, then stats (table, csv)"
"$gt" record -- python3 "$here/examples/train.py" >"$o/train.stdout" 2>"$o/train.stderr"; echo "rc=$?"; cat "$o/train.stderr"
f=$(ls -t "$w"/train-*.pftrace | head -1)
"$gt" stats "$f" >"$o/stats_table.txt" 2>&1; echo "stats rc=$?"; head -50 "$o/stats_table.txt"
"$gt" stats --format csv "$f" >"$o/stats.csv" 2>"$o/stats_csv.err"; echo "csv rc=$? lines=$(wc -l <"$o/stats.csv")"; head -5 "$o/stats.csv"
say "Ctrl-C to the group mid-run"
setsid bash -c "exec '$gt' record -o '$w/ctrlc.pftrace' -- python3 '$here/examples/train.py' --steps 100000" >"$o/ctrlc.stdout" 2>"$o/ctrlc.stderr" &
pid=$!; sleep 10; kill -INT -- -"$pid"; wait "$pid"; echo "launcher rc=$?"; cat "$o/ctrlc.stderr" | head -4; tail -1 "$o/ctrlc.stdout"
echo "TP gpu_slices $(sql "$w/ctrlc.pftrace" 'select count(*) from gpu_slice') errors: $(sql "$w/ctrlc.pftrace" "select name, value from stats where value > 0 and severity in ('error','data_loss')")"
say "telemetry on a bf16 matmul loop and on train.py"
cat >"$w/mm.py" <<'PY'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize(); time.sleep(0.5)
t0 = time.time()
while time.time() - t0 < 3:
    c = a @ a
torch.cuda.synchronize(); time.sleep(0.5)
print("EXPECT case=mm")
PY
"$gt" record -v -o "$w/tel.pftrace" -- python3 "$w/mm.py" >/dev/null 2>"$o/tel.stderr"; echo "rc=$?"; grep -E "telemetry|NVML|GPM" "$o/tel.stderr" | grep -v '^\[' | head -8
echo "tracks: $(sql "$w/tel.pftrace" "select t.name, count(*), round(min(c.value),1), round(max(c.value),1) from counter c join track t on c.track_id = t.id group by 1 order by 1")"
echo "gpu busy from kernels (ms): $(sql "$w/tel.pftrace" "select round(sum(dur)/1e6,1), round((max(ts+dur)-min(ts))/1e6,1) from gpu_slice where name not in ('Memcpy','Memset')")"
echo "gpm sm active mean during the loop: $(sql "$w/tel.pftrace" "select t.name, round(avg(c.value),1) from counter c join track t on c.track_id=t.id where (t.name like '%SM active%' or t.name like '%sm_active%' or t.name like '%tensor%' or t.name like '%SM util%' or t.name like '%utilization%') and c.ts between (select min(ts) from gpu_slice where name like '%gemm%' or name like '%nvjet%' or name like '%xmma%') and (select max(ts) from gpu_slice where name like '%gemm%' or name like '%nvjet%' or name like '%xmma%') group by 1")"
python3 /dev/stdin "$w/tel.pftrace" <<'PY' 2>/dev/null || true
import sys
PY
"$gt" stats "$w/tel.pftrace" 2>&1 | grep -i -A12 "telemetry\|busy" | head -30
say "unified memory and allocations"
for prog in uvm alloc; do
  src=$(ls "$root"/gpu-tests/cases/${prog}*.cu "$root"/benches/gpu/${prog}*.cu 2>/dev/null | head -1)
  [ -n "$src" ] || { echo "$prog: no program"; continue; }
  nvcc -arch=sm_90 -O2 -o "$w/$prog" "$src" && "$gt" record -t gpu,api,uvm,memory -o "$w/$prog.pftrace" -- "$w/$prog" >"$o/$prog.stdout" 2>"$o/$prog.stderr"; echo "$prog rc=$?"; tail -3 "$o/$prog.stdout"; grep -v '^\[' "$o/$prog.stderr" | head -4
  "$gt" stats "$w/$prog.pftrace" 2>&1 | grep -i -B2 -A10 "unified\|memory in use\|page fault" | head -30
done
say "kernel replay through the trace processor (was 272 of 300)"
"$gt" record --no-stats -t gpu,counters -m sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum --force-overwrite -o "$w/kr.pftrace" -- env INJECTION_COUNTERS_REPLAY=kernel true 2>/dev/null
nvcc -arch=sm_90 -O2 -o "$w/k" "$here/counters/kernels.cu"
INJECTION_COUNTERS_REPLAY=kernel "$gt" record --no-stats -t gpu,counters -m sm__cycles_elapsed.avg,smsp__inst_executed.sum,dram__bytes_read.sum -o "$w/kr.pftrace" -- "$w/k" many 300 >/dev/null 2>&1
echo "kernel replay 300: TP tiny kernels $(sql "$w/kr.pftrace" "select count(*) from gpu_slice where name like 'tiny%'") sorter: $(sql "$w/kr.pftrace" "select value from stats where name = 'sorter_push_event_out_of_order'")"
"$gt" record --no-stats -t gpu,counters -o "$w/kd.pftrace" -- "$w/k" many 100 >/dev/null 2>&1
echo "default set 100: TP tiny kernels $(sql "$w/kd.pftrace" "select count(*) from gpu_slice where name like 'tiny%'") sorter: $(sql "$w/kd.pftrace" "select value from stats where name = 'sorter_push_event_out_of_order'")"
cd "$root"
say "harness: windows and telemetry cost, torch_mlp, 3 reps"
timeout 260 python3 benches/gpu/harness.py --bin "$bin" --reps 3 --workloads torch --torch-steps 1200 --duty 100ms/2s \
  --modes baseline,gt_gpu,gt_full,gt_full_notel,gt_paused_ctl,gt_duty --out "$o/harness" 2>&1 | grep -E "^\| |^### " | head -20
cp "$w"/*.pftrace "$o/" 2>/dev/null; find "$o" -name '*.pftrace' -size +40M -delete
