//! Runs the scripted program: HIP and roctx calls on real threads, GPU work on device threads,
//! records and callbacks delivered as the SDK documents.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CString, c_void};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rocprofiler_sys as sys;

use super::buffers::{Buf, Rec};
use super::device::Work;
use super::names::{self, Space};
use super::{CbService, Counting, CountingSink, Sim, lock, now_ns};
use crate::scenario::{CopyKind, Op};

type CbKind = sys::rocprofiler_callback_tracing_kind_t;
type BufKind = sys::rocprofiler_buffer_tracing_kind_t;

thread_local! {
    /// Correlation ids of the traced calls in progress on this thread (for `ancestor`).
    static ANCESTORS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

fn wants(ops: &Option<Arc<std::collections::BTreeSet<i32>>>, op: i32) -> bool {
    ops.as_ref().is_none_or(|o| o.contains(&op))
}

fn callback_subs(sim: &Sim, kind: CbKind, op: i32) -> Vec<(u64, CbService)> {
    let reg = lock(&sim.reg);
    reg.contexts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.active)
        .filter_map(|(i, c)| {
            c.callback
                .get(&kind.0)
                .filter(|s| wants(&s.ops, op))
                .map(|s| (i as u64 + 1, s.clone()))
        })
        .collect()
}

fn buffer_subs(sim: &Sim, kind: BufKind, op: i32) -> Vec<(u64, Arc<Buf>)> {
    let reg = lock(&sim.reg);
    reg.contexts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.active)
        .filter_map(|(i, c)| {
            c.buffer
                .get(&kind.0)
                .filter(|s| wants(&s.ops, op))
                .map(|s| (i as u64 + 1, s.buffer.clone()))
        })
        .collect()
}

fn counting_subs(sim: &Sim) -> Vec<(u64, Counting)> {
    let reg = lock(&sim.reg);
    reg.contexts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.active)
        .filter_map(|(i, c)| c.counting.clone().map(|s| (i as u64 + 1, s)))
        .collect()
}

fn external(sim: &Sim, ctx: u64, tid: u64) -> u64 {
    lock(&sim.reg)
        .external
        .get(&(ctx, tid))
        .and_then(|v| v.last().copied())
        .unwrap_or(0)
}

fn phase_str(p: sys::rocprofiler_callback_phase_t) -> &'static str {
    if p == sys::rocprofiler_callback_phase_t::ENTER {
        "ENTER"
    } else {
        "EXIT"
    }
}

/// Delivers one callback-tracing record with `payload` to every subscriber.
#[allow(clippy::too_many_arguments)]
fn emit<P>(
    sim: &Sim,
    subs: &[(u64, CbService)],
    user: &mut [sys::rocprofiler_user_data_t],
    kind: CbKind,
    op: i32,
    phase: sys::rocprofiler_callback_phase_t,
    corr: (u64, u64),
    tid: u64,
    payload: &mut P,
) {
    if subs.is_empty() {
        return;
    }
    let payload: *mut P = payload;
    for (i, (ctx, s)) in subs.iter().enumerate() {
        let record = sys::rocprofiler_callback_tracing_record_t {
            context_id: sys::rocprofiler_context_id_t { handle: *ctx },
            thread_id: tid,
            correlation_id: sys::rocprofiler_correlation_id_t {
                internal: corr.0,
                external: sys::rocprofiler_user_data_t {
                    value: external(sim, *ctx, tid),
                },
                ancestor: corr.1,
            },
            kind,
            operation: op,
            phase,
            payload: payload.cast::<c_void>(),
        };
        // SAFETY: the tool's callback with a record, per-call user data and its own data.
        unsafe { (s.cb)(record, &mut user[i], s.data.0) };
    }
    let key = format!(
        "{}/{}/{}",
        names::kind_str(Space::Callback, kind.0),
        names::op_str(Space::Callback, kind.0, op),
        phase_str(phase)
    );
    *lock(&sim.report)
        .delivered
        .callbacks
        .entry(key)
        .or_default() += subs.len() as u64;
}

