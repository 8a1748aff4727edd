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

use gpu_trace_agent::program::status;
use std::ffi::{CStr, c_char};

/// The crate version, NUL-terminated, for `gpu_trace_version`.
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("the crate version holds a NUL"),
    };

/// Runs a control function inside the panic guard: a panic is reported
/// once and the call says gpu-trace is off.
fn control(what: &'static str, f: impl FnOnce() -> i32) -> c_int {
    gpu_trace_model::guard::catch(what, f).unwrap_or(status::OFF)
}

/// `name` as a string, or `None` when null.
///
/// # Safety
/// `name` is null or a NUL-terminated string valid for the call.
unsafe fn name_arg<'a>(name: *const c_char) -> Option<&'a CStr> {
    if name.is_null() {
        return None;
    }
    // SAFETY: the caller's NUL-terminated string, read during the call only.
    Some(unsafe { CStr::from_ptr(name) })
}

/// This library's version (the crate version, e.g. `0.1.0`); a static string.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The version of the C API this library implements (`GPU_TRACE_API_VERSION`).
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_api_version() -> c_int {
    gpu_trace_agent::program::API_VERSION
}

/// Opens a recording window, unless one is open.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_start() -> c_int {
    control("gpu_trace_start", || crate::PROGRAM.start())
}

/// Closes the recording window, if one is open.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_stop() -> c_int {
    control("gpu_trace_stop", || crate::PROGRAM.stop())
}

/// Opens a recording window named `name`, unless one is open (then it nests).
///
/// # Safety
/// `name` is null (refused) or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_trace_window_begin(name: *const c_char) -> c_int {
    // SAFETY: as this function's contract says.
    let name = unsafe { name_arg(name) };
    control("gpu_trace_window_begin", || {
        crate::PROGRAM.window_begin(name.map(|n| n.to_string_lossy()).as_deref())
    })
}

/// Ends the innermost window begun; closes recording if its begin opened it.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_window_end() -> c_int {
    control("gpu_trace_window_end", || crate::PROGRAM.window_end())
}

/// 1 while recording, 0 while not, negative when gpu-trace is off.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_is_active() -> c_int {
    control("gpu_trace_is_active", || crate::PROGRAM.is_active())
}

/// Pushes a range named `name` on the calling thread, as `nvtxRangePushA`.
///
/// # Safety
/// `name` is null (refused) or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_trace_range_push(name: *const c_char) -> c_int {
    // SAFETY: as this function's contract says.
    let Some(name) = (unsafe { name_arg(name) }) else {
        return status::INVALID;
    };
    control("gpu_trace_range_push", || crate::range(Some(name)))
}

/// Pops the calling thread's innermost range, as `nvtxRangePop`.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_range_pop() -> c_int {
    control("gpu_trace_range_pop", || crate::range(None))
}
