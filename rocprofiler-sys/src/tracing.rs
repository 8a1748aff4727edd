//! `buffer_tracing.h` / `callback_tracing.h`: records and payloads of the tracing services.

use core::ffi::{c_char, c_int, c_void};

use crate::{
    hsa_agent_t, rocprofiler_address_t, rocprofiler_agent_id_t, rocprofiler_async_correlation_id_t,
    rocprofiler_buffer_tracing_kind_t, rocprofiler_callback_phase_t,
    rocprofiler_callback_tracing_kind_t, rocprofiler_code_object_storage_type_t,
    rocprofiler_context_id_t, rocprofiler_correlation_id_t, rocprofiler_hip_api_args_t,
    rocprofiler_hip_api_retval_t, rocprofiler_kernel_dispatch_info_t,
    rocprofiler_kernel_dispatch_operation_t, rocprofiler_marker_api_args_t,
    rocprofiler_marker_api_retval_t, rocprofiler_memory_copy_operation_t, rocprofiler_thread_id_t,
    rocprofiler_timestamp_t, rocprofiler_tracing_operation_t,
};

/// Buffered record of a completed kernel dispatch (184 bytes, stable since 6.2).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_buffer_tracing_kernel_dispatch_record_t {
    /// Bytes of this record the SDK filled.
    pub size: u64,
    /// `KERNEL_DISPATCH`.
    pub kind: rocprofiler_buffer_tracing_kind_t,
    /// Always `COMPLETE` in the buffer.
    pub operation: rocprofiler_kernel_dispatch_operation_t,
    /// `internal` is the launching API call's.
    pub correlation_id: rocprofiler_async_correlation_id_t,
    /// Launching thread.
    pub thread_id: rocprofiler_thread_id_t,
    /// GPU start, ns.
    pub start_timestamp: rocprofiler_timestamp_t,
    /// GPU end, ns.
    pub end_timestamp: rocprofiler_timestamp_t,
    /// Agent, queue, kernel, sizes.
    pub dispatch_info: rocprofiler_kernel_dispatch_info_t,
}

/// Buffered record of a completed memory copy (96 bytes in 7.0, 80 before).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_buffer_tracing_memory_copy_record_t {
    /// Bytes of this record the SDK filled.
    pub size: u64,
    /// `MEMORY_COPY`.
    pub kind: rocprofiler_buffer_tracing_kind_t,
    /// Direction.
    pub operation: rocprofiler_memory_copy_operation_t,
    /// `internal` is the launching API call's.
    pub correlation_id: rocprofiler_async_correlation_id_t,
    /// Launching thread.
    pub thread_id: rocprofiler_thread_id_t,
    /// Copy start, ns.
    pub start_timestamp: rocprofiler_timestamp_t,
    /// Copy end, ns.
    pub end_timestamp: rocprofiler_timestamp_t,
    /// Destination agent.
    pub dst_agent_id: rocprofiler_agent_id_t,
    /// Source agent.
    pub src_agent_id: rocprofiler_agent_id_t,
    /// Bytes copied.
    pub bytes: u64,
    /// Destination address (7.0+).
    pub dst_address: rocprofiler_address_t,
    /// Source address (7.0+).
    pub src_address: rocprofiler_address_t,
}

/// Buffered record of one HIP runtime API call (64 bytes in 7.0, 56 before).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_buffer_tracing_hip_api_record_t {
    /// Bytes of this record the SDK filled.
    pub size: u64,
    /// `HIP_RUNTIME_API` or `HIP_COMPILER_API`.
    pub kind: rocprofiler_buffer_tracing_kind_t,
    /// A `rocprofiler_hip_runtime_api_id_t` value.
    pub operation: rocprofiler_tracing_operation_t,
    /// Correlation id of the call.
    pub correlation_id: rocprofiler_correlation_id_t,
    /// Call start, ns.
    pub start_timestamp: rocprofiler_timestamp_t,
    /// Call end, ns.
    pub end_timestamp: rocprofiler_timestamp_t,
    /// Calling thread.
    pub thread_id: rocprofiler_thread_id_t,
}