/// A traced API call: ENTER callbacks, `body` (which may queue GPU work under the call's
/// correlation id), EXIT callbacks, then the buffered API record.
fn traced<P>(sim: &Sim, kind: CbKind, op: i32, payload: &mut P, body: impl FnOnce(&mut P, u64)) {
    let tid = super::gettid();
    let subs = callback_subs(sim, kind, op);
    let buf_kind = (kind == CbKind::HIP_RUNTIME_API).then_some(BufKind::HIP_RUNTIME_API);
    let bufs = buf_kind
        .map(|k| buffer_subs(sim, k, op))
        .unwrap_or_default();
    let corr = sim.next_corr.fetch_add(1, Ordering::Relaxed);
    let ancestor = ANCESTORS.with(|a| a.borrow().last().copied().unwrap_or(0));
    let mut user = vec![sys::rocprofiler_user_data_t { value: 0 }; subs.len()];
    let start = now_ns();
    emit(
        sim,
        &subs,
        &mut user,
        kind,
        op,
        sys::rocprofiler_callback_phase_t::ENTER,
        (corr, ancestor),
        tid,
        payload,
    );
    ANCESTORS.with(|a| a.borrow_mut().push(corr));
    body(payload, corr);
    ANCESTORS.with(|a| a.borrow_mut().pop());
    emit(
        sim,
        &subs,
        &mut user,
        kind,
        op,
        sys::rocprofiler_callback_phase_t::EXIT,
        (corr, ancestor),
        tid,
        payload,
    );
    let end = now_ns();
    for (ctx, b) in bufs {
        b.push(Rec::Hip(Box::new(
            sys::rocprofiler_buffer_tracing_hip_api_record_t {
                size: std::mem::size_of::<sys::rocprofiler_buffer_tracing_hip_api_record_t>()
                    as u64,
                kind: BufKind::HIP_RUNTIME_API,
                operation: op,
                correlation_id: sys::rocprofiler_correlation_id_t {
                    internal: corr,
                    external: sys::rocprofiler_user_data_t {
                        value: external(sim, ctx, tid),
                    },
                    ancestor,
                },
                start_timestamp: start,
                end_timestamp: end,
                thread_id: tid,
            },
        )));
    }
}

/// A notification without a call (code objects): correlation id 0.
fn notify<P>(
    sim: &Sim,
    kind: CbKind,
    op: i32,
    phase: sys::rocprofiler_callback_phase_t,
    payload: &mut P,
) {
    let subs = callback_subs(sim, kind, op);
    let mut user = vec![sys::rocprofiler_user_data_t { value: 0 }; subs.len()];
    emit(
        sim,
        &subs,
        &mut user,
        kind,
        op,
        phase,
        (0, 0),
        super::gettid(),
        payload,
    );
}

fn hip_data() -> sys::rocprofiler_callback_tracing_hip_api_data_t {
    sys::rocprofiler_callback_tracing_hip_api_data_t {
        size: std::mem::size_of::<sys::rocprofiler_callback_tracing_hip_api_data_t>() as u64,
        args: sys::rocprofiler_hip_api_args_t { _bytes: [0; 11] },
        retval: sys::rocprofiler_hip_api_retval_t { uint64_t_retval: 0 },
    }
}

fn marker_data() -> sys::rocprofiler_callback_tracing_marker_api_data_t {
    sys::rocprofiler_callback_tracing_marker_api_data_t {
        size: std::mem::size_of::<sys::rocprofiler_callback_tracing_marker_api_data_t>() as u64,
        // SAFETY: all-zero is valid for this union of plain members.
        args: unsafe { std::mem::zeroed() },
        retval: sys::rocprofiler_marker_api_retval_t { int64_t_retval: 0 },
    }
}

fn set_success(d: &mut sys::rocprofiler_callback_tracing_hip_api_data_t) {
    d.retval.hipError_t_retval = sys::hipError_t::hipSuccess;
}

pub(crate) fn kernel_id(device: usize, kernel: usize) -> u64 {
    (device as u64 + 1) * 1000 + kernel as u64 + 1
}

fn code_object_id(device: usize) -> u64 {
    device as u64 + 1
}

fn stream_handle(device: usize, stream: u32) -> u64 {
    if stream == 0 {
        0
    } else {
        0x5000_0000 + device as u64 * 0x1000 + u64::from(stream)
    }
}

fn queue_id(device: usize, stream: u32) -> u64 {
    0x7000 + device as u64 * 0x100 + u64::from(stream)
}

fn leak_c(s: &str) -> *const std::ffi::c_char {
    Box::leak(
        CString::new(s.replace('\0', ""))
            .expect("no NUL")
            .into_boxed_c_str(),
    )
    .as_ptr()
}

