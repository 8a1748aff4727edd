//! Running the scripted program: `cuInit`'s injection load, the context, each host thread's
//! calls with their callbacks, and the GPU work each produces.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cupti_sys as sys;

use super::range_profiler::Profiled;
use super::{FAKE, activity_ts, cbid, emit, fire, kind_on, lock, static_cstr, violation};
use crate::scenario::{CONTEXT_HANDLE, CopyKind, Layer, Op, Scenario, stream_handle};

static CORRELATION: AtomicU32 = AtomicU32::new(1);
static CONTEXT_CREATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

static CONTEXT_READY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The driver has made its context and finished creating it: what a tool called in-process,
/// without a scripted program, finds.
pub(crate) fn context_exists() {
    CONTEXT_CREATED.store(true, Ordering::Relaxed);
    CONTEXT_READY.store(true, Ordering::Relaxed);
}

/// Whether the program's context exists (the driver is initialised).
pub(crate) fn context_created() -> bool {
    CONTEXT_CREATED.load(Ordering::Relaxed)
}

/// Whether the context's creation has finished (its resource callback
/// returned).
pub(crate) fn context_ready() -> bool {
    CONTEXT_READY.load(Ordering::Relaxed)
}

/// `cudaStreamBeginCapture(stream, mode)`'s arguments (the meta header has no struct for it).
#[repr(C)]
struct BeginCaptureParams {
    stream: sys::cudaStream_t,
    mode: u32,
}

/// `cudaStreamEndCapture(stream, pGraph)`.
#[repr(C)]
struct EndCaptureParams {
    stream: sys::cudaStream_t,
    graph: *mut c_void,
}

/// `cudaMemcpy(dst, src, count, kind)`.
#[repr(C)]
struct MemcpyParams {
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: sys::cudaMemcpyKind,
}

/// `cudaMemcpyPeer(dst, dstDevice, src, srcDevice, count)`.
#[repr(C)]
struct MemcpyPeerParams {
    dst: *mut c_void,
    dst_device: i32,
    src: *const c_void,
    src_device: i32,
    count: usize,
}

/// `cudaMemset(devPtr, value, count)`.
#[repr(C)]
struct MemsetParams {
    dev_ptr: *mut c_void,
    value: i32,
    count: usize,
}

/// `cuMemcpy{HtoD,DtoH,DtoD}Async_v2(dst, src, ByteCount, hStream)`.
#[repr(C)]
struct AsyncCopyParams {
    dst: u64,
    src: u64,
    count: usize,
    stream: sys::CUstream,
}

/// One API function of a call, with its parameter block.
pub(super) struct Fun {
    name: &'static str,
    params: *const c_void,
}

impl Fun {
    pub(super) fn new(name: &'static str, params: *const c_void) -> Self {
        Self { name, params }
    }
}

fn stream_ptr(n: u32) -> sys::cudaStream_t {
    stream_handle(n) as sys::cudaStream_t
}

/// Makes one application call: the functions' entry callbacks outermost first, `body` (the
/// call's effect), then the exit callbacks innermost first. All share one correlation id, as
/// a runtime call and the driver call it makes do.
pub(super) fn call(funs: &[Fun], body: impl FnOnce(u32)) {
    call_named(funs, None, body)
}

