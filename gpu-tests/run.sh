#!/usr/bin/env bash
# GPU test suite: builds the CUDA test programs, runs every case with
# gpu-trace injected, and checks each trace with gpu-check against the
# program's own EXPECT lines. Rust is not needed here: the artifacts are
# built elsewhere and carried.
#
#   bash gpu-tests/run.sh [--quick] [CASE...]      (from the repository root)
#
# Environment:
#   GPU_TRACE_BIN   directory with libgpu_trace_cuda.so, gpu-check, gpu-trace
#                   (default target/release)
#   OUT             if set, logs and (small) traces go to $OUT/gpu-tests.tar.gz
#                   and the result table to $OUT/summary.txt
#   GPU_TESTS_WORK  work directory (default: a new gpu-tests.XXXXXX under $TMPDIR)
#   CUDA_ROOT, NVCC, GPU_ARCH, NVCC_FLAGS   see build.sh
#   CUPTI_NVTX_LIB  libcupti used as NVTX injection by the nvtx_cupti case
#                   (default $CUDA_ROOT/targets/x86_64-linux/lib/libcupti.so.13)
#   PYTHON          python with torch (default python3)
#   GPU_TESTS_CASE_TIMEOUT  seconds per program (default 240)
#   GPU_TESTS_CHECK_TIMEOUT seconds per gpu-check (default 1200)
#   GPU_TESTS_TAR_TRACE_MB  when all traces make the tarball too big, only
#                   traces up to this size go in (default 12)
#   GPU_TESTS_BIG   1: also run the 10,000,000-kernel cases
#                   (empty_kernels_10m_8t, empty_kernels_10m_1t: minutes, and
#                   ~1.4 GB traces); a case named on the command line runs anyway
#   GPU_TESTS_KEEP_BIG      1: keep the big cases' traces (by default each is
#                   deleted once gpu-check has read it)
#   GPU_TESTS_BIG_TIMEOUT   seconds per program of a big case (default 1200)
#   GPU_TESTS_DEVICE        text the trace's GPU name must contain (default
#                   H200; H100 on an H100)
#
# Exit status: 0 when every case passed (informational cases excepted).
# Never changes GPU clocks or settings.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root" || exit 1

quick=0
only=()
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
        -*) echo "unknown option $a" >&2; exit 2 ;;
        *) only+=("$a") ;;
    esac
done

bin="${GPU_TRACE_BIN:-target/release}"
bin="$(cd "$bin" 2>/dev/null && pwd)" || { echo "GPU_TRACE_BIN=${GPU_TRACE_BIN:-target/release} does not exist" >&2; exit 1; }
lib="$bin/libgpu_trace_cuda.so"
check="$bin/gpu-check"
cli="$bin/gpu-trace"
tp="${GPU_TRACE_TP:-$bin/trace_processor_shell}"
[ -x "$tp" ] || { echo "note: no trace_processor_shell ($tp): the trace-processor cross-check is skipped"; tp=""; }
for f in "$lib" "$check" "$cli"; do
    [ -e "$f" ] || { echo "missing $f (cargo build --release, then carry target/release)" >&2; exit 1; }
done
cuda="${CUDA_ROOT:-/usr/local/cuda-13.0}"
[ -d "$cuda" ] || cuda=/usr/local/cuda
cupti_nvtx="${CUPTI_NVTX_LIB:-$cuda/targets/x86_64-linux/lib/libcupti.so.13}"
py="${PYTHON:-python3}"
case_timeout="${GPU_TESTS_CASE_TIMEOUT:-240}"
check_timeout="${GPU_TESTS_CHECK_TIMEOUT:-1200}"
big="${GPU_TESTS_BIG:-0}"
big_timeout="${GPU_TESTS_BIG_TIMEOUT:-1200}"
work="${GPU_TESTS_WORK:-$(mktemp -d -t gpu-tests.XXXXXX)}"
mkdir -p "$work/bin"
b="$work/bin"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

