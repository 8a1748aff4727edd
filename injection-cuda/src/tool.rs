//! Wiring CUPTI to the agent and the writer.
//!
//! [`Tool::start`] takes one step per function below it; what CUPTI's
//! callbacks reach is in [`callbacks`], how the recorded sources switch
//! CUPTI in [`backend`].

mod backend;
mod callbacks;

use crate::config::{ApiLayer, CaptureRange, CudaConfig};
use crate::counters::Counting;
use crate::uvm::Uvm;
use backend::{BACKEND, CudaBackend};
pub(crate) use callbacks::Shared;
use callbacks::subscribe;
use cupti::Cupti;
use cupti::activity::{self, Activity, ActivityConfig};
use cupti::callback::{Domain, Subscriber};
use cupti::cbid::ApiDomain;
use gpu_trace_agent::Startup;
use gpu_trace_agent::telemetry::Telemetry;
use gpu_trace_agent::windows::{Plan, Windows};
use gpu_trace_perfetto::{GpuClock, Sources, Tracer, TracerOptions};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

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

impl Tool {
    /// Starts tracing this process. `None` (after one line on stderr) when
    /// it cannot; the application then runs untouched.
    pub(crate) fn start() -> Option<Tool> {
        // Every setting, and every problem with them said once; nothing at
        // all in a setuid program (where they are the caller's).
        let mut startup = Startup::from_env(gpu_trace_agent::Backend::Cuda)?;
        let cuda = startup.cuda.clone();
        let plan = recording_plan(&startup, &cuda);
        let cupti = load_cupti()?;

        // Subscribe first: if another profiler holds CUPTI, stay out of its
        // way entirely (its activity buffers are process-wide too).
        let gate: Arc<OnceLock<Arc<Shared>>> = Arc::new(OnceLock::new());
        let subscriber = subscribe_first(&cupti, gate.clone())?;

        let clock = gpu_clock(&cupti);
        let boottime = matches!(clock, GpuClock::Boottime);

        let tracer = start_tracer(&startup, &cuda, &plan, clock)?;
        let telemetry = startup.telemetry(tracer.recorder().clone(), tracer.counters().clone());
        tracer.set_listener(Box::new(telemetry.clone()));

        let shared = callback_state(&mut startup, &cuda, &cupti, &tracer, telemetry);
        let _ = gate.set(shared.clone());

        let activity = register_activity(&cupti, &shared);
        enable_callbacks(&subscriber, &shared);
        let detach = init_detach(&startup, &cuda, boottime);
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
        let windows = open_windows(&plan, &tracer, detach);
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

/// The recording plan this start follows: the configured one, paused for a
/// capture range, and as the program's own window left it.
fn recording_plan(startup: &Startup, cuda: &CudaConfig) -> Plan {
    let mut plan = startup.plan.clone();
    // With cudaProfilerApi ranges nothing is recorded before the
    // application asks, whatever opens windows besides.
    plan.paused |= cuda.capture_range != CaptureRange::Whole;
    // A window the program opened or closed before this start decides
    // how recording starts (see `gpu_trace_agent::program`).
    crate::PROGRAM.before_start(&mut plan);
    plan
}

/// Loads CUPTI; `None`, after saying why, when it is missing or unusable.
fn load_cupti() -> Option<Cupti> {
    let cupti = match Cupti::load() {
        Ok(c) => c,
        Err(e) => {
            let why = load_error(&e);
            gpu_trace_model::warn!("CUPTI is not usable ({why}); the application runs untraced");
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
    Some(cupti)
}

/// Subscribes our callback; `None`, after saying why, when CUPTI refuses
/// (another profiler holds it).
fn subscribe_first(cupti: &Cupti, gate: Arc<OnceLock<Arc<Shared>>>) -> Option<Subscriber> {
    match subscribe(cupti, gate) {
        Ok(s) => Some(s),
        Err(cupti::Error::MultipleSubscribers { holder, .. }) => {
            let holder = holder.as_deref().unwrap_or("another profiler");
            gpu_trace_model::warn!(
                "CUPTI is already in use by {holder} (nsys, ncu and torch.profiler each take it); gpu-trace stays off in this process and writes no trace"
            );
            gpu_trace_agent::output::announce_untraced(&format!(
                "another profiler ({holder}) holds CUPTI"
            ));
            None
        }
        Err(e) => {
            gpu_trace_model::warn!(
                "cannot subscribe to CUPTI ({e}); the application runs untraced"
            );
            gpu_trace_agent::output::announce_untraced(&format!("cannot subscribe to CUPTI ({e})"));
            None
        }
    }
}

/// The clock of CUPTI's timestamps: CLOCK_BOOTTIME through our callback,
/// or else CUPTI's own, described by clock snapshots.
fn gpu_clock(cupti: &Cupti) -> GpuClock {
    match activity::register_timestamp_callback(cupti) {
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
    }
}

/// Starts the writer over the configured settings and announces its
/// output; `None`, after saying why, when it cannot start.
fn start_tracer(
    startup: &Startup,
    cuda: &CudaConfig,
    plan: &Plan,
    clock: GpuClock,
) -> Option<Tracer> {
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
    Some(tracer)
}

/// The callbacks' state over `tracer`, with per-kernel counters and
/// unified memory ready for the sources to switch on.
fn callback_state(
    startup: &mut Startup,
    cuda: &CudaConfig,
    cupti: &Cupti,
    tracer: &Tracer,
    telemetry: Telemetry,
) -> Arc<Shared> {
    let python = startup.config.recording.python;
    let shared = Arc::new(Shared::new(tracer, cuda, Some(telemetry), python));
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
    shared
}

/// Registers CUPTI's activity buffers, whose records go to `shared`;
/// `None` (the trace then has no GPU work) when CUPTI refuses.
fn register_activity(cupti: &Cupti, shared: &Arc<Shared>) -> Option<Activity> {
    let shared = shared.clone();
    match activity::register(cupti, ACTIVITY_BUFFERS, move |records| {
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
}

/// Enables the callbacks needed whatever is recorded: resources (contexts)
/// and the calls that open and close capture ranges.
fn enable_callbacks(subscriber: &Subscriber, shared: &Shared) {
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
}

/// Sets up detaching CUPTI while nothing is recorded, where what is
/// configured allows it.
fn init_detach(
    startup: &Startup,
    cuda: &CudaConfig,
    boottime: bool,
) -> &'static crate::detach::Detach {
    let recording = &startup.config.recording;
    crate::detach::init(
        cuda.max_detaches > 0
            // A clock read through CUPTI would attach it again.
            && boottime
            && cuda.capture_range == CaptureRange::Whole
            && !startup.config.mode.system()
            && !recording.counters
            && !recording.uvm
            && !recording.memory,
        cuda.max_detaches,
    )
}

/// Starts the recording windows (time plan, control socket) and attaches
/// the program's own window to them.
fn open_windows(plan: &Plan, tracer: &Tracer, detach: &crate::detach::Detach) -> Option<Windows> {
    let (windows, open) =
        crate::PROGRAM.start_windows(plan, tracer.capture_switch(), tracer.recorder().clone());
    // Paused from the start: detach once the program has a context.
    if !open {
        detach.paused_at_start();
    }
    windows
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