thread_local! {
    /// Inside a subscriber's API exit callback.
    static IN_EXIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is inside a subscriber's API exit callback.
pub(crate) fn in_api_exit() -> bool {
    IN_EXIT.with(|c| c.get())
}

/// `cuptiFinalize` forgets the correlation ids handed out (the worst case for a tool).
pub(crate) fn restart_correlation() {
    CORRELATION.store(1, Ordering::Relaxed);
}

/// [`call`] of a launch: its callbacks name the kernel (`symbolName`), as CUPTI's do.
fn call_named(funs: &[Fun], symbol: Option<&std::ffi::CStr>, body: impl FnOnce(u32)) {
    let corr = CORRELATION.fetch_add(1, Ordering::Relaxed);
    let mut slots = vec![0u64; funs.len()];
    let mut ret = vec![0u32; funs.len()];
    let mut site = |i: usize, f: &Fun, exit: bool| {
        let (domain, id) = cbid(f.name);
        let data = sys::CUpti_CallbackData {
            callbackSite: if exit {
                sys::CUpti_ApiCallbackSite::CUPTI_API_EXIT
            } else {
                sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER
            },
            functionName: static_cstr(f.name).as_ptr(),
            functionParams: f.params,
            functionReturnValue: (&mut ret[i] as *mut u32).cast(),
            symbolName: symbol.map_or(std::ptr::null(), |s| s.as_ptr()),
            context: CONTEXT_HANDLE as sys::CUcontext,
            contextUid: 1,
            correlationData: &mut slots[i],
            correlationId: corr,
        };
        let what = format!("{}/{}", f.name, if exit { "EXIT" } else { "ENTER" });
        IN_EXIT.with(|c| c.set(exit));
        fire(
            domain,
            id,
            &what,
            (&data as *const sys::CUpti_CallbackData).cast(),
        );
        IN_EXIT.with(|c| c.set(false));
    };
    for (i, f) in funs.iter().enumerate() {
        site(i, f, false);
    }
    body(corr);
    for (i, f) in funs.iter().enumerate().rev() {
        site(i, f, true);
    }
}

/// Queues `dur_ns` of work on `stream`: it starts when the stream is free (and not before
/// the call), in the activity clock.
pub(super) fn run_on(stream: u32, dur_ns: u64) -> (u64, u64) {
    run_after(stream, activity_ts() + 1_000, dur_ns)
}

/// [`run_on`], starting no earlier than `not_before`.
fn run_after(stream: u32, not_before: u64, dur_ns: u64) -> (u64, u64) {
    let mut g = lock(&FAKE.gpu);
    let tail = g.tails.entry(stream).or_insert(0);
    let start = not_before.max(*tail + 100);
    let end = start + dur_ns;
    *tail = end;
    (start, end)
}

/// The stream of CUPTI's own `WaitNs` kernels (a key of [`run_on`]'s queues no scenario
/// uses; its records' `streamId` is this + 10, as for the scenario's streams).
const WAIT_NS_STREAM: u32 = 0x00ff_0000;
/// How long a `WaitNs` kernel runs, ns.
const WAIT_NS_DURATION: u64 = 2_000;

fn wait_until(ts: u64) {
    loop {
        let now = activity_ts();
        if now >= ts {
            return;
        }
        std::thread::sleep(Duration::from_nanos((ts - now).min(1_000_000)));
    }
}

/// Blocks until every stream is idle (`cuCtxSynchronize`, `cudaDeviceSynchronize`).
pub(crate) fn wait_all() {
    let last = lock(&FAKE.gpu).tails.values().copied().max().unwrap_or(0);
    wait_until(last);
}

/// Whether the stream with this handle is being captured.
pub(crate) fn is_capturing(handle: u64) -> bool {
    let g = lock(&FAKE.gpu);
    g.capturing.keys().any(|&s| stream_handle(s) == handle)
}

/// A kernel record, if the kind is on.
fn kernel_record(
    s: &Scenario,
    kernel: &str,
    grid: [u32; 3],
    block: [u32; 3],
    stream: u32,
    corr: u32,
    graph: Option<(u64, u32)>,
) {
    let k = s.kernel(kernel).expect("validated");
    let work = crate::counters::Work::of(k, grid, block);
    // Kernel replay runs a profiled kernel once per pass before the launch returns.
    let profiled = super::range_profiler::PROFILER.kernel(CONTEXT_HANDLE, work);
    let replayed = match profiled {
        Profiled::Replayed(p) => Some(p),
        Profiled::No | Profiled::Once => None,
    };
    let passes = u64::from(replayed.unwrap_or(1));
    let (start, end) = run_on(stream, k.duration_us * 1_000 * passes);
    if replayed.is_some() {
        wait_until(end);
    }
    let kind = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if !kind_on(kind) {
        return;
    }
    // SAFETY: a plain C struct of integers, pointers and unions of them: all zeroes is a
    // valid value (what CUPTI leaves in fields it does not fill).
    let mut r: sys::CUpti_ActivityKernel10 = unsafe { std::mem::zeroed() };
    r.kind = kind;
    // CUPTI leaves a replayed kernel's record without timestamps.
    if replayed.is_none() {
        r.start = start;
        r.end = end;
        r.completed = end;
    }
    r.deviceId = 0;
    r.contextId = 1;
    r.streamId = stream + 10;
    [r.gridX, r.gridY, r.gridZ] = grid.map(|v| v as i32);
    [r.blockX, r.blockY, r.blockZ] = block.map(|v| v as i32);
    r.registersPerThread = k.registers;
    r.staticSharedMemory = k.static_smem;
    r.correlationId = corr;
    r.name = super::kernel_name(&k.symbol);
    if let Some((node, graph)) = graph {
        r.graphNodeId = node;
        r.graphId = graph;
    }
    super::detach::recorded(r.end);
    emit(kind, "CONCURRENT_KERNEL", r);
    if profiled == Profiled::Once {
        wait_ns_record(corr, end);
    }
}

/// The kernel CUPTI's range profiler launches itself after each kernel it profiles under user
/// replay (seen on an H200): `WaitNs`, one thread, on a stream of its own, under the profiled
/// launch's correlation id.
fn wait_ns_record(corr: u32, after: u64) {
    let kind = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    let (start, end) = run_after(WAIT_NS_STREAM, after, WAIT_NS_DURATION);
    // SAFETY: plain C data; all zeroes is valid (as above).
    let mut r: sys::CUpti_ActivityKernel10 = unsafe { std::mem::zeroed() };
    r.kind = kind;
    r.start = start;
    r.end = end;
    r.completed = end;
    r.deviceId = 0;
    r.contextId = 1;
    r.streamId = WAIT_NS_STREAM + 10;
    [r.gridX, r.gridY, r.gridZ] = [1, 1, 1];
    [r.blockX, r.blockY, r.blockZ] = [1, 1, 1];
    r.registersPerThread = 16;
    r.correlationId = corr;
    r.name = static_cstr("WaitNs").as_ptr();
    lock(&FAKE.report).profiler_kernels += 1;
    super::detach::recorded(r.end);
    emit(kind, "CONCURRENT_KERNEL", r);
}

/// One captured launch: (kernel, grid, block).
type Node = (String, [u32; 3], [u32; 3]);

/// Host-thread state of the scripted program.
struct Thread<'a> {
    s: &'a Scenario,
    slots: HashMap<String, u64>,
    nodes: &'a std::sync::Mutex<HashMap<String, Vec<Node>>>,
}