fn code_object_data(
    sim: &Sim,
    g: usize,
) -> sys::rocprofiler_callback_tracing_code_object_load_data_t {
    let agent = sim.gpu_agents[g];
    let base = 0x7f00_0000_0000 + g as u64 * 0x100_0000;
    sys::rocprofiler_callback_tracing_code_object_load_data_t {
        size: std::mem::size_of::<sys::rocprofiler_callback_tracing_code_object_load_data_t>()
            as u64,
        code_object_id: code_object_id(g),
        agent_id: sys::rocprofiler_agent_id_t { handle: agent },
        hsa_agent: sys::hsa_agent_t { handle: agent },
        uri: leak_c(&format!(
            "memory://{}#offset={base:#x}&size=65536",
            std::process::id()
        )),
        load_base: base,
        load_size: 0x10000,
        load_delta: base as i64,
        storage_type: sys::rocprofiler_code_object_storage_type_t::MEMORY,
        storage: sys::rocprofiler_code_object_storage_u {
            memory: sys::rocprofiler_code_object_storage_memory_t {
                memory_base: base,
                memory_size: 0x10000,
            },
        },
    }
}

fn symbol_data(
    sim: &Sim,
    g: usize,
    k: usize,
) -> sys::rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
    let spec = &sim.scenario().kernels[k];
    let id = kernel_id(g, k);
    let object = 0x9000_0000 + id * 0x100;
    sys::rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
        size: std::mem::size_of::<
            sys::rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t,
        >() as u64,
        kernel_id: id,
        code_object_id: code_object_id(g),
        kernel_name: leak_c(&spec.symbol),
        kernel_object: object,
        kernarg_segment_size: spec.kernarg_size,
        kernarg_segment_alignment: 8,
        group_segment_size: spec.lds,
        private_segment_size: spec.scratch,
        sgpr_count: spec.sgpr,
        arch_vgpr_count: spec.vgpr,
        accum_vgpr_count: spec.accum_vgpr,
        kernel_code_entry_byte_offset: 256,
        kernel_address: sys::rocprofiler_address_t { value: object },
    }
}

/// Code-object LOAD, then one kernel-symbol registration per kernel, per GPU.
fn load_code_objects(sim: &Sim) {
    type Op = sys::rocprofiler_code_object_operation_t;
    for g in 0..sim.gpu_agents.len() {
        let mut co = code_object_data(sim, g);
        notify(
            sim,
            CbKind::CODE_OBJECT,
            Op::LOAD.0 as i32,
            sys::rocprofiler_callback_phase_t::LOAD,
            &mut co,
        );
        for k in 0..sim.scenario().kernels.len() {
            let mut sym = symbol_data(sim, g, k);
            notify(
                sim,
                CbKind::CODE_OBJECT,
                Op::DEVICE_KERNEL_SYMBOL_REGISTER.0 as i32,
                sys::rocprofiler_callback_phase_t::LOAD,
                &mut sym,
            );
        }
    }
}

/// At exit: symbol UNLOADs, then the code object's UNLOAD, per GPU.
pub(crate) fn unload_code_objects(sim: &Sim) {
    type Op = sys::rocprofiler_code_object_operation_t;
    for g in 0..sim.gpu_agents.len() {
        for k in 0..sim.scenario().kernels.len() {
            let mut sym = symbol_data(sim, g, k);
            notify(
                sim,
                CbKind::CODE_OBJECT,
                Op::DEVICE_KERNEL_SYMBOL_REGISTER.0 as i32,
                sys::rocprofiler_callback_phase_t::UNLOAD,
                &mut sym,
            );
        }
        let mut co = code_object_data(sim, g);
        notify(
            sim,
            CbKind::CODE_OBJECT,
            Op::LOAD.0 as i32,
            sys::rocprofiler_callback_phase_t::UNLOAD,
            &mut co,
        );
    }
}

/// Runs the whole program: code objects load (HIP runtime start), threads run, threads join.
pub(crate) fn run_program(sim: &'static Sim) {
    load_code_objects(sim);
    let on_caller = sim.spec.caller_thread;
    let handles: Vec<_> = sim
        .scenario()
        .threads
        .iter()
        .enumerate()
        .skip(usize::from(on_caller))
        .map(|(i, t)| {
            let ops = t.ops.clone();
            std::thread::Builder::new()
                .name(format!("app-{i}"))
                .spawn(move || {
                    lock(&sim.report).app_thread_ids.push(super::gettid());
                    let mut th = ThreadState::default();
                    run_ops(sim, &ops, &mut th);
                })
                .expect("spawn app thread")
        })
        .collect();
    if let Some(t) = sim.scenario().threads.first().filter(|_| on_caller) {
        lock(&sim.report).app_thread_ids.push(super::gettid());
        let mut th = ThreadState::default();
        run_ops(sim, &t.ops, &mut th);
    }
    for h in handles {
        if h.join().is_err() {
            sim.violation(
                "an application thread panicked (a tool callback unwound into the SDK?)".into(),
            );
        }
    }
}

