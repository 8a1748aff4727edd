#!/usr/bin/env bash
# Recording windows and CUPTI detaching on a real GPU: does each window hold
# exactly the work submitted inside it, and what do detaching and attaching
# cost in time and memory? Each step prints its own verdict lines; the
# programs' outputs and gpu-trace's verbose lines go to
# $OUT/windows-check.tar.gz.
#
#   bash benches/gpu/windows_check.sh BIN [STEP...]     (default: every step)
#
# BIN holds gpu-trace and libgpu_trace_cuda.so (and optionally Perfetto's
# trace_processor_shell, see device_lib.sh). Needs nvcc (CUDA 13.0, sm_90)
# and, for the train.py steps, a python3 with CUDA PyTorch. Steps:
#
#   limit    the detach limit: 40 socket windows (toggles.cu, 200 ms of
#            driver calls after each) under INJECTION_DETACH=5: 5 detaches
#            and attaches, then "CUPTI stays attached from now on", said in
#            --verbose and in the trace's log; exactly the 800 k_inside, no
#            k_outside. DETACH_LIMIT="150 25 500 200" (windows, limit, gap
#            ms, timeout s) runs the longer form (~1 min)
#   count    --capture-count 3 on cudaProfilerApi ranges: of 10 ranges of 20
#            kernels, exactly 60 k_inside, and "recording stays off" once
#   socket   200 socket windows, 500 ms of driver calls after each (a detach
#            and an attach per window): every k_inside and no k_outside,
#            RSS every 50 windows, fds and threads flat; then 100 windows
#            with INJECTION_DETACH=off, 50 ms apart
#   ranges   100 windows by cudaProfilerStart/Stop and 100 by NVTX range
#            "win" (5 kernels in each, the last still running at the close):
#            exactly 500 and 0
#   inflight windows that close while a 200 ms kernel runs (inflight.cu,
#            --window 500ms --every 3s, 13 s, flushes every 200 ms), detach
#            on and off: every spin kernel whole, the detaches' stall and the
#            budget that keeps CUPTI attached after a ~200 ms detach
#   paused   train.py under --paused, two 2 s windows from `gpu-trace start`
#            and `stop`, then Ctrl-C: exit 130, a complete trace, every
#            launch arrow with its kernel
#   toggle   two train.py processes at once, each switched every 60 ms from
#            the moment it starts, for 30 s (a backtrace handler preloaded,
#            crash_backtrace.c): both alive, windows in the traces, no
#            dangling arrow, RSS every 5 s
#
# Recorded results and the machine they ran on: docs/src/measurements/windows.md.
set -uo pipefail
# shellcheck source=device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_setup windows-check "$1"; shift
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(limit count socket ranges inflight paused toggle)
need=(toggles)
for s in "${steps[@]}"; do [ "$s" = inflight ] && need+=(inflight); done
build "${need[@]}"
train="$here/examples/train.py"

# Socket windows of toggles.cu: label, windows, gap ms, timeout s, env...
socket_windows() {
    local label=$1 n=$2 gap=$3 secs=$4; shift 4
    env "$@" timeout -s KILL "$secs" "$gt" record --paused -v -t gpu,api,nvtx -o "$o/$label.pftrace" \
        -- "$w/toggles" socket "$n" 20 20 "$gap" >"$o/$label.txt" 2>&1
    echo "$label rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/$label.txt" | tr '\n' ' ')"
    echo "  $(grep -E "^RSS after" "$o/$label.txt" | tr '\n' ' ')"
    echo "  detaches: $(grep -c 'CUPTI detached (time' "$o/$label.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/$label.txt"), stays attached: $(grep -c 'stays attached' "$o/$label.txt")"
    grep -E "lost|panic|violation|cannot" "$o/$label.txt" | grep -v "lost: nothing" | head -4
    echo "  kernels: $(kernels "$o/$label.pftrace" 'k_*')"
    echo "  stats: $(trace_facts "$o/$label.pftrace")"
    rm -f "$o/$label.pftrace"
}

# The pid of the python3 whose command line holds $1 (anchored, so that the
# gpu-trace launcher, whose command line holds the same words, never matches).
program_pid() {
    local pid=""
    for _ in $(seq 150); do pid=$(pgrep -f "^python3 .*$1" | head -1); [ -n "$pid" ] && break; sleep 0.1; done
    echo "$pid"
}

# Ends a recording job: SIGINT to the program, then TERM, then KILL.
end_job() {
    local job=$1 pid=$2
    for sig in INT TERM; do
        kill -"$sig" "$pid" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    done
    kill -0 "$job" 2>/dev/null && { echo "  still running after INT and TERM"; kill -KILL "$pid"; }
    wait "$job"; echo "  record rc=$?"
}