impl Thread<'_> {
    fn run(&mut self, ops: &[Op]) {
        for op in ops {
            self.op(op);
        }
    }

    fn op(&mut self, op: &Op) {
        let s = self.s;
        match op {
            Op::Launch {
                kernel,
                grid,
                block,
                stream,
                layer,
            } => {
                let rt = sys::cudaLaunchKernel_v7000_params {
                    func: std::ptr::null(),
                    gridDim: sys::dim3 {
                        x: grid[0],
                        y: grid[1],
                        z: grid[2],
                    },
                    blockDim: sys::dim3 {
                        x: block[0],
                        y: block[1],
                        z: block[2],
                    },
                    args: std::ptr::null_mut(),
                    sharedMem: 0,
                    stream: stream_ptr(*stream),
                };
                let drv = sys::cuLaunchKernel_params {
                    f: std::ptr::null_mut(),
                    gridDimX: grid[0],
                    gridDimY: grid[1],
                    gridDimZ: grid[2],
                    blockDimX: block[0],
                    blockDimY: block[1],
                    blockDimZ: block[2],
                    sharedMemBytes: 0,
                    hStream: stream_ptr(*stream).cast(),
                    kernelParams: std::ptr::null_mut(),
                    extra: std::ptr::null_mut(),
                };
                let d = Fun {
                    name: "cuLaunchKernel",
                    params: (&drv as *const sys::cuLaunchKernel_params).cast(),
                };
                let funs = match layer {
                    Layer::Runtime => vec![
                        Fun {
                            name: "cudaLaunchKernel_v7000",
                            params: (&rt as *const sys::cudaLaunchKernel_v7000_params).cast(),
                        },
                        d,
                    ],
                    Layer::Driver => vec![d],
                };
                let symbol = static_cstr(&s.kernel(kernel).expect("validated").symbol);
                call_named(&funs, Some(symbol), |corr| {
                    let captured = {
                        let mut g = lock(&FAKE.gpu);
                        match g.capturing.get_mut(stream) {
                            Some(c) => {
                                c.push(kernel.clone());
                                true
                            }
                            None => false,
                        }
                    };
                    if captured {
                        let mut n = lock(self.nodes);
                        n.entry(format!("capture:{stream}")).or_default().push((
                            kernel.clone(),
                            *grid,
                            *block,
                        ));
                    } else {
                        kernel_record(s, kernel, *grid, *block, *stream, corr, None);
                    }
                });
            }
            Op::Memcpy {
                bytes,
                kind,
                stream,
            } => {
                let ck = match kind {
                    CopyKind::H2D => sys::cudaMemcpyKind::cudaMemcpyHostToDevice,
                    CopyKind::D2H => sys::cudaMemcpyKind::cudaMemcpyDeviceToHost,
                    CopyKind::D2D => sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice,
                };
                let sync = MemcpyParams {
                    dst: 0x10000 as *mut c_void,
                    src: 0x20000 as *const c_void,
                    count: *bytes as usize,
                    kind: ck,
                };
                let asy = sys::cudaMemcpyAsync_v3020_params {
                    dst: 0x10000 as *mut c_void,
                    src: 0x20000 as *const c_void,
                    count: *bytes as usize,
                    kind: ck,
                    stream: stream_ptr(stream.unwrap_or(0)),
                };
                let (rt, drv, params): (_, _, *const c_void) = match (kind, stream) {
                    (CopyKind::H2D, None) => (
                        "cudaMemcpy_v3020",
                        "cuMemcpyHtoD_v2",
                        (&sync as *const MemcpyParams).cast(),
                    ),
                    (CopyKind::D2H, None) => (
                        "cudaMemcpy_v3020",
                        "cuMemcpyDtoH_v2",
                        (&sync as *const MemcpyParams).cast(),
                    ),
                    (CopyKind::D2D, None) => (
                        "cudaMemcpy_v3020",
                        "cuMemcpyDtoD_v2",
                        (&sync as *const MemcpyParams).cast(),
                    ),
                    (CopyKind::H2D, Some(_)) => (
                        "cudaMemcpyAsync_v3020",
                        "cuMemcpyHtoDAsync_v2",
                        (&asy as *const sys::cudaMemcpyAsync_v3020_params).cast(),
                    ),
                    (CopyKind::D2H, Some(_)) => (
                        "cudaMemcpyAsync_v3020",
                        "cuMemcpyDtoHAsync_v2",
                        (&asy as *const sys::cudaMemcpyAsync_v3020_params).cast(),
                    ),
                    (CopyKind::D2D, Some(_)) => (
                        "cudaMemcpyAsync_v3020",
                        "cuMemcpyDtoDAsync_v2",
                        (&asy as *const sys::cudaMemcpyAsync_v3020_params).cast(),
                    ),
                };
                let st = stream.unwrap_or(0);
                // The three `cuMemcpy?to?Async_v2` blocks share this layout.
                let drv_async = AsyncCopyParams {
                    dst: 0x10000,
                    src: 0x20000,
                    count: *bytes as usize,
                    stream: stream_ptr(st).cast(),
                };
                let drv_params: *const c_void = if stream.is_some() {
                    (&drv_async as *const AsyncCopyParams).cast()
                } else {
                    std::ptr::null()
                };
                call(
                    &[
                        Fun { name: rt, params },
                        Fun {
                            name: drv,
                            params: drv_params,
                        },
                    ],
                    |corr| {
                        let (start, end) = run_on(st, 2_000 + bytes / 100);
                        let k = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY;
                        if kind_on(k) {
                            type M = sys::CUpti_ActivityMemcpyKind;
                            type Mem = sys::CUpti_ActivityMemoryKind;
                            let (ck, src, dst) = match kind {
                                CopyKind::H2D => (
                                    M::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                    Mem::CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                    Mem::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                ),
                                CopyKind::D2H => (
                                    M::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
                                    Mem::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                    Mem::CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                ),
                                CopyKind::D2D => (
                                    M::CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                                    Mem::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                    Mem::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                ),
                            };
                            // SAFETY: plain C data; all zeroes is valid (as above).
                            let mut r: sys::CUpti_ActivityMemcpy6 = unsafe { std::mem::zeroed() };
                            r.kind = k;
                            r.copyKind = ck.0 as u8;
                            r.srcKind = src.0 as u8;
                            r.dstKind = dst.0 as u8;
                            r.flags = u8::from(stream.is_some());
                            r.bytes = *bytes;
                            r.start = start;
                            r.end = end;
                            r.contextId = 1;
                            r.streamId = st + 10;
                            r.correlationId = corr;
                            super::detach::recorded(r.end);
                            emit(k, "MEMCPY", r);
                        }
                        if stream.is_none() {
                            wait_until(end);
                        }
                    },
                );
            }
            Op::MemcpyPeer {
                bytes,
                src_device,
                dst_device,
                stream,
            } => {
                let sync = MemcpyPeerParams {
                    dst: 0x10000 as *mut c_void,
                    dst_device: *dst_device as i32,
                    src: 0x20000 as *const c_void,
                    src_device: *src_device as i32,
                    count: *bytes as usize,
                };
                let st = stream.unwrap_or(0);
                let asy = sys::cudaMemcpyPeerAsync_v4000_params {
                    dst: 0x10000 as *mut c_void,
                    dstDevice: *dst_device as i32,
                    src: 0x20000 as *const c_void,
                    srcDevice: *src_device as i32,
                    count: *bytes as usize,
                    stream: stream_ptr(st),
                };
                let drv_async = sys::cuMemcpyPeerAsync_params {
                    dstDevice: 0x10000,
                    dstContext: CONTEXT_HANDLE as sys::CUcontext,
                    srcDevice: 0x20000,
                    srcContext: CONTEXT_HANDLE as sys::CUcontext,
                    ByteCount: *bytes as usize,
                    hStream: stream_ptr(st).cast(),
                };
                let funs = match stream {
                    None => [
                        Fun::new(
                            "cudaMemcpyPeer_v4000",
                            (&sync as *const MemcpyPeerParams).cast(),
                        ),
                        Fun::new("cuMemcpyPeer", std::ptr::null()),
                    ],
                    Some(_) => [
                        Fun::new(
                            "cudaMemcpyPeerAsync_v4000",
                            (&asy as *const sys::cudaMemcpyPeerAsync_v4000_params).cast(),
                        ),
                        Fun::new(
                            "cuMemcpyPeerAsync",
                            (&drv_async as *const sys::cuMemcpyPeerAsync_params).cast(),
                        ),
                    ],
                };
                call(&funs, |corr| {
                    let (start, end) = run_on(st, 2_000 + bytes / 100);
                    let k = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY2;
                    if kind_on(k) {
                        type Mem = sys::CUpti_ActivityMemoryKind;
                        // SAFETY: plain C data; all zeroes is valid (as above).
                        let mut r: sys::CUpti_ActivityMemcpyPtoP4 = unsafe { std::mem::zeroed() };
                        r.kind = k;
                        r.copyKind =
                            sys::CUpti_ActivityMemcpyKind::CUPTI_ACTIVITY_MEMCPY_KIND_PTOP.0 as u8;
                        r.srcKind = Mem::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE.0 as u8;
                        r.dstKind = Mem::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE.0 as u8;
                        r.flags = u8::from(stream.is_some());
                        r.bytes = *bytes;
                        r.start = start;
                        r.end = end;
                        r.deviceId = 0;
                        r.contextId = 1;
                        r.streamId = st + 10;
                        r.srcDeviceId = *src_device;
                        r.srcContextId = 1;
                        r.dstDeviceId = *dst_device;
                        r.dstContextId = 1;
                        r.correlationId = corr;
                        super::detach::recorded(r.end);
                        emit(k, "MEMCPY2", r);
                    }
                    if stream.is_none() {
                        wait_until(end);
                    }
                });
            }
            Op::Memset {
                bytes,
                value,
                stream,
            } => {
                let sync = MemsetParams {
                    dev_ptr: 0x10000 as *mut c_void,
                    value: i32::from(*value),
                    count: *bytes as usize,
                };
                let asy = sys::cudaMemsetAsync_v3020_params {
                    devPtr: 0x10000 as *mut c_void,
                    value: i32::from(*value),
                    count: *bytes as usize,
                    stream: stream_ptr(stream.unwrap_or(0)),
                };
                let (rt, drv, params): (_, _, *const c_void) = match stream {
                    None => (
                        "cudaMemset_v3020",
                        "cuMemsetD8_v2",
                        (&sync as *const MemsetParams).cast(),
                    ),
                    Some(_) => (
                        "cudaMemsetAsync_v3020",
                        "cuMemsetD8Async",
                        (&asy as *const sys::cudaMemsetAsync_v3020_params).cast(),
                    ),
                };
                let st = stream.unwrap_or(0);
                let drv_async = sys::cuMemsetD8Async_params {
                    dstDevice: 0x10000,
                    uc: *value,
                    N: *bytes as usize,
                    hStream: stream_ptr(st).cast(),
                };
                let drv_params: *const c_void = if stream.is_some() {
                    (&drv_async as *const sys::cuMemsetD8Async_params).cast()
                } else {
                    std::ptr::null()
                };
                call(
                    &[
                        Fun { name: rt, params },
                        Fun {
                            name: drv,
                            params: drv_params,
                        },
                    ],
                    |corr| {
                        let (start, end) = run_on(st, 1_000 + bytes / 200);
                        let k = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET;
                        if kind_on(k) {
                            // SAFETY: plain C data; all zeroes is valid (as above).
                            let mut r: sys::CUpti_ActivityMemset4 = unsafe { std::mem::zeroed() };
                            r.kind = k;
                            r.value = u32::from(*value);
                            r.bytes = *bytes;
                            r.start = start;
                            r.end = end;
                            r.contextId = 1;
                            r.streamId = st + 10;
                            r.correlationId = corr;
                            r.memoryKind =
                                sys::CUpti_ActivityMemoryKind::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE.0
                                    as u16;
                            super::detach::recorded(r.end);
                            emit(k, "MEMSET", r);
                        }
                        if stream.is_none() {
                            wait_until(end);
                        }
                    },
                );
            }
            Op::StreamSync { stream } => {
                let p = sys::cudaStreamSynchronize_v3020_params {
                    stream: stream_ptr(*stream),
                };
                let d = sys::cuStreamSynchronize_params {
                    hStream: stream_ptr(*stream).cast(),
                };
                call(
                    &[
                        Fun {
                            name: "cudaStreamSynchronize_v3020",
                            params: (&p as *const sys::cudaStreamSynchronize_v3020_params).cast(),
                        },
                        Fun {
                            name: "cuStreamSynchronize",
                            params: (&d as *const sys::cuStreamSynchronize_params).cast(),
                        },
                    ],
                    |_| {
                        let tail = lock(&FAKE.gpu).tails.get(stream).copied().unwrap_or(0);
                        wait_until(tail);
                    },
                );
            }
            Op::DeviceSync => call(
                &[
                    Fun {
                        name: "cudaDeviceSynchronize_v3020",
                        params: std::ptr::null(),
                    },
                    Fun {
                        name: "cuCtxSynchronize",
                        params: std::ptr::null(),
                    },
                ],
                |_| wait_all(),
            ),
            Op::BeginCapture { stream } => {
                let p = BeginCaptureParams {
                    stream: stream_ptr(*stream),
                    mode: 0,
                };
                call(
                    &[
                        Fun {
                            name: "cudaStreamBeginCapture_v10000",
                            params: (&p as *const BeginCaptureParams).cast(),
                        },
                        Fun {
                            // `cuStreamBeginCapture_v2(hStream, mode)`: the same layout.
                            name: "cuStreamBeginCapture_v2",
                            params: (&p as *const BeginCaptureParams).cast(),
                        },
                    ],
                    |_| {
                        lock(&FAKE.gpu).capturing.insert(*stream, Vec::new());
                        lock(self.nodes).insert(format!("capture:{stream}"), Vec::new());
                    },
                );
            }
            Op::EndCapture { stream, graph } => {
                let p = EndCaptureParams {
                    stream: stream_ptr(*stream),
                    graph: std::ptr::null_mut(),
                };
                call(
                    &[
                        Fun {
                            name: "cudaStreamEndCapture_v10000",
                            params: (&p as *const EndCaptureParams).cast(),
                        },
                        Fun {
                            // `cuStreamEndCapture(hStream, phGraph)`: the same layout.
                            name: "cuStreamEndCapture",
                            params: (&p as *const EndCaptureParams).cast(),
                        },
                    ],
                    |_| {
                        let mut g = lock(&FAKE.gpu);
                        let kernels = g.capturing.remove(stream).unwrap_or_default();
                        g.graphs.insert(graph.clone(), kernels);
                        drop(g);
                        let mut n = lock(self.nodes);
                        let nodes = n.remove(&format!("capture:{stream}")).unwrap_or_default();
                        n.insert(format!("graph:{graph}"), nodes);
                    },
                );
            }
            Op::GraphLaunch { graph, stream } => {
                let p = sys::cudaGraphLaunch_v10000_params {
                    graphExec: 0x6000 as sys::cudaGraphExec_t,
                    stream: stream_ptr(*stream),
                };
                let d = sys::cuGraphLaunch_params {
                    hGraph: 0x6000 as sys::CUgraphExec,
                    hStream: stream_ptr(*stream).cast(),
                };
                let nodes = lock(self.nodes)
                    .get(&format!("graph:{graph}"))
                    .cloned()
                    .unwrap_or_default();
                let (first_node, graph_id) = {
                    let mut g = lock(&FAKE.gpu);
                    let first = g.next_node + 1;
                    g.next_node += nodes.len() as u64;
                    g.next_graph += 1;
                    (first, g.next_graph)
                };
                call(
                    &[
                        Fun {
                            name: "cudaGraphLaunch_v10000",
                            params: (&p as *const sys::cudaGraphLaunch_v10000_params).cast(),
                        },
                        Fun {
                            name: "cuGraphLaunch",
                            params: (&d as *const sys::cuGraphLaunch_params).cast(),
                        },
                    ],
                    |corr| {
                        for (i, (k, grid, block)) in nodes.iter().enumerate() {
                            let node = first_node + i as u64;
                            kernel_record(
                                s,
                                k,
                                *grid,
                                *block,
                                *stream,
                                corr,
                                Some((node, graph_id)),
                            );
                        }
                    },
                );
            }
            Op::ProfilerStart => call(
                &[
                    Fun {
                        name: "cudaProfilerStart_v4000",
                        params: std::ptr::null(),
                    },
                    Fun {
                        name: "cuProfilerStart",
                        params: std::ptr::null(),
                    },
                ],
                |_| {},
            ),
            Op::ProfilerStop => call(
                &[
                    Fun {
                        name: "cudaProfilerStop_v4000",
                        params: std::ptr::null(),
                    },
                    Fun {
                        name: "cuProfilerStop",
                        params: std::ptr::null(),
                    },
                ],
                |_| {},
            ),
            Op::NvtxPush { message, domain } => super::nvtx::push(message, domain.as_deref()),
            Op::NvtxPop { domain } => super::nvtx::pop(domain.as_deref()),
            Op::NvtxMark { message } => super::nvtx::mark(message),
            Op::NvtxStart { message, slot } => {
                let id = super::nvtx::start(message);
                self.slots.insert(slot.clone(), id);
            }
            Op::NvtxEnd { slot } => {
                let id = self.slots.get(slot).copied().unwrap_or(0);
                super::nvtx::end(id);
            }
            Op::SleepUs { us } => std::thread::sleep(Duration::from_micros(*us)),
            Op::Signals { count } => super::signals::run(*count),
            Op::Announce { path } => {
                // Written whole under another name, then renamed: a reader never sees half.
                let tmp = format!("{path}.tmp");
                let _ = std::fs::write(&tmp, std::process::id().to_string());
                let _ = std::fs::rename(&tmp, path);
            }
            Op::WaitFile { path, timeout_ms } => {
                let until = std::time::Instant::now() + Duration::from_millis(*timeout_ms);
                while !std::path::Path::new(path).exists() && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            Op::Alloc { bytes, kind, slot } => super::memory::alloc(*bytes, kind, slot),
            Op::Free { slot } => super::memory::free(slot),
            Op::Uvm { op, bytes, address } => super::memory::uvm(*op, *bytes, *address),
            Op::Fork { exit_code } => super::process::fork_and_exit(*exit_code),
            Op::Exec { program, args } => super::process::exec(program, args),
            Op::GpuTrace { call, name } => gpu_trace_call(call, name.as_deref()),
            Op::Repeat { times, ops } => {
                for _ in 0..*times {
                    self.run(ops);
                }
            }
        }
    }
}

