//! `rocprofiler-sdk/fwd.h`: handles, common records and the enums used everywhere.

use core::ffi::c_void;

macro_rules! handle {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[repr(C)]
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            /// Opaque value chosen by the SDK.
            pub handle: u64,
        }
    )*};
}

handle! {
    /// A context: a set of services switched on and off together.
    rocprofiler_context_id_t;
    /// A buffer that collects records for the buffer-tracing/counting services.
    rocprofiler_buffer_id_t;
    /// An agent (CPU or GPU), the value found in every record.
    rocprofiler_agent_id_t;
    /// A hardware queue.
    rocprofiler_queue_id_t;
    /// A hardware counter (or derived metric).
    rocprofiler_counter_id_t;
    /// A counter configuration for one agent (7.0 name; `rocprofiler_profile_config_id_t` before).
    rocprofiler_counter_config_id_t;
    /// An SDK-owned thread that runs buffer callbacks.
    rocprofiler_callback_thread_t;
    /// A HIP stream as the SDK identifies it.
    rocprofiler_stream_id_t;
    /// HSA's agent handle (`hsa/hsa.h`).
    hsa_agent_t;
}

/// Old name of [`rocprofiler_counter_config_id_t`], kept by the 7.0 headers.
pub type rocprofiler_profile_config_id_t = rocprofiler_counter_config_id_t;
/// Kernel symbol id (key of the code-object kernel-symbol callbacks).
pub type rocprofiler_kernel_id_t = u64;
/// Dispatch id, unique per dispatch.
pub type rocprofiler_dispatch_id_t = u64;
/// Counter instance id of a counter record; decode with `rocprofiler_query_record_counter_id`.
pub type rocprofiler_counter_instance_id_t = u64;
/// Counter dimension id.
pub type rocprofiler_counter_dimension_id_t = u64;
/// OS thread id (`gettid`).
pub type rocprofiler_thread_id_t = u64;
/// Nanoseconds, CLOCK_BOOTTIME.
pub type rocprofiler_timestamp_t = u64;
/// Operation within a tracing kind (`int32_t` since 0.5.0).
pub type rocprofiler_tracing_operation_t = i32;

/// `ROCPROFILER_CONTEXT_NONE` of the 7.0 headers (the develop/7.1 line changes it to 0).
pub const ROCPROFILER_CONTEXT_NONE: rocprofiler_context_id_t =
    rocprofiler_context_id_t { handle: u64::MAX };
/// `ROCPROFILER_CORRELATION_ID_INTERNAL_NONE`.
pub const ROCPROFILER_CORRELATION_ID_INTERNAL_NONE: u64 = 0;
/// `ROCPROFILER_CORRELATION_ID_ANCESTOR_NONE`.
pub const ROCPROFILER_CORRELATION_ID_ANCESTOR_NONE: u64 = 0;
/// `ROCPROFILER_CODE_OBJECT_ID_NONE`.
pub const ROCPROFILER_CODE_OBJECT_ID_NONE: u64 = 0;

/// Tool-owned data carried with a record or an API call.
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_user_data_t {
    /// As an integer.
    pub value: u64,
    /// As a pointer.
    pub ptr: *mut c_void,
}

impl Default for rocprofiler_user_data_t {
    fn default() -> Self {
        Self { value: 0 }
    }
}

impl core::fmt::Debug for rocprofiler_user_data_t {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: both members are 8 plain bytes; reading them as u64 is always valid.
        write!(f, "rocprofiler_user_data_t({:#x})", unsafe { self.value })
    }
}

/// An address (a union since 0.6.0).
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_address_t {
    /// Handle view.
    pub handle: u64,
    /// Integer view.
    pub value: u64,
    /// Pointer view.
    pub ptr: *const c_void,
}

impl Default for rocprofiler_address_t {
    fn default() -> Self {
        Self { value: 0 }
    }
}

/// Agent UUID: 8 bytes in 7.0 (16 on the develop/7.1 line).
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_uuid_t {
    /// Integer view.
    pub value: u64,
    /// Pointer-sized byte view, as declared in the 7.0 header.
    pub bytes: *mut c_void,
}

/// Correlation id of a synchronous API call (24 bytes in 1.x; 0.x had no `ancestor`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct rocprofiler_correlation_id_t {
    /// SDK-assigned id; async records launched by the call carry the same value.
    pub internal: u64,
    /// Tool-provided id (`rocprofiler_push_external_correlation_id`).
    pub external: rocprofiler_user_data_t,
    /// `internal` of the enclosing API call, 0 if none.
    pub ancestor: u64,
}

