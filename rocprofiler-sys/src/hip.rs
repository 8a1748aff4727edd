//! `rocprofiler-sdk/hip/*.h`: HIP runtime API ids and the argument/return unions (partially).

use core::ffi::{c_char, c_int, c_uint, c_void};

use crate::rocprofiler_dim3_t;

/// `hipStream_t` (`struct ihipStream_t*`).
pub type hipStream_t = *mut c_void;
/// `hipEvent_t` (`struct ihipEvent_t*`).
pub type hipEvent_t = *mut c_void;
/// `hipFunction_t` (`struct ihipModuleSymbol_t*`).
pub type hipFunction_t = *mut c_void;

/// HIP's `hipError_t` (a 4-byte enum; the table lists no values, `hipSuccess` is 0).
#[repr(transparent)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct hipError_t(pub c_int);

#[allow(non_upper_case_globals)]
impl hipError_t {
    /// `hipSuccess`.
    pub const hipSuccess: Self = Self(0);
}

/// HIP's `hipMemcpyKind` (values from HIP's public `driver_types.h`; the table lists none).
#[repr(transparent)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct hipMemcpyKind(pub c_uint);

#[allow(non_upper_case_globals)]
impl hipMemcpyKind {
    /// Host to host.
    pub const hipMemcpyHostToHost: Self = Self(0);
    /// Host to device.
    pub const hipMemcpyHostToDevice: Self = Self(1);
    /// Device to host.
    pub const hipMemcpyDeviceToHost: Self = Self(2);
    /// Device to device.
    pub const hipMemcpyDeviceToDevice: Self = Self(3);
    /// Inferred from the pointers.
    pub const hipMemcpyDefault: Self = Self(4);
}

/// HIP's `hipChannelFormatDesc` (20 bytes).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct hipChannelFormatDesc {
    /// Bits of x.
    pub x: c_int,
    /// Bits of y.
    pub y: c_int,
    /// Bits of z.
    pub z: c_int,
    /// Bits of w.
    pub w: c_int,
    /// `hipChannelFormatKind`.
    pub f: c_uint,
}

c_enum! {
    /// HIP runtime API operation ids (`ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API`). Only the
    /// calls this project looks at are bound; names of the others come from
    /// `rocprofiler_query_callback_tracing_kind_operation_name`. `..._LAST` depends on the HIP the
    /// SDK was built with, so it is not bound.
    pub struct rocprofiler_hip_runtime_api_id_t(i32) = "ROCPROFILER_HIP_RUNTIME_API_ID_" {
        NONE = -1,
        hipDeviceSynchronize = 66,
        hipEventRecord = 81,
        hipEventSynchronize = 82,
        hipExtLaunchKernel = 84,
        hipFree = 90,
        hipGetDevice = 102,
        hipHostMalloc = 197,
        hipLaunchKernel = 214,
        hipMalloc = 215,
        hipMallocManaged = 222,
        hipMemcpy = 259,
        hipMemcpyAsync = 268,
        hipMemset = 288,
        hipMemsetAsync = 293,
        hipModuleLaunchKernel = 308,
        hipSetDevice = 327,
        hipStreamCreate = 334,
        hipStreamSynchronize = 346,
    }
}

/// Arguments of `hipLaunchKernel`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipLaunchKernel_t {
    /// Host stub address.
    pub function_address: *const c_void,
    /// Grid, in blocks.
    pub numBlocks: rocprofiler_dim3_t,
    /// Block size.
    pub dimBlocks: rocprofiler_dim3_t,
    /// Kernel arguments.
    pub args: *mut *mut c_void,
    /// Dynamic LDS bytes.
    pub sharedMemBytes: usize,
    /// Stream.
    pub stream: hipStream_t,
}

/// Arguments of `hipExtLaunchKernel`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipExtLaunchKernel_t {
    /// Host stub address.
    pub function_address: *const c_void,
    /// Grid, in blocks.
    pub numBlocks: rocprofiler_dim3_t,
    /// Block size.
    pub dimBlocks: rocprofiler_dim3_t,
    /// Kernel arguments.
    pub args: *mut *mut c_void,
    /// Dynamic LDS bytes.
    pub sharedMemBytes: usize,
    /// Stream.
    pub stream: hipStream_t,
    /// Start event.
    pub startEvent: hipEvent_t,
    /// Stop event.
    pub stopEvent: hipEvent_t,
    /// Flags.
    pub flags: c_int,
}

/// Arguments of `hipModuleLaunchKernel`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipModuleLaunchKernel_t {
    /// Function.
    pub func: hipFunction_t,
    /// Grid x, in blocks.
    pub gridDimX: c_uint,
    /// Grid y.
    pub gridDimY: c_uint,
    /// Grid z.
    pub gridDimZ: c_uint,
    /// Block x.
    pub blockDimX: c_uint,
    /// Block y.
    pub blockDimY: c_uint,
    /// Block z.
    pub blockDimZ: c_uint,
    /// Dynamic LDS bytes.
    pub sharedMemBytes: c_uint,
    /// Stream.
    pub stream: hipStream_t,
    /// Kernel parameters.
    pub kernelParams: *mut *mut c_void,
    /// Extra.
    pub extra: *mut *mut c_void,
}

