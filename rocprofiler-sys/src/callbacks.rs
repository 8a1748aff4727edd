//! Function-pointer typedefs: callbacks the SDK calls and the tool's registration hooks.

use core::ffi::{c_char, c_int, c_void};

use crate::{
    rocprofiler_agent_id_t, rocprofiler_agent_version_t, rocprofiler_buffer_id_t,
    rocprofiler_buffer_tracing_kind_t, rocprofiler_callback_tracing_kind_t,
    rocprofiler_callback_tracing_record_t, rocprofiler_client_id_t, rocprofiler_context_id_t,
    rocprofiler_counter_config_id_t, rocprofiler_counter_id_t,
    rocprofiler_counter_record_dimension_info_t, rocprofiler_counter_record_t,
    rocprofiler_dispatch_counting_service_data_t, rocprofiler_record_header_t,
    rocprofiler_runtime_library_t, rocprofiler_status_t, rocprofiler_tool_configure_result_t,
    rocprofiler_tracing_operation_t, rocprofiler_user_data_t,
};

c_fn_types! {
    /// The tool's `initialize(finalize_func, tool_data)`; return 0 on success.
    pub type rocprofiler_tool_initialize_t =
        fn(finalize_func: rocprofiler_client_finalize_t, tool_data: *mut c_void) -> c_int;
    /// The tool's `finalize(tool_data)`.
    pub type rocprofiler_tool_finalize_t = fn(tool_data: *mut c_void);
    /// Handed to `initialize`: finalises one client early.
    pub type rocprofiler_client_finalize_t = fn(client_id: rocprofiler_client_id_t);
    /// Prototype of `rocprofiler_configure`, which the tool defines.
    pub type rocprofiler_configure_func_t = fn(
        version: u32,
        runtime_version: *const c_char,
        priority: u32,
        client_id: *mut rocprofiler_client_id_t,
    ) -> *mut rocprofiler_tool_configure_result_t;
    /// Delivers buffered records, on an SDK thread.
    pub type rocprofiler_buffer_tracing_cb_t = fn(
        context: rocprofiler_context_id_t,
        buffer_id: rocprofiler_buffer_id_t,
        headers: *mut *mut rocprofiler_record_header_t,
        num_headers: usize,
        data: *mut c_void,
        drop_count: u64,
    );
    /// Callback tracing; the record is passed by value, on the calling thread.
    pub type rocprofiler_callback_tracing_cb_t = fn(
        record: rocprofiler_callback_tracing_record_t,
        user_data: *mut rocprofiler_user_data_t,
        callback_data: *mut c_void,
    );
    /// Dispatch counting: choose a counter config for a dispatch (launching thread).
    pub type rocprofiler_dispatch_counting_service_cb_t = fn(
        dispatch_data: rocprofiler_dispatch_counting_service_data_t,
        config: *mut rocprofiler_counter_config_id_t,
        user_data: *mut rocprofiler_user_data_t,
        callback_data_args: *mut c_void,
    );
    /// Dispatch counting: the counter records of a completed dispatch.
    pub type rocprofiler_dispatch_counting_record_cb_t = fn(
        dispatch_data: rocprofiler_dispatch_counting_service_data_t,
        record_data: *mut rocprofiler_counter_record_t,
        record_count: usize,
        user_data: rocprofiler_user_data_t,
        callback_data_args: *mut c_void,
    );
    /// Receives the SDK's agents (`agents` points at `num_agents` agent pointers).
    pub type rocprofiler_query_available_agents_cb_t = fn(
        version: rocprofiler_agent_version_t,
        agents: *mut *const c_void,
        num_agents: usize,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Receives the counters an agent supports.
    pub type rocprofiler_available_counters_cb_t = fn(
        agent_id: rocprofiler_agent_id_t,
        counters: *mut rocprofiler_counter_id_t,
        num_counters: usize,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Receives the dimensions of a counter.
    pub type rocprofiler_available_dimensions_cb_t = fn(
        id: rocprofiler_counter_id_t,
        dim_info: *const rocprofiler_counter_record_dimension_info_t,
        num_dims: usize,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// One callback-tracing kind; return non-zero to stop.
    pub type rocprofiler_callback_tracing_kind_cb_t =
        fn(kind: rocprofiler_callback_tracing_kind_t, data: *mut c_void) -> c_int;
    /// One operation of a callback-tracing kind; return non-zero to stop.
    pub type rocprofiler_callback_tracing_kind_operation_cb_t = fn(
        kind: rocprofiler_callback_tracing_kind_t,
        operation: rocprofiler_tracing_operation_t,
        data: *mut c_void,
    ) -> c_int;
    /// One buffer-tracing kind; return non-zero to stop.
    pub type rocprofiler_buffer_tracing_kind_cb_t =
        fn(kind: rocprofiler_buffer_tracing_kind_t, data: *mut c_void) -> c_int;
    /// One operation of a buffer-tracing kind; return non-zero to stop.
    pub type rocprofiler_buffer_tracing_kind_operation_cb_t = fn(
        kind: rocprofiler_buffer_tracing_kind_t,
        operation: rocprofiler_tracing_operation_t,
        data: *mut c_void,
    ) -> c_int;
    /// One stringified argument of a traced call; return non-zero to stop.
    pub type rocprofiler_callback_tracing_operation_args_cb_t = fn(
        kind: rocprofiler_callback_tracing_kind_t,
        operation: rocprofiler_tracing_operation_t,
        arg_number: u32,
        arg_value_addr: *const c_void,
        arg_indirection_count: i32,
        arg_type: *const c_char,
        arg_name: *const c_char,
        arg_value_str: *const c_char,
        arg_dereference_count: i32,
        data: *mut c_void,
    ) -> c_int;
    /// Around creation of SDK-internal threads.
    pub type rocprofiler_internal_thread_library_cb_t =
        fn(library: rocprofiler_runtime_library_t, data: *mut c_void);
}