/// Correlation id of an asynchronous record (kernel dispatch, memory copy, counting).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct rocprofiler_async_correlation_id_t {
    /// `internal` of the API call that caused this activity.
    pub internal: u64,
    /// Tool-provided id.
    pub external: rocprofiler_user_data_t,
}

/// Three `u32` extents.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct rocprofiler_dim3_t {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

/// SDK version as three numbers.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct rocprofiler_version_triplet_t {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

/// Category and kind of a buffered record (same 8 bytes as `hash`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct rocprofiler_record_header_category_kind_t {
    /// A `rocprofiler_buffer_category_t` value.
    pub category: u32,
    /// A `rocprofiler_buffer_tracing_kind_t` or `rocprofiler_counter_record_kind_t` value.
    pub kind: u32,
}

/// The anonymous union at the start of [`rocprofiler_record_header_t`].
#[repr(C)]
#[derive(Copy, Clone)]
pub union rocprofiler_record_header_u {
    /// Category and kind.
    pub ck: rocprofiler_record_header_category_kind_t,
    /// `category | (kind << 32)`.
    pub hash: u64,
}

/// Header of every buffered record.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct rocprofiler_record_header_t {
    /// Category/kind or hash.
    pub u: rocprofiler_record_header_u,
    /// The record; its type follows from category and kind.
    pub payload: *mut c_void,
}

impl rocprofiler_record_header_t {
    /// The record's category.
    pub fn category(&self) -> rocprofiler_buffer_category_t {
        // SAFETY: every bit pattern of the union is a valid pair of u32.
        rocprofiler_buffer_category_t(unsafe { self.u.ck.category })
    }
    /// The record's kind, to be read according to the category.
    pub fn kind(&self) -> u32 {
        // SAFETY: as above.
        unsafe { self.u.ck.kind }
    }
}

/// `rocprofiler_record_header_compute_hash` (a static inline in the header).
pub const fn rocprofiler_record_header_compute_hash(category: u32, kind: u32) -> u64 {
    (category as u64) | ((kind as u64) << 32)
}

/// Fixed 128-byte description of a kernel dispatch (new members come out of the padding).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_kernel_dispatch_info_t {
    /// Bytes before the reserved padding that the SDK filled (72 in 7.0), not 128.
    pub size: u64,
    /// GPU agent.
    pub agent_id: rocprofiler_agent_id_t,
    /// Queue.
    pub queue_id: rocprofiler_queue_id_t,
    /// Kernel symbol (see code-object tracing).
    pub kernel_id: rocprofiler_kernel_id_t,
    /// Dispatch id.
    pub dispatch_id: rocprofiler_dispatch_id_t,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// LDS bytes per work-group (static + dynamic).
    pub group_segment_size: u32,
    /// Work-group size.
    pub workgroup_size: rocprofiler_dim3_t,
    /// Grid size in work-items (not work-groups).
    pub grid_size: rocprofiler_dim3_t,
    /// Reserved for future members.
    pub reserved_padding: [u8; 56],
}