#[derive(Default)]
struct ThreadState {
    depth: i32,
    ranges: HashMap<String, u64>,
    next_ptr: u64,
    /// The thread's current HIP device (HIP starts every thread on device 0).
    device: usize,
    /// Recorded events: handle, device, device work submitted before the record.
    events: HashMap<String, (u64, usize, u64)>,
}

fn event_handle(sim: &Sim) -> u64 {
    0x6000_0000 + sim.next_event.fetch_add(1, Ordering::Relaxed) * 0x10
}

fn run_ops(sim: &Sim, ops: &[Op], th: &mut ThreadState) {
    type Id = sys::rocprofiler_hip_runtime_api_id_t;
    type M = sys::rocprofiler_marker_core_api_id_t;
    for op in ops {
        // A HIP program switches devices with hipSetDevice before using another one.
        if let Some(d) = crate::scenario::op_device(op).filter(|d| *d != th.device) {
            let mut data = hip_data();
            data.args.hipSetDevice =
                sys::rocprofiler_hip_args_hipSetDevice_t { deviceId: d as i32 };
            traced(
                sim,
                CbKind::HIP_RUNTIME_API,
                Id::hipSetDevice.0,
                &mut data,
                |data, _| set_success(data),
            );
            th.device = d;
        }
        match op {
            Op::Malloc { bytes, .. } => {
                let mut out: *mut c_void = std::ptr::null_mut();
                let mut d = hip_data();
                d.args.hipMalloc = sys::rocprofiler_hip_args_hipMalloc_t {
                    ptr: &mut out,
                    size: *bytes as usize,
                };
                th.next_ptr += 1;
                let addr = 0x7e00_0000_0000 + th.next_ptr * 0x100_0000;
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipMalloc.0,
                    &mut d,
                    |d, _| {
                        out = addr as *mut c_void;
                        set_success(d);
                    },
                );
            }
            Op::Free { .. } => {
                let mut d = hip_data();
                d.args.hipFree = sys::rocprofiler_hip_args_hipFree_t {
                    ptr: (0x7e00_0000_0000u64 + 0x100_0000) as *mut c_void,
                };
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipFree.0,
                    &mut d,
                    |d, _| set_success(d),
                );
            }
            Op::Memcpy {
                bytes,
                kind,
                device,
                stream,
                duration_us,
            } => {
                let (dst, src) = (0x7e00_0000_0000u64 + 0x100_0000, 0x5555_0000_0000u64);
                let hip_kind = match kind {
                    CopyKind::H2D => sys::hipMemcpyKind::hipMemcpyHostToDevice,
                    CopyKind::D2H => sys::hipMemcpyKind::hipMemcpyDeviceToHost,
                    CopyKind::D2D => sys::hipMemcpyKind::hipMemcpyDeviceToDevice,
                };
                let mut d = hip_data();
                let id = match stream {
                    None => {
                        d.args.hipMemcpy = sys::rocprofiler_hip_args_hipMemcpy_t {
                            dst: dst as *mut c_void,
                            src: src as *const c_void,
                            sizeBytes: *bytes as usize,
                            kind: hip_kind,
                        };
                        Id::hipMemcpy
                    }
                    Some(s) => {
                        d.args.hipMemcpyAsync = sys::rocprofiler_hip_args_hipMemcpyAsync_t {
                            dst: dst as *mut c_void,
                            src: src as *const c_void,
                            sizeBytes: *bytes as usize,
                            kind: hip_kind,
                            stream: stream_handle(*device, *s) as *mut c_void,
                        };
                        Id::hipMemcpyAsync
                    }
                };
                traced(sim, CbKind::HIP_RUNTIME_API, id.0, &mut d, |d, corr| {
                    let seq = copy(
                        sim,
                        corr,
                        *device,
                        *kind,
                        *bytes,
                        stream.unwrap_or(0),
                        *duration_us,
                        (dst, src),
                    );
                    if stream.is_none() {
                        sim.devices[*device].wait_seq(seq);
                    }
                    set_success(d);
                });
            }
            Op::Launch {
                kernel,
                grid,
                block,
                shared_mem,
                device,
                stream,
                counters,
            } => {
                let k = sim
                    .scenario()
                    .kernels
                    .iter()
                    .position(|k| &k.name == kernel)
                    .expect("validated");
                let dim = |v: &[u32; 3]| sys::rocprofiler_dim3_t {
                    x: v[0],
                    y: v[1],
                    z: v[2],
                };
                let mut d = hip_data();
                d.args.hipLaunchKernel = sys::rocprofiler_hip_args_hipLaunchKernel_t {
                    function_address: (0x4000_0000 + k as u64 * 0x40) as *const c_void,
                    numBlocks: dim(grid),
                    dimBlocks: dim(block),
                    args: std::ptr::null_mut(),
                    sharedMemBytes: *shared_mem as usize,
                    stream: stream_handle(*device, *stream) as *mut c_void,
                };
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipLaunchKernel.0,
                    &mut d,
                    |d, corr| {
                        launch(
                            sim,
                            corr,
                            *device,
                            k,
                            *grid,
                            *block,
                            *shared_mem,
                            *stream,
                            counters,
                        );
                        set_success(d);
                    },
                );
            }
            Op::StreamSync { device, stream } => {
                let mut d = hip_data();
                d.args.hipStreamSynchronize = sys::rocprofiler_hip_args_hipStreamSynchronize_t {
                    stream: stream_handle(*device, *stream) as *mut c_void,
                };
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipStreamSynchronize.0,
                    &mut d,
                    |d, _| {
                        sim.devices[*device].wait_stream(*stream);
                        set_success(d);
                    },
                );
            }
            Op::DeviceSync { device } => {
                let mut d = hip_data();
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipDeviceSynchronize.0,
                    &mut d,
                    |d, _| {
                        sim.devices[*device].wait_idle();
                        set_success(d);
                    },
                );
            }
            Op::EventRecord {
                event,
                device,
                stream,
            } => {
                let handle = event_handle(sim);
                let mut d = hip_data();
                d.args.hipEventRecord = sys::rocprofiler_hip_args_hipEventRecord_t {
                    event: handle as *mut c_void,
                    stream: stream_handle(*device, *stream) as *mut c_void,
                };
                let mut seq = 0;
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipEventRecord.0,
                    &mut d,
                    |d, _| {
                        seq = sim.devices[*device].submitted();
                        set_success(d);
                    },
                );
                th.events.insert(event.clone(), (handle, *device, seq));
            }
            Op::EventSync { event } => {
                let (handle, device, seq) = th.events.get(event).copied().unwrap_or((0, 0, 0));
                let mut d = hip_data();
                d.args.hipEventSynchronize = sys::rocprofiler_hip_args_hipEventSynchronize_t {
                    event: handle as *mut c_void,
                };
                traced(
                    sim,
                    CbKind::HIP_RUNTIME_API,
                    Id::hipEventSynchronize.0,
                    &mut d,
                    |d, _| {
                        sim.devices[device].wait_seq(seq);
                        set_success(d);
                    },
                );
            }
            Op::Mark { message } => {
                let msg = CString::new(message.as_str()).expect("no NUL");
                let mut d = marker_data();
                d.args.roctxMarkA = sys::rocprofiler_marker_args_message_t {
                    message: msg.as_ptr(),
                };
                traced(
                    sim,
                    CbKind::MARKER_CORE_API,
                    M::roctxMarkA.0,
                    &mut d,
                    |_, _| {},
                );
            }
            Op::RangePush { message } => {
                let msg = CString::new(message.as_str()).expect("no NUL");
                let mut d = marker_data();
                d.args.roctxRangePushA = sys::rocprofiler_marker_args_message_t {
                    message: msg.as_ptr(),
                };
                let level = th.depth;
                th.depth += 1;
                traced(
                    sim,
                    CbKind::MARKER_CORE_API,
                    M::roctxRangePushA.0,
                    &mut d,
                    |d, _| {
                        d.retval.int32_t_retval = level;
                    },
                );
            }
            Op::RangePop => {
                let mut d = marker_data();
                th.depth -= 1;
                let level = th.depth;
                traced(
                    sim,
                    CbKind::MARKER_CORE_API,
                    M::roctxRangePop.0,
                    &mut d,
                    |d, _| {
                        d.retval.int32_t_retval = level;
                    },
                );
            }
            Op::RangeStart { message, slot } => {
                let msg = CString::new(message.as_str()).expect("no NUL");
                let mut d = marker_data();
                d.args.roctxRangeStartA = sys::rocprofiler_marker_args_message_t {
                    message: msg.as_ptr(),
                };
                let id = sim.next_range.fetch_add(1, Ordering::Relaxed);
                th.ranges.insert(slot.clone(), id);
                traced(
                    sim,
                    CbKind::MARKER_CORE_API,
                    M::roctxRangeStartA.0,
                    &mut d,
                    |d, _| {
                        d.retval.roctx_range_id_t_retval = id;
                    },
                );
            }
            Op::RangeStop { slot } => {
                let id = th.ranges.get(slot).copied().unwrap_or(0);
                let mut d = marker_data();
                d.args.roctxRangeStop = sys::rocprofiler_marker_args_roctxRangeStop_t { id };
                traced(
                    sim,
                    CbKind::MARKER_CORE_API,
                    M::roctxRangeStop.0,
                    &mut d,
                    |_, _| {},
                );
            }
            Op::SleepUs { us } => std::thread::sleep(std::time::Duration::from_micros(*us)),
            Op::Announce { path } => {
                // Written whole under another name, then renamed: a reader never sees half.
                let tmp = format!("{path}.tmp");
                let _ = std::fs::write(&tmp, std::process::id().to_string());
                let _ = std::fs::rename(&tmp, path);
            }
            Op::WaitFile { path, timeout_ms } => {
                let until =
                    std::time::Instant::now() + std::time::Duration::from_millis(*timeout_ms);
                while !std::path::Path::new(path).exists() && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
            Op::WaitTraced {
                counting,
                markers,
                timeout_ms,
            } => {
                let until =
                    std::time::Instant::now() + std::time::Duration::from_millis(*timeout_ms);
                let dispatch = sys::rocprofiler_kernel_dispatch_operation_t::COMPLETE.0 as i32;
                let push = sys::rocprofiler_marker_core_api_id_t::roctxRangePushA.0;
                let ready = || {
                    !buffer_subs(sim, BufKind::KERNEL_DISPATCH, dispatch).is_empty()
                        && (!counting || !counting_subs(sim).is_empty())
                        && (!markers
                            || !callback_subs(sim, CbKind::MARKER_CORE_API, push).is_empty())
                };
                while !ready() && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
            Op::GpuTrace { call, name } => {
                let rc = gpu_trace_call(sim, call, name.as_deref());
                lock(&sim.report).gpu_trace_calls.push((call.clone(), rc));
            }
            Op::Repeat { times, ops } => {
                for _ in 0..*times {
                    run_ops(sim, ops, th);
                }
            }
        }
    }
}

