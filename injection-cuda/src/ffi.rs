//! The exported entry points: the only `unsafe` of this library.
#![allow(unreachable_pub)] // exported to C, not to Rust

use std::ffi::{c_int, c_void};
use std::sync::Once;

/// Called by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH`
/// names this library. Returns 1: a failure to start tracing is ours to
/// report, not a reason for CUDA to fail.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjection() -> c_int {
    gpu_trace_core::guard::catch("InitializeInjection", || {
        crate::init();
        register_exit_handler();
    });
    1
}

static AT_EXIT: Once = Once::new();

fn register_exit_handler() {
    AT_EXIT.call_once(|| {
        // SAFETY: `at_exit` is a plain `extern "C" fn()` that never unwinds.
        let rc = unsafe { atexit(at_exit) };
        if rc != 0 {
            gpu_trace_core::warn!(
                "cannot register the exit handler; the trace holds data up to the last periodic write"
            );
        }
    });
}

extern "C" fn at_exit() {
    gpu_trace_core::guard::catch("exit handler", crate::shutdown);
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

/// `NvtxGetExportTableFunc_t`.
type GetExportTable = Option<unsafe extern "C" fn(u32) -> *const c_void>;
type InitNvtx = unsafe extern "C" fn(GetExportTable) -> c_int;

/// Called by NVTX when `NVTX_INJECTION64_PATH` names this library: hands
/// NVTX to CUPTI, whose NVTX callbacks then reach us. Returns 0 (NVTX stays
/// a no-op) if CUPTI cannot be found.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjectionNvtx2(get: GetExportTable) -> c_int {
    gpu_trace_core::guard::catch("InitializeInjectionNvtx2", || {
        let path = match cupti::Cupti::load() {
            Ok(c) => c.path().to_owned(),
            Err(e) => {
                gpu_trace_core::warn!("NVTX ranges are not recorded: CUPTI is not usable ({e})");
                return 0;
            }
        };
        // SAFETY: opening CUPTI runs no foreign initialisers beyond the
        // library's own; it is kept loaded for the life of the process.
        let lib = match unsafe { libloading::Library::new(&path) } {
            Ok(l) => l,
            Err(e) => {
                gpu_trace_core::warn!("NVTX ranges are not recorded: cannot open {path}: {e}");
                return 0;
            }
        };
        // SAFETY: CUPTI exports `InitializeInjectionNvtx2` with this signature
        // (the NVTX injection ABI).
        let init: InitNvtx = match unsafe { lib.get::<InitNvtx>(b"InitializeInjectionNvtx2\0") } {
            Ok(f) => *f,
            Err(e) => {
                gpu_trace_core::warn!(
                    "NVTX ranges are not recorded: {path} lacks the NVTX hook: {e}"
                );
                return 0;
            }
        };
        std::mem::forget(lib);
        // SAFETY: forwarding NVTX's own argument to CUPTI's implementation.
        unsafe { init(get) }
    })
    .unwrap_or(0)
}
