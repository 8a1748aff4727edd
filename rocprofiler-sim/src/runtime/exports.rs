//! The exported rocprofiler-sdk API. Each function is checked at compile time against the
//! prototype in `rocprofiler_sys::pfn` (which `rocprofiler-sys/tests/abi.rs` checks against the
//! measured headers).

#![allow(clippy::missing_safety_doc, unreachable_pub)]

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rocprofiler_sys as sys;

use super::buffers::Buf;
use super::names::{self, Space};
use super::{
    BufService, CbService, CounterCfg, Counting, CountingSink, Ctx, Delivery, SendPtr, Sim, lock,
    sim,
};

type S = sys::rocprofiler_status_t;

macro_rules! checked {
    ($($name:ident),* $(,)?) => {
        $( const _: sys::pfn::$name = $name; )*
    };
}

checked!(
    rocprofiler_get_version,
    rocprofiler_get_version_triplet,
    rocprofiler_get_status_name,
    rocprofiler_get_status_string,
    rocprofiler_get_timestamp,
    rocprofiler_get_thread_id,
    rocprofiler_is_initialized,
    rocprofiler_is_finalized,
    rocprofiler_force_configure,
    rocprofiler_create_context,
    rocprofiler_start_context,
    rocprofiler_stop_context,
    rocprofiler_context_is_active,
    rocprofiler_context_is_valid,
    rocprofiler_create_buffer,
    rocprofiler_flush_buffer,
    rocprofiler_destroy_buffer,
    rocprofiler_create_callback_thread,
    rocprofiler_assign_callback_thread,
    rocprofiler_at_internal_thread_create,
    rocprofiler_configure_buffer_tracing_service,
    rocprofiler_configure_callback_tracing_service,
    rocprofiler_query_buffer_tracing_kind_name,
    rocprofiler_query_buffer_tracing_kind_operation_name,
    rocprofiler_query_callback_tracing_kind_name,
    rocprofiler_query_callback_tracing_kind_operation_name,
    rocprofiler_iterate_buffer_tracing_kinds,
    rocprofiler_iterate_buffer_tracing_kind_operations,
    rocprofiler_iterate_callback_tracing_kinds,
    rocprofiler_iterate_callback_tracing_kind_operations,
    rocprofiler_iterate_callback_tracing_kind_operation_args,
    rocprofiler_push_external_correlation_id,
    rocprofiler_pop_external_correlation_id,
    rocprofiler_query_available_agents,
    rocprofiler_iterate_agent_supported_counters,
    rocprofiler_query_counter_info,
    rocprofiler_query_counter_instance_count,
    rocprofiler_iterate_counter_dimensions,
    rocprofiler_query_record_counter_id,
    rocprofiler_query_record_dimension_position,
    rocprofiler_create_counter_config,
    rocprofiler_destroy_counter_config,
    rocprofiler_create_counter,
    rocprofiler_configure_callback_dispatch_counting_service,
    rocprofiler_configure_buffer_dispatch_counting_service,
);

