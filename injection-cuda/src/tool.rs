//! Wiring CUPTI to the agent and the writer.

use crate::api::{ApiState, TRACED_KINDS};
use crate::memory::MemoryState;
use crate::nvtx_capture::RangeCount;
use crate::records::{DevicesSink, RecordState};
use cupti::Cupti;
use cupti::activity::{self, Activity, ActivityConfig, ActivityKind};

/// CUPTI's activity buffers: 1 MiB each (about 5,000 kernel records), at
/// most 48 in CUPTI's hands or waiting for us. CUPTI fills buffers per
/// stream, so a program with many streams (XLA's autotuner, NCCL) holds
/// many at once; a buffer's untouched pages cost no memory, so small
/// buffers in numbers keep both the drop risk and the resident memory low.
/// Past the cap a launching thread that needs a buffer waits for one to
/// come back (the launch waits, as API events do when our queue is full);
/// only when that wait runs out does CUPTI drop records, and we report the
/// count. The cap is part of the memory bound README states.
const ACTIVITY_BUFFERS: ActivityConfig = ActivityConfig {
    buffer_size: 1 << 20,
    initial_buffers: 4,
    max_buffers: 48,
    request_wait: gpu_trace_model::STALL_LIMIT,
};
use crate::config::{ApiLayer, CaptureRange, CudaConfig};
use crate::counters::Counting;
use cupti::callback::{Callback, Domain, ResourceEvent, Subscriber};
use cupti::cbid::{ApiDomain, CallKind};
use gpu_trace_agent::Startup;
use gpu_trace_model::backend::{BackendInfo, Categories, Category};
use gpu_trace_model::filter::SessionFilter;
use gpu_trace_perfetto::{Backend, CaptureSwitch, GpuClock, Sources, Tracer, TracerOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The CUDA backend as the trace names it.
pub(crate) static BACKEND: BackendInfo = BackendInfo::new(
    "CUDA",
    Categories {
        api: Category::new("cuda", "CUDA runtime and driver API calls on CPU threads"),
        markers: Category::new("nvtx", "NVTX ranges and marks"),
    },
    // Perfetto's `InternedGraphicsContext.Api.CUDA` and `gpu_api` CUDA.
    4,
    "nv",
);

/// The tool, once started in a process.
pub(crate) struct Tool {
    pub(crate) tracer: Tracer,
    /// The configuration it started with.
    startup: Startup,
    shared: Arc<Shared>,
    /// Recording windows (time plan, control socket), if any.
    windows: Mutex<Option<gpu_trace_agent::windows::Windows>>,
    /// The process that started tracing. A child it forks inherits the
    /// exit handler but none of the threads, and CUDA is not usable there:
    /// the parent's trace is no business of the child's exit.
    pid: u32,
}

/// How long exit waits for work still running on the GPU.
const EXIT_DRAIN_LIMIT: Duration = Duration::from_secs(5);

pub(crate) struct Shared {
    api: ApiState,
    records: RecordState,
    api_on: AtomicBool,
    markers_on: AtomicBool,
    /// Live contexts, drained at exit so that work still running is recorded.
    contexts: Mutex<Vec<cupti::Context>>,
    /// With `INJECTION_CAPTURE_RANGE=cudaProfilerApi`: the switch, and the
    /// profiler start/stop callbacks that flip it.
    capture: Option<Capture>,
    /// With `INJECTION_CAPTURE_RANGE=nvtx:NAME`: the NVTX ranges that open
    /// and close recording.
    nvtx_capture: Option<crate::nvtx_capture::NvtxCapture>,
    /// Per-kernel counters (set once CUPTI is known).
    counting: OnceLock<Arc<Counting>>,
    /// Devices of contexts created since the last flush.
    new_devices: Mutex<Vec<u32>>,
    /// Device memory in use (`-t memory`).
    memory: MemoryState,
    /// Unified-memory records (`-t uvm`), set once CUPTI is known.
    uvm: OnceLock<Uvm>,
}

/// Switches CUPTI's unified-memory counters. CUPTI configures them only
/// once the driver is initialised, which it may not be yet when recording
/// starts (inside `cuInit`), and on the H200 (driver 580, CUPTI 13.0) it
/// enables their records only once the first context is made: not from
/// inside `cuInit`, nor from the context's creation callback
/// (`CUPTI_ERROR_NOT_READY`). Then the next API call retries, up to
/// [`UVM_TRIES`] times.
struct Uvm {
    cupti: Cupti,
    notes: gpu_trace_perfetto::Notes,
    /// (wanted, on in CUPTI).
    state: Mutex<(bool, bool)>,
    /// CUPTI was not ready: the next API call tries again.
    pending: AtomicBool,
    tries: std::sync::atomic::AtomicU32,
}

/// How many times unified memory is tried while CUPTI is not ready.
const UVM_TRIES: u32 = 1000;

impl Uvm {
    fn new(cupti: Cupti, notes: gpu_trace_perfetto::Notes) -> Self {
        Uvm {
            cupti,
            notes,
            state: Mutex::new((false, false)),
            pending: AtomicBool::new(false),
            tries: std::sync::atomic::AtomicU32::new(0),
        }
    }

    fn set(&self, wanted: bool) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 = wanted;
        self.apply();
    }

    /// At an API call: retries when CUPTI was not ready.
    fn retry(&self) {
        if self.pending.load(Ordering::Relaxed) {
            self.apply();
        }
    }

    /// CUPTI is not ready for `what` yet: try again at the next API call,
    /// unless it has been tried too often.
    fn wait(&self, st: &mut (bool, bool), what: &str, e: &cupti::Error) {
        let n = self.tries.fetch_add(1, Ordering::Relaxed) + 1;
        if n == 1 {
            gpu_trace_model::verbose!("{what} waits for CUDA ({e}); retried at the next API calls");
        }
        if n >= UVM_TRIES {
            let msg = format!(
                "cannot record unified memory ({e}, {n} tries); the trace has no UVM events"
            );
            gpu_trace_model::warn_once!("{msg}");
            self.notes.warn(msg);
            st.0 = false;
            self.pending.store(false, Ordering::Relaxed);
        } else {
            self.pending.store(true, Ordering::Relaxed);
        }
    }

    /// Brings CUPTI to what is wanted, if it can now.
    fn apply(&self) {
        use cupti::activity::UnifiedMemoryCounterKind as K;
        let Some(a) = Activity::get() else { return };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (wanted, on) = *st;
        if wanted == on {
            self.pending.store(false, Ordering::Relaxed);
            return;
        }
        if !wanted {
            if let Err(e) = a.disable(ActivityKind::UnifiedMemoryCounter) {
                gpu_trace_model::verbose!("cannot stop unified-memory records: {e}");
            }
            let _ = activity::configure_unified_memory(&self.cupti, &K::ALL, false);
            st.1 = false;
            self.pending.store(false, Ordering::Relaxed);
            return;
        }
        let kinds: Vec<K> = match activity::configure_unified_memory(&self.cupti, &K::ALL, true) {
            Ok(()) => K::ALL.to_vec(),
            Err(e @ cupti::Error::NotInitialized(_)) => {
                self.wait(&mut st, "configuring unified-memory counters", &e);
                return;
            }
            Err(e) if e.is_not_ready() => {
                self.wait(&mut st, "configuring unified-memory counters", &e);
                return;
            }
            Err(e) => {
                // Some platforms count only some kinds (no peer copies on one
                // GPU): keep those that configure alone.
                let ok: Vec<K> = K::ALL
                    .into_iter()
                    .filter(|k| {
                        activity::configure_unified_memory(&self.cupti, &[*k], true).is_ok()
                    })
                    .collect();
                if ok.is_empty() {
                    let msg = format!(
                        "unified-memory counters are not available here ({e}); the trace has no UVM migrations or faults"
                    );
                    gpu_trace_model::warn_once!("{msg}");
                    self.notes.warn(msg);
                    // Do not ask again.
                    st.0 = false;
                    return;
                }
                let missing: Vec<String> = K::ALL
                    .iter()
                    .filter(|k| !ok.contains(k))
                    .map(|k| format!("{k:?}"))
                    .collect();
                self.notes.info(format!(
                    "unified-memory counters {} are not available here ({e})",
                    missing.join(", ")
                ));
                ok
            }
        };
        match a.enable(ActivityKind::UnifiedMemoryCounter) {
            Ok(()) => {
                st.1 = true;
                self.pending.store(false, Ordering::Relaxed);
                gpu_trace_model::verbose!(
                    "recording unified memory: {kinds:?} (after {} tries)",
                    self.tries.load(Ordering::Relaxed) + 1
                );
            }
            Err(e) if e.is_not_ready() => self.wait(&mut st, "recording unified memory", &e),
            Err(e) => {
                let msg =
                    format!("cannot record unified memory ({e}); the trace has no UVM events");
                gpu_trace_model::warn_once!("{msg}");
                self.notes.warn(msg);
                st.0 = false;
            }
        }
    }
}

