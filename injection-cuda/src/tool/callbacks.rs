//! What CUPTI's callbacks reach: the state the tool shares with them, and
//! their dispatch to API recording, counters, memory accounting, unified
//! memory and capture ranges.

use crate::api::ApiState;
use crate::config::{CaptureRange, CudaConfig};
use crate::counters::Counting;
use crate::memory::MemoryState;
use crate::profiler_capture::Capture;
use crate::records::{DevicesSink, RecordState};
use crate::uvm::Uvm;
use cupti::Cupti;
use cupti::callback::{Callback, ResourceEvent, Subscriber};
use gpu_trace_perfetto::Tracer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) struct Shared {
    pub(super) api: ApiState,
    pub(super) records: RecordState,
    pub(super) api_on: AtomicBool,
    pub(super) markers_on: AtomicBool,
    /// Live contexts, drained at exit so that work still running is recorded.
    pub(super) contexts: Mutex<Vec<cupti::Context>>,
    /// With `INJECTION_CAPTURE_RANGE=cudaProfilerApi`: the switch, and the
    /// profiler start/stop callbacks that flip it.
    pub(super) capture: Option<Capture>,
    /// With `INJECTION_CAPTURE_RANGE=nvtx:NAME`: the NVTX ranges that open
    /// and close recording.
    pub(super) nvtx_capture: Option<crate::nvtx_capture::NvtxCapture>,
    /// Per-kernel counters (set once CUPTI is known).
    pub(super) counting: OnceLock<Arc<Counting>>,
    /// Devices of contexts created since the last flush.
    pub(super) new_devices: Mutex<Vec<u32>>,
    /// Device memory in use (`-t memory`).
    pub(super) memory: MemoryState,
    /// Unified-memory records (`-t uvm`), set once CUPTI is known.
    pub(super) uvm: OnceLock<Uvm>,
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

    pub(super) fn set_counting(&self, c: Counting) {
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

/// Subscribes our callback, which reaches the tool once `gate` is set.
pub(super) fn subscribe(
    cupti: &Cupti,
    gate: Arc<OnceLock<Arc<Shared>>>,
) -> cupti::Result<Subscriber> {
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