/// [`Op::GpuTrace`]: calls `gpu_trace_<call>` of the tool the SDK loaded (found as the
/// application finds it: `dlopen` of its path with `RTLD_NOLOAD`). `None`: not exported.
fn gpu_trace_call(sim: &Sim, call: &str, name: Option<&str>) -> Option<i32> {
    use libloading::os::unix::{Library, RTLD_NOW};
    use std::ffi::{CString, c_char, c_int};
    /// glibc's value (`dlfcn.h`).
    const RTLD_NOLOAD: c_int = 4;
    // SAFETY: only finds the library already loaded; loads nothing.
    let lib = unsafe { Library::open(Some(&sim.spec.tool), RTLD_NOW | RTLD_NOLOAD) }.ok()?;
    let symbol = format!("gpu_trace_{call}\0");
    // The functions that take a name get it, or null without one.
    if matches!(call, "window_begin" | "range_push") {
        let n = name.map(CString::new).transpose().ok()?;
        // SAFETY: the C API's `int (const char *)` functions.
        let f =
            unsafe { lib.get::<unsafe extern "C" fn(*const c_char) -> c_int>(symbol.as_bytes()) }
                .ok()?;
        // SAFETY: null or a NUL-terminated string valid for the call.
        Some(unsafe { f(n.as_ref().map_or(std::ptr::null(), |n| n.as_ptr())) })
    } else {
        // SAFETY: the C API's `int (void)` functions.
        let f = unsafe { lib.get::<unsafe extern "C" fn() -> c_int>(symbol.as_bytes()) }.ok()?;
        // SAFETY: no arguments.
        Some(unsafe { f() })
    }
}