/// Passed **by value** to every callback-tracing callback (64 bytes in 7.0, 56 before).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_callback_tracing_record_t {
    /// Context whose service fired.
    pub context_id: rocprofiler_context_id_t,
    /// Calling thread.
    pub thread_id: rocprofiler_thread_id_t,
    /// Correlation id of the call.
    pub correlation_id: rocprofiler_correlation_id_t,
    /// Tracing kind.
    pub kind: rocprofiler_callback_tracing_kind_t,
    /// Operation within the kind.
    pub operation: rocprofiler_tracing_operation_t,
    /// ENTER/EXIT (LOAD/UNLOAD).
    pub phase: rocprofiler_callback_phase_t,
    /// Kind-specific data (`rocprofiler_callback_tracing_*_data_t`).
    pub payload: *mut c_void,
}

/// Payload of HIP runtime/compiler API callbacks (120 bytes).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_callback_tracing_hip_api_data_t {
    /// Bytes the SDK filled.
    pub size: u64,
    /// Arguments, by operation.
    pub args: rocprofiler_hip_api_args_t,
    /// Return value (EXIT phase).
    pub retval: rocprofiler_hip_api_retval_t,
}

/// Payload of marker (roctx) API callbacks (32 bytes).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_callback_tracing_marker_api_data_t {
    /// Bytes the SDK filled.
    pub size: u64,
    /// Arguments, by operation.
    pub args: rocprofiler_marker_api_args_t,
    /// Return value (EXIT phase).
    pub retval: rocprofiler_marker_api_retval_t,
}

/// Code object kept in a file.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_code_object_storage_file_t {
    /// File descriptor.
    pub storage_file: c_int,
}

/// Code object kept in memory.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_code_object_storage_memory_t {
    /// Address.
    pub memory_base: u64,
    /// Bytes.
    pub memory_size: u64,
}

/// The anonymous storage union of [`rocprofiler_callback_tracing_code_object_load_data_t`].
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_code_object_storage_u {
    /// `STORAGE_TYPE_FILE`.
    pub file: rocprofiler_code_object_storage_file_t,
    /// `STORAGE_TYPE_MEMORY`.
    pub memory: rocprofiler_code_object_storage_memory_t,
}

/// Payload of `CODE_OBJECT` / `LOAD` (88 bytes).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_callback_tracing_code_object_load_data_t {
    /// Bytes the SDK filled.
    pub size: u64,
    /// Code object id.
    pub code_object_id: u64,
    /// Agent it was loaded on (`rocp_agent` is an older name for the same union member).
    pub agent_id: rocprofiler_agent_id_t,
    /// HSA agent.
    pub hsa_agent: hsa_agent_t,
    /// `file://` or `memory://` URI.
    pub uri: *const c_char,
    /// Load address.
    pub load_base: u64,
    /// Loaded bytes.
    pub load_size: u64,
    /// Load delta.
    pub load_delta: i64,
    /// File or memory.
    pub storage_type: rocprofiler_code_object_storage_type_t,
    /// By `storage_type`.
    pub storage: rocprofiler_code_object_storage_u,
}

/// Payload of `CODE_OBJECT` / `DEVICE_KERNEL_SYMBOL_REGISTER` (88 bytes since 0.6.0).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
    /// Bytes the SDK filled.
    pub size: u64,
    /// Key used by dispatch records.
    pub kernel_id: u64,
    /// Owning code object.
    pub code_object_id: u64,
    /// Mangled name; valid until SDK finalisation.
    pub kernel_name: *const c_char,
    /// Kernel object handle.
    pub kernel_object: u64,
    /// Kernel-argument bytes.
    pub kernarg_segment_size: u32,
    /// Kernel-argument alignment.
    pub kernarg_segment_alignment: u32,
    /// Static LDS bytes.
    pub group_segment_size: u32,
    /// Static scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Scalar registers.
    pub sgpr_count: u32,
    /// Architected vector registers.
    pub arch_vgpr_count: u32,
    /// Accumulation vector registers.
    pub accum_vgpr_count: u32,
    /// Entry offset.
    pub kernel_code_entry_byte_offset: i64,
    /// Kernel address.
    pub kernel_address: rocprofiler_address_t,
}
