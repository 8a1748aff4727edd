#!/usr/bin/env bash
# Session 5, first GPU call: what session 4 left open in issue 17.
#  1. The GPT-2 duty cycle that recorded almost nothing (run 37): gpt2_train.py
#     under `--window 1s --every 20s`, verbose, with the window lines and the
#     kernels per second of the run from the trace processor; torch_mlp.py
#     under the same schedule beside it.
#  2. RSS under continuous socket toggling against its controls (stopped with
#     SIGTERM: a background job of a script ignores SIGINT).
#  3. Dangling arrows of socket-switched windows after the API-first close.
#  4. Noise: 8 tool-free torch_mlp runs, alternately pinned to 4 cores and not,
#     to choose how the harness runs its repetitions.
#
#   bash benches/gpu/session5_a.sh BIN     (writes $OUT/s5a.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s5a"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s5a.tar.gz" -C "$w" s5a; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"; gt="$bin/gpu-trace"
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
say() { echo "== $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader

duty() {  # label, command...
    local label="$1"; shift
    local t0; t0=$(date +%s.%N)
    "$gt" record -v --window 1s --every 20s -o "$o/$label.pftrace" -- "$@" \
        >"$o/$label.stdout" 2>"$o/$label.stderr"; echo "$label rc=$? wall=$(echo "$(date +%s.%N) - $t0" | bc)"
    grep -E "window [0-9]+ (opened|closed)|capture range|sources now|recording gpu|wrote" "$o/$label.stderr" | head -30
    grep RESULT "$o/$label.stdout"
    echo "window lines: $(sql "$o/$label.pftrace" "select ts, substr(name, 1, 60) from gpu_slice where name like 'recording window%'")"
    echo "log lines: $(sql "$o/$label.pftrace" "select count(*) from slice where name like 'recording window%'")"
    echo "kernels per second: $(sql "$o/$label.pftrace" "select (ts - (select min(ts) from slice)) / 1000000000 as s, count(*) from gpu_slice where name not like 'Memcpy%' and name not like 'Memset%' group by s")"
    echo "nvtx steps per second: $(sql "$o/$label.pftrace" "select (ts - (select min(ts) from slice)) / 1000000000 as s, count(*) from slice where name like 'step %' group by s")"
    "$gt" stats "$o/$label.pftrace" 2>&1 | head -12
}
say "1. 1 s every 20 s, verbose"
duty gpt2_duty python3 "$here/gpt2_train.py" --steps 1400
duty torch_duty python3 "$here/torch_mlp.py" --steps 8000

say "2. RSS (MB) every second for 24 s"
series() {  # label, toggle (0/1), command...
    local label="$1" toggle="$2"; shift 2
    "$@" >"$o/$label.txt" 2>&1 &
    local job=$! pid="" s="" last="" n=0
    for _ in $(seq 100); do sleep 0.1; pid=$(pgrep -f "^python3 .*examples/train.py" | head -1); [ -n "$pid" ] && break; done
    local t0=$SECONDS
    while [ $((SECONDS - t0)) -lt 24 ]; do
        if [ "$toggle" = 1 ]; then
            "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
        else
            sleep 0.1
        fi
        local e=$((SECONDS - t0))
        if [ "$e" != "$last" ]; then last=$e; s="$s $(($(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || echo 0) / 1024))"; fi
    done
    kill -TERM "$pid" 2>/dev/null; timeout 30 tail --pid="$pid" -f /dev/null; wait $job 2>/dev/null
    echo "$label (windows: $n):$s"
}
series bare 0 python3 "$here/examples/train.py" --steps 100000
series paused 0 "$gt" record --paused --no-stats -o "$w/p.pftrace" -- python3 "$here/examples/train.py" --steps 100000
series toggled_full 1 "$gt" record --paused --no-stats -o "$o/t.pftrace" -- python3 "$here/examples/train.py" --steps 100000
series toggled_gpu 1 "$gt" record --paused --no-stats -t gpu -o "$w/g.pftrace" -- python3 "$here/examples/train.py" --steps 100000
tail -3 "$o/toggled_full.txt"

say "3. dangling arrows after the API-first close"
echo "flows whose end is no GPU slice: $(sql "$o/t.pftrace" "select count(*) from flow f left join gpu_slice g on f.slice_in = g.id where g.id is null")"
echo "windows: $(sql "$o/t.pftrace" "select count(*) from slice where name like 'recording window % opened%'")"

say "4. noise: tool-free torch_mlp, 1500 steps, pinned (taskset -c 2-5) and not"
for i in 1 2 3 4; do
    echo "free:   $(python3 "$here/torch_mlp.py" --steps 1500 | grep RESULT)"
    echo "pinned: $(taskset -c 2-5 python3 "$here/torch_mlp.py" --steps 1500 | grep RESULT)"
done
