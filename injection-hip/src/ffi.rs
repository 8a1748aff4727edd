//! The exported entry point and the exit handler: the only `unsafe` of this library.
#![allow(unreachable_pub)] // exported to C, not to Rust

use crate::tool::HipTool;
use rocprofiler::{ToolCell, sys};
use std::ffi::{c_char, c_int};
use std::sync::Once;

/// The process's one tool: its configuration, session and tracer.
static TOOL: ToolCell<HipTool> = ToolCell::new();

/// Called by rocprofiler-sdk once per process, when `ROCP_TOOL_LIBRARIES` names this library
/// or it is preloaded. Refuses SDK 0.x (ROCm 6.x) with one line on stderr.
///
/// # Safety
/// Only the SDK calls this, with its own arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure(
    version: u32,
    runtime_version: *const c_char,
    priority: u32,
    client_id: *mut sys::rocprofiler_client_id_t,
) -> *mut sys::rocprofiler_tool_configure_result_t {
    // SAFETY: the SDK's arguments, unchanged.
    let r = unsafe { TOOL.configure(version, runtime_version, priority, client_id) };
    if TOOL.tool().is_none() {
        // Refused (an SDK it does not support, or a setuid program).
        crate::PROGRAM.off();
    }
    r
}

static AT_EXIT: Once = Once::new();

/// Registers the exit handler; call after the tracer started (see `tool`).
pub(crate) fn register_exit_handler() {
    AT_EXIT.call_once(|| {
        // SAFETY: `at_exit` is a plain `extern "C" fn()` that never unwinds.
        let rc = unsafe { atexit(at_exit) };
        if rc != 0 {
            gpu_trace_model::warn!(
                "cannot register the exit handler; the trace holds data up to the last periodic write unless rocprofiler-sdk finalises the tool first"
            );
        }
    });
}

extern "C" fn at_exit() {
    gpu_trace_agent::exit::on_exit(|| crate::tool::at_exit(&TOOL));
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

// ----------------------------------------------------------------------------
// The C API of gpu_trace.h: the traced program's own control of recording.
// Every function returns at once, never unwinds, and does nothing harmful
// when gpu-trace is off; see `gpu_trace_agent::program`.

use gpu_trace_agent::program::status;
use std::ffi::CStr;

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
    control("gpu_trace_range_push", || {
        crate::tool::range(&TOOL, Some(&name.to_string_lossy()))
    })
}

/// Pops the calling thread's innermost range, as `nvtxRangePop`.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_trace_range_pop() -> c_int {
    control("gpu_trace_range_pop", || crate::tool::range(&TOOL, None))
}

/// The SDK's functions as `Runtime::from_process` resolves them, minus `hidden` (failpoint
/// `missing:<symbol>`).
#[cfg(feature = "failpoints")]
pub(crate) fn runtime_without(hidden: &[String]) -> rocprofiler::Result<rocprofiler::Runtime> {
    use std::ffi::c_void;
    let this = libloading::os::unix::Library::this();
    let resolve = |name: &std::ffi::CStr| -> *const c_void {
        if hidden.iter().any(|h| h.as_bytes() == name.to_bytes()) {
            return std::ptr::null();
        }
        // SAFETY: only turned into an address here; `load_with` types it by name.
        match unsafe { this.get::<*const c_void>(name.to_bytes_with_nul()) } {
            Ok(s) => s.into_raw() as *const c_void,
            Err(_) => std::ptr::null(),
        }
    };
    // SAFETY: inside a tool library the process's rocprofiler_* symbols are the SDK's.
    let api = unsafe { sys::Api::load_with(resolve) };
    if !api.has("rocprofiler_get_version") {
        return rocprofiler::Runtime::from_process();
    }
    Ok(rocprofiler::Runtime::from_api(api))
}