echo "== gpu-tests ($([ $quick = 1 ] && echo quick || echo full)) in $work"
echo "   GPU_TRACE_BIN=$bin"
echo "   big cases (10M kernels): $([ "$big" = 1 ] && echo "on (GPU_TESTS_BIG=1)" || echo "off unless named (GPU_TESTS_BIG=1 runs them)")"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | sed 's/^/   gpu: /'

t0=$(now)
echo "== building test programs"
CUDA_ROOT="$cuda" bash "$here/build.sh" "$b" || echo "   (some programs failed to build; their cases will fail)"
echo "   build took $(secs "$t0" "$(now)") s"

validate=()
if "$py" -c "import perfetto, google.protobuf" 2>/dev/null; then
    validate=(--validate "$py" --validator "$root/tools/validate_pftrace.py")
    echo "   schema validation: on ($py has perfetto)"
else
    echo "   schema validation: skipped ($py lacks the perfetto wheel)"
fi

# Sizes.
if [ $quick = 1 ]; then
    n_empty=2000; graph_args="8 20 5"; paths_repeat=1; nosync_args="20 1000"
    torch_nvtx_steps=10; torch_loop_steps=50; graph_copies_args="65536 5"
    alloc_bytes=1048576; managed_bytes=8388608
else
    n_empty=100000; graph_args="16 200 10"; paths_repeat=3; nosync_args="50 1000"
    torch_nvtx_steps=50; torch_loop_steps=300; graph_copies_args="1048576 20"
    alloc_bytes=8388608; managed_bytes=67108864
fi

results=()   # "case|verdict|program rc|check rc|seconds|note"
failed=0

