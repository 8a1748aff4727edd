//! The run-time symbol table.

use core::ffi::{c_char, c_int, c_void};

use crate::*;

api_table! {
    /// `rocprofiler_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch)`.
    fn rocprofiler_get_version(major: *mut u32, minor: *mut u32, patch: *mut u32) -> rocprofiler_status_t;
    /// `rocprofiler_get_version_triplet` (1.0.0+).
    fn rocprofiler_get_version_triplet(info: *mut rocprofiler_version_triplet_t) -> rocprofiler_status_t;
    /// Static name of a status (e.g. `ROCPROFILER_STATUS_ERROR_BUFFER_BUSY`).
    fn rocprofiler_get_status_name(status: rocprofiler_status_t) -> *const c_char;
    /// Static description of a status.
    fn rocprofiler_get_status_string(status: rocprofiler_status_t) -> *const c_char;
    /// Current CLOCK_BOOTTIME in ns.
    fn rocprofiler_get_timestamp(ts: *mut rocprofiler_timestamp_t) -> rocprofiler_status_t;
    /// Calling thread's id.
    fn rocprofiler_get_thread_id(tid: *mut rocprofiler_thread_id_t) -> rocprofiler_status_t;
    /// 0 no, 1 yes, -1 in progress.
    fn rocprofiler_is_initialized(status: *mut c_int) -> rocprofiler_status_t;
    /// 0 no, 1 yes, -1 in progress.
    fn rocprofiler_is_finalized(status: *mut c_int) -> rocprofiler_status_t;
    /// Configures the SDK before any runtime does.
    fn rocprofiler_force_configure(configure_func: rocprofiler_configure_func_t) -> rocprofiler_status_t;

    /// Creates a context; `context_id->handle` must be 0 on input.
    fn rocprofiler_create_context(context_id: *mut rocprofiler_context_id_t) -> rocprofiler_status_t;
    /// Starts a context's services.
    fn rocprofiler_start_context(context_id: rocprofiler_context_id_t) -> rocprofiler_status_t;
    /// Stops a context's services.
    fn rocprofiler_stop_context(context_id: rocprofiler_context_id_t) -> rocprofiler_status_t;
    /// Whether a context is started.
    fn rocprofiler_context_is_active(context_id: rocprofiler_context_id_t, status: *mut c_int) -> rocprofiler_status_t;
    /// Whether a context is valid.
    fn rocprofiler_context_is_valid(context_id: rocprofiler_context_id_t, status: *mut c_int) -> rocprofiler_status_t;

    /// Creates a buffer.
    fn rocprofiler_create_buffer(
        context: rocprofiler_context_id_t,
        size: usize,
        watermark: usize,
        policy: rocprofiler_buffer_policy_t,
        callback: rocprofiler_buffer_tracing_cb_t,
        callback_data: *mut c_void,
        buffer_id: *mut rocprofiler_buffer_id_t,
    ) -> rocprofiler_status_t;
    /// Delivers everything buffered and waits for the callback.
    fn rocprofiler_flush_buffer(buffer_id: rocprofiler_buffer_id_t) -> rocprofiler_status_t;
    /// Destroys a buffer.
    fn rocprofiler_destroy_buffer(buffer_id: rocprofiler_buffer_id_t) -> rocprofiler_status_t;
    /// Creates a delivery thread.
    fn rocprofiler_create_callback_thread(cb_thread_id: *mut rocprofiler_callback_thread_t) -> rocprofiler_status_t;
    /// Delivers a buffer on the given thread.
    fn rocprofiler_assign_callback_thread(
        buffer_id: rocprofiler_buffer_id_t,
        cb_thread_id: rocprofiler_callback_thread_t,
    ) -> rocprofiler_status_t;
    /// Notifies around SDK-internal thread creation.
    fn rocprofiler_at_internal_thread_create(
        precreate: rocprofiler_internal_thread_library_cb_t,
        postcreate: rocprofiler_internal_thread_library_cb_t,
        libs: c_int,
        data: *mut c_void,
    ) -> rocprofiler_status_t;

    /// Buffer tracing of a kind (NULL/0 operations = all).
    fn rocprofiler_configure_buffer_tracing_service(
        context_id: rocprofiler_context_id_t,
        kind: rocprofiler_buffer_tracing_kind_t,
        operations: *const rocprofiler_tracing_operation_t,
        operations_count: usize,
        buffer_id: rocprofiler_buffer_id_t,
    ) -> rocprofiler_status_t;
    /// Callback tracing of a kind (NULL/0 operations = all).
    fn rocprofiler_configure_callback_tracing_service(
        context_id: rocprofiler_context_id_t,
        kind: rocprofiler_callback_tracing_kind_t,
        operations: *const rocprofiler_tracing_operation_t,
        operations_count: usize,
        callback: rocprofiler_callback_tracing_cb_t,
        callback_args: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Name of a buffer-tracing kind.
    fn rocprofiler_query_buffer_tracing_kind_name(
        kind: rocprofiler_buffer_tracing_kind_t,
        name: *mut *const c_char,
        name_len: *mut u64,
    ) -> rocprofiler_status_t;
    /// Name of an operation of a buffer-tracing kind.
    fn rocprofiler_query_buffer_tracing_kind_operation_name(
        kind: rocprofiler_buffer_tracing_kind_t,
        operation: rocprofiler_tracing_operation_t,
        name: *mut *const c_char,
        name_len: *mut u64,
    ) -> rocprofiler_status_t;
    /// Name of a callback-tracing kind.
    fn rocprofiler_query_callback_tracing_kind_name(
        kind: rocprofiler_callback_tracing_kind_t,
        name: *mut *const c_char,
        name_len: *mut u64,
    ) -> rocprofiler_status_t;
    /// Name of an operation of a callback-tracing kind.
    fn rocprofiler_query_callback_tracing_kind_operation_name(
        kind: rocprofiler_callback_tracing_kind_t,
        operation: rocprofiler_tracing_operation_t,
        name: *mut *const c_char,
        name_len: *mut u64,
    ) -> rocprofiler_status_t;
    /// Iterates buffer-tracing kinds.
    fn rocprofiler_iterate_buffer_tracing_kinds(
        callback: rocprofiler_buffer_tracing_kind_cb_t,
        data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Iterates the operations of a buffer-tracing kind.
    fn rocprofiler_iterate_buffer_tracing_kind_operations(
        kind: rocprofiler_buffer_tracing_kind_t,
        callback: rocprofiler_buffer_tracing_kind_operation_cb_t,
        data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Iterates callback-tracing kinds.
    fn rocprofiler_iterate_callback_tracing_kinds(
        callback: rocprofiler_callback_tracing_kind_cb_t,
        data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Iterates the operations of a callback-tracing kind.
    fn rocprofiler_iterate_callback_tracing_kind_operations(
        kind: rocprofiler_callback_tracing_kind_t,
        callback: rocprofiler_callback_tracing_kind_operation_cb_t,
        data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Stringifies the arguments of a traced call.
    fn rocprofiler_iterate_callback_tracing_kind_operation_args(
        record: rocprofiler_callback_tracing_record_t,
        callback: rocprofiler_callback_tracing_operation_args_cb_t,
        max_dereference_count: i32,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Pushes an external correlation id for a thread.
    fn rocprofiler_push_external_correlation_id(
        context: rocprofiler_context_id_t,
        tid: rocprofiler_thread_id_t,
        external_correlation_id: rocprofiler_user_data_t,
    ) -> rocprofiler_status_t;
    /// Pops an external correlation id.
    fn rocprofiler_pop_external_correlation_id(
        context: rocprofiler_context_id_t,
        tid: rocprofiler_thread_id_t,
        external_correlation_id: *mut rocprofiler_user_data_t,
    ) -> rocprofiler_status_t;

    /// Hands the SDK's agents to `callback`.
    fn rocprofiler_query_available_agents(
        version: rocprofiler_agent_version_t,
        callback: rocprofiler_query_available_agents_cb_t,
        agent_size: usize,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;

    /// Counters an agent supports.
    fn rocprofiler_iterate_agent_supported_counters(
        agent_id: rocprofiler_agent_id_t,
        cb: rocprofiler_available_counters_cb_t,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Fills `rocprofiler_counter_info_v{0,1}_t`.
    fn rocprofiler_query_counter_info(
        counter_id: rocprofiler_counter_id_t,
        version: rocprofiler_counter_info_version_id_t,
        info: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Instances of a counter on an agent.
    fn rocprofiler_query_counter_instance_count(
        agent_id: rocprofiler_agent_id_t,
        counter_id: rocprofiler_counter_id_t,
        instance_count: *mut usize,
    ) -> rocprofiler_status_t;
    /// Dimensions of a counter (deprecated in 7.0, still exported).
    fn rocprofiler_iterate_counter_dimensions(
        id: rocprofiler_counter_id_t,
        info_cb: rocprofiler_available_dimensions_cb_t,
        user_data: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Counter of a counter record's instance id.
    fn rocprofiler_query_record_counter_id(
        id: rocprofiler_counter_instance_id_t,
        counter_id: *mut rocprofiler_counter_id_t,
    ) -> rocprofiler_status_t;
    /// Position of a counter record along a dimension.
    fn rocprofiler_query_record_dimension_position(
        id: rocprofiler_counter_instance_id_t,
        dim: rocprofiler_counter_dimension_id_t,
        pos: *mut usize,
    ) -> rocprofiler_status_t;
    /// Counter configuration for an agent (7.0 name; 0.x exported `rocprofiler_create_profile_config`).
    fn rocprofiler_create_counter_config(
        agent_id: rocprofiler_agent_id_t,
        counters_list: *mut rocprofiler_counter_id_t,
        counters_count: usize,
        config_id: *mut rocprofiler_counter_config_id_t,
    ) -> rocprofiler_status_t;
    /// Destroys a counter configuration.
    fn rocprofiler_destroy_counter_config(config_id: rocprofiler_counter_config_id_t) -> rocprofiler_status_t;
    /// Defines a derived counter at run time (7.0+).
    fn rocprofiler_create_counter(
        name: *const c_char,
        name_len: usize,
        expr: *const c_char,
        expr_len: usize,
        description: *const c_char,
        description_len: usize,
        agent: rocprofiler_agent_id_t,
        counter_id: *mut rocprofiler_counter_id_t,
    ) -> rocprofiler_status_t;
    /// Dispatch counting with callbacks.
    fn rocprofiler_configure_callback_dispatch_counting_service(
        context_id: rocprofiler_context_id_t,
        dispatch_callback: rocprofiler_dispatch_counting_service_cb_t,
        dispatch_callback_args: *mut c_void,
        record_callback: rocprofiler_dispatch_counting_record_cb_t,
        record_callback_args: *mut c_void,
    ) -> rocprofiler_status_t;
    /// Dispatch counting into a buffer (7.0 name).
    fn rocprofiler_configure_buffer_dispatch_counting_service(
        context_id: rocprofiler_context_id_t,
        buffer_id: rocprofiler_buffer_id_t,
        callback: rocprofiler_dispatch_counting_service_cb_t,
        callback_data_args: *mut c_void,
    ) -> rocprofiler_status_t;
}

impl Api {
    /// Resolves every symbol in the process's global scope (`dlopen(NULL)`), where
    /// rocprofiler-register has put the SDK (RTLD_GLOBAL) before it calls a tool's
    /// `rocprofiler_configure`. Never loads a library.
    ///
    /// # Safety
    /// Any `rocprofiler_*` symbol visible in the process must be rocprofiler-sdk 1.x's.
    pub unsafe fn from_process() -> Result<Self, LoadError> {
        let this = libloading::os::unix::Library::this();
        // SAFETY: the caller vouches for the symbols; dlsym on the process handle has no
        // other precondition.
        let mut api = unsafe { Self::load_with(|name| lookup(&this, name)) };
        if api.rocprofiler_get_version.is_none() {
            return Err(LoadError::NotLoaded {
                tried: vec!["<process global scope>".to_owned()],
                last: "rocprofiler_get_version not found".to_owned(),
            });
        }
        api._library = Some(this);
        Ok(api)
    }

    /// [`Api::from_process`], then — for processes that loaded the SDK with RTLD_LOCAL — the
    /// already-loaded `librocprofiler-sdk.so.1` (RTLD_NOLOAD: a second copy of the SDK would not
    /// be the one that is running). Reports every place tried.
    ///
    /// # Safety
    /// As for [`Api::from_process`].
    pub unsafe fn load() -> Result<Self, LoadError> {
        use libloading::os::unix::{Library, RTLD_LAZY};
        const RTLD_NOLOAD: core::ffi::c_int = 4;
        let mut tried = vec!["<process global scope>".to_owned()];
        // SAFETY: forwarded contract.
        if let Ok(api) = unsafe { Self::from_process() } {
            return Ok(api);
        }
        let last;
        tried.push(SONAME.to_owned());
        // SAFETY: RTLD_NOLOAD never runs initialisers: it only returns a handle to a library
        // that is already loaded.
        match unsafe { Library::open(Some(SONAME), RTLD_LAZY | RTLD_NOLOAD) } {
            Ok(lib) => {
                // SAFETY: forwarded contract.
                let mut api = unsafe { Self::load_with(|name| lookup(&lib, name)) };
                if api.rocprofiler_get_version.is_some() {
                    api._library = Some(lib);
                    return Ok(api);
                }
                last = format!("{SONAME}: rocprofiler_get_version not found");
            }
            Err(e) => last = e.to_string(),
        }
        Err(LoadError::NotLoaded { tried, last })
    }
}

fn lookup(lib: &libloading::os::unix::Library, name: &core::ffi::CStr) -> *const c_void {
    // SAFETY: the symbol is only turned into a raw address here; typing it is load_with's job.
    match unsafe { lib.get::<*const c_void>(name.to_bytes_with_nul()) } {
        Ok(sym) => sym.into_raw() as *const c_void,
        Err(_) => core::ptr::null(),
    }
}

/// Soname of the SDK ABI bound here.
pub const SONAME: &str = "librocprofiler-sdk.so.1";

/// The SDK could not be found in the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// No rocprofiler-sdk in the process.
    NotLoaded {
        /// Places looked at, in order.
        tried: Vec<String>,
        /// Why the last one failed.
        last: String,
    },
}

impl core::fmt::Display for LoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LoadError::NotLoaded { tried, last } => write!(
                f,
                "rocprofiler-sdk is not loaded in this process (tried {}; last error: {last})",
                tried.join(", ")
            ),
        }
    }
}

impl std::error::Error for LoadError {}
