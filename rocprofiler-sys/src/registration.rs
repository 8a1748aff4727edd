//! `rocprofiler-sdk/registration.h`: what a tool's `rocprofiler_configure` exchanges with the SDK.

use core::ffi::{c_char, c_void};

use crate::{rocprofiler_tool_finalize_t, rocprofiler_tool_initialize_t};

/// In/out argument of `rocprofiler_configure` (1.x layout: 24 bytes, `size` first).
///
/// In 0.x this struct was `{name, handle}` (16 bytes): check the `version` argument with
/// [`crate::abi_supported`] before writing to it.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_client_id_t {
    /// `sizeof` as the SDK compiled it.
    pub size: usize,
    /// Tool name; the tool may set it (static storage).
    pub name: *const c_char,
    /// The SDK's id for this tool (read-only).
    pub handle: u32,
}

/// What a tool's `rocprofiler_configure` returns (32 bytes in every release). The pointer must
/// stay valid for the life of the process.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_tool_configure_result_t {
    /// `sizeof(rocprofiler_tool_configure_result_t)`.
    pub size: usize,
    /// Called once all tools were configured; the only window for creating contexts/services.
    pub initialize: rocprofiler_tool_initialize_t,
    /// Called at SDK finalisation (process exit) or through the client finalize function.
    pub finalize: rocprofiler_tool_finalize_t,
    /// Passed to `initialize` and `finalize`.
    pub tool_data: *mut c_void,
}