want() {
    [ ${#only[@]} -eq 0 ] && return 0
    local c
    for c in "${only[@]}"; do [ "$c" = "$1" ] && return 0; done
    return 1
}

# A case that runs only when GPU_TESTS_BIG=1 (and no case list was given),
# or when it is named on the command line.
want_big() {
    local c
    if [ ${#only[@]} -gt 0 ]; then
        for c in "${only[@]}"; do [ "$c" = "$1" ] && return 0; done
        return 1
    fi
    [ "$big" = 1 ]
}

# The MAXRSS_KB=N a `/usr/bin/time -f 'MAXRSS_KB=%M'` file holds ("" if none).
rss_kb() { grep -o 'MAXRSS_KB=[0-9]*' "$1" 2>/dev/null | tail -1 | cut -d= -f2; }
mib() { [ -n "$1" ] && awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }' || echo "?"; }

# run_case NAME KIND INFO EXPECT_RC -- COMMAND...
#   Runs COMMAND traced (unless the command sets up tracing itself, see
#   TRACE_MODE), then gpu-check KIND. INFO=1: the result does not count.
#   Settings for one call (VAR=value run_case ...):
#   TRACE_MODE    env (default) | cli | cupti_nvtx
#   CASE_TIMEOUT  seconds for the program (default GPU_TESTS_CASE_TIMEOUT)
#   MEASURE_RSS=1 peak RSS of the traced program, of the same command run
#                 untraced, and of gpu-check (/usr/bin/time), into the note
#   DELETE_TRACE=1  delete the trace after gpu-check (GPU_TESTS_KEEP_BIG=1 keeps it)
#   EXPECT_LOSS=1 the run must lose events and say so: gpu-check
#                 --expect-loss STDERR, and `gpu-trace stats --strict` must
#                 exit non-zero
run_case() {
    local name="$1" kind="$2" info="$3" want_rc="$4"
    shift 5
    want "$name" || return 0
    local trace="$work/$name.pftrace" outf="$work/$name.out" errf="$work/$name.err"
    rm -f "$work/$name".*pftrace "$work/$name".*.rss "$work/$name".stats
    local mode="${TRACE_MODE:-env}" nvtx_lib="$lib" tmo="${CASE_TIMEOUT:-$case_timeout}"
    [ "$mode" = cupti_nvtx ] && nvtx_lib="$cupti_nvtx"
    local timer=() extra=()
    if [ "${MEASURE_RSS:-0}" = 1 ] && [ "$mode" != cli ]; then
        if [ -x /usr/bin/time ]; then
            timer=(/usr/bin/time -f 'MAXRSS_KB=%M' -o "$work/$name.traced.rss")
        else
            echo "   note: /usr/bin/time not found, peak RSS not measured"
        fi
    fi
    [ "${EXPECT_LOSS:-0}" = 1 ] && extra=(--expect-loss "$errf")
    echo "== $name: $*"
    local s e rc crc verdict note="" rss_note=""
    s=$(now)
    if [ "$mode" = cli ]; then
        timeout -k 10 "$tmo" "$cli" record --no-stats -o "$trace" -- "$@" >"$outf" 2>"$errf"
        rc=$?
    else
        CUDA_INJECTION64_PATH="$lib" NVTX_INJECTION64_PATH="$nvtx_lib" INJECTION_OUTPUT="$trace" \
            timeout -k 10 "$tmo" "${timer[@]}" "$@" >"$outf" 2>"$errf"
        rc=$?
    fi
    e=$(now)
    if [ ! -s "$trace" ]; then
        # A traced process never overwrites: a leftover name gets .1, .2 ...
        local alt
        alt="$(ls -t "$work/$name".*.pftrace 2>/dev/null | head -1)"
        [ -n "$alt" ] && trace="$alt"
    fi
    if [ ${#timer[@]} -gt 0 ]; then
        # The same command untraced, for the RSS the tracing adds.
        local us urc tr ur
        us=$(now)
        env -u CUDA_INJECTION64_PATH -u NVTX_INJECTION64_PATH -u INJECTION_OUTPUT \
            timeout -k 10 "$tmo" /usr/bin/time -f 'MAXRSS_KB=%M' -o "$work/$name.untraced.rss" "$@" \
            >"$work/$name.untraced.out" 2>"$work/$name.untraced.err"
        urc=$?
        echo "   untraced run: exit $urc, $(secs "$us" "$(now)") s (traced: $(secs "$s" "$e") s)"
        tr=$(rss_kb "$work/$name.traced.rss")
        ur=$(rss_kb "$work/$name.untraced.rss")
        rss_note="rss traced=$(mib "$tr") MiB untraced=$(mib "$ur") MiB growth=$(
            [ -n "$tr" ] && [ -n "$ur" ] && mib $((tr - ur)) || echo "?") MiB"
        [ "$urc" -ne "$want_rc" ] && rss_note="$rss_note (untraced run exited $urc)"
    fi
    # Decoding a trace takes 17-19 times its size in memory (README): refuse
    # rather than be killed when the machine has less.
    local size=0 avail need
    [ -e "$trace" ] && size=$(stat -c %s "$trace")
    avail=$(awk '/^MemAvailable:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo 2>/dev/null)
    need=$((size * 20))
    local checker=("$check")
    if [ ${#timer[@]} -gt 0 ]; then
        checker=(/usr/bin/time -f 'MAXRSS_KB=%M WALL_S=%e' -o "$work/$name.gpu-check.rss" "$check")
    fi
    if [ -n "$avail" ] && [ "$need" -gt "$avail" ]; then
        echo "FAIL $name: gpu-check would need ~$((need >> 30)) GiB for a $((size >> 20)) MiB trace, $((avail >> 30)) GiB available" \
            >"$work/$name.check"
        crc=1
    else
        timeout -k 10 "$check_timeout" "${checker[@]}" --label "$name" \
            --device-name "${GPU_TESTS_DEVICE:-H200}" "${validate[@]}" "${extra[@]}" \
            "$kind" "$trace" "$outf" >"$work/$name.check" 2>&1
        crc=$?
        [ "$crc" -eq 124 ] || [ "$crc" -eq 137 ] &&
            echo "FAIL $name: gpu-check did not finish in ${check_timeout}s (or was killed)" >>"$work/$name.check"
    fi
    if [ ${#timer[@]} -gt 0 ] && [ -s "$work/$name.gpu-check.rss" ]; then
        rss_note="$rss_note; trace $((size >> 20)) MiB, gpu-check $(mib "$(rss_kb "$work/$name.gpu-check.rss")") MiB $(
            grep -o 'WALL_S=[0-9.]*' "$work/$name.gpu-check.rss" | cut -d= -f2) s"
    fi
    # Perfetto's trace processor, the UI's engine, where it was carried
    # ($GPU_TRACE_BIN/trace_processor_shell or GPU_TRACE_TP): it must show
    # as many GPU slices as gpu-check counted kernels, memory operations and
    # unified-memory events,
    # and no error or data-loss stat.
    local tp_note=""
    if [ -n "$tp" ] && [ -e "$trace" ] && [ "$size" -le $((512 << 20)) ]; then
        local tp_out tp_gpu tp_bad ours
        tp_out="$("$tp" -q "$here/tp_check.sql" "$trace" 2>/dev/null)"
        tp_gpu="$(printf '%s\n' "$tp_out" | awk -F, '/^"gpu_work"/ { getline; gsub(/"/, ""); print $1; exit }')"
        tp_bad="$(printf '%s\n' "$tp_out" | awk -F, '/^"problem"/ { f = 1; next } f && NF { gsub(/"/, ""); printf "%s ", $0 }')"
        ours="$(grep -E '^PASS ' "$work/$name.check" | tail -1 | awk '{
            k = 0; m = 0
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^kernels=/) { sub(/^kernels=/, "", $i); k = $i }
                if ($i ~ /^memory_ops=/) { sub(/^memory_ops=/, "", $i); m = $i }
                if ($i ~ /^uvm_events=/) { sub(/^uvm_events=/, "", $i); m += $i }
            }
            print k + m }')"
        echo "   trace processor: ${tp_gpu:-?} GPU slices (gpu-check: ${ours:-?})${tp_bad:+; stats: $tp_bad}"
        if [ -n "$ours" ] && [ "$tp_gpu" != "$ours" ]; then
            tp_note="trace processor shows ${tp_gpu:-?} GPU slices, gpu-check counted $ours"
        elif [ -n "$tp_bad" ]; then
            tp_note="trace processor stats: $tp_bad"
        fi
    fi
    local strict_note=""
    if [ "${EXPECT_LOSS:-0}" = 1 ]; then
        # A lossy trace must make `stats --strict` fail.
        local src
        "$cli" stats --strict "$trace" >"$work/$name.stats" 2>&1
        src=$?
        echo "   gpu-trace stats --strict: exit $src"
        if [ "$src" -eq 0 ]; then
            strict_note="gpu-trace stats --strict exited 0 on a trace that lost events"
        elif [ "$src" -eq 2 ] && grep -q "unexpected argument" "$work/$name.stats"; then
            strict_note="gpu-trace stats has no --strict yet (exit 2: unexpected argument)"
        fi
    fi
    if [ "${DELETE_TRACE:-0}" = 1 ] && [ "${GPU_TESTS_KEEP_BIG:-0}" != 1 ] && [ -e "$trace" ]; then
        rm -f "$trace"
        echo "   deleted $trace ($((size >> 20)) MiB; GPU_TESTS_KEEP_BIG=1 keeps it)"
    fi
    if [ "$rc" -ne "$want_rc" ]; then
        verdict=FAIL
        note="program exited $rc, expected $want_rc"
        [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && note="timed out after ${tmo}s"
    elif [ "$crc" -ne 0 ]; then
        verdict=FAIL
        note="$(grep -E '^(FAIL|PASS) ' "$work/$name.check" | tail -1 | cut -c1-160)"
        [ -n "$note" ] || note="$(tail -1 "$work/$name.check" | cut -c1-160)"
    elif [ -n "$strict_note" ]; then
        verdict=FAIL
        note="$strict_note"
    elif [ -n "$tp_note" ]; then
        verdict=FAIL
        note="$tp_note"
    else
        verdict=PASS
    fi
    [ -n "$rss_note" ] && note="${note:+$note; }$rss_note"
    note="${note//|//}"
    sed 's/^/   /' "$work/$name.check" | tail -40
    if [ "$verdict" = FAIL ]; then
        echo "   -- stderr (last 15 lines):"
        tail -15 "$errf" | sed 's/^/   | /'
    fi
    if [ "$info" = 1 ]; then
        verdict="$verdict(info)"
    elif [ "$verdict" = FAIL ]; then
        failed=$((failed + 1))
    fi
    results+=("$name|$verdict|$rc|$crc|$(secs "$s" "$e")|$note")
}

run_case empty_kernels_1t empty_kernels 0 0 -- "$b/empty_kernels" "$n_empty" 1
run_case empty_kernels_8t empty_kernels 0 0 -- "$b/empty_kernels" "$n_empty" 8
TRACE_MODE=cli run_case empty_kernels_cli empty_kernels 0 0 -- "$b/empty_kernels" 2000 4

# The exit status is the application's, traced or not.
if want exit_code; then
    s=$(now)
    timeout -k 10 "$case_timeout" "$b/empty_kernels" 100 1 7 >"$work/exit_code.untraced.out" 2>&1
    urc=$?
    echo "== exit_code: untraced empty_kernels 100 1 7 exited $urc"
    run_case exit_code empty_kernels 0 7 -- "$b/empty_kernels" 100 1 7
    if [ "$urc" -ne 7 ]; then
        failed=$((failed + 1))
        results+=("exit_code_untraced|FAIL|$urc|-|$(secs "$s" "$(now)")|untraced run exited $urc, expected 7")
    fi
fi

run_case memops memops 0 0 -- "$b/memops" 1048576 3
# shellcheck disable=SC2086
run_case graph graph 0 0 -- "$b/graph" $graph_args
run_case launch_paths launch_paths 0 0 -- "$b/launch_paths" "$paths_repeat"
run_case launch_paths_ptsz launch_paths 0 0 -- "$b/launch_paths_ptsz" "$paths_repeat"
# shellcheck disable=SC2086
run_case nosync_exit nosync_exit 0 0 -- "$b/nosync_exit" $nosync_args
run_case device_reset device_reset 0 0 -- "$b/device_reset" 10 10
run_case nvtx nvtx 0 0 -- "$b/nvtx" 10
if [ -e "$cupti_nvtx" ]; then
    TRACE_MODE=cupti_nvtx run_case nvtx_cupti nvtx 1 0 -- "$b/nvtx" 10
elif want nvtx_cupti; then
    results+=("nvtx_cupti|SKIP(info)|-|-|0|$cupti_nvtx not found (CUPTI_NVTX_LIB)")
fi
run_case multi_stream_sync multi_stream_sync 0 0 -- "$b/multi_stream_sync" 4 8 3 20
run_case occupancy occupancy 0 0 -- "$b/occupancy" 2
run_case multi_context multi_context 0 0 -- "$b/multi_context" 10
run_case capture_range capture_range 0 0 -- env INJECTION_CAPTURE_RANGE=cudaProfilerApi "$b/capture_range" 200 100 200
# shellcheck disable=SC2086
run_case graph_copies graph_copies 0 0 -- "$b/graph_copies" $graph_copies_args
# Device memory in use (-t memory): the GPU's curve step by step; and
# unified memory (-t uvm): prefetched bytes each way, faults. Both also
# check the busy counters against the trace's own GPU work (busy_exact).
run_case alloc alloc 0 0 -- env INJECTION_TRACE=gpu,api,markers,memory "$b/alloc" "$alloc_bytes"
# Unified memory records on the H200 once CUDA is ready (there the user
# migrations' bytes equal the program's, each way).
run_case managed managed 0 0 -- env INJECTION_TRACE=gpu,api,markers,uvm "$b/managed" "$managed_bytes"
# A 64 KiB queue that drops when full (rather than making threads wait)
# cannot hold 200,000 launches from 4 threads: events are dropped, counted
# in the trace and said once on stderr; the case passes when all of that
# holds (gpu-check --expect-loss) and stats --strict fails.
EXPECT_LOSS=1 run_case forced_loss empty_kernels 0 0 -- \
    env INJECTION_QUEUE_SIZE=64K INJECTION_QUEUE_FULL=drop "$b/empty_kernels" 200000 4
if "$py" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    run_case torch_nvtx torch_nvtx 0 0 -- "$py" "$here/python/torch_nvtx.py" --steps "$torch_nvtx_steps"
    run_case torch_loop torch_loop 0 0 -- "$py" "$here/python/torch_loop.py" --steps "$torch_loop_steps"
    grep -h '^RESULT' "$work/torch_loop.out" 2>/dev/null | sed 's/^/   traced torch_loop: /'
    # A second CUPTI client (torch.profiler) starts and stops mid-run. The
    # same loop must give the same kernel count as torch_loop.
    run_case torch_loop_kineto torch_loop 1 0 -- "$py" "$here/python/torch_loop.py" --steps "$torch_loop_steps" --torch-profiler
    if want torch_loop_kineto; then
        for c in torch_loop torch_loop_kineto; do
            [ -s "$work/$c.pftrace" ] || continue
            echo "   $c: kernels in our trace: $("$cli" stats --json "$work/$c.pftrace" 2>/dev/null | "$py" -c 'import json,sys; print(sum(k["count"] for k in json.load(sys.stdin)["kernels"]))' 2>&1)"
        done
        grep -h '^KINETO' "$work/torch_loop_kineto.out" 2>/dev/null | sed 's/^/   torch.profiler: /'
        grep -h 'gpu-trace' "$work/torch_loop_kineto.err" 2>/dev/null | head -5 | sed 's/^/   stderr: /'
    fi
else
    for c in torch_nvtx torch_loop torch_loop_kineto; do
        want "$c" && { failed=$((failed + 1)); results+=("$c|FAIL|-|-|0|$py has no torch with CUDA"); }
    done
fi

# Nothing lost at any rate: 10,000,000 empty kernels with default settings,
# with peak RSS traced and untraced. Opt-in (GPU_TESTS_BIG=1 or by name).
for nt in 8 1; do
    c="empty_kernels_10m_${nt}t"
    want_big "$c" || continue
    CASE_TIMEOUT="$big_timeout" MEASURE_RSS=1 DELETE_TRACE=1 \
        run_case "$c" empty_kernels 0 0 -- "$b/empty_kernels" 10000000 "$nt"
done

total=$(secs "$t0" "$(now)")
{
    echo
    printf '%-22s %-12s %8s %8s %8s  %s\n' case result prog_rc check_rc wall_s note
    for r in "${results[@]}"; do
        IFS='|' read -r c v prc crc w n <<<"$r"
        printf '%-22s %-12s %8s %8s %8s  %s\n' "$c" "$v" "$prc" "$crc" "$w" "$n"
    done
    echo
    echo "total ${total} s; $failed failed; work directory $work"
} | tee "$work/summary.txt"

if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    cp "$work/summary.txt" "$OUT/summary.txt"
    (
        cd "$work" || exit 1
        logs=(summary.txt ./*.out ./*.err ./*.check ./*.stats ./*.rss bin/*.build.log)
        # Every trace if the tarball stays under the 16 MiB a returned file
        # may have; else traces up to GPU_TESTS_TAR_TRACE_MB; else up to 1 MiB.
        # (A trace over 256 MiB, a kept big one, never fits: not tried.)
        for limit_mb in 256 "${GPU_TESTS_TAR_TRACE_MB:-12}" 1; do
            files=("${logs[@]}")
            for t in ./*.pftrace; do
                [ -e "$t" ] && [ "$(stat -c %s "$t")" -le $((limit_mb * 1024 * 1024)) ] && files+=("$t")
            done
            tar czf "$OUT/gpu-tests.tar.gz" "${files[@]}" 2>/dev/null
            [ "$(stat -c %s "$OUT/gpu-tests.tar.gz")" -le $((15 * 1024 * 1024)) ] && break
        done
    )
    echo "wrote $OUT/gpu-tests.tar.gz ($(stat -c %s "$OUT/gpu-tests.tar.gz") bytes) and $OUT/summary.txt"
fi
[ "$failed" -eq 0 ]