c_enum! {
    /// Status of every API call. Numbers are release specific (0.5.0 inserted 13).
    pub struct rocprofiler_status_t(u32) = "ROCPROFILER_STATUS_" {
        SUCCESS = 0,
        ERROR = 1,
        ERROR_CONTEXT_NOT_FOUND = 2,
        ERROR_BUFFER_NOT_FOUND = 3,
        ERROR_KIND_NOT_FOUND = 4,
        ERROR_OPERATION_NOT_FOUND = 5,
        ERROR_THREAD_NOT_FOUND = 6,
        ERROR_AGENT_NOT_FOUND = 7,
        ERROR_COUNTER_NOT_FOUND = 8,
        ERROR_CONTEXT_ERROR = 9,
        ERROR_CONTEXT_INVALID = 10,
        ERROR_CONTEXT_NOT_STARTED = 11,
        ERROR_CONTEXT_CONFLICT = 12,
        ERROR_CONTEXT_ID_NOT_ZERO = 13,
        ERROR_BUFFER_BUSY = 14,
        ERROR_SERVICE_ALREADY_CONFIGURED = 15,
        ERROR_CONFIGURATION_LOCKED = 16,
        ERROR_NOT_IMPLEMENTED = 17,
        ERROR_INCOMPATIBLE_ABI = 18,
        ERROR_INVALID_ARGUMENT = 19,
        ERROR_METRIC_NOT_VALID_FOR_AGENT = 20,
        ERROR_FINALIZED = 21,
        ERROR_HSA_NOT_LOADED = 22,
        ERROR_DIM_NOT_FOUND = 23,
        ERROR_PROFILE_COUNTER_NOT_FOUND = 24,
        ERROR_AST_GENERATION_FAILED = 25,
        ERROR_AST_NOT_FOUND = 26,
        ERROR_AQL_NO_EVENT_COORD = 27,
        ERROR_INCOMPATIBLE_KERNEL = 28,
        ERROR_OUT_OF_RESOURCES = 29,
        ERROR_PROFILE_NOT_FOUND = 30,
        ERROR_AGENT_DISPATCH_CONFLICT = 31,
        INTERNAL_NO_AGENT_CONTEXT = 32,
        ERROR_SAMPLE_RATE_EXCEEDED = 33,
        ERROR_NO_PROFILE_QUEUE = 34,
        ERROR_NO_HARDWARE_COUNTERS = 35,
        ERROR_AGENT_MISMATCH = 36,
        ERROR_NOT_AVAILABLE = 37,
        ERROR_EXCEEDS_HW_LIMIT = 38,
        ERROR_AGENT_ARCH_NOT_SUPPORTED = 39,
        ERROR_PERMISSION_DENIED = 40,
        LAST = 41,
    }
}

c_enum! {
    /// Category of a buffered record.
    pub struct rocprofiler_buffer_category_t(u32) = "ROCPROFILER_BUFFER_CATEGORY_" {
        NONE = 0,
        TRACING = 1,
        PC_SAMPLING = 2,
        COUNTERS = 3,
        LAST = 4,
    }
}