/// [`Op::GpuTrace`]: calls `gpu_trace_<call>` of the injection the driver loaded (found as the
/// application finds it: `dlopen` of `CUDA_INJECTION64_PATH` with `RTLD_NOLOAD`).
fn gpu_trace_call(call: &str, name: Option<&str>) {
    use libloading::os::unix::{Library, RTLD_NOW};
    use std::ffi::{CString, c_char, c_int};
    /// glibc's value (`dlfcn.h`).
    const RTLD_NOLOAD: c_int = 4;
    let rc = (|| {
        let path = std::env::var_os("CUDA_INJECTION64_PATH")?;
        // SAFETY: only finds the library already loaded; loads nothing.
        let lib = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_NOLOAD) }.ok()?;
        let symbol = format!("gpu_trace_{call}\0");
        // The functions that take a name get it, or null without one.
        let rc = if matches!(call, "window_begin" | "range_push") {
            let n = name.map(CString::new).transpose().ok()?;
            // SAFETY: the C API's `int (const char *)` functions.
            let f = unsafe {
                lib.get::<unsafe extern "C" fn(*const c_char) -> c_int>(symbol.as_bytes())
            }
            .ok()?;
            // SAFETY: null or a NUL-terminated string valid for the call.
            unsafe { f(n.as_ref().map_or(std::ptr::null(), |n| n.as_ptr())) }
        } else {
            // SAFETY: the C API's `int (void)` functions.
            let f =
                unsafe { lib.get::<unsafe extern "C" fn() -> c_int>(symbol.as_bytes()) }.ok()?;
            // SAFETY: no arguments.
            unsafe { f() }
        };
        Some(rc)
    })();
    lock(&FAKE.report)
        .gpu_trace_calls
        .push((call.to_owned(), rc));
}

