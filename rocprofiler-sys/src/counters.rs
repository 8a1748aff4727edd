//! `counters.h`, `counter_config.h`, `dispatch_counting_service.h`.

use core::ffi::c_char;

use crate::{
    rocprofiler_agent_id_t, rocprofiler_async_correlation_id_t, rocprofiler_counter_dimension_id_t,
    rocprofiler_counter_id_t, rocprofiler_counter_instance_id_t, rocprofiler_dispatch_id_t,
    rocprofiler_kernel_dispatch_info_t, rocprofiler_timestamp_t, rocprofiler_user_data_t,
};

/// Counter description, version 0 (48 bytes in every release).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_counter_info_v0_t {
    /// Counter.
    pub id: rocprofiler_counter_id_t,
    /// Name.
    pub name: *const c_char,
    /// Description.
    pub description: *const c_char,
    /// Hardware block.
    pub block: *const c_char,
    /// Expression of a derived counter.
    pub expression: *const c_char,
    /// Bitfields: bit 0 `is_constant`, bit 1 `is_derived`.
    pub flags: u8,
}

impl rocprofiler_counter_info_v0_t {
    /// `is_constant : 1`.
    pub fn is_constant(&self) -> bool {
        self.flags & 1 != 0
    }
    /// `is_derived : 1`.
    pub fn is_derived(&self) -> bool {
        self.flags & 2 != 0
    }
}

/// Counter description, version 1 (80 bytes in 7.0; the 7.1 line rearranges it completely, so
/// prefer version 0).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_counter_info_v1_t {
    /// Counter.
    pub id: rocprofiler_counter_id_t,
    /// Name.
    pub name: *const c_char,
    /// Description.
    pub description: *const c_char,
    /// Hardware block.
    pub block: *const c_char,
    /// Expression of a derived counter.
    pub expression: *const c_char,
    /// Bitfields: bit 0 `is_constant`, bit 1 `is_derived`.
    pub flags: u8,
    /// Entries in `dimensions`.
    pub dimensions_count: u64,
    /// Dimensions.
    pub dimensions: *const rocprofiler_counter_record_dimension_info_t,
    /// Entries in `instance_ids`.
    pub instance_ids_count: u64,
    /// Instance ids.
    pub instance_ids: *const rocprofiler_counter_instance_id_t,
}

/// One dimension of a counter (XCC, SE, ...).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_counter_record_dimension_info_t {
    /// Name.
    pub name: *const c_char,
    /// Number of instances along it.
    pub instance_size: usize,
    /// Id for `rocprofiler_query_record_dimension_position`.
    pub id: rocprofiler_counter_dimension_id_t,
}

/// Old name of [`rocprofiler_counter_record_dimension_info_t`].
pub type rocprofiler_record_dimension_info_t = rocprofiler_counter_record_dimension_info_t;

/// One counter value of one hardware instance (40 bytes since 0.5.0).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_counter_record_t {
    /// Instance id; decode with `rocprofiler_query_record_counter_id`.
    pub id: rocprofiler_counter_instance_id_t,
    /// Value.
    pub counter_value: f64,
    /// Dispatch it belongs to.
    pub dispatch_id: rocprofiler_dispatch_id_t,
    /// The dispatch callback's user data.
    pub user_data: rocprofiler_user_data_t,
    /// Agent.
    pub agent_id: rocprofiler_agent_id_t,
}

/// Old name of [`rocprofiler_counter_record_t`].
pub type rocprofiler_record_counter_t = rocprofiler_counter_record_t;

/// Passed **by value** to the dispatch-counting callbacks (168 bytes since 0.5.0).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_dispatch_counting_service_data_t {
    /// Bytes the SDK filled.
    pub size: u64,
    /// `internal` is the launching API call's.
    pub correlation_id: rocprofiler_async_correlation_id_t,
    /// Start, ns (0 in the dispatch callback).
    pub start_timestamp: rocprofiler_timestamp_t,
    /// End, ns (0 in the dispatch callback).
    pub end_timestamp: rocprofiler_timestamp_t,
    /// The dispatch.
    pub dispatch_info: rocprofiler_kernel_dispatch_info_t,
}

/// Buffered header preceding `num_records` counter records (176 bytes since 0.5.0).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rocprofiler_dispatch_counting_service_record_t {
    /// Bytes the SDK filled.
    pub size: u64,
    /// Counter records that follow.
    pub num_records: u64,
    /// `internal` is the launching API call's.
    pub correlation_id: rocprofiler_async_correlation_id_t,
    /// Start, ns.
    pub start_timestamp: rocprofiler_timestamp_t,
    /// End, ns.
    pub end_timestamp: rocprofiler_timestamp_t,
    /// The dispatch.
    pub dispatch_info: rocprofiler_kernel_dispatch_info_t,
}