c_enum! {
    /// What a full buffer does.
    pub struct rocprofiler_buffer_policy_t(u32) = "ROCPROFILER_BUFFER_POLICY_" {
        NONE = 0,
        DISCARD = 1,
        LOSSLESS = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Buffer-tracing kinds. 7.0 renumbered everything after 11 (PAGE_MIGRATION removed).
    pub struct rocprofiler_buffer_tracing_kind_t(u32) = "ROCPROFILER_BUFFER_TRACING_" {
        NONE = 0,
        HSA_CORE_API = 1,
        HSA_AMD_EXT_API = 2,
        HSA_IMAGE_EXT_API = 3,
        HSA_FINALIZE_EXT_API = 4,
        HIP_RUNTIME_API = 5,
        HIP_COMPILER_API = 6,
        MARKER_CORE_API = 7,
        MARKER_CONTROL_API = 8,
        MARKER_NAME_API = 9,
        MEMORY_COPY = 10,
        KERNEL_DISPATCH = 11,
        SCRATCH_MEMORY = 12,
        CORRELATION_ID_RETIREMENT = 13,
        RCCL_API = 14,
        OMPT = 15,
        MEMORY_ALLOCATION = 16,
        RUNTIME_INITIALIZATION = 17,
        ROCDECODE_API = 18,
        ROCJPEG_API = 19,
        HIP_STREAM = 20,
        HIP_RUNTIME_API_EXT = 21,
        HIP_COMPILER_API_EXT = 22,
        ROCDECODE_API_EXT = 23,
        KFD_EVENT_PAGE_MIGRATE = 24,
        KFD_EVENT_PAGE_FAULT = 25,
        KFD_EVENT_QUEUE = 26,
        KFD_EVENT_UNMAP_FROM_GPU = 27,
        KFD_EVENT_DROPPED_EVENTS = 28,
        KFD_PAGE_MIGRATE = 29,
        KFD_PAGE_FAULT = 30,
        KFD_QUEUE = 31,
        MARKER_CORE_RANGE_API = 32,
        LAST = 33,
    }
}

c_enum! {
    /// Callback-tracing kinds (1–18 stable since 6.2).
    pub struct rocprofiler_callback_tracing_kind_t(u32) = "ROCPROFILER_CALLBACK_TRACING_" {
        NONE = 0,
        HSA_CORE_API = 1,
        HSA_AMD_EXT_API = 2,
        HSA_IMAGE_EXT_API = 3,
        HSA_FINALIZE_EXT_API = 4,
        HIP_RUNTIME_API = 5,
        HIP_COMPILER_API = 6,
        MARKER_CORE_API = 7,
        MARKER_CONTROL_API = 8,
        MARKER_NAME_API = 9,
        CODE_OBJECT = 10,
        SCRATCH_MEMORY = 11,
        KERNEL_DISPATCH = 12,
        MEMORY_COPY = 13,
        RCCL_API = 14,
        OMPT = 15,
        MEMORY_ALLOCATION = 16,
        RUNTIME_INITIALIZATION = 17,
        ROCDECODE_API = 18,
        ROCJPEG_API = 19,
        HIP_STREAM = 20,
        MARKER_CORE_RANGE_API = 21,
        LAST = 22,
    }
}

c_enum! {
    /// Phase of a callback (ENTER/EXIT for APIs, LOAD/UNLOAD for code objects).
    pub struct rocprofiler_callback_phase_t(u32) = "ROCPROFILER_CALLBACK_PHASE_" {
        NONE = 0,
        ENTER = 1,
        LOAD = 1,
        EXIT = 2,
        UNLOAD = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Operations of the CODE_OBJECT callback kind.
    pub struct rocprofiler_code_object_operation_t(u32) = "ROCPROFILER_CODE_OBJECT_" {
        NONE = 0,
        LOAD = 1,
        DEVICE_KERNEL_SYMBOL_REGISTER = 2,
        HOST_KERNEL_SYMBOL_REGISTER = 3,
        LAST = 4,
    }
}

c_enum! {
    /// Where a code object lives.
    pub struct rocprofiler_code_object_storage_type_t(u32) = "ROCPROFILER_CODE_OBJECT_STORAGE_TYPE_" {
        NONE = 0,
        FILE = 1,
        MEMORY = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Operation of a kernel-dispatch record.
    pub struct rocprofiler_kernel_dispatch_operation_t(u32) = "ROCPROFILER_KERNEL_DISPATCH_" {
        NONE = 0,
        ENQUEUE = 1,
        COMPLETE = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Direction of a memory copy.
    pub struct rocprofiler_memory_copy_operation_t(u32) = "ROCPROFILER_MEMORY_COPY_" {
        NONE = 0,
        HOST_TO_HOST = 1,
        HOST_TO_DEVICE = 2,
        DEVICE_TO_HOST = 3,
        DEVICE_TO_DEVICE = 4,
        LAST = 5,
    }
}

c_enum! {
    /// CPU or GPU.
    pub struct rocprofiler_agent_type_t(u32) = "ROCPROFILER_AGENT_TYPE_" {
        NONE = 0,
        CPU = 1,
        GPU = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Version of `rocprofiler_counter_info_*_t` asked of `rocprofiler_query_counter_info`.
    pub struct rocprofiler_counter_info_version_id_t(u32) = "ROCPROFILER_COUNTER_INFO_VERSION_" {
        NONE = 0,
        V0 = 1 => "ROCPROFILER_COUNTER_INFO_VERSION_0",
        V1 = 2 => "ROCPROFILER_COUNTER_INFO_VERSION_1",
        LAST = 3,
    }
}

c_enum! {
    /// Kind of a record in the COUNTERS buffer category.
    pub struct rocprofiler_counter_record_kind_t(u32) = "ROCPROFILER_COUNTER_RECORD_" {
        NONE = 0,
        PROFILE_COUNTING_DISPATCH_HEADER = 1,
        VALUE = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Flags of the device counting service.
    pub struct rocprofiler_counter_flag_t(u32) = "ROCPROFILER_COUNTER_FLAG_" {
        NONE = 0,
        ASYNC = 1,
        APPEND_DEFINITION = 2,
        LAST = 3,
    }
}

c_enum! {
    /// Runtime libraries (a bitmask in `rocprofiler_at_internal_thread_create`).
    pub struct rocprofiler_runtime_library_t(u32) = "ROCPROFILER_" {
        LIBRARY = 1,
        HSA_LIBRARY = 2,
        HIP_LIBRARY = 4,
        MARKER_LIBRARY = 8,
        RCCL_LIBRARY = 16,
        ROCDECODE_LIBRARY = 32,
        ROCJPEG_LIBRARY = 64,
        LIBRARY_LAST = 64,
    }
}
