//! The exported entry point: the whole C boundary of this tool.

use std::ffi::c_char;

use rocprofiler::{ToolCell, sys};

use crate::CountTool;

static TOOL: ToolCell<CountTool> = ToolCell::new();

/// Called by rocprofiler-sdk (or the simulator) once per process.
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
    unsafe { TOOL.configure(version, runtime_version, priority, client_id) }
}