/// The application's profiler start/stop calls (runtime and driver alike:
/// opening an open range changes nothing).
struct Capture {
    switch: CaptureSwitch,
    recorder: gpu_trace_model::Recorder,
    start: Vec<(ApiDomain, u32)>,
    stop: Vec<(ApiDomain, u32)>,
    /// Windows opened so far, against `INJECTION_CAPTURE_COUNT`.
    ranges: RangeCount,
}

impl Capture {
    fn new(
        switch: CaptureSwitch,
        recorder: gpu_trace_model::Recorder,
        count: Option<u32>,
    ) -> Option<Self> {
        let start = crate::api::ids_named(&["cudaProfilerStart", "cuProfilerStart"]);
        let stop = crate::api::ids_named(&["cudaProfilerStop", "cuProfilerStop"]);
        (!start.is_empty() && !stop.is_empty()).then_some(Capture {
            switch,
            recorder,
            start,
            stop,
            ranges: RangeCount::new(count),
        })
    }

    /// Whether `cb` is a profiler start/stop; flips the switch at its exit,
    /// with a window marker in the trace when it changes (the runtime's
    /// call and the driver's under it flip it once).
    fn on_api(&self, cb: &cupti::callback::ApiCallback<'_>) -> bool {
        let id = (cb.domain(), cb.cbid());
        let open = if self.start.contains(&id) {
            true
        } else if self.stop.contains(&id) {
            false
        } else {
            return false;
        };
        if cb.site() == cupti::callback::Site::Exit && self.switch.is_open() != open {
            use gpu_trace_agent::windows::log_window;
            let now = gpu_trace_model::clock::boottime_ns();
            if open {
                let Some(n) = self.ranges.take() else {
                    return true;
                };
                self.switch.set(true);
                log_window(&self.recorder, now, n, true, "cudaProfilerStart");
            } else {
                let n = self.ranges.taken();
                log_window(&self.recorder, now, n, false, "cudaProfilerStop");
                self.switch.set(false);
                if self.ranges.used_up() {
                    gpu_trace_model::verbose!(
                        "{n} cudaProfilerStart range(s) recorded; recording stays off"
                    );
                }
            }
        }
        true
    }
}