/// Bytes of `rocprofiler_kernel_dispatch_info_t` the 7.0 SDK reports in its `size` field.
const DISPATCH_INFO_SIZE: u64 =
    std::mem::offset_of!(sys::rocprofiler_kernel_dispatch_info_t, reserved_padding) as u64;

#[allow(clippy::too_many_arguments)]
fn launch(
    sim: &Sim,
    corr: u64,
    device: usize,
    k: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    stream: u32,
    values: &BTreeMap<String, Vec<f64>>,
) {
    let tid = super::gettid();
    let agent = sim.gpu_agents[device];
    let spec = &sim.scenario().kernels[k];
    let dispatch_id = sim.next_dispatch.fetch_add(1, Ordering::Relaxed);
    let info = sys::rocprofiler_kernel_dispatch_info_t {
        size: DISPATCH_INFO_SIZE,
        agent_id: sys::rocprofiler_agent_id_t { handle: agent },
        queue_id: sys::rocprofiler_queue_id_t {
            handle: queue_id(device, stream),
        },
        kernel_id: kernel_id(device, k),
        dispatch_id,
        private_segment_size: spec.scratch,
        group_segment_size: spec.lds + shared_mem,
        workgroup_size: sys::rocprofiler_dim3_t {
            x: block[0],
            y: block[1],
            z: block[2],
        },
        // Work-items, not work-groups.
        grid_size: sys::rocprofiler_dim3_t {
            x: grid[0] * block[0],
            y: grid[1] * block[1],
            z: grid[2] * block[2],
        },
        reserved_padding: [0; 56],
    };
    let bufs: Vec<(Arc<Buf>, u64)> = buffer_subs(
        sim,
        BufKind::KERNEL_DISPATCH,
        sys::rocprofiler_kernel_dispatch_operation_t::COMPLETE.0 as i32,
    )
    .into_iter()
    .map(|(ctx, b)| (b, external(sim, ctx, tid)))
    .collect();

    // Dispatch counting: ask each counting service on the launching thread.
    let mut counted = Vec::new();
    for (ctx, c) in counting_subs(sim) {
        let ext = external(sim, ctx, tid);
        let data = sys::rocprofiler_dispatch_counting_service_data_t {
            size: std::mem::size_of::<sys::rocprofiler_dispatch_counting_service_data_t>() as u64,
            correlation_id: sys::rocprofiler_async_correlation_id_t {
                internal: corr,
                external: sys::rocprofiler_user_data_t { value: ext },
            },
            start_timestamp: 0,
            end_timestamp: 0,
            dispatch_info: info,
        };
        let mut cfg = sys::rocprofiler_counter_config_id_t { handle: 0 };
        let mut ud = sys::rocprofiler_user_data_t { value: 0 };
        // SAFETY: the tool's dispatch callback with valid out-pointers.
        unsafe { (c.dispatch)(data, &mut cfg, &mut ud, c.dispatch_data.0) };
        lock(&sim.report).delivered.dispatch_callbacks += 1;
        if cfg.handle == 0 {
            continue;
        }
        let found = lock(&sim.reg)
            .configs
            .get(&cfg.handle)
            .map(|c| (c.agent, c.counters.clone()));
        match found {
            None => sim.violation(format!("dispatch callback chose unknown counter config {}", cfg.handle)),
            Some((a, _)) if a != agent => sim.violation(format!(
                "dispatch callback chose a config for agent {a:#x} for a dispatch on agent {agent:#x}"
            )),
            // SAFETY: both union members are 8 plain bytes.
            Some((_, counters)) => counted.push((c.sink, counters, unsafe { ud.value }, ext)),
        }
    }

    let values = values.clone();
    let sim_ptr: &'static Sim = super::sim().expect("running");
    let work = Work {
        stream,
        duration_us: spec.duration_us,
        on_complete: Box::new(move |start, end| {
            for (b, ext) in &bufs {
                b.push(Rec::Dispatch(Box::new(
                    sys::rocprofiler_buffer_tracing_kernel_dispatch_record_t {
                        size: std::mem::size_of::<
                            sys::rocprofiler_buffer_tracing_kernel_dispatch_record_t,
                        >() as u64,
                        kind: BufKind::KERNEL_DISPATCH,
                        operation: sys::rocprofiler_kernel_dispatch_operation_t::COMPLETE,
                        correlation_id: sys::rocprofiler_async_correlation_id_t {
                            internal: corr,
                            external: sys::rocprofiler_user_data_t { value: *ext },
                        },
                        thread_id: tid,
                        start_timestamp: start,
                        end_timestamp: end,
                        dispatch_info: info,
                    },
                )));
            }
            for (sink, counters, ud, ext) in counted {
                complete_counting(
                    sim_ptr, sink, &counters, ud, ext, corr, start, end, &info, &values,
                );
            }
        }),
    };
    sim.devices[device].submit(work);
}

