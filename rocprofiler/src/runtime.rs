//! The symbol table as a cheap, cloneable handle, and the SDK's utility calls.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::Arc;

use rocprofiler_sys as sys;

use crate::{
    Agent, AgentId, CallbackThread, Context, CounterConfig, CounterDimension, CounterId,
    CounterInfo, Error, Result, Status,
};

/// SDK version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major (1 for ROCm 7.x).
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl Version {
    /// From `rocprofiler_configure`'s `version` argument (`10000*major + 100*minor + patch`).
    pub fn from_encoded(v: u32) -> Self {
        let (major, minor, patch) = sys::decode_version(v);
        Self {
            major,
            minor,
            patch,
        }
    }
    /// Whether this crate can talk to it (any 1.x).
    pub fn is_supported(self) -> bool {
        self.major == sys::ROCPROFILER_VERSION_MAJOR
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Whether the SDK is initialised/finalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Not yet.
    No,
    /// Happening now.
    InProgress,
    /// Done.
    Yes,
}

/// Handle to the running rocprofiler-sdk: its resolved function table. Cloning is cheap.
#[derive(Clone)]
pub struct Runtime {
    api: Arc<sys::Api>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("missing", &self.api.missing())
            .finish()
    }
}

impl Runtime {
    /// Resolves the SDK in the process's global scope, where it is while it calls a tool's
    /// `rocprofiler_configure`. Fails (no panic) when it is not there.
    ///
    /// This trusts that `rocprofiler_*` symbols in the process belong to rocprofiler-sdk 1.x,
    /// which holds inside a tool library the SDK loaded; check the version it announced first.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Load`] when the SDK is not in the process, [`crate::Error::MissingSymbol`] when it
    /// lacks a function this wrapper binds.
    #[doc(alias = "dlopen")]
    pub fn from_process() -> Result<Self> {
        // SAFETY: see above: in a tool library these symbols are the SDK's own.
        let api = unsafe { sys::Api::load() }?;
        Ok(Self::from_api(api))
    }

    /// Wraps a table built with [`sys::Api::load_with`] (e.g. a fake SDK in tests).
    pub fn from_api(api: sys::Api) -> Self {
        Self { api: Arc::new(api) }
    }

    /// The raw table, for calls this crate does not wrap.
    pub fn api(&self) -> &sys::Api {
        &self.api
    }

    pub(crate) fn status(&self, raw: sys::rocprofiler_status_t) -> Status {
        // SAFETY: takes a value, returns a static string or null.
        let message = unsafe { self.api.rocprofiler_get_status_string(raw) }
            .ok()
            .and_then(|p| static_str(p));
        Status { raw, message }
    }

    pub(crate) fn check(
        &self,
        call: &'static str,
        raw: Result<sys::rocprofiler_status_t, sys::MissingSymbol>,
    ) -> Result<()> {
        let raw = raw?;
        if raw == sys::rocprofiler_status_t::SUCCESS {
            Ok(())
        } else {
            Err(Error::Status {
                call,
                status: self.status(raw),
            })
        }
    }

    /// The running SDK's version.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_get_version` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_get_version")]
    pub fn version(&self) -> Result<Version> {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: three valid out-pointers.
        let r = unsafe {
            self.api
                .rocprofiler_get_version(&mut major, &mut minor, &mut patch)
        };
        self.check("rocprofiler_get_version", r)?;
        Ok(Version {
            major,
            minor,
            patch,
        })
    }

    /// Now, in the SDK's clock (CLOCK_BOOTTIME ns), the clock of every record.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_get_timestamp` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_get_timestamp")]
    pub fn timestamp(&self) -> Result<u64> {
        let mut ts = 0;
        // SAFETY: valid out-pointer.
        let r = unsafe { self.api.rocprofiler_get_timestamp(&mut ts) };
        self.check("rocprofiler_get_timestamp", r)?;
        Ok(ts)
    }

    /// The calling thread's id as records report it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_get_thread_id` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_get_thread_id")]
    pub fn thread_id(&self) -> Result<u64> {
        let mut tid = 0;
        // SAFETY: valid out-pointer.
        let r = unsafe { self.api.rocprofiler_get_thread_id(&mut tid) };
        self.check("rocprofiler_get_thread_id", r)?;
        Ok(tid)
    }

