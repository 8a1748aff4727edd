//! `rocprofiler-sdk/marker/*.h`: roctx operation ids and argument unions.
//!
//! The ABI table lists the argument union's members and sizes but not their sub-fields, and no
//! marker operation ids; those come from the public `marker/api_id.h` and `api_args.h` text.

use core::ffi::{c_char, c_int, c_void};

/// `roctx_range_id_t`.
pub type roctx_range_id_t = u64;
/// `roctx_thread_id_t`.
pub type roctx_thread_id_t = u64;

c_enum! {
    /// Operations of `ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API`.
    pub struct rocprofiler_marker_core_api_id_t(i32) = "ROCPROFILER_MARKER_CORE_API_ID_" {
        NONE = -1,
        roctxMarkA = 0,
        roctxRangePushA = 1,
        roctxRangePop = 2,
        roctxRangeStartA = 3,
        roctxRangeStop = 4,
        roctxGetThreadId = 5,
        LAST = 6,
    }
}

/// Arguments of a call taking a message.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_message_t {
    /// The message (application-owned, valid during the callback).
    pub message: *const c_char,
}

/// Arguments of `roctxRangePop` (C++ gives the empty struct one byte).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_api_no_args {
    /// Padding member.
    pub empty: c_char,
}

/// Arguments of `roctxRangePop`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_roctxRangePop_t {
    /// Nothing.
    pub no_args: rocprofiler_marker_api_no_args,
}

/// Arguments of `roctxRangeStop`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_roctxRangeStop_t {
    /// Id returned by `roctxRangeStartA`.
    pub id: roctx_range_id_t,
}

/// Arguments of `roctxGetThreadId`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_roctxGetThreadId_t {
    /// Out.
    pub tid: *mut roctx_thread_id_t,
}

/// Arguments of `roctxProfilerPause`/`Resume`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_tid_t {
    /// Thread.
    pub tid: roctx_thread_id_t,
}

/// Arguments of `roctxNameOsThread`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_name_t {
    /// Name.
    pub name: *const c_char,
}

/// Arguments of `roctxNameHsaAgent`/`roctxNameHipStream`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_name_ptr_t {
    /// Name.
    pub name: *const c_char,
    /// Agent or stream.
    pub object: *const c_void,
}

/// Arguments of `roctxNameHipDevice`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_marker_args_roctxNameHipDevice_t {
    /// Name.
    pub name: *const c_char,
    /// Device ordinal.
    pub device_id: c_int,
}

/// Arguments of a marker call (16 bytes), one member per roctx function.
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_marker_api_args_t {
    /// `roctxMarkA`.
    pub roctxMarkA: rocprofiler_marker_args_message_t,
    /// `roctxRangePushA`.
    pub roctxRangePushA: rocprofiler_marker_args_message_t,
    /// `roctxRangePop`.
    pub roctxRangePop: rocprofiler_marker_args_roctxRangePop_t,
    /// `roctxRangeStartA`.
    pub roctxRangeStartA: rocprofiler_marker_args_message_t,
    /// `roctxRangeStop`.
    pub roctxRangeStop: rocprofiler_marker_args_roctxRangeStop_t,
    /// `roctxGetThreadId`.
    pub roctxGetThreadId: rocprofiler_marker_args_roctxGetThreadId_t,
    /// `roctxProfilerPause`.
    pub roctxProfilerPause: rocprofiler_marker_args_tid_t,
    /// `roctxProfilerResume`.
    pub roctxProfilerResume: rocprofiler_marker_args_tid_t,
    /// `roctxNameOsThread`.
    pub roctxNameOsThread: rocprofiler_marker_args_name_t,
    /// `roctxNameHsaAgent`.
    pub roctxNameHsaAgent: rocprofiler_marker_args_name_ptr_t,
    /// `roctxNameHipDevice`.
    pub roctxNameHipDevice: rocprofiler_marker_args_roctxNameHipDevice_t,
    /// `roctxNameHipStream`.
    pub roctxNameHipStream: rocprofiler_marker_args_name_ptr_t,
    /// `roctxThreadRangeA`.
    pub roctxThreadRangeA: rocprofiler_marker_args_message_t,
    /// `roctxProcessRangeA`.
    pub roctxProcessRangeA: rocprofiler_marker_args_message_t,
}

/// Return value of a marker call.
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_marker_api_retval_t {
    /// `int` returns (push/pop nesting level).
    pub int32_t_retval: i32,
    /// `int64_t` returns.
    pub int64_t_retval: i64,
    /// `roctxRangeStartA`.
    pub roctx_range_id_t_retval: roctx_range_id_t,
}
