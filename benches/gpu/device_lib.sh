# Sourced by the session scripts (benches/gpu/session1*_a.sh) on the device:
#   device_setup NAME BIN   $bin, $here, a work dir $w, its output dir $o
#                           (tarred to $OUT/NAME.tar.gz at exit), $gt,
#                           $tp, $cuda; toggles.cu built as $w/toggles
#   say TEXT                a heading with the seconds so far
#   sql TRACE QUERY         the trace processor's rows, on one line
#   detach_limit WINDOWS LIMIT GAP_MS TIMEOUT_S
#                           toggles.cu's socket windows under
#                           INJECTION_DETACH=LIMIT: its EXPECT/LEAK/RSS
#                           lines, detaches and attaches, the limit's line,
#                           the kernels and the detach line in the trace
device_setup() {
    local name="$1"
    bin="$(cd "$2" && pwd)"; here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    w="$(mktemp -d)"; o="$w/$name"; mkdir -p "$o"
    # shellcheck disable=SC2064 # the names now, not at exit
    trap "tar -czf '${OUT:-.}/$name.tar.gz' -C '$w' '$name'; rm -rf '$w'" EXIT
    gt="$bin/gpu-trace"; tp="$bin/trace_processor_shell"
    export XDG_RUNTIME_DIR="$w" GPU_TRACE="$gt"
    cuda=/usr/local/cuda-13.0; [ -d $cuda ] || cuda=/usr/local/cuda
    timeout 120 $cuda/bin/nvcc -arch=sm_90 -O2 -o "$w/toggles" "$here/windows/toggles.cu" -ldl || exit 1
}

say() { echo "== $* (at $SECONDS s)"; }

sql() { echo "$2" >"$w/q.sql"; "$tp" -q "$w/q.sql" "$1" 2>/dev/null | grep -v '^\[' | tail -n +2 | tr '\n' ' '; echo; }

detach_limit() {
    local n="$1" limit="$2" gap="$3" secs="$4"
    INJECTION_DETACH="$limit" timeout -s KILL "$secs" "$gt" record --paused -v -t gpu,api,nvtx -o "$o/limit.pftrace" \
        -- "$w/toggles" socket "$n" 20 20 "$gap" >"$o/limit.txt" 2>&1
    echo "rc=$? $(grep -E "^(LEAK|EXPECT)" "$o/limit.txt" | tr '\n' ' ')"
    grep -E "^RSS after" "$o/limit.txt" | tr '\n' ' '; echo
    echo "detaches: $(grep -c 'CUPTI detached (time' "$o/limit.txt"), attaches: $(grep -c 'CUPTI attached again' "$o/limit.txt")"
    grep -m1 "stays attached from now on" "$o/limit.txt"
    echo "TP kernels: $(sql "$o/limit.pftrace" "select name, count(*) from gpu_slice where name like 'k_%' group by name")"
    echo "TP log: $(sql "$o/limit.pftrace" "select substr(display_value, 1, 400) from slice join args using(arg_set_id) where key = 'message' and display_value like 'CUPTI was detached%'")"
    rm -f "$o/limit.pftrace"
}
