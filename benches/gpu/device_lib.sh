# shellcheck shell=bash
# Shell helpers for the scripts in benches/gpu that run on the GPU machine
# (windows_check.sh, cupti_detach.sh, telemetry.sh); source it, then:
#
#   device_setup NAME BIN   $bin (BIN, absolute), $here (benches/gpu), a work
#                           dir $w and its output dir $o (tarred to
#                           $OUT/NAME.tar.gz at exit), $gt (gpu-trace), $tp
#                           (Perfetto's trace_processor_shell, or empty),
#                           $cuda; XDG_RUNTIME_DIR and GPU_TRACE set for
#                           `gpu-trace start/stop` from inside a program
#   build PROGRAM...        compiles into $w, in parallel: toggles
#                           (windows/toggles.cu), launch_loop, inflight,
#                           kernels (counters/kernels.cu), libprobe.so
#                           (detach_probe.cpp); exits when one fails
#   say TEXT                a heading with the seconds so far
#   sql TRACE QUERY         the trace processor's rows on one line, or
#                           "skipped (no trace processor)"
#   counts TRACE TABLE GLOB rows of `gpu-trace stats --json` table TABLE
#                           (kernels, api, nvtx, memops) whose name matches
#                           GLOB: "name=count ..." (none: "none")
#   kernels TRACE GLOB      the kernels named GLOB by count, from the trace
#                           processor when there is one (its own reading of
#                           the file), else from `gpu-trace stats --json`;
#                           the source is named
#   durations TRACE GLOB    the kernels named GLOB: count, shortest and
#                           longest (ms), from `gpu-trace stats --json`
#   trace_facts TRACE       from `gpu-trace stats --json`: windows, recorded
#                           seconds, dropped, dangling submissions, complete
#   detach_limit WINDOWS LIMIT GAP_MS TIMEOUT_S
#                           toggles.cu's socket windows under
#                           INJECTION_DETACH=LIMIT: its EXPECT/LEAK/RSS
#                           lines, detaches and attaches, the limit's line,
#                           the kernels, and the limit's line in the trace
#
# Perfetto's trace processor comes from no package registry: carry it as
# BIN/trace_processor_shell or name it in GPU_TRACE_TP. Without it every
# line that needs it says "skipped (no trace processor)" and the counts come
# from gpu-trace's own reader.

device_setup() {
    local name="$1"
    bin="$(cd "$2" && pwd)"; here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    w="$(mktemp -d)"; o="$w/$name"; mkdir -p "$o"
    # shellcheck disable=SC2064 # the names now, not at exit
    trap "tar -czf '${OUT:-.}/$name.tar.gz' -C '$w' '$name'; rm -rf '$w'" EXIT
    gt="$bin/gpu-trace"; tp="${GPU_TRACE_TP:-$bin/trace_processor_shell}"
    [ -x "$tp" ] || tp=""
    export XDG_RUNTIME_DIR="$w" GPU_TRACE="$gt"
    cuda="${CUDA_ROOT:-/usr/local/cuda-13.0}"; [ -d "$cuda" ] || cuda=/usr/local/cuda
    echo "gpu-trace: $("$gt" --version 2>&1 | head -1); trace processor: ${tp:-none}"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
}

build() {
    local nvcc="$cuda/bin/nvcc" inc="$cuda/extras/CUPTI/include" lib="$cuda/targets/x86_64-linux/lib" p pids=()
    for p in "$@"; do
        case "$p" in
            toggles) timeout 120 "$nvcc" -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl & ;;
            launch_loop|inflight) timeout 120 "$nvcc" -arch=sm_90 -O2 -o "$w/$p" "$here/$p.cu" & ;;
            kernels) timeout 120 "$nvcc" -arch=sm_90 -O2 -o "$w/kernels" "$here/counters/kernels.cu" & ;;
            libprobe.so) timeout 120 "$nvcc" -O2 -shared -Xcompiler -fPIC -o "$w/libprobe.so" "$here/detach_probe.cpp" \
                -I"$inc" -L"$lib" -Xlinker -rpath,"$lib" -lcupti & ;;
            *) echo "build: no program $p" >&2; exit 2 ;;
        esac
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { echo "build failed" >&2; exit 1; }; done
}

say() { echo "== $* (at $SECONDS s)"; }

sql() {
    [ -n "$tp" ] || { echo "skipped (no trace processor)"; return; }
    echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo
}

counts() {
    "$gt" stats --json --report "$2" "$1" 2>/dev/null | python3 -c '
import fnmatch, json, sys
table, glob = sys.argv[1], sys.argv[2]
try:
    rows = json.load(sys.stdin).get(table) or []
except ValueError:
    print("no stats (gpu-trace stats failed)"); sys.exit()
got = ["%s=%s" % (r["name"], r["count"]) for r in rows if fnmatch.fnmatchcase(r["name"], glob)]
print(" ".join(got) or "none")' "$2" "$3"
}

kernels() {
    if [ -n "$tp" ]; then
        local like="${2//\*/%}"; like="${like//\?/_}"
        echo "trace processor: $(sql "$1" "select name, count(*) from gpu_slice where name like '$like' group by name")"
    else
        echo "gpu-trace stats: $(counts "$1" kernels "$2") (trace processor: skipped (no trace processor))"
    fi
}

durations() {
    "$gt" stats --json --report kernels "$1" 2>/dev/null | python3 -c '
import fnmatch, json, sys
try:
    rows = json.load(sys.stdin).get("kernels") or []
except ValueError:
    print("no stats (gpu-trace stats failed)"); sys.exit()
got = ["%s: %d, %.1f-%.1f ms" % (r["name"], r["count"], r["min_ns"] / 1e6, r["max_ns"] / 1e6)
       for r in rows if fnmatch.fnmatchcase(r["name"], sys.argv[1])]
print("; ".join(got) or "none")' "$2"
}

trace_facts() {
    "$gt" stats --json --report kernels "$1" 2>/dev/null | python3 -c '
import json, sys
try:
    j = json.load(sys.stdin)
except ValueError:
    print("no stats (gpu-trace stats failed)"); sys.exit()
f = (j.get("files") or [{}])[0]
w = f.get("windows") or {}
print("windows=%s recorded_s=%.3f dropped=%s dangling_submissions=%s complete=%s" % (
    w.get("count", 0), w.get("recorded_ns", 0) / 1e9, j.get("dropped") or "none",
    f.get("dangling_submissions"), j.get("complete")))'
}

detach_limit() {
    local n="$1" limit="$2" gap="$3" secs="$4"
    INJECTION_DETACH="$limit" timeout -s KILL "$secs" "$gt" record --paused -v -t gpu,api,nvtx -o "$o/limit.pftrace" \
        -- "$w/toggles" socket "$n" 20 20 "$gap" >"$o/limit.txt" 2>&1
    echo "rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/limit.txt" | tr '\n' ' ')"
    grep -E "^RSS after" "$o/limit.txt" | tr '\n' ' '; echo
    echo "detaches: $(grep -c 'CUPTI detached (time' "$o/limit.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/limit.txt")"
    grep -m1 "stays attached from now on" "$o/limit.txt"
    echo "kernels: $(kernels "$o/limit.pftrace" 'k_*')"
    echo "the limit's line in the trace: $(sql "$o/limit.pftrace" "select substr(display_value, 1, 400) from slice join args using(arg_set_id) where key = 'message' and display_value like 'CUPTI was detached%'")"
    echo "stats: $(trace_facts "$o/limit.pftrace")"
    rm -f "$o/limit.pftrace"
}