    /// The runtime's description of a status.
    #[doc(alias = "rocprofiler_get_status_string")]
    pub fn status_string(&self, status: sys::rocprofiler_status_t) -> Option<&'static str> {
        self.status(status).message
    }

    fn progress(
        &self,
        call: &'static str,
        f: unsafe fn(
            &sys::Api,
            *mut c_int,
        ) -> Result<sys::rocprofiler_status_t, sys::MissingSymbol>,
    ) -> Result<Progress> {
        let mut s: c_int = 0;
        // SAFETY: valid out-pointer.
        let r = unsafe { f(&self.api, &mut s) };
        self.check(call, r)?;
        Ok(match s {
            0 => Progress::No,
            1 => Progress::Yes,
            _ => Progress::InProgress,
        })
    }

    /// `rocprofiler_is_initialized`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_is_initialized` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_is_initialized")]
    pub fn is_initialized(&self) -> Result<Progress> {
        self.progress(
            "rocprofiler_is_initialized",
            sys::Api::rocprofiler_is_initialized,
        )
    }

    /// `rocprofiler_is_finalized`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_is_finalized` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_is_finalized")]
    pub fn is_finalized(&self) -> Result<Progress> {
        self.progress(
            "rocprofiler_is_finalized",
            sys::Api::rocprofiler_is_finalized,
        )
    }

    /// Name of an operation of a callback-tracing kind (e.g. `hipLaunchKernel`). Static.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_query_callback_tracing_kind_operation_name` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; [`crate::Error::InvalidArgument`] when
    /// the SDK names no operation.
    #[doc(alias = "rocprofiler_query_callback_tracing_kind_operation_name")]
    pub fn callback_operation_name(
        &self,
        kind: sys::rocprofiler_callback_tracing_kind_t,
        operation: i32,
    ) -> Result<&'static str> {
        let (mut name, mut len) = (std::ptr::null(), 0u64);
        // SAFETY: valid out-pointers.
        let r = unsafe {
            self.api
                .rocprofiler_query_callback_tracing_kind_operation_name(
                    kind, operation, &mut name, &mut len,
                )
        };
        self.check("rocprofiler_query_callback_tracing_kind_operation_name", r)?;
        static_str(name).ok_or(Error::InvalidArgument("operation has no name"))
    }

    /// Name of an operation of a buffer-tracing kind. Static.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_query_buffer_tracing_kind_operation_name` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; [`crate::Error::InvalidArgument`] when
    /// the SDK names no operation.
    #[doc(alias = "rocprofiler_query_buffer_tracing_kind_operation_name")]
    pub fn buffer_operation_name(
        &self,
        kind: sys::rocprofiler_buffer_tracing_kind_t,
        operation: i32,
    ) -> Result<&'static str> {
        let (mut name, mut len) = (std::ptr::null(), 0u64);
        // SAFETY: valid out-pointers.
        let r = unsafe {
            self.api
                .rocprofiler_query_buffer_tracing_kind_operation_name(
                    kind, operation, &mut name, &mut len,
                )
        };
        self.check("rocprofiler_query_buffer_tracing_kind_operation_name", r)?;
        static_str(name).ok_or(Error::InvalidArgument("operation has no name"))
    }

    /// Every operation of a callback-tracing kind with its name: build lookup tables once in
    /// `initialize` rather than asking per record.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_iterate_callback_tracing_kind_operations` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it, or the first name that cannot be
    /// had (see [`Runtime::callback_operation_name`]).
    #[doc(alias = "rocprofiler_iterate_callback_tracing_kind_operations")]
    pub fn callback_operations(
        &self,
        kind: sys::rocprofiler_callback_tracing_kind_t,
    ) -> Result<Vec<(i32, &'static str)>> {
        unsafe extern "C" fn collect(
            _kind: sys::rocprofiler_callback_tracing_kind_t,
            op: i32,
            data: *mut c_void,
        ) -> c_int {
            // SAFETY: `data` is the Vec below, alive for the synchronous iteration.
            let ops = unsafe { &mut *data.cast::<Vec<i32>>() };
            ops.push(op);
            0
        }
        let mut ops: Vec<i32> = Vec::new();
        // SAFETY: the callback only touches `ops`, which outlives the call.
        let r = unsafe {
            self.api
                .rocprofiler_iterate_callback_tracing_kind_operations(
                    kind,
                    Some(collect),
                    (&mut ops as *mut Vec<i32>).cast(),
                )
        };
        self.check("rocprofiler_iterate_callback_tracing_kind_operations", r)?;
        ops.into_iter()
            .map(|op| Ok((op, self.callback_operation_name(kind, op)?)))
            .collect()
    }

    /// Creates a context (only inside the tool's `initialize`).
    ///
    /// # Errors
    ///
    /// [`Context::new`]'s errors.
    pub fn create_context(&self) -> Result<Context> {
        Context::new(self)
    }

    /// Creates an SDK delivery thread for buffers (only inside `initialize`).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_create_callback_thread` fails,
    /// and [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_create_callback_thread")]
    pub fn create_callback_thread(&self) -> Result<CallbackThread> {
        let mut id = sys::rocprofiler_callback_thread_t::default();
        // SAFETY: valid out-pointer.
        let r = unsafe { self.api.rocprofiler_create_callback_thread(&mut id) };
        self.check("rocprofiler_create_callback_thread", r)?;
        Ok(CallbackThread { id })
    }

    /// The SDK's agents (CPUs and GPUs), copied out.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_query_available_agents` fails,
    /// and [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_query_available_agents")]
    pub fn agents(&self) -> Result<Vec<Agent>> {
        unsafe extern "C" fn collect(
            _version: sys::rocprofiler_agent_version_t,
            agents: *mut *const c_void,
            num: usize,
            data: *mut c_void,
        ) -> sys::rocprofiler_status_t {
            // SAFETY: `data` is the Vec below; the SDK passes `num` valid agent pointers whose
            // layout is the v0 struct we asked for (version 0, our size).
            let out = unsafe { &mut *data.cast::<Vec<Agent>>() };
            for i in 0..num {
                // SAFETY: as above.
                let p = unsafe { *agents.add(i) }.cast::<sys::rocprofiler_agent_v0_t>();
                // SAFETY: as above (null skipped).
                if let Some(a) = unsafe { p.as_ref() } {
                    out.push(Agent::from_raw(a));
                }
            }
            sys::rocprofiler_status_t::SUCCESS
        }
        let mut out: Vec<Agent> = Vec::new();
        // SAFETY: the callback only touches `out`, which outlives the synchronous call.
        let r = unsafe {
            self.api.rocprofiler_query_available_agents(
                sys::rocprofiler_agent_version_t::V0,
                Some(collect),
                std::mem::size_of::<sys::rocprofiler_agent_v0_t>(),
                (&mut out as *mut Vec<Agent>).cast(),
            )
        };
        self.check("rocprofiler_query_available_agents", r)?;
        Ok(out)
    }

    /// Counters an agent supports.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_iterate_agent_supported_counters` fails, and [`crate::Error::MissingSymbol`] when
    /// the running SDK lacks it.
    #[doc(alias = "rocprofiler_iterate_agent_supported_counters")]
    pub fn supported_counters(&self, agent: AgentId) -> Result<Vec<CounterId>> {
        unsafe extern "C" fn collect(
            _agent: sys::rocprofiler_agent_id_t,
            counters: *mut sys::rocprofiler_counter_id_t,
            num: usize,
            data: *mut c_void,
        ) -> sys::rocprofiler_status_t {
            // SAFETY: `data` is the Vec below; `counters` holds `num` ids.
            let out = unsafe { &mut *data.cast::<Vec<CounterId>>() };
            if !counters.is_null() {
                // SAFETY: as above.
                let ids = unsafe { std::slice::from_raw_parts(counters, num) };
                out.extend(ids.iter().map(|c| CounterId(c.handle)));
            }
            sys::rocprofiler_status_t::SUCCESS
        }
        let mut out: Vec<CounterId> = Vec::new();
        // SAFETY: the callback only touches `out`.
        let r = unsafe {
            self.api.rocprofiler_iterate_agent_supported_counters(
                agent.raw(),
                Some(collect),
                (&mut out as *mut Vec<CounterId>).cast(),
            )
        };
        self.check("rocprofiler_iterate_agent_supported_counters", r)?;
        Ok(out)
    }

    /// Name, description, block, expression of a counter (info version 0, stable across releases).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_query_counter_info` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_query_counter_info")]
    pub fn counter_info(&self, id: CounterId) -> Result<CounterInfo> {
        let mut info = std::mem::MaybeUninit::<sys::rocprofiler_counter_info_v0_t>::zeroed();
        // SAFETY: `info` is a zeroed v0 struct, which is what version V0 fills.
        let r = unsafe {
            self.api.rocprofiler_query_counter_info(
                id.raw(),
                sys::rocprofiler_counter_info_version_id_t::V0,
                info.as_mut_ptr().cast(),
            )
        };
        self.check("rocprofiler_query_counter_info", r)?;
        // SAFETY: all-zero is valid for this plain struct and the SDK filled it.
        let info = unsafe { info.assume_init() };
        Ok(CounterInfo {
            id,
            name: owned(info.name),
            description: owned(info.description),
            block: owned(info.block),
            expression: owned(info.expression),
            is_constant: info.is_constant(),
            is_derived: info.is_derived(),
        })
    }

    /// Dimensions of a counter.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_iterate_counter_dimensions`
    /// fails, and [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_iterate_counter_dimensions")]
    pub fn counter_dimensions(&self, id: CounterId) -> Result<Vec<CounterDimension>> {
        unsafe extern "C" fn collect(
            _id: sys::rocprofiler_counter_id_t,
            dims: *const sys::rocprofiler_counter_record_dimension_info_t,
            num: usize,
            data: *mut c_void,
        ) -> sys::rocprofiler_status_t {
            // SAFETY: `data` is the Vec below; `dims` holds `num` entries.
            let out = unsafe { &mut *data.cast::<Vec<CounterDimension>>() };
            if !dims.is_null() {
                // SAFETY: as above.
                for d in unsafe { std::slice::from_raw_parts(dims, num) } {
                    out.push(CounterDimension {
                        id: d.id,
                        name: owned(d.name),
                        instances: d.instance_size,
                    });
                }
            }
            sys::rocprofiler_status_t::SUCCESS
        }
        let mut out: Vec<CounterDimension> = Vec::new();
        // SAFETY: the callback only touches `out`.
        let r = unsafe {
            self.api.rocprofiler_iterate_counter_dimensions(
                id.raw(),
                Some(collect),
                (&mut out as *mut Vec<CounterDimension>).cast(),
            )
        };
        self.check("rocprofiler_iterate_counter_dimensions", r)?;
        Ok(out)
    }

    /// Hardware instances of a counter on an agent.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_query_counter_instance_count`
    /// fails, and [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_query_counter_instance_count")]
    pub fn counter_instance_count(&self, agent: AgentId, id: CounterId) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: valid out-pointer.
        let r = unsafe {
            self.api
                .rocprofiler_query_counter_instance_count(agent.raw(), id.raw(), &mut n)
        };
        self.check("rocprofiler_query_counter_instance_count", r)?;
        Ok(n)
    }

    /// The counter of a counter record's instance id.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_query_record_counter_id`
    /// fails, and [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_query_record_counter_id")]
    pub fn record_counter_id(&self, instance_id: u64) -> Result<CounterId> {
        let mut c = sys::rocprofiler_counter_id_t::default();
        // SAFETY: valid out-pointer.
        let r = unsafe {
            self.api
                .rocprofiler_query_record_counter_id(instance_id, &mut c)
        };
        self.check("rocprofiler_query_record_counter_id", r)?;
        Ok(CounterId(c.handle))
    }

    /// Position of a counter record's instance along a dimension.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when
    /// `rocprofiler_query_record_dimension_position` fails, and [`crate::Error::MissingSymbol`] when
    /// the running SDK lacks it.
    #[doc(alias = "rocprofiler_query_record_dimension_position")]
    pub fn record_dimension_position(&self, instance_id: u64, dimension: u64) -> Result<usize> {
        let mut pos = 0usize;
        // SAFETY: valid out-pointer.
        let r = unsafe {
            self.api
                .rocprofiler_query_record_dimension_position(instance_id, dimension, &mut pos)
        };
        self.check("rocprofiler_query_record_dimension_position", r)?;
        Ok(pos)
    }

    /// A counter configuration for `agent` (7.0: `rocprofiler_create_counter_config`).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_create_counter_config` fails,
    /// and [`crate::Error::MissingSymbol`] when the running SDK lacks it; [`crate::Error::InvalidArgument`]
    /// for a counter name with a NUL byte.
    #[doc(alias = "rocprofiler_create_counter_config")]
    pub fn create_counter_config(
        &self,
        agent: AgentId,
        counters: &[CounterId],
    ) -> Result<CounterConfig> {
        let mut ids: Vec<sys::rocprofiler_counter_id_t> =
            counters.iter().map(|c| c.raw()).collect();
        let mut cfg = sys::rocprofiler_counter_config_id_t::default();
        // SAFETY: `ids` holds `ids.len()` ids; the SDK only reads them; valid out-pointer.
        let r = unsafe {
            self.api.rocprofiler_create_counter_config(
                agent.raw(),
                ids.as_mut_ptr(),
                ids.len(),
                &mut cfg,
            )
        };
        self.check("rocprofiler_create_counter_config", r)?;
        Ok(CounterConfig {
            rt: self.clone(),
            id: cfg,
            agent,
        })
    }
}

/// A C string the SDK documents as static.
pub(crate) fn static_str(p: *const c_char) -> Option<&'static str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated, and documented to live for the process.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Copies a C string (null → empty).
pub(crate) fn owned(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated for the duration of the call it came from.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
