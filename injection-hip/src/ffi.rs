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

gpu_trace_agent::c_api! {
    program: crate::PROGRAM,
    range: |name: Option<&std::ffi::CStr>| {
        crate::tool::range(&TOOL, name.map(|n| n.to_string_lossy()).as_deref())
    },
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