for step in "${steps[@]}"; do
    case "$step" in
    limit)
        # shellcheck disable=SC2086 # four numbers
        set -- ${DETACH_LIMIT:-40 5 200 90}
        say "limit: $1 socket windows, INJECTION_DETACH=$2"
        detach_limit "$@"
        ;;
    count)
        say "count: --capture-count 3 on cudaProfilerApi, 10 ranges of 20 kernels"
        timeout -s KILL 60 "$gt" record -v --capture-range cudaProfilerApi --capture-count 3 -o "$o/count.pftrace" \
            -- "$w/toggles" profiler 10 20 20 >"$o/count.txt" 2>&1
        echo "rc=$? $(grep -E "^EXPECT" "$o/count.txt") $(grep -m1 'recording stays off' "$o/count.txt")"
        echo "kernels (expect k_inside 60 only): $(kernels "$o/count.pftrace" 'k_*')"
        rm -f "$o/count.pftrace"
        ;;
    socket)
        say "socket: 200 windows from inside the program, 500 ms of driver calls after each"
        socket_windows socket 200 500 200
        say "socket: 100 windows, 50 ms apart, INJECTION_DETACH=off"
        socket_windows socket_attached 100 50 120 INJECTION_DETACH=off
        ;;
    ranges)
        for r in "profiler cudaProfilerApi" "nvtx nvtx:win"; do
            set -- $r
            say "ranges: 100 windows by $2"
            timeout -s KILL 120 "$gt" record -t gpu,api,markers -o "$o/ranges_$1.pftrace" --capture-range "$2" \
                -- "$w/toggles" "$1" 100 5 3 >"$o/ranges_$1.txt" 2>&1
            echo "rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/ranges_$1.txt" | tr '\n' ' ')"
            grep -E "unterminated|lost" "$o/ranges_$1.txt" | grep -v "lost: nothing" | head -3
            echo "kernels (expect k_inside 500 only): $(kernels "$o/ranges_$1.pftrace" 'k_*')"
            echo "stats: $(trace_facts "$o/ranges_$1.pftrace")"
            rm -f "$o/ranges_$1.pftrace"
        done
        ;;
    inflight)
        for d in on off; do
            say "inflight: 500 ms every 3 s for 13 s, INJECTION_DETACH=$d"
            INJECTION_DETACH=$d INJECTION_FLUSH_PERIOD_MS=200 timeout -s KILL 40 "$gt" record --window 500ms --every 3s -v \
                -o "$o/inflight_$d.pftrace" -- "$w/inflight" 13 >"$o/inflight_$d.txt" 2>&1
            echo "rc=$? $(grep RESULT "$o/inflight_$d.txt")"
            echo "detaches: $(grep -c 'CUPTI detached (time' "$o/inflight_$d.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/inflight_$d.txt")"
            grep -E "CUPTI detached|held the application|stays attached|lost|panic|violation" "$o/inflight_$d.txt" | grep -v "lost: nothing" | head -6
            echo "spin kernels, and those of 150 ms or more: $(sql "$o/inflight_$d.pftrace" "select count(*), sum(dur > 150e6) from gpu_slice where name like '%spin%'")"
            echo "spin kernels (gpu-trace stats): $(durations "$o/inflight_$d.pftrace" '*spin*')"
            "$gt" stats "$o/inflight_$d.pftrace" 2>&1 | grep -E "^Recording|^Losses" | head -2
            rm -f "$o/inflight_$d.pftrace"
        done
        ;;
    paused)
        say "paused: train.py, two windows from outside, then Ctrl-C"
        timeout -s KILL 90 "$gt" record --paused -v -o "$o/paused.pftrace" -- python3 "$train" --steps 100000 >"$o/paused.txt" 2>&1 &
        job=$!; pid=$(program_pid "examples/train.py --steps 100000")
        if [ -z "$pid" ]; then echo "train.py did not start:"; kill "$job" 2>/dev/null; wait "$job"; tail -5 "$o/paused.txt"; continue; fi
        ctl() { echo "  [$SECONDS s] gpu-trace $*: $(timeout 15 "$gt" "$@" 2>&1)"; }
        sleep 4; ctl status "$pid"; ctl start "$pid"; sleep 2; ctl stop "$pid"; sleep 4
        ctl start "$pid"; sleep 2; ctl stop "$pid"; sleep 2
        end_job "$job" "$pid"
        grep -E "CUPTI detached|attached again|stays attached|lost|panic" "$o/paused.txt" | head -10
        echo "stats: $(trace_facts "$o/paused.pftrace")"
        ;;
    toggle)
        say "toggle: two train.py processes switched every 60 ms from their start, 30 s"
        gcc -O1 -g -shared -fPIC -o "$w/cb.so" "$here/crash_backtrace.c" -ldl || echo "no backtrace handler"
        toggled() {
            local label="$1"
            LD_PRELOAD="$w/cb.so" PYTHONFAULTHANDLER=1 "$gt" record --paused --no-stats -o "$o/$label.pftrace" \
                -- python3 "$train" --steps 1000000 --tag "$label" >"$o/$label.txt" 2>&1 &
            local job=$! pid t0=$SECONDS n=0 rss="" last="" e
            pid=$(program_pid "train.py --steps 1000000 --tag $label")
            if [ -z "$pid" ]; then echo "$label: train.py did not start"; kill "$job" 2>/dev/null; wait "$job"; tail -5 "$o/$label.txt"; return; fi
            while [ $((SECONDS - t0)) -lt 30 ] && kill -0 "$pid" 2>/dev/null; do
                "$gt" start "$pid" >/dev/null 2>&1 && n=$((n + 1)); sleep 0.03; "$gt" stop "$pid" >/dev/null 2>&1; sleep 0.03
                e=$(((SECONDS - t0) / 5))
                if [ "$e" != "$last" ]; then last=$e; rss="$rss $(($(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0) / 1024))"; fi
            done
            echo "$label: $n windows in $((SECONDS - t0)) s; alive at the end: $(kill -0 "$pid" 2>/dev/null && echo yes || echo no); RSS MB every 5 s:$rss"
            end_job "$job" "$pid"
            echo "  stats: $(trace_facts "$o/$label.pftrace")"
            grep -E "signal|backtrace|panic|Fatal" "$o/$label.txt" | head -5
            rm -f "$o/$label.pftrace"
        }
        toggled a & toggled b & wait
        ;;
    *) echo "unknown step $step (limit count socket ranges inflight paused toggle)"; exit 2 ;;
    esac
done
say "done"
