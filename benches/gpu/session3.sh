#!/usr/bin/env bash
# Session 3 on the GPU machine: the new user's first commands (check,
# record a PyTorch training script, stats), Ctrl-C mid-run, recording
# windows from outside a live job, NVTX-range counter filters, and the GPU
# suite. Logs go to $OUT/s3/.
#
#   bash benches/gpu/session3.sh BIN [suite]
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
root="$(pwd)"; w="$(mktemp -d)"; o="$w/s3"; mkdir -p "$o"
trap 'cp "$w"/*.pftrace "$o/" 2>/dev/null; tar -czf "${OUT:-.}/s3.tar.gz" -C "$w" s3; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"
gt="$bin/gpu-trace"
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
say() { echo "== $*"; }
say "gpu-trace check"; "$gt" check 2>&1 | tee "$o/check.txt"
say "record -- python3 train.py (the first thing a new user types)"
cd "$w"
"$gt" record -- python3 "$here/examples/train.py" >"$o/train.stdout" 2>"$o/train.stderr"; echo "rc=$?"
cat "$o/train.stderr"; tail -2 "$o/train.stdout"
echo "perfetto lines on stderr: $(grep -c 'perfetto' "$o/train.stderr")"
f=$(ls -t "$w"/train-*.pftrace | head -1)
"$gt" stats "$f" >"$o/train_stats.txt" 2>&1; echo "stats rc=$?"; head -40 "$o/train_stats.txt"
echo "TP: gpu_slices $(sql "$f" 'select count(*) from gpu_slice') stats: $(sql "$f" "select name, value from stats where value > 0 and severity in ('error','data_loss')")"
say "Ctrl-C (SIGINT to the process group) mid-run"
setsid bash -c "exec '$gt' record -o '$w/ctrlc.pftrace' -- python3 '$here/examples/train.py' --steps 100000" >"$o/ctrlc.stdout" 2>"$o/ctrlc.stderr" &
pid=$!; sleep 12; kill -INT -- -"$pid"; wait "$pid"; echo "launcher rc=$?"
cat "$o/ctrlc.stderr" | head -12; tail -1 "$o/ctrlc.stdout"
echo "TP: gpu_slices $(sql "$w/ctrlc.pftrace" 'select count(*) from gpu_slice') unfinished $(sql "$w/ctrlc.pftrace" 'select count(*) from slice where dur < 0') errors: $(sql "$w/ctrlc.pftrace" "select name, value from stats where value > 0 and severity in ('error','data_loss')")"
say "windows from outside: --paused, then gpu-trace start / stop"
"$gt" record --paused -o "$w/paused.pftrace" -- python3 "$here/torch_mlp.py" --steps 4000 >"$o/paused.stdout" 2>"$o/paused.stderr" &
rp=$!; sleep 6; "$gt" status; "$gt" start all; sleep 1; "$gt" status; "$gt" stop all; sleep 1; "$gt" start all; sleep 0.5; "$gt" stop all; "$gt" status; wait $rp; echo "rc=$?"
tail -5 "$o/paused.stderr"
echo "windows in the log: $(sql "$w/paused.pftrace" "select ts, string_value from slice join args using(arg_set_id) where key = 'message' or key = 'args.message'")"
"$gt" stats "$w/paused.pftrace" 2>&1 | head -12
say "duty cycle: --window 200ms --every 2s"
"$gt" record --window 200ms --every 2s -o "$w/duty.pftrace" -- python3 "$here/torch_mlp.py" --steps 3000 >/dev/null 2>"$o/duty.stderr"; echo "rc=$?"; tail -3 "$o/duty.stderr"
say "counters: user vs kernel replay (replay.sh)"
timeout 150 bash "$here/counters/replay.sh" "$bin" 2>&1 | grep -v '^\[' | tail -40
say "counters with an NVTX range filter on torch_mlp: steps 10-19 only, 30 kernels"
"$gt" record -v -t gpu,api,nvtx,counters -m sm__cycles_elapsed.avg,smsp__inst_executed.sum --nvtx-include 'step 1?' --kernel-count 30 -o "$w/nvf.pftrace" -- python3 "$here/torch_mlp.py" --steps 40 >/dev/null 2>"$o/nvf.stderr"; echo "rc=$?"
grep -c "the filter picks" "$o/nvf.stderr"; grep -v "^\[" "$o/nvf.stderr" | grep -E "counters:|warn|off" | head -5
echo "counter samples (non-zero) per metric: $(sql "$w/nvf.pftrace" "select t.name, count(*) from counter c join track t on c.track_id = t.id where c.value != 0 group by 1")"
if [ "${2:-}" = suite ]; then say "GPU suite"; cd "$root"; GPU_TRACE_BIN="$bin" timeout 230 bash gpu-tests/run.sh 2>&1 | tail -26; fi
