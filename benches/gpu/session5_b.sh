#!/usr/bin/env bash
# Session 5, second GPU call: train.py died under fast socket toggling in
# session5_a (RSS series: after ~130-170 windows, no summary in the trace).
#  1. The same toggling with the program's exit status (128+N names the
#     signal) and Python's faulthandler (all threads' Python stacks).
#  2. The same under gdb with the unstripped library: every thread's native
#     stack at the signal.
#  3. Slow toggling (one window per 250 ms): does it die after as many
#     windows (a count) or not (a rate)?
#  4. GPT-2 under 1 s every 20 s for long enough to reach window 2 and 3.
#
#   bash benches/gpu/session5_b.sh BIN    (BIN/dbg holds the unstripped .so;
#                                           writes $OUT/s5b.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/s5b"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/s5b.tar.gz" -C "$w" s5b; rm -rf "$w"' EXIT
gt="$bin/gpu-trace"; train="$here/examples/train.py"
say() { echo "== $*"; }

toggle() {  # pid, seconds, pause between switches: prints windows opened
    local pid="$1" secs="$2" pause="$3" n=0 t0=$SECONDS
    while [ $((SECONDS - t0)) -lt "$secs" ] && kill -0 "$pid" 2>/dev/null; do
        "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep "$pause"
        "$gt" stop "$pid" >/dev/null 2>&1; sleep "$pause"
    done
    echo "$n windows in $((SECONDS - t0)) s; alive: $(kill -0 "$pid" 2>/dev/null && echo yes || echo no)"
}
waitpid() { for _ in $(seq 200); do p=$(pgrep -nx python3) && [ -n "$p" ] && { echo "$p"; return; }; sleep 0.1; done; }

say "1. fast toggling, exit status"
PYTHONFAULTHANDLER=1 "$gt" record --paused --no-stats -t gpu -o "$o/fast.pftrace" -- python3 "$train" --steps 100000 >"$o/fast.txt" 2>&1 &
job=$!; pid=$(waitpid); sleep 8; toggle "$pid" 30 0.03
kill -TERM "$pid" 2>/dev/null; wait $job; echo "record rc=$?"
grep -v "^step" "$o/fast.txt" | head -60

say "2. under gdb"
( export CUDA_INJECTION64_PATH="$bin/dbg/libgpu_trace_cuda.so" NVTX_INJECTION64_PATH="$bin/dbg/libgpu_trace_cuda.so" \
    INJECTION_PAUSED=1 INJECTION_TRACE=gpu INJECTION_OUTPUT="$o/gdb.pftrace"
  gdb -q -batch -ex "set pagination off" -ex "handle SIGPIPE SIGUSR1 SIGUSR2 SIG32 SIG33 SIG34 SIG35 SIG36 SIG37 SIG38 SIG39 SIG40 nostop noprint pass" \
      -ex run -ex "info program" -ex "thread apply all bt 30" --args python3 "$train" --steps 100000 >"$o/gdb.txt" 2>&1 ) &
job=$!; pid=$(waitpid); sleep 10; toggle "$pid" 45 0.03
kill -TERM "$pid" 2>/dev/null; sleep 2; kill -TERM $job 2>/dev/null; wait $job
grep -v "^step" "$o/gdb.txt" | grep -v "^\[New Thread\|^\[Thread .* exited" | head -150

say "3. slow toggling"
"$gt" record --paused --no-stats -t gpu -o "$o/slow.pftrace" -- python3 "$train" --steps 100000 >"$o/slow.txt" 2>&1 &
job=$!; pid=$(waitpid); sleep 8; toggle "$pid" 45 0.125
kill -TERM "$pid" 2>/dev/null; wait $job; echo "record rc=$?"
grep -v "^step" "$o/slow.txt" | head -20

say "4. GPT-2, 1 s every 20 s, 3000 steps"
"$gt" record -v --window 1s --every 20s -o "$o/gpt2.pftrace" -- python3 "$here/gpt2_train.py" --steps 3000 >"$o/gpt2.stdout" 2>"$o/gpt2.stderr"
echo "rc=$?"; grep -E "window [0-9]+ (opened|closed)|wrote|RESULT" "$o/gpt2.stderr" "$o/gpt2.stdout"
"$gt" stats "$o/gpt2.pftrace" 2>&1 | grep -E "^Recording|^Span"