#[allow(clippy::too_many_arguments)]
fn complete_counting(
    sim: &Sim,
    sink: CountingSink,
    counters: &[u64],
    ud: u64,
    ext: u64,
    corr: u64,
    start: u64,
    end: u64,
    info: &sys::rocprofiler_kernel_dispatch_info_t,
    values: &BTreeMap<String, Vec<f64>>,
) {
    let ud = sys::rocprofiler_user_data_t { value: ud };
    let mut records = Vec::new();
    for cid in counters {
        let Some(def) = sim.counter(*cid) else {
            continue;
        };
        let vals = values
            .get(&def.name)
            .cloned()
            .unwrap_or_else(|| vec![0.0; def.instances]);
        for (i, v) in vals.iter().enumerate() {
            records.push(sys::rocprofiler_counter_record_t {
                id: (cid << 32) | i as u64,
                counter_value: *v,
                dispatch_id: info.dispatch_id,
                user_data: ud,
                agent_id: info.agent_id,
            });
        }
    }
    let correlation_id = sys::rocprofiler_async_correlation_id_t {
        internal: corr,
        external: sys::rocprofiler_user_data_t { value: ext },
    };
    match sink {
        CountingSink::Callback { cb, data } => {
            let dd = sys::rocprofiler_dispatch_counting_service_data_t {
                size: std::mem::size_of::<sys::rocprofiler_dispatch_counting_service_data_t>()
                    as u64,
                correlation_id,
                start_timestamp: start,
                end_timestamp: end,
                dispatch_info: *info,
            };
            {
                let mut r = lock(&sim.report);
                r.delivered.record_callbacks += 1;
                r.delivered.counter_records += records.len() as u64;
            }
            // SAFETY: the tool's record callback with `records.len()` valid records.
            unsafe { cb(dd, records.as_mut_ptr(), records.len(), ud, data.0) };
        }
        CountingSink::Buffer(b) => {
            b.push(Rec::CountHeader(Box::new(
                sys::rocprofiler_dispatch_counting_service_record_t {
                    size: std::mem::size_of::<sys::rocprofiler_dispatch_counting_service_record_t>()
                        as u64,
                    num_records: records.len() as u64,
                    correlation_id,
                    start_timestamp: start,
                    end_timestamp: end,
                    dispatch_info: *info,
                },
            )));
            for r in records {
                b.push(Rec::CountValue(Box::new(r)));
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn copy(
    sim: &Sim,
    corr: u64,
    device: usize,
    kind: CopyKind,
    bytes: u64,
    stream: u32,
    duration_us: u64,
    addrs: (u64, u64),
) -> u64 {
    type O = sys::rocprofiler_memory_copy_operation_t;
    let tid = super::gettid();
    let gpu = sim.gpu_agents[device];
    let (op, src, dst) = match kind {
        CopyKind::H2D => (O::HOST_TO_DEVICE, sim.cpu_agent, gpu),
        CopyKind::D2H => (O::DEVICE_TO_HOST, gpu, sim.cpu_agent),
        CopyKind::D2D => (O::DEVICE_TO_DEVICE, gpu, gpu),
    };
    let bufs: Vec<(Arc<Buf>, u64)> = buffer_subs(sim, BufKind::MEMORY_COPY, op.0 as i32)
        .into_iter()
        .map(|(ctx, b)| (b, external(sim, ctx, tid)))
        .collect();
    sim.devices[device].submit(Work {
        stream,
        duration_us,
        on_complete: Box::new(move |start, end| {
            for (b, ext) in &bufs {
                b.push(Rec::Copy(Box::new(
                    sys::rocprofiler_buffer_tracing_memory_copy_record_t {
                        size: std::mem::size_of::<
                            sys::rocprofiler_buffer_tracing_memory_copy_record_t,
                        >() as u64,
                        kind: BufKind::MEMORY_COPY,
                        operation: op,
                        correlation_id: sys::rocprofiler_async_correlation_id_t {
                            internal: corr,
                            external: sys::rocprofiler_user_data_t { value: *ext },
                        },
                        thread_id: tid,
                        start_timestamp: start,
                        end_timestamp: end,
                        dst_agent_id: sys::rocprofiler_agent_id_t { handle: dst },
                        src_agent_id: sys::rocprofiler_agent_id_t { handle: src },
                        bytes,
                        dst_address: sys::rocprofiler_address_t { value: addrs.0 },
                        src_address: sys::rocprofiler_address_t { value: addrs.1 },
                    },
                )));
            }
        }),
    })
}
