#!/usr/bin/env bash
# Prepared for the next GPU session (not yet run): what session 4 left open
# in issue 17.
#  1. The GPT-2 duty cycle that recorded almost nothing (run 37): one run of
#     gpt2_train.py under `--window 1s --every 20s`, verbose, with the
#     window lines and kernels per window from the trace processor.
#  2. RSS under continuous socket toggling against its controls (run 36
#     never ran them: a background job ignores SIGINT, so programs here are
#     stopped with SIGTERM).
#  3. Dangling arrows of socket-switched windows after the API-first close.
#
#   bash benches/gpu/session5_next.sh BIN     (writes $OUT/next.tar.gz)
set -uo pipefail
bin="$(cd "$1" && pwd)"; here="$(cd "$(dirname "$0")" && pwd)"
w="$(mktemp -d)"; o="$w/next"; mkdir -p "$o"
trap 'tar -czf "${OUT:-.}/next.tar.gz" -C "$w" next; rm -rf "$w"' EXIT
tp="$bin/trace_processor_shell"; gt="$bin/gpu-trace"
sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }
say() { echo "== $*"; }

say "1. GPT-2 under 1s every 20s, verbose"
"$gt" record -v --window 1s --every 20s -o "$o/duty.pftrace" -- python3 "$here/gpt2_train.py" --steps 1400 \
    >"$o/duty.stdout" 2>"$o/duty.stderr"; echo "rc=$?"
grep -E "window|capture range|sources now|recording gpu" "$o/duty.stderr" | grep -v '^\[' | head -20
echo "windows: $(sql "$o/duty.pftrace" "select ts, substr(name, 1, 60) from gpu_slice where name like 'recording window%' or (name = 'INFO' and 0)")"
echo "kernels per second of the run: $(sql "$o/duty.pftrace" "select (ts - (select min(ts) from gpu_slice)) / 1000000000 as s, count(*) from gpu_slice where name not like 'Memcpy%' group by s")"
"$gt" stats "$o/duty.pftrace" 2>&1 | grep -E "^Recording windows|^Span" | head -3

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

say "3. dangling arrows after the API-first close"
# t.pftrace comes back: validate_pftrace.py here counts the dangling submissions.
echo "launches with a submission and no kernel: $(sql "$o/t.pftrace" "select count(*) from flow f left join gpu_slice g on f.slice_in = g.id where g.id is null")"