impl Shared {
    /// The callbacks' state over `tracer`; the GPUs that records name are
    /// described to `telemetry` too.
    pub(crate) fn new(
        tracer: &Tracer,
        cuda: &CudaConfig,
        telemetry: Option<gpu_trace_agent::telemetry::Telemetry>,
        python: bool,
    ) -> Self {
        let capture_range = cuda.capture_range;
        let callsites = python
            .then(|| {
                gpu_trace_agent::callsites::CallSites::start(
                    tracer.names().clone(),
                    tracer.callstacks().clone(),
                )
            })
            .flatten();
        Shared {
            api: ApiState::new(tracer.recorder().clone(), tracer.names().clone(), callsites),
            records: RecordState::new(
                tracer.recorder().clone(),
                tracer.names().clone(),
                tracer.kernels().clone(),
                // Device descriptions go to the tracer's table; the tracer
                // outlives every record handler (it lives in the process-wide
                // tool slot).
                DevicesSink(Box::new(tracer_devices(tracer, telemetry))),
            ),
            api_on: AtomicBool::new(false),
            markers_on: AtomicBool::new(false),
            contexts: Mutex::new(Vec::new()),
            counting: OnceLock::new(),
            nvtx_capture: match (&cuda.capture_range, &cuda.capture_nvtx) {
                (CaptureRange::Nvtx, Some(name)) => Some(crate::nvtx_capture::NvtxCapture::new(
                    name.clone(),
                    cuda.capture_count,
                    tracer.capture_switch(),
                    tracer.recorder().clone(),
                )),
                _ => None,
            },
            new_devices: Mutex::new(Vec::new()),
            memory: MemoryState::new(tracer.recorder().clone()),
            uvm: OnceLock::new(),
            capture: match capture_range {
                CaptureRange::Whole | CaptureRange::Nvtx => None,
                CaptureRange::CudaProfilerApi => {
                    let c = Capture::new(
                        tracer.capture_switch(),
                        tracer.recorder().clone(),
                        cuda.capture_count,
                    );
                    if c.is_none() {
                        gpu_trace_model::warn!(
                            "this CUPTI has no callbacks for cudaProfilerStart/Stop; recording the whole run"
                        );
                        tracer.capture_switch().set(true);
                    }
                    c
                }
            },
        }
    }

    /// An NVTX call: the NVTX capture range's; a marker when markers are
    /// recorded; a range the counters filter may look at; a domain or
    /// registered string, kept whatever is recorded (rare, and later
    /// markers and ranges use them).
    pub(crate) fn on_nvtx(&self, ev: &cupti::nvtx::NvtxEvent<'_>) {
        use cupti::nvtx::NvtxEvent as E;
        // A range that opens a window is recorded in it; the one that
        // closes it is recorded before it closes (its end is in the trace).
        let closes = self
            .nvtx_capture
            .as_ref()
            .is_some_and(|c| c.on_nvtx(ev, |m, name| self.api.message_is(m, name)));
        let markers = self.markers_on.load(Ordering::Relaxed);
        if markers
            || gpu_trace_model::filter::tx::is_on()
            || matches!(ev, E::DomainCreate { .. } | E::RegisterString { .. })
        {
            self.api.on_nvtx(ev, markers);
        }
        if closes && let Some(c) = &self.nvtx_capture {
            c.close();
        }
    }

    pub(crate) fn set_api_on(&self, on: bool) {
        self.api_on.store(on, Ordering::Relaxed);
    }

    pub(crate) fn on_records(&self, records: cupti::activity::Records<'_>) {
        self.records.on_records(records);
    }

    fn set_counting(&self, c: Counting) {
        let c = Arc::new(c);
        self.records.set_join(c.join());
        let _ = self.counting.set(c);
    }

    pub(crate) fn on_callback(&self, cb: &Callback<'_>) {
        if let Callback::Api(a) = cb
            && a.site() == cupti::callback::Site::Exit
            && let Some(d) = crate::detach::global()
            && d.wants_exit()
        {
            d.at_exit(a.cupti(), a.correlation_id());
            if d.is_detached() {
                return;
            }
        }
        if let Some(u) = self.uvm.get() {
            u.retry();
        }
        if let Callback::Api(a) = cb
            && self.memory.is_on()
        {
            self.memory.on_api(a, &self.records);
        }
        // Counters bracket the API slice: at a launch's entry the slice starts before the
        // profiling setup, at its exit it ends after the collection. A kernel the counters
        // place inside its launch (kernel replay) thus lies inside the launch's slice.
        let entry = matches!(cb, Callback::Api(a) if a.site() == cupti::callback::Site::Enter);
        if !entry {
            self.count(cb);
        }
        self.trace(cb);
        if entry {
            self.count(cb);
        }
    }