/// What `cuInit` does with `CUDA_INJECTION64_PATH`: load the library, call its entry point.
fn load_injection() -> Result<(), String> {
    let Some(path) = std::env::var_os("CUDA_INJECTION64_PATH") else {
        return Ok(());
    };
    // SAFETY: the library the environment names as the CUDA injection, as the driver loads it.
    let lib = unsafe { libloading::Library::new(&path) }
        .map_err(|e| format!("loading the injection {}: {e}", path.display()))?;
    // SAFETY: the injection's documented entry point, `int InitializeInjection(void)`.
    let init = unsafe { lib.get::<unsafe extern "C" fn() -> i32>(b"InitializeInjection\0") }
        .map_err(|e| format!("InitializeInjection: {e}"))?;
    // SAFETY: no arguments; called once, from the thread doing cuInit.
    let rc = unsafe { init() };
    lock(&FAKE.report).initialize_injection = Some(rc);
    if rc != 1 {
        violation(format!("InitializeInjection returned {rc}, not 1"));
    }
    // The driver never unloads its injection.
    std::mem::forget(lib);
    Ok(())
}

/// The context the program uses, announced to resource subscribers.
fn create_context() {
    // SAFETY: plain C data; all zeroes is valid (null handles).
    let mut data: sys::CUpti_ResourceData = unsafe { std::mem::zeroed() };
    data.context = CONTEXT_HANDLE as sys::CUcontext;
    CONTEXT_CREATED.store(true, Ordering::Relaxed);
    fire(
        sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE,
        sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_CREATED.0,
        "CONTEXT_CREATED",
        (&data as *const sys::CUpti_ResourceData).cast(),
    );
    CONTEXT_READY.store(true, Ordering::Relaxed);
}

