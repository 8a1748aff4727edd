//! The exported entry points: the only `unsafe` of this library.
#![allow(unreachable_pub)] // exported to C, not to Rust

use std::ffi::c_int;
use std::sync::Once;

/// Called by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH`
/// names this library. Returns 1: a failure to start tracing is ours to
/// report, not a reason for CUDA to fail.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjection() -> c_int {
    gpu_trace_model::guard::catch("InitializeInjection", || {
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
            gpu_trace_model::warn!(
                "cannot register the exit handler; the trace holds data up to the last periodic write"
            );
        }
    });
}

extern "C" fn at_exit() {
    gpu_trace_agent::exit::on_exit(crate::shutdown);
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

/// Called by NVTX when `NVTX_INJECTION64_PATH` names this library, at the
/// application's first NVTX call (which may come before CUDA starts): starts
/// the tool and fills NVTX's function tables with our handlers. Returns 0
/// (NVTX stays a no-op) if that fails.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjectionNvtx2(get: cupti_sys::NvtxGetExportTableFunc_t) -> c_int {
    gpu_trace_model::guard::catch("InitializeInjectionNvtx2", || {
        let running = crate::init();
        register_exit_handler();
        if !running {
            // The tool already said why it is off; NVTX stays a no-op.
            return 0;
        }
        // SAFETY: `get` is NVTX's own export-table getter, and we are inside
        // the NVTX initialisation that passed it.
        match unsafe { cupti::nvtx_injection::install(get, crate::on_nvtx) } {
            Ok(()) => 1,
            Err(e) => {
                gpu_trace_model::warn!("NVTX ranges are not recorded: {e}");
                0
            }
        }
    })
    .unwrap_or(0)
}

// ----------------------------------------------------------------------------
// The C API of gpu_trace.h: the traced program's own control of recording.
// Every function returns at once, never unwinds, and does nothing harmful
// when gpu-trace is off; see `gpu_trace_agent::program`.

gpu_trace_agent::c_api! {
    program: crate::PROGRAM,
    range: crate::range,
}