    fn count(&self, cb: &Callback<'_>) {
        if let Callback::Api(a) = cb
            && let Some(c) = self.counting.get()
            && (c.is_on() || crate::counters::profiling())
            && !crate::api::is_internal()
        {
            c.on_api(a);
        }
    }

    fn trace(&self, cb: &Callback<'_>) {
        match cb {
            Callback::Api(a) if self.capture.as_ref().is_some_and(|c| c.on_api(a)) => {}
            Callback::Api(a) if self.api_on.load(Ordering::Relaxed) => self.api.on_api(a),
            Callback::Nvtx(n) => self.on_nvtx(&n.event()),
            Callback::Resource(r) => match (r.event(), r.context()) {
                (ResourceEvent::ContextCreated, Some(c)) => {
                    // Described at the next flush (off this thread, which is
                    // inside the driver), not at its first record, so that
                    // its telemetry starts with the context.
                    // No CUPTI call while one of ours detaches it (the
                    // device is then described at its first record).
                    let gate = crate::detach::global().map(|d| d.try_gate());
                    if !matches!(gate, Some(None))
                        && let Ok(ordinal) = c.device_id(r.cupti())
                    {
                        self.new_devices
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(ordinal);
                    }
                    drop(gate);
                    // CUPTI attached again may report a context again.
                    let mut contexts = self.contexts.lock().unwrap_or_else(|e| e.into_inner());
                    if !contexts.contains(&c) {
                        contexts.push(c);
                    }
                    drop(contexts);
                    if let Some(d) = crate::detach::global() {
                        d.context_made();
                    }
                    if let Some(u) = self.uvm.get() {
                        u.apply();
                    }
                }
                (ResourceEvent::ContextDestroyStarting, c) => {
                    self.api.forget_context(r.context_handle());
                    self.memory.forget_context(r.context_handle());
                    if let Some(counting) = self.counting.get() {
                        counting.forget_context(r.context_handle());
                    }
                    if let Some(c) = c {
                        self.contexts
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .retain(|x| *x != c);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

const GPU_KINDS: [ActivityKind; 4] = [
    ActivityKind::ConcurrentKernel,
    ActivityKind::Memcpy,
    ActivityKind::MemcpyPeer,
    ActivityKind::Memset,
];

struct CudaBackend {
    shared: Arc<Shared>,
    /// Replaced when CUPTI is attached again after a detach.
    subscriber: arc_swap::ArcSwap<Subscriber>,
    cupti: Cupti,
    /// What the subscriber's callbacks reach.
    gate: Arc<OnceLock<Arc<Shared>>>,
    /// Activity timestamps come from our CLOCK_BOOTTIME callback.
    boottime: bool,
    detach: &'static crate::detach::Detach,
    /// The callback domains of API recording (see [`ApiLayer`]).
    api_domains: &'static [ApiDomain],
    activity: Option<Activity>,
    current: Mutex<Sources>,
}

impl CudaBackend {
    fn set_gpu(&self, on: bool) {
        let Some(a) = &self.activity else { return };
        for k in GPU_KINDS {
            let r = if on { a.enable(k) } else { a.disable(k) };
            if let Err(e) = r {
                gpu_trace_model::warn_once!("cannot switch activity kind {k:?}: {e}");
            }
        }
    }

    fn set_api(&self, on: bool) {
        if on {
            crate::api::new_api_epoch();
        }
        self.shared.set_api_on(on);
        for (d, id) in self
            .shared
            .api
            .extra_ids()
            .filter(|(d, _)| self.api_domains.contains(d))
        {
            let r = if on {
                self.subscriber.load().enable(d.into(), id)
            } else {
                self.subscriber.load().disable(d.into(), id)
            };
            if let Err(e) = r {
                gpu_trace_model::verbose!("cannot switch callback {id}: {e}");
            }
        }
        for &d in self.api_domains {
            for k in TRACED_KINDS {
                let r = if on {
                    self.subscriber.load().enable_kind(d, k)
                } else {
                    self.subscriber.load().disable_kind(d, k)
                };
                if let Err(e) = r {
                    gpu_trace_model::warn_once!("cannot switch API callbacks: {e}");
                }
            }
        }
    }

    fn set_markers(&self, on: bool) {
        self.shared.markers_on.store(on, Ordering::Relaxed);
        // An NVTX capture range or the counters filter may still need the
        // ranges.
        let r = if on || self.shared.nvtx_capture.is_some() || gpu_trace_model::filter::tx::is_on()
        {
            self.subscriber.load().enable_domain(Domain::Nvtx)
        } else {
            self.subscriber.load().disable_domain(Domain::Nvtx)
        };
        if let Err(e) = r {
            gpu_trace_model::warn_once!("cannot switch NVTX callbacks: {e}");
        }
    }
}

impl CudaBackend {
    /// Memory accounting needs the driver's allocation and free callbacks,
    /// whether or not API calls are recorded; API recording keeps those it
    /// draws as slices.
    fn set_memory(&self, on: bool) {
        if on != self.shared.memory.is_on() {
            self.shared.memory.set_on(on);
        }
        let api_has = |id: u32| {
            self.shared.api_on.load(Ordering::Relaxed)
                && self.api_domains.contains(&ApiDomain::Driver)
                && TRACED_KINDS.contains(&cupti::cbid::classify(ApiDomain::Driver, id))
        };
        for id in cupti::callback::memory_call_ids() {
            let r = if on {
                self.subscriber.load().enable(Domain::Driver, id)
            } else if !api_has(id) {
                self.subscriber.load().disable(Domain::Driver, id)
            } else {
                Ok(())
            };
            if let Err(e) = r {
                gpu_trace_model::warn_once!("cannot switch allocation callbacks for memory: {e}");
            }
        }
    }

    /// Counters need the driver's launch callbacks (entry and exit of each
    /// kernel launch, and graph launches to say they are not profiled),
    /// whether or not API calls are recorded.
    fn set_counters(&self, wanted: Option<&[String]>, selection: Option<&SessionFilter>) {
        let Some(c) = self.shared.counting.get() else {
            if wanted.is_some() {
                gpu_trace_model::warn_once!("per-kernel counters are unavailable in this process");
            }
            return;
        };
        c.set(wanted, selection);
        // NVTX ranges reach CUPTI's callbacks when NVTX_INJECTION64_PATH
        // names libcupti (ours get them through our NVTX injection).
        if wanted.is_some()
            && c.needs_ranges()
            && let Err(e) = self.subscriber.load().enable_domain(Domain::Nvtx)
        {
            gpu_trace_model::warn_once!(
                "cannot switch NVTX callbacks for the counters filter: {e}"
            );
        }
        let api_has_them = self.shared.api_on.load(Ordering::Relaxed)
            && self.api_domains.contains(&ApiDomain::Driver);
        for k in [CallKind::KernelLaunch, CallKind::GraphLaunch] {
            let r = if wanted.is_some() {
                self.subscriber.load().enable_kind(ApiDomain::Driver, k)
            } else if !api_has_them {
                self.subscriber.load().disable_kind(ApiDomain::Driver, k)
            } else {
                Ok(())
            };
            if let Err(e) = r {
                gpu_trace_model::warn_once!("cannot switch launch callbacks for counters: {e}");
            }
        }
    }
}

impl Backend for CudaBackend {
    fn flush(&self, forced: bool) {
        crate::failpoint::maybe_panic("flush", true);
        let new = std::mem::take(
            &mut *self
                .shared
                .new_devices
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for ordinal in new {
            self.shared.records.describe_device(ordinal);
        }
        // Detached (or being detached): no CUPTI call, and nothing to flush.
        let Some(_gate) = self.detach.try_gate() else {
            return;
        };
        if let Some(a) = &self.activity
            && let Err(e) = a.flush_all(forced)
        {
            gpu_trace_model::verbose!("activity flush failed: {e}");
        }
        let contexts = !self
            .shared
            .contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty();
        // cuptiFinalize happens at the next API exit callsite. Not while the
        // sources change: a window opening undoes the request.
        if let Ok(_cur) = self.current.try_lock() {
            self.detach.poll(self.shared.api.correlator(), contexts);
        }
    }

    fn wants_flush_soon(&self) -> bool {
        self.detach.is_draining()
    }

    fn sources_changed(&self, s: &Sources) {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        // No detach may overlap our CUPTI calls; one under way finishes first.
        let _gate = self.detach.gate();
        let opening = *s != Sources::default() && *cur == Sources::default();
        if opening && self.detach.is_detached() {
            if !self.reattach() {
                return;
            }
            *cur = Sources::default();
        }
        if opening {
            // A detach asked for and not yet made: the driver calls'
            // callbacks it turned on go off again (the sources then turn on
            // those they record).
            if self.detach.is_ready()
                && let Err(e) = self.subscriber.load().disable_domain(Domain::Driver)
            {
                gpu_trace_model::verbose!("cannot turn the detach's callbacks off: {e}");
            }
            self.detach.opened();
        }
        let closing = *s == Sources::default() && *cur != Sources::default();
        let knew = cur.api || !cur.gpu;
        // A window closes while other threads launch: API callbacks go off
        // before GPU records, so that a launch whose slice is recorded
        // (its exit seen) was made while its kernel's record was on; one
        // opens the other way round. Otherwise a launch straddling the
        // switch leaves an arrow with no kernel (2 in 21,000 launches over
        // 100 windows switched from outside on the H200).
        let gpu_off = cur.gpu && !s.gpu;
        if s.gpu != cur.gpu && !gpu_off {
            self.set_gpu(s.gpu);
        }
        if s.api != cur.api {
            self.set_api(s.api);
        }
        if s.markers != cur.markers {
            self.set_markers(s.markers);
        }
        if gpu_off {
            self.set_gpu(false);
        }
        // After the API switch, which may have turned launch callbacks off.
        if s.counters != cur.counters || s.kernel_filter != cur.kernel_filter || s.api != cur.api {
            self.set_counters(s.counters.as_deref(), s.kernel_filter.as_ref());
        }
        // Likewise for allocation callbacks.
        if s.memory != cur.memory || s.api != cur.api {
            self.set_memory(s.memory);
        }
        if s.uvm != cur.uvm
            && let Some(u) = self.shared.uvm.get()
        {
            u.set(s.uvm);
        }
        // Unified memory needs managed memory, made by `cuMemAllocManaged`
        // (or a module's `__managed__` variables, at its load): at that
        // call's exit CUDA is ready, and a pending switch is retried there.
        // Allocation callbacks may have just been turned off.
        if s.uvm && (s.uvm != cur.uvm || s.memory != cur.memory || s.api != cur.api) {
            let id = cupti::callback::managed_alloc_call_id();
            if let Err(e) = self.subscriber.load().enable(Domain::Driver, id) {
                gpu_trace_model::verbose!("cannot enable the managed-allocation callback: {e}");
            }
        }
        gpu_trace_model::verbose!(
            "recording gpu={} api={} ({:?}) nvtx={} counters={:?} uvm={} memory={}",
            s.gpu,
            s.api,
            self.api_domains,
            s.markers,
            s.counters,
            s.uvm,
            s.memory
        );
        *cur = s.clone();
        if closing {
            self.detach.closed(knew);
        }
    }
}

impl CudaBackend {
    /// After a detach: subscribes again and registers activity, as at
    /// start-up; the caller then switches the sources on from nothing.
    fn reattach(&self) -> bool {
        let t0 = gpu_trace_model::clock::boottime_ns();
        let failed = |why: String| {
            gpu_trace_model::warn_once!(
                "cannot attach CUPTI again ({why}); recording windows from now on hold nothing"
            );
            false
        };
        let sub = match subscribe(&self.cupti, self.gate.clone()) {
            Ok(s) => Arc::new(s),
            Err(e) => return failed(e.to_string()),
        };
        if self.boottime
            && let Err(e) = activity::register_timestamp_callback(&self.cupti)
        {
            return failed(format!("its timestamp clock: {e}"));
        }
        if let Some(a) = &self.activity
            && let Err(e) = a.reattach()
        {
            return failed(format!("activity buffers: {e}"));
        }
        if let Err(e) = sub.enable_domain(Domain::Resource) {
            gpu_trace_model::verbose!("resource callbacks unavailable: {e}");
        }
        self.detach.set_subscriber(sub.clone());
        self.subscriber.store(sub);
        gpu_trace_model::verbose!(
            "CUPTI attached again ({:.1} ms)",
            (gpu_trace_model::clock::boottime_ns() - t0) as f64 / 1e6
        );
        true
    }
}

/// Subscribes our callback, which reaches the tool once `gate` is set.
fn subscribe(cupti: &Cupti, gate: Arc<OnceLock<Arc<Shared>>>) -> cupti::Result<Subscriber> {
    Subscriber::subscribe(cupti, c"gpu-trace", move |cb| {
        // After a panic nothing more is recorded; the writer switches the
        // callbacks off at its next turn.
        if let Some(s) = gate.get()
            && !gpu_trace_model::guard::tripped()
        {
            s.on_callback(cb);
        }
    })
}

impl Tool {
    /// Starts tracing this process. `None` (after one line on stderr) when
    /// it cannot; the application then runs untouched.
    pub(crate) fn start() -> Option<Tool> {
        // Every setting, and every problem with them said once; nothing at
        // all in a setuid program (where they are the caller's).
        let mut startup = Startup::from_env(gpu_trace_agent::Backend::Cuda)?;
        let cuda = startup.cuda.clone();
        let mut plan = startup.plan.clone();
        // With cudaProfilerApi ranges nothing is recorded before the
        // application asks, whatever opens windows besides.
        plan.paused |= cuda.capture_range != CaptureRange::Whole;
        // A window the program opened or closed before this start decides
        // how recording starts (see `gpu_trace_agent::program`).
        crate::PROGRAM.before_start(&mut plan);
        let cupti = match Cupti::load() {
            Ok(c) => c,
            Err(e) => {
                let why = load_error(&e);
                gpu_trace_model::warn!(
                    "CUPTI is not usable ({why}); the application runs untraced"
                );
                gpu_trace_agent::output::announce_untraced(&match e {
                    cupti::Error::LibraryNotFound { .. } => {
                        "no CUPTI (libcupti.so.13 of CUDA 13 or newer) was found".to_owned()
                    }
                    _ => format!("CUPTI is not usable ({why})"),
                });
                return None;
            }
        };
        gpu_trace_model::verbose!(
            "CUPTI {} from {}",
            cupti.version(),
            gpu_trace_model::log::plain(cupti.path())
        );

        // Subscribe first: if another profiler holds CUPTI, stay out of its
        // way entirely (its activity buffers are process-wide too).
        let gate: Arc<OnceLock<Arc<Shared>>> = Arc::new(OnceLock::new());
        let subscriber = {
            match subscribe(&cupti, gate.clone()) {
                Ok(s) => s,
                Err(cupti::Error::MultipleSubscribers { holder, .. }) => {
                    let holder = holder.as_deref().unwrap_or("another profiler");
                    gpu_trace_model::warn!(
                        "CUPTI is already in use by {holder} (nsys, ncu and torch.profiler each take it); gpu-trace stays off in this process and writes no trace"
                    );
                    gpu_trace_agent::output::announce_untraced(&format!(
                        "another profiler ({holder}) holds CUPTI"
                    ));
                    return None;
                }
                Err(e) => {
                    gpu_trace_model::warn!(
                        "cannot subscribe to CUPTI ({e}); the application runs untraced"
                    );
                    gpu_trace_agent::output::announce_untraced(&format!(
                        "cannot subscribe to CUPTI ({e})"
                    ));
                    return None;
                }
            }
        };

        let clock = match activity::register_timestamp_callback(&cupti) {
            Ok(()) => GpuClock::Boottime,
            Err(e) => {
                gpu_trace_model::verbose!(
                    "CUPTI timestamps stay on its own clock ({e}); describing it with clock snapshots"
                );
                let c = cupti.clone();
                GpuClock::Custom {
                    name: "cupti.timestamp",
                    sample: Arc::new(move || {
                        let gpu = c.timestamp().ok()?;
                        Some((gpu, gpu_trace_model::clock::boottime_ns()))
                    }),
                }
            }
        };
        let boottime = matches!(clock, GpuClock::Boottime);

        let untraced = |e: &dyn std::fmt::Display| {
            gpu_trace_model::warn!("{e}; the application runs untraced");
            gpu_trace_agent::output::announce_untraced(&e.to_string());
        };
        let settings = match startup.trace_settings() {
            Ok(s) => s,
            Err(e) => {
                untraced(&e);
                return None;
            }
        };
        let mut options = TracerOptions::new(BACKEND, settings);
        options.clock = clock;
        // The control socket can close and reopen recording at any time.
        options.capture_ranges =
            cuda.capture_range != CaptureRange::Whole || plan.switches() || plan.control;
        let tracer = match Tracer::start(options) {
            Ok(t) => t,
            Err(e) => {
                untraced(&e);
                return None;
            }
        };
        if let Some(p) = tracer.output_path() {
            gpu_trace_agent::output::announce_trace(p);
        }
        let telemetry = startup.telemetry(tracer.recorder().clone(), tracer.counters().clone());
        tracer.set_listener(Box::new(telemetry.clone()));

        let python = startup.config.recording.python;
        let shared = Arc::new(Shared::new(&tracer, &cuda, Some(telemetry), python));
        let filter = std::mem::take(&mut startup.filter);
        shared.set_counting(Counting::new(
            cupti.clone(),
            tracer.counters().clone(),
            tracer.notes(),
            tracer.recorder().clone(),
            filter,
            cuda.counters_replay,
            cuda.counters_batch,
        ));
        let _ = shared.uvm.set(Uvm::new(cupti.clone(), tracer.notes()));
        let _ = gate.set(shared.clone());

        let activity = {
            let shared = shared.clone();
            match activity::register(&cupti, ACTIVITY_BUFFERS, move |records| {
                // After a panic the buffers are only given back.
                if !gpu_trace_model::guard::tripped() {
                    shared.on_records(records)
                }
            }) {
                Ok(a) => Some(a),
                Err(e) => {
                    gpu_trace_model::warn!(
                        "cannot receive CUPTI activity records ({e}); the trace will have API calls but no GPU work"
                    );
                    None
                }
            }
        };
        if let Err(e) = subscriber.enable_domain(Domain::Resource) {
            gpu_trace_model::verbose!("resource callbacks unavailable: {e}");
        }
        if shared.nvtx_capture.is_some()
            && let Err(e) = subscriber.enable_domain(Domain::Nvtx)
        {
            gpu_trace_model::warn!(
                "cannot watch NVTX ranges ({e}); the NVTX capture range will not open"
            );
        }
        if let Some(c) = &shared.capture {
            for &(d, id) in c.start.iter().chain(&c.stop) {
                if let Err(e) = subscriber.enable(d.into(), id) {
                    gpu_trace_model::warn!(
                        "cannot watch the profiler start/stop calls ({e}); recording the whole run"
                    );
                    c.switch.set(true);
                    break;
                }
            }
        }
        let recording = &startup.config.recording;
        let detach = crate::detach::init(
            cuda.max_detaches > 0
                // A clock read through CUPTI would attach it again.
                && boottime
                && cuda.capture_range == CaptureRange::Whole
                && !startup.config.mode.system()
                && !recording.counters
                && !recording.uvm
                && !recording.memory,
            cuda.max_detaches,
        );
        let subscriber = Arc::new(subscriber);
        detach.set_subscriber(subscriber.clone());
        tracer.set_backend(Box::new(CudaBackend {
            shared: shared.clone(),
            subscriber: arc_swap::ArcSwap::new(subscriber),
            cupti: cupti.clone(),
            gate: gate.clone(),
            boottime,
            detach,
            api_domains: match cuda.api_layer {
                // A runtime call fires its driver call's callbacks too (with
                // the same correlation id), so the driver layer alone sees
                // every call that reaches the GPU, at half the callbacks.
                ApiLayer::Driver => &[ApiDomain::Driver],
                ApiLayer::Runtime => &[ApiDomain::Runtime, ApiDomain::Driver],
            },
            activity,
            current: Mutex::new(Sources::default()),
        }));
        let windows = gpu_trace_agent::windows::Windows::start(
            &plan,
            tracer.capture_switch(),
            tracer.recorder().clone(),
        );
        // The program's own window, if it asked for one before this start,
        // opens now; its calls switch recording from here on.
        let opened = crate::PROGRAM.attach(
            windows
                .as_ref()
                .map(gpu_trace_agent::windows::Windows::handle),
            tracer.capture_switch(),
        );
        // Paused from the start: detach once the program has a context.
        if !plan.open_at_start() && !opened {
            detach.paused_at_start();
        }
        Some(Tool {
            tracer,
            startup,
            shared,
            windows: Mutex::new(windows),
            pid: std::process::id(),
        })
    }

    /// Final flush and file finalisation at process exit. Work the
    /// application queued but never waited for is waited for first (at most
    /// [`EXIT_DRAIN_LIMIT`]), so that it is in the trace.
    pub(crate) fn shutdown(&self) {
        if std::process::id() != self.pid {
            gpu_trace_model::verbose!(
                "process {} (forked from {}) exits; the trace is its parent's",
                std::process::id(),
                self.pid
            );
            return;
        }
        if let Some(d) = crate::detach::global() {
            d.stop();
            if let Some(line) = d.summary() {
                self.tracer.notes().info(line);
            }
        }
        gpu_trace_agent::windows::Windows::stop_in(&self.windows);
        if self.tracer.gpu_enabled() {
            self.drain_gpu();
        }
        if let Some(c) = &self.shared.capture
            && !c.switch.ever_opened()
        {
            gpu_trace_model::warn!(
                "{}=cudaProfilerApi: the application never started a capture range (cudaProfilerStart), so the trace holds no GPU work or API calls",
                crate::config::vars::CAPTURE_RANGE
            );
        }
        if let Some(n) = &self.shared.nvtx_capture
            && n.taken() == 0
        {
            gpu_trace_model::warn!(
                "{}=nvtx:{}: the application never opened an NVTX range of that name, so the trace holds no GPU work or API calls",
                crate::config::vars::CAPTURE_RANGE,
                gpu_trace_model::log::plain(n.name())
            );
        }
        if let Some(c) = self.shared.counting.get() {
            c.finish();
            // After a panic the profiler's ranges were left unread on
            // purpose: nothing to report.
            if !gpu_trace_model::guard::tripped() {
                c.report();
            }
        }
        if let Some(l) = self.tracer.shutdown(Duration::from_secs(10)) {
            self.startup.report_losses(&l.drops, l.service);
        }
        if let Some(a) = activity::Activity::get() {
            let s = a.stats();
            gpu_trace_model::verbose!(
                "CUPTI buffers: {} of {} KiB allocated, {} completed, {} requests waited for one, {} refused, {} records dropped by CUPTI",
                s.allocated,
                s.buffer_size / 1024,
                s.completed_buffers,
                s.waited_requests,
                s.refused_requests,
                s.dropped_records
            );
        }
    }

    /// An NVTX call from our own NVTX injection.
    pub(crate) fn on_nvtx(&self, ev: &cupti::nvtx::NvtxEvent<'_>) {
        self.shared.on_nvtx(ev);
    }

    fn drain_gpu(&self) {
        let contexts = self
            .shared
            .contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(driver) = crate::api::driver().cloned() else {
            return;
        };
        if contexts.is_empty() {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        // A separate thread, so that a kernel that never ends cannot hang exit.
        let spawned = gpu_trace_model::thread::spawn("gpu-trace-drain", move || {
            crate::api::internal(|| {
                for c in contexts {
                    let _ = driver.synchronize(c);
                }
            });
            let _ = tx.send(());
        });
        if spawned.is_ok() && rx.recv_timeout(EXIT_DRAIN_LIMIT).is_err() {
            gpu_trace_model::warn!(
                "GPU work still running after {EXIT_DRAIN_LIMIT:?} at exit; it is missing from the trace"
            );
        }
    }
}

/// Why CUPTI could not be loaded, for one line: the paths tried (the first
/// may be `GPU_TRACE_CUPTI_PATH`'s value) and the loader's message, each
/// escaped and cut as values are ([`gpu_trace_model::log::plain`]).
fn load_error(e: &cupti::Error) -> String {
    use gpu_trace_model::log::plain;
    let shown = |s: &str| plain(s).to_string();
    match e {
        cupti::Error::LibraryNotFound {
            tried,
            too_old,
            last_error,
        } => cupti_sys::loader::not_found_message(
            &tried.iter().map(|t| shown(t)).collect::<Vec<_>>(),
            &too_old
                .iter()
                .map(|(p, v)| (shown(p), *v))
                .collect::<Vec<_>>(),
            last_error.as_deref().map(shown).as_deref(),
        ),
        cupti::Error::LibraryOpen { path, source } => {
            format!(
                "cannot open {}: {}",
                plain(path),
                shown(&source.to_string())
            )
        }
        e => e.to_string(),
    }
}

fn tracer_devices(
    tracer: &Tracer,
    telemetry: Option<gpu_trace_agent::telemetry::Telemetry>,
) -> impl Fn(gpu_trace_model::model::Device) + Send + Sync + 'static {
    let table = tracer.devices().clone();
    move |d| {
        if let Some(t) = &telemetry {
            crate::telemetry::watch(t, &d);
        }
        table.upsert(d)
    }
}