/// Arguments of `hipMemcpy`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipMemcpy_t {
    /// Destination.
    pub dst: *mut c_void,
    /// Source.
    pub src: *const c_void,
    /// Bytes.
    pub sizeBytes: usize,
    /// Direction.
    pub kind: hipMemcpyKind,
}

/// Arguments of `hipMemcpyAsync`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipMemcpyAsync_t {
    /// Destination.
    pub dst: *mut c_void,
    /// Source.
    pub src: *const c_void,
    /// Bytes.
    pub sizeBytes: usize,
    /// Direction.
    pub kind: hipMemcpyKind,
    /// Stream.
    pub stream: hipStream_t,
}

/// Arguments of `hipMalloc`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipMalloc_t {
    /// Out: the allocation.
    pub ptr: *mut *mut c_void,
    /// Bytes.
    pub size: usize,
}

/// Arguments of `hipFree`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipFree_t {
    /// Allocation.
    pub ptr: *mut c_void,
}

/// Arguments of `hipMemsetAsync`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipMemsetAsync_t {
    /// Destination.
    pub dst: *mut c_void,
    /// Byte value.
    pub value: c_int,
    /// Bytes.
    pub sizeBytes: usize,
    /// Stream.
    pub stream: hipStream_t,
}

/// Arguments of `hipStreamSynchronize`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipStreamSynchronize_t {
    /// Stream.
    pub stream: hipStream_t,
}

/// Arguments of `hipEventRecord`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipEventRecord_t {
    /// Event.
    pub event: hipEvent_t,
    /// Stream.
    pub stream: hipStream_t,
}

/// Arguments of `hipEventSynchronize` (the table measures its size only: one `hipEvent_t`).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipEventSynchronize_t {
    /// Event.
    pub event: hipEvent_t,
}

/// Arguments of `hipSetDevice` (the table measures its size only: one `int`).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_hip_args_hipSetDevice_t {
    /// HIP device ordinal.
    pub deviceId: c_int,
}

/// Arguments of a HIP runtime call: one member per function (472 with HIP 6.3 headers). Only
/// the members read by this project are bound; `_bytes` pins the size (88: the largest member,
/// `hipExtModuleLaunchKernel`).
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_hip_api_args_t {
    /// `hipLaunchKernel`.
    pub hipLaunchKernel: rocprofiler_hip_args_hipLaunchKernel_t,
    /// `hipExtLaunchKernel`.
    pub hipExtLaunchKernel: rocprofiler_hip_args_hipExtLaunchKernel_t,
    /// `hipModuleLaunchKernel`.
    pub hipModuleLaunchKernel: rocprofiler_hip_args_hipModuleLaunchKernel_t,
    /// `hipMemcpy`.
    pub hipMemcpy: rocprofiler_hip_args_hipMemcpy_t,
    /// `hipMemcpyAsync`.
    pub hipMemcpyAsync: rocprofiler_hip_args_hipMemcpyAsync_t,
    /// `hipMalloc`.
    pub hipMalloc: rocprofiler_hip_args_hipMalloc_t,
    /// `hipFree`.
    pub hipFree: rocprofiler_hip_args_hipFree_t,
    /// `hipMemsetAsync`.
    pub hipMemsetAsync: rocprofiler_hip_args_hipMemsetAsync_t,
    /// `hipStreamSynchronize`.
    pub hipStreamSynchronize: rocprofiler_hip_args_hipStreamSynchronize_t,
    /// `hipEventRecord`.
    pub hipEventRecord: rocprofiler_hip_args_hipEventRecord_t,
    /// `hipEventSynchronize`.
    pub hipEventSynchronize: rocprofiler_hip_args_hipEventSynchronize_t,
    /// `hipSetDevice`.
    pub hipSetDevice: rocprofiler_hip_args_hipSetDevice_t,
    /// The whole union as words.
    pub _bytes: [u64; 11],
}

/// Return value of a HIP runtime call (24 bytes).
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_hip_api_retval_t {
    /// `uint64_t` returns.
    pub uint64_t_retval: u64,
    /// `int` returns.
    pub int_retval: c_int,
    /// `const char*` returns.
    pub const_charp_retval: *const c_char,
    /// `hipError_t` returns (most calls).
    pub hipError_t_retval: hipError_t,
    /// `hipChannelFormatDesc` returns.
    pub hipChannelFormatDesc_retval: hipChannelFormatDesc,
    /// `void**` returns.
    pub voidpp_retval: *mut *mut c_void,
}