/// What `cuInit` and the program's first context do: the profiler's spec, the report's exit
/// handler, the injection loaded and started, the context announced.
fn start(s: &Scenario) -> Result<(), String> {
    s.validate()?;
    super::range_profiler::PROFILER.configure(s.profiler.clone());
    super::register_exit_report();
    if let Ok(name) = std::env::var(crate::host::HELD_BY_ENV) {
        super::exports::hold_for(name);
    }
    load_injection()?;
    create_context();
    lock(&FAKE.report).program_thread_id = u64::from(gpu_trace_model::clock::thread_id());
    Ok(())
}

/// The scenario of a program driven op by op ([`start_stepped`], [`run_here`]), and the graphs
/// its threads captured.
struct Stepped {
    scenario: Scenario,
    nodes: std::sync::Mutex<HashMap<String, Vec<Node>>>,
}

static STEPPED: std::sync::OnceLock<Stepped> = std::sync::OnceLock::new();

thread_local! {
    /// The allocations and NVTX ranges of this thread's ops, between [`run_here`] calls.
    static SLOTS: std::cell::RefCell<HashMap<String, u64>> = std::cell::RefCell::new(HashMap::new());
}

/// [`start`] for a program that its host drives op by op with [`run_here`] (its scripted
/// threads are not run). Once per process.
pub(crate) fn start_stepped(s: Scenario) -> Result<(), String> {
    if STEPPED.get().is_some() {
        return Err("the program was already started".into());
    }
    start(&s)?;
    let _ = STEPPED.set(Stepped {
        scenario: s,
        nodes: std::sync::Mutex::new(HashMap::new()),
    });
    Ok(())
}

