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
#   GPU_TESTS_TAR_TRACE_MB  when all traces make the tarball too big, only
#                   traces up to this size go in (default 12)
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
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        -*) echo "unknown option $a" >&2; exit 2 ;;
        *) only+=("$a") ;;
    esac
done

bin="${GPU_TRACE_BIN:-target/release}"
bin="$(cd "$bin" 2>/dev/null && pwd)" || { echo "GPU_TRACE_BIN=${GPU_TRACE_BIN:-target/release} does not exist" >&2; exit 1; }
lib="$bin/libgpu_trace_cuda.so"
check="$bin/gpu-check"
cli="$bin/gpu-trace"
for f in "$lib" "$check" "$cli"; do
    [ -e "$f" ] || { echo "missing $f (cargo build --release, then carry target/release)" >&2; exit 1; }
done
cuda="${CUDA_ROOT:-/usr/local/cuda-13.0}"
[ -d "$cuda" ] || cuda=/usr/local/cuda
cupti_nvtx="${CUPTI_NVTX_LIB:-$cuda/targets/x86_64-linux/lib/libcupti.so.13}"
py="${PYTHON:-python3}"
case_timeout="${GPU_TESTS_CASE_TIMEOUT:-240}"
work="${GPU_TESTS_WORK:-$(mktemp -d -t gpu-tests.XXXXXX)}"
mkdir -p "$work/bin"
b="$work/bin"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

echo "== gpu-tests ($([ $quick = 1 ] && echo quick || echo full)) in $work"
echo "   GPU_TRACE_BIN=$bin"
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
    torch_nvtx_steps=10; torch_loop_steps=50
else
    n_empty=100000; graph_args="16 200 10"; paths_repeat=3; nosync_args="50 1000"
    torch_nvtx_steps=50; torch_loop_steps=300
fi

results=()   # "case|verdict|program rc|check rc|seconds|note"
failed=0

want() {
    [ ${#only[@]} -eq 0 ] && return 0
    local c
    for c in "${only[@]}"; do [ "$c" = "$1" ] && return 0; done
    return 1
}

# run_case NAME KIND INFO EXPECT_RC -- COMMAND...
#   Runs COMMAND traced (unless the command sets up tracing itself, see
#   TRACE_MODE), then gpu-check KIND. INFO=1: the result does not count.
#   TRACE_MODE: env (default) | cli | cupti_nvtx
run_case() {
    local name="$1" kind="$2" info="$3" want_rc="$4"
    shift 5
    want "$name" || return 0
    local trace="$work/$name.pftrace" outf="$work/$name.out" errf="$work/$name.err"
    rm -f "$work/$name".*pftrace
    local mode="${TRACE_MODE:-env}" nvtx_lib="$lib"
    [ "$mode" = cupti_nvtx ] && nvtx_lib="$cupti_nvtx"
    echo "== $name: $*"
    local s e rc crc verdict note=""
    s=$(now)
    if [ "$mode" = cli ]; then
        timeout -k 10 "$case_timeout" "$cli" record --no-stats -o "$trace" -- "$@" >"$outf" 2>"$errf"
        rc=$?
    else
        CUDA_INJECTION64_PATH="$lib" NVTX_INJECTION64_PATH="$nvtx_lib" INJECTION_OUTPUT="$trace" \
            timeout -k 10 "$case_timeout" "$@" >"$outf" 2>"$errf"
        rc=$?
    fi
    e=$(now)
    if [ ! -s "$trace" ]; then
        # A traced process never overwrites: a leftover name gets .1, .2 ...
        local alt
        alt="$(ls -t "$work/$name".*.pftrace 2>/dev/null | head -1)"
        [ -n "$alt" ] && trace="$alt"
    fi
    "$check" --label "$name" "${validate[@]}" "$kind" "$trace" "$outf" >"$work/$name.check" 2>&1
    crc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        verdict=FAIL
        note="program exited $rc, expected $want_rc"
        [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && note="timed out after ${case_timeout}s"
    elif [ "$crc" -ne 0 ]; then
        verdict=FAIL
        note="$(grep -E '^(FAIL|PASS) ' "$work/$name.check" | tail -1 | cut -c1-160)"
        [ -n "$note" ] || note="$(tail -1 "$work/$name.check" | cut -c1-160)"
    else
        verdict=PASS
    fi
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
        logs=(summary.txt ./*.out ./*.err ./*.check bin/*.build.log)
        # Every trace if the tarball stays under the 16 MiB a returned file
        # may have; else traces up to GPU_TESTS_TAR_TRACE_MB; else up to 1 MiB.
        for limit_mb in 100000 "${GPU_TESTS_TAR_TRACE_MB:-12}" 1; do
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