fn with_sim(call: &str, f: impl FnOnce(&'static Sim) -> S) -> S {
    match sim() {
        Some(s) => {
            let r = f(s);
            s.ret(call, r)
        }
        None => S::ERROR,
    }
}

/// Services may only be configured while the SDK is configuring/initialising tools.
fn locked(s: &Sim) -> bool {
    s.init_status.load(Ordering::SeqCst) != -1
}

fn ops_set(ops: *const i32, n: usize) -> Option<Arc<BTreeSet<i32>>> {
    if ops.is_null() || n == 0 {
        return None;
    }
    // SAFETY: the caller passes `n` operations.
    Some(Arc::new(
        unsafe { std::slice::from_raw_parts(ops, n) }
            .iter()
            .copied()
            .collect(),
    ))
}

fn write<T>(p: *mut T, v: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: non-null out-pointer from the caller.
    unsafe { p.write(v) };
    true
}

fn ctx_index(s: &Sim, id: sys::rocprofiler_context_id_t) -> Option<usize> {
    let n = lock(&s.reg).contexts.len() as u64;
    (id.handle >= 1 && id.handle <= n).then(|| (id.handle - 1) as usize)
}

fn buffer(s: &Sim, id: sys::rocprofiler_buffer_id_t) -> Option<Arc<Buf>> {
    let reg = lock(&s.reg);
    id.handle
        .checked_sub(1)
        .and_then(|i| reg.buffers.get(i as usize))
        .cloned()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_get_version(
    major: *mut u32,
    minor: *mut u32,
    patch: *mut u32,
) -> S {
    with_sim("rocprofiler_get_version", |s| {
        let (a, b, c) = sys::decode_version(s.spec.sdk_version);
        write(major, a);
        write(minor, b);
        write(patch, c);
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_get_version_triplet(
    info: *mut sys::rocprofiler_version_triplet_t,
) -> S {
    with_sim("rocprofiler_get_version_triplet", |s| {
        let (major, minor, patch) = sys::decode_version(s.spec.sdk_version);
        if write(
            info,
            sys::rocprofiler_version_triplet_t {
                major,
                minor,
                patch,
            },
        ) {
            S::SUCCESS
        } else {
            S::ERROR_INVALID_ARGUMENT
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_get_status_name(status: S) -> *const c_char {
    names::status_name(status).map_or(std::ptr::null(), |c| c.as_ptr())
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_get_status_string(status: S) -> *const c_char {
    names::status_text(status).map_or(std::ptr::null(), |c| c.as_ptr())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_get_timestamp(ts: *mut u64) -> S {
    // Called on hot paths: not counted in the report.
    if write(ts, super::now_ns()) {
        S::SUCCESS
    } else {
        S::ERROR_INVALID_ARGUMENT
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_get_thread_id(tid: *mut u64) -> S {
    if write(tid, super::gettid()) {
        S::SUCCESS
    } else {
        S::ERROR_INVALID_ARGUMENT
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_is_initialized(status: *mut c_int) -> S {
    with_sim("rocprofiler_is_initialized", |s| {
        write(status, s.init_status.load(Ordering::SeqCst));
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_is_finalized(status: *mut c_int) -> S {
    with_sim("rocprofiler_is_finalized", |s| {
        write(status, s.fini_status.load(Ordering::SeqCst));
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_force_configure(
    _configure_func: sys::rocprofiler_configure_func_t,
) -> S {
    // The simulator configures tools itself before the program starts: always too late.
    with_sim("rocprofiler_force_configure", |_| {
        S::ERROR_CONFIGURATION_LOCKED
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_context(
    context_id: *mut sys::rocprofiler_context_id_t,
) -> S {
    with_sim("rocprofiler_create_context", |s| {
        if context_id.is_null() {
            return S::ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null in/out pointer.
        if unsafe { (*context_id).handle } != 0 {
            return S::ERROR_CONTEXT_ID_NOT_ZERO;
        }
        write(context_id, sys::ROCPROFILER_CONTEXT_NONE);
        if locked(s) {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        let mut reg = lock(&s.reg);
        reg.contexts.push(Ctx::default());
        write(
            context_id,
            sys::rocprofiler_context_id_t {
                handle: reg.contexts.len() as u64,
            },
        );
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_start_context(context_id: sys::rocprofiler_context_id_t) -> S {
    with_sim("rocprofiler_start_context", |s| {
        let Some(i) = ctx_index(s, context_id) else {
            return S::ERROR_CONTEXT_NOT_FOUND;
        };
        if s.fini_status.load(Ordering::SeqCst) != 0 {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        lock(&s.reg).contexts[i].active = true;
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_stop_context(context_id: sys::rocprofiler_context_id_t) -> S {
    with_sim("rocprofiler_stop_context", |s| {
        let Some(i) = ctx_index(s, context_id) else {
            return S::ERROR_CONTEXT_NOT_FOUND;
        };
        lock(&s.reg).contexts[i].active = false;
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_context_is_active(
    context_id: sys::rocprofiler_context_id_t,
    status: *mut c_int,
) -> S {
    with_sim("rocprofiler_context_is_active", |s| {
        write(status, 0);
        let Some(i) = ctx_index(s, context_id) else {
            return S::ERROR_CONTEXT_NOT_FOUND;
        };
        write(status, c_int::from(lock(&s.reg).contexts[i].active));
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_context_is_valid(
    context_id: sys::rocprofiler_context_id_t,
    status: *mut c_int,
) -> S {
    with_sim("rocprofiler_context_is_valid", |s| {
        write(status, 0);
        if ctx_index(s, context_id).is_none() {
            return S::ERROR_CONTEXT_NOT_FOUND;
        }
        write(status, 1);
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_buffer(
    context: sys::rocprofiler_context_id_t,
    size: usize,
    watermark: usize,
    policy: sys::rocprofiler_buffer_policy_t,
    callback: sys::rocprofiler_buffer_tracing_cb_t,
    callback_data: *mut c_void,
    buffer_id: *mut sys::rocprofiler_buffer_id_t,
) -> S {
    with_sim("rocprofiler_create_buffer", |s| {
        if locked(s) {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        let (Some(cb), false) = (callback, buffer_id.is_null()) else {
            return S::ERROR_INVALID_ARGUMENT;
        };
        if ctx_index(s, context).is_none() {
            return S::ERROR_CONTEXT_NOT_FOUND;
        }
        let lossless = match policy {
            sys::rocprofiler_buffer_policy_t::LOSSLESS => true,
            sys::rocprofiler_buffer_policy_t::DISCARD => false,
            _ => return S::ERROR_INVALID_ARGUMENT,
        };
        if watermark > size {
            return S::ERROR_INVALID_ARGUMENT;
        }
        let delivery = s.default_delivery();
        let mut reg = lock(&s.reg);
        let id = reg.buffers.len() as u64 + 1;
        reg.buffers.push(Arc::new(Buf::new(
            id,
            context.handle,
            size,
            watermark,
            lossless,
            cb,
            SendPtr(callback_data),
            delivery,
        )));
        write(buffer_id, sys::rocprofiler_buffer_id_t { handle: id });
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_flush_buffer(buffer_id: sys::rocprofiler_buffer_id_t) -> S {
    with_sim("rocprofiler_flush_buffer", |s| match buffer(s, buffer_id) {
        Some(b) => b.flush(),
        None => S::ERROR_BUFFER_NOT_FOUND,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_destroy_buffer(buffer_id: sys::rocprofiler_buffer_id_t) -> S {
    with_sim("rocprofiler_destroy_buffer", |s| {
        match buffer(s, buffer_id) {
            Some(b) => b.destroy(),
            None => S::ERROR_BUFFER_NOT_FOUND,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_callback_thread(
    cb_thread_id: *mut sys::rocprofiler_callback_thread_t,
) -> S {
    with_sim("rocprofiler_create_callback_thread", |s| {
        if locked(s) {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        if cb_thread_id.is_null() {
            return S::ERROR_INVALID_ARGUMENT;
        }
        let mut reg = lock(&s.reg);
        reg.threads.push(Delivery::spawn("sdk-cb-thread"));
        write(
            cb_thread_id,
            sys::rocprofiler_callback_thread_t {
                handle: reg.threads.len() as u64,
            },
        );
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_assign_callback_thread(
    buffer_id: sys::rocprofiler_buffer_id_t,
    cb_thread_id: sys::rocprofiler_callback_thread_t,
) -> S {
    with_sim("rocprofiler_assign_callback_thread", |s| {
        if locked(s) {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        let Some(b) = buffer(s, buffer_id) else {
            return S::ERROR_BUFFER_NOT_FOUND;
        };
        let t = cb_thread_id
            .handle
            .checked_sub(1)
            .and_then(|i| lock(&s.reg).threads.get(i as usize).cloned());
        let Some(t) = t else {
            return S::ERROR_THREAD_NOT_FOUND;
        };
        *lock(&b.delivery) = t;
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_at_internal_thread_create(
    _precreate: sys::rocprofiler_internal_thread_library_cb_t,
    _postcreate: sys::rocprofiler_internal_thread_library_cb_t,
    _libs: c_int,
    _data: *mut c_void,
) -> S {
    with_sim("rocprofiler_at_internal_thread_create", |_| {
        S::ERROR_NOT_IMPLEMENTED
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_buffer_tracing_service(
    context_id: sys::rocprofiler_context_id_t,
    kind: sys::rocprofiler_buffer_tracing_kind_t,
    operations: *const i32,
    operations_count: usize,
    buffer_id: sys::rocprofiler_buffer_id_t,
) -> S {
    with_sim("rocprofiler_configure_buffer_tracing_service", |s| {
        if locked(s) {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        let Some(i) = ctx_index(s, context_id) else {
            return S::ERROR_CONTEXT_NOT_FOUND;
        };
        if names::kind_name(Space::Buffer, kind.0).is_none() {
            return S::ERROR_KIND_NOT_FOUND;
        }
        let Some(buffer) = buffer(s, buffer_id) else {
            return S::ERROR_BUFFER_NOT_FOUND;
        };
        let mut reg = lock(&s.reg);
        let ctx = &mut reg.contexts[i];
        if ctx.buffer.contains_key(&kind.0) {
            return S::ERROR_SERVICE_ALREADY_CONFIGURED;
        }
        ctx.buffer.insert(
            kind.0,
            BufService {
                ops: ops_set(operations, operations_count),
                buffer,
            },
        );
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_callback_tracing_service(
    context_id: sys::rocprofiler_context_id_t,
    kind: sys::rocprofiler_callback_tracing_kind_t,
    operations: *const i32,
    operations_count: usize,
    callback: sys::rocprofiler_callback_tracing_cb_t,
    callback_args: *mut c_void,
) -> S {
    with_sim("rocprofiler_configure_callback_tracing_service", |s| {
        if locked(s) {
            return S::ERROR_CONFIGURATION_LOCKED;
        }
        let Some(cb) = callback else {
            return S::ERROR_INVALID_ARGUMENT;
        };
        let Some(i) = ctx_index(s, context_id) else {
            return S::ERROR_CONTEXT_NOT_FOUND;
        };
        if kind == sys::rocprofiler_callback_tracing_kind_t::KERNEL_DISPATCH {
            return S::ERROR_NOT_IMPLEMENTED;
        }
        if names::kind_name(Space::Callback, kind.0).is_none() {
            return S::ERROR_KIND_NOT_FOUND;
        }
        let mut reg = lock(&s.reg);
        let ctx = &mut reg.contexts[i];
        if ctx.callback.contains_key(&kind.0) {
            return S::ERROR_SERVICE_ALREADY_CONFIGURED;
        }
        ctx.callback.insert(
            kind.0,
            CbService {
                ops: ops_set(operations, operations_count),
                cb,
                data: SendPtr(callback_args),
            },
        );
        S::SUCCESS
    })
}

fn name_out(n: Option<&'static std::ffi::CStr>, name: *mut *const c_char, len: *mut u64) -> S {
    match n {
        Some(c) => {
            write(name, c.as_ptr());
            write(len, c.to_bytes().len() as u64);
            S::SUCCESS
        }
        None => S::ERROR_OPERATION_NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_buffer_tracing_kind_name(
    kind: sys::rocprofiler_buffer_tracing_kind_t,
    name: *mut *const c_char,
    name_len: *mut u64,
) -> S {
    match names::kind_name(Space::Buffer, kind.0) {
        Some(c) => name_out(Some(c), name, name_len),
        None => S::ERROR_KIND_NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_buffer_tracing_kind_operation_name(
    kind: sys::rocprofiler_buffer_tracing_kind_t,
    operation: i32,
    name: *mut *const c_char,
    name_len: *mut u64,
) -> S {
    name_out(
        names::op_name(Space::Buffer, kind.0, operation),
        name,
        name_len,
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_callback_tracing_kind_name(
    kind: sys::rocprofiler_callback_tracing_kind_t,
    name: *mut *const c_char,
    name_len: *mut u64,
) -> S {
    match names::kind_name(Space::Callback, kind.0) {
        Some(c) => name_out(Some(c), name, name_len),
        None => S::ERROR_KIND_NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_callback_tracing_kind_operation_name(
    kind: sys::rocprofiler_callback_tracing_kind_t,
    operation: i32,
    name: *mut *const c_char,
    name_len: *mut u64,
) -> S {
    name_out(
        names::op_name(Space::Callback, kind.0, operation),
        name,
        name_len,
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_buffer_tracing_kinds(
    callback: sys::rocprofiler_buffer_tracing_kind_cb_t,
    data: *mut c_void,
) -> S {
    let Some(cb) = callback else {
        return S::ERROR_INVALID_ARGUMENT;
    };
    for k in names::kinds_of(Space::Buffer) {
        // SAFETY: the caller's callback and data.
        if unsafe { cb(sys::rocprofiler_buffer_tracing_kind_t(k), data) } != 0 {
            break;
        }
    }
    S::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_buffer_tracing_kind_operations(
    kind: sys::rocprofiler_buffer_tracing_kind_t,
    callback: sys::rocprofiler_buffer_tracing_kind_operation_cb_t,
    data: *mut c_void,
) -> S {
    let Some(cb) = callback else {
        return S::ERROR_INVALID_ARGUMENT;
    };
    for op in names::ops_of(Space::Buffer, kind.0) {
        // SAFETY: the caller's callback and data.
        if unsafe { cb(kind, op, data) } != 0 {
            break;
        }
    }
    S::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_callback_tracing_kinds(
    callback: sys::rocprofiler_callback_tracing_kind_cb_t,
    data: *mut c_void,
) -> S {
    let Some(cb) = callback else {
        return S::ERROR_INVALID_ARGUMENT;
    };
    for k in names::kinds_of(Space::Callback) {
        // SAFETY: the caller's callback and data.
        if unsafe { cb(sys::rocprofiler_callback_tracing_kind_t(k), data) } != 0 {
            break;
        }
    }
    S::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_callback_tracing_kind_operations(
    kind: sys::rocprofiler_callback_tracing_kind_t,
    callback: sys::rocprofiler_callback_tracing_kind_operation_cb_t,
    data: *mut c_void,
) -> S {
    let Some(cb) = callback else {
        return S::ERROR_INVALID_ARGUMENT;
    };
    for op in names::ops_of(Space::Callback, kind.0) {
        // SAFETY: the caller's callback and data.
        if unsafe { cb(kind, op, data) } != 0 {
            break;
        }
    }
    S::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_callback_tracing_kind_operation_args(
    _record: sys::rocprofiler_callback_tracing_record_t,
    _callback: sys::rocprofiler_callback_tracing_operation_args_cb_t,
    _max_dereference_count: i32,
    _user_data: *mut c_void,
) -> S {
    with_sim(
        "rocprofiler_iterate_callback_tracing_kind_operation_args",
        |_| S::ERROR_NOT_IMPLEMENTED,
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_push_external_correlation_id(
    context: sys::rocprofiler_context_id_t,
    tid: u64,
    external_correlation_id: sys::rocprofiler_user_data_t,
) -> S {
    with_sim("rocprofiler_push_external_correlation_id", |s| {
        if ctx_index(s, context).is_none() {
            return S::ERROR_CONTEXT_NOT_FOUND;
        }
        // SAFETY: both union members are 8 plain bytes.
        let v = unsafe { external_correlation_id.value };
        lock(&s.reg)
            .external
            .entry((context.handle, tid))
            .or_default()
            .push(v);
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_pop_external_correlation_id(
    context: sys::rocprofiler_context_id_t,
    tid: u64,
    external_correlation_id: *mut sys::rocprofiler_user_data_t,
) -> S {
    with_sim("rocprofiler_pop_external_correlation_id", |s| {
        if ctx_index(s, context).is_none() {
            return S::ERROR_CONTEXT_NOT_FOUND;
        }
        match lock(&s.reg)
            .external
            .get_mut(&(context.handle, tid))
            .and_then(Vec::pop)
        {
            Some(v) => {
                write(
                    external_correlation_id,
                    sys::rocprofiler_user_data_t { value: v },
                );
                S::SUCCESS
            }
            None => S::ERROR,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_available_agents(
    version: sys::rocprofiler_agent_version_t,
    callback: sys::rocprofiler_query_available_agents_cb_t,
    agent_size: usize,
    user_data: *mut c_void,
) -> S {
    with_sim("rocprofiler_query_available_agents", |s| {
        let Some(cb) = callback else {
            return S::ERROR_INVALID_ARGUMENT;
        };
        if version != sys::rocprofiler_agent_version_t::V0 {
            return S::ERROR_INVALID_ARGUMENT;
        }
        // A tool built for a larger struct than ours is refused; smaller is fine.
        if agent_size > std::mem::size_of::<sys::rocprofiler_agent_v0_t>() {
            return S::ERROR_INCOMPATIBLE_ABI;
        }
        let mut ptrs: Vec<*const c_void> = s
            .agents
            .iter()
            .map(|a| (&**a as *const sys::rocprofiler_agent_v0_t).cast())
            .collect();
        // SAFETY: the caller's callback with pointers to our agents, valid for the process.
        unsafe { cb(version, ptrs.as_mut_ptr(), ptrs.len(), user_data) };
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_agent_supported_counters(
    agent_id: sys::rocprofiler_agent_id_t,
    cb: sys::rocprofiler_available_counters_cb_t,
    user_data: *mut c_void,
) -> S {
    with_sim("rocprofiler_iterate_agent_supported_counters", |s| {
        let Some(cb) = cb else {
            return S::ERROR_INVALID_ARGUMENT;
        };
        if !s.agents.iter().any(|a| a.id == agent_id) {
            return S::ERROR_AGENT_NOT_FOUND;
        }
        let mut ids: Vec<sys::rocprofiler_counter_id_t> = s
            .counters
            .iter()
            .filter(|c| c.agent == agent_id.handle)
            .map(|c| sys::rocprofiler_counter_id_t { handle: c.id })
            .collect();
        // SAFETY: the caller's callback with `ids.len()` ids.
        unsafe { cb(agent_id, ids.as_mut_ptr(), ids.len(), user_data) };
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_counter_info(
    counter_id: sys::rocprofiler_counter_id_t,
    version: sys::rocprofiler_counter_info_version_id_t,
    info: *mut c_void,
) -> S {
    with_sim("rocprofiler_query_counter_info", |s| {
        let Some(c) = s.counter(counter_id.handle) else {
            return S::ERROR_COUNTER_NOT_FOUND;
        };
        if info.is_null() {
            return S::ERROR_INVALID_ARGUMENT;
        }
        let v0 = sys::rocprofiler_counter_info_v0_t {
            id: counter_id,
            name: c.c_name.as_ptr(),
            description: c.c_description.as_ptr(),
            block: c.c_block.as_ptr(),
            expression: c"".as_ptr(),
            flags: 0,
        };
        match version {
            sys::rocprofiler_counter_info_version_id_t::V0 => {
                write(info.cast::<sys::rocprofiler_counter_info_v0_t>(), v0);
            }
            _ => return S::ERROR_INCOMPATIBLE_ABI,
        }
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_counter_instance_count(
    agent_id: sys::rocprofiler_agent_id_t,
    counter_id: sys::rocprofiler_counter_id_t,
    instance_count: *mut usize,
) -> S {
    with_sim("rocprofiler_query_counter_instance_count", |s| {
        match s.counter(counter_id.handle) {
            Some(c) if c.agent == agent_id.handle => {
                write(instance_count, c.instances);
                S::SUCCESS
            }
            Some(_) => S::ERROR_AGENT_MISMATCH,
            None => S::ERROR_COUNTER_NOT_FOUND,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_counter_dimensions(
    id: sys::rocprofiler_counter_id_t,
    info_cb: sys::rocprofiler_available_dimensions_cb_t,
    user_data: *mut c_void,
) -> S {
    with_sim("rocprofiler_iterate_counter_dimensions", |s| {
        let Some(cb) = info_cb else {
            return S::ERROR_INVALID_ARGUMENT;
        };
        let Some(c) = s.counter(id.handle) else {
            return S::ERROR_COUNTER_NOT_FOUND;
        };
        let dim = sys::rocprofiler_counter_record_dimension_info_t {
            name: c.dim_name.as_ptr(),
            instance_size: c.instances,
            id: 1,
        };
        // SAFETY: the caller's callback with one dimension.
        unsafe { cb(id, &dim, 1, user_data) };
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_record_counter_id(
    id: u64,
    counter_id: *mut sys::rocprofiler_counter_id_t,
) -> S {
    // Hot path: not counted. Instance ids are `counter << 32 | instance`.
    let Some(s) = sim() else { return S::ERROR };
    match s.counter(id >> 32) {
        Some(c) => {
            write(counter_id, sys::rocprofiler_counter_id_t { handle: c.id });
            S::SUCCESS
        }
        None => S::ERROR_COUNTER_NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_record_dimension_position(
    id: u64,
    dim: u64,
    pos: *mut usize,
) -> S {
    if dim != 1 {
        return S::ERROR_DIM_NOT_FOUND;
    }
    write(pos, (id & 0xffff_ffff) as usize);
    S::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_counter_config(
    agent_id: sys::rocprofiler_agent_id_t,
    counters_list: *mut sys::rocprofiler_counter_id_t,
    counters_count: usize,
    config_id: *mut sys::rocprofiler_counter_config_id_t,
) -> S {
    with_sim("rocprofiler_create_counter_config", |s| {
        if config_id.is_null() || (counters_list.is_null() && counters_count > 0) {
            return S::ERROR_INVALID_ARGUMENT;
        }
        if !s
            .agents
            .iter()
            .any(|a| a.id == agent_id && a.r#type == sys::rocprofiler_agent_type_t::GPU)
        {
            return S::ERROR_AGENT_NOT_FOUND;
        }
        let ids = if counters_count == 0 {
            &[][..]
        } else {
            // SAFETY: `counters_count` ids from the caller.
            unsafe { std::slice::from_raw_parts(counters_list, counters_count) }
        };
        let mut counters = Vec::new();
        for id in ids {
            match s.counter(id.handle) {
                Some(c) if c.agent == agent_id.handle => counters.push(c.id),
                Some(_) => return S::ERROR_METRIC_NOT_VALID_FOR_AGENT,
                None => return S::ERROR_COUNTER_NOT_FOUND,
            }
        }
        let mut reg = lock(&s.reg);
        let handle = reg.next_config;
        reg.next_config += 1;
        reg.configs.insert(
            handle,
            CounterCfg {
                agent: agent_id.handle,
                counters,
            },
        );
        write(config_id, sys::rocprofiler_counter_config_id_t { handle });
        S::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_destroy_counter_config(
    config_id: sys::rocprofiler_counter_config_id_t,
) -> S {
    with_sim("rocprofiler_destroy_counter_config", |s| {
        match lock(&s.reg).configs.remove(&config_id.handle) {
            Some(_) => S::SUCCESS,
            None => S::ERROR_PROFILE_NOT_FOUND,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_counter(
    _name: *const c_char,
    _name_len: usize,
    _expr: *const c_char,
    _expr_len: usize,
    _description: *const c_char,
    _description_len: usize,
    _agent: sys::rocprofiler_agent_id_t,
    _counter_id: *mut sys::rocprofiler_counter_id_t,
) -> S {
    with_sim("rocprofiler_create_counter", |_| S::ERROR_NOT_IMPLEMENTED)
}

fn configure_counting(s: &Sim, context_id: sys::rocprofiler_context_id_t, c: Counting) -> S {
    if locked(s) {
        return S::ERROR_CONFIGURATION_LOCKED;
    }
    let Some(i) = ctx_index(s, context_id) else {
        return S::ERROR_CONTEXT_NOT_FOUND;
    };
    let mut reg = lock(&s.reg);
    if reg.contexts[i].counting.is_some() {
        return S::ERROR_SERVICE_ALREADY_CONFIGURED;
    }
    reg.contexts[i].counting = Some(c);
    S::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_callback_dispatch_counting_service(
    context_id: sys::rocprofiler_context_id_t,
    dispatch_callback: sys::rocprofiler_dispatch_counting_service_cb_t,
    dispatch_callback_args: *mut c_void,
    record_callback: sys::rocprofiler_dispatch_counting_record_cb_t,
    record_callback_args: *mut c_void,
) -> S {
    with_sim(
        "rocprofiler_configure_callback_dispatch_counting_service",
        |s| {
            let (Some(dispatch), Some(cb)) = (dispatch_callback, record_callback) else {
                return S::ERROR_INVALID_ARGUMENT;
            };
            let sink = CountingSink::Callback {
                cb,
                data: SendPtr(record_callback_args),
            };
            configure_counting(
                s,
                context_id,
                Counting {
                    dispatch,
                    dispatch_data: SendPtr(dispatch_callback_args),
                    sink,
                },
            )
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_buffer_dispatch_counting_service(
    context_id: sys::rocprofiler_context_id_t,
    buffer_id: sys::rocprofiler_buffer_id_t,
    callback: sys::rocprofiler_dispatch_counting_service_cb_t,
    callback_data_args: *mut c_void,
) -> S {
    with_sim(
        "rocprofiler_configure_buffer_dispatch_counting_service",
        |s| {
            let Some(dispatch) = callback else {
                return S::ERROR_INVALID_ARGUMENT;
            };
            let Some(b) = buffer(s, buffer_id) else {
                return S::ERROR_BUFFER_NOT_FOUND;
            };
            configure_counting(
                s,
                context_id,
                Counting {
                    dispatch,
                    dispatch_data: SendPtr(callback_data_args),
                    sink: CountingSink::Buffer(b),
                },
            )
        },
    )
}