/// Runs `ops` on the calling thread, in the program [`start_stepped`] started.
pub(crate) fn run_here(ops: &[Op]) -> Result<(), String> {
    let st = STEPPED
        .get()
        .ok_or("the program has not started (cupti_sim_start)")?;
    let check = Scenario {
        kernels: st.scenario.kernels.clone(),
        threads: vec![crate::scenario::ThreadSpec { ops: ops.to_vec() }],
        profiler: Default::default(),
    };
    check.validate()?;
    let mut t = Thread {
        s: &st.scenario,
        slots: SLOTS.with(|s| std::mem::take(&mut *s.borrow_mut())),
        nodes: &st.nodes,
    };
    t.run(ops);
    SLOTS.with(|s| *s.borrow_mut() = t.slots);
    Ok(())
}

/// Runs the program; returns once every scripted thread has finished (the process then exits,
/// which runs the tool's exit handler and the report's).
pub(crate) fn run(s: &Scenario) -> Result<(), String> {
    start(s)?;
    let nodes = std::sync::Mutex::new(HashMap::new());
    let tids = std::sync::Mutex::new(Vec::new());
    let failed = std::thread::scope(|scope| {
        let handles: Vec<_> = s
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (nodes, tids) = (&nodes, &tids);
                std::thread::Builder::new()
                    .name(format!("app-{i}"))
                    .spawn_scoped(scope, move || {
                        lock(tids).push(u64::from(gpu_trace_model::clock::thread_id()));
                        Thread {
                            s,
                            slots: HashMap::new(),
                            nodes,
                        }
                        .run(&t.ops);
                    })
                    .map_err(|e| e.to_string())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.and_then(|h| {
                    h.join()
                        .map_err(|_| "a scripted thread panicked".to_owned())
                })
            })
            .find_map(Result::err)
    });
    lock(&FAKE.report).app_thread_ids = std::mem::take(&mut *lock(&tids));
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
