//! Wiring rocprofiler-sdk to the agent and the writer.
//!
//! rocprofiler-sdk only accepts services during the tool's `initialize`, so everything is
//! configured there, each kind of data on its own context: code objects (started at once and
//! never stopped: kernel names must be known before the first dispatch), GPU activity
//! (kernel dispatches and memory copies into one buffer), HIP API calls, roctx markers and
//! dispatch counting. The tracer's [`Backend::sources_changed`] then starts and stops those
//! contexts, so that nothing runs while no session asks for it.
//!
//! Finalisation: the SDK calls the tool's `finalize` from its own exit handler, which may run
//! after the handlers registered later than it — including the Perfetto SDK's static
//! destructors, registered when the tracer started. This library therefore registers its own
//! exit handler after the tracer has started (so it runs before those destructors) and, from
//! it, asks the SDK to finalise the tool early. Whichever comes first — the SDK's finalize or
//! this handler — flushes the buffer, then stops the session and finalises the file; the other
//! finds it done.

use crate::api::{self, ApiState, OpTable};
use crate::counters::Counting;
use crate::records::{self, GpuRecords};
use gpu_trace_agent::{Config, Startup};
use gpu_trace_model::backend::{BackendInfo, Categories, Category};
use gpu_trace_model::filter::KernelFilter;
use gpu_trace_model::guard::catch;
use gpu_trace_perfetto::{Backend, GpuClock, Sources, Tracer, TracerOptions};
use rocprofiler::sys;
use rocprofiler::{
    Buffer, BufferOptions, BufferTracingKind, CallbackTracingKind, ConfigureInfo, Context, Policy,
    Runtime, Tool, ToolCell,
};
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long finalisation may wait for the trace to be written.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(10);

/// The HIP backend as the trace names it.
static BACKEND: BackendInfo = BackendInfo::new(
    "HIP",
    Categories {
        api: Category::new("hip", "HIP runtime API calls on CPU threads"),
        markers: Category::new("roctx", "roctx ranges and marks"),
    },
    // Perfetto's `InternedGraphicsContext.Api.HIP` and `gpu_api` HIP.
    5,
    "amd",
);

/// The tool, once rocprofiler-sdk configured it.
pub(crate) struct HipTool {
    /// The settings, read (and their problems said) when the SDK configured the tool.
    startup: Startup,
    /// The counters' kernel filter, until the counting service takes it.
    filter: Mutex<Option<KernelFilter>>,
    /// Their controller, while the tracer runs.
    windows: Mutex<Option<gpu_trace_agent::windows::Windows>>,
    tracer: OnceLock<Tracer>,
    /// What callbacks need, once the tracer runs (ranges of the C API use it too).
    state: OnceLock<Arc<State>>,
    finalized: AtomicBool,
    /// The process that started tracing: a forked child inherits the exit handler and the
    /// SDK's state but none of their threads, and must not wait for them.
    pid: u32,
}

/// What callbacks need; set once the tracer runs.
struct State {
    gpu: GpuRecords,
    /// The emitter is flushing the buffer and waits for the delivery.
    emitter_flushing: AtomicBool,
    api: Option<ApiState>,
    recorder: gpu_trace_model::Recorder,
    counting: Counting,
    /// roctx calls become markers (their context may also run for the
    /// counters filter's ranges alone).
    markers_on: AtomicBool,
}

/// Filled after the tracer started; callbacks before that (there are none: the runtime loads
/// no code and runs no call before the tool's initialize returns) would do nothing.
type Gate = Arc<OnceLock<Arc<State>>>;

/// What `initialize` creates and `finalize` gets back.
pub(crate) struct Session {
    services: Option<Arc<Services>>,
}

/// The SDK objects, shared by the session and the tracer's backend hooks.
struct Services {
    _code_objects: Context,
    gpu: Context,
    buffer: Buffer,
    api: Option<Context>,
    markers: Option<Context>,
    counting: Option<Context>,
    state: Arc<State>,
    current: Mutex<Switches>,
    closing: AtomicBool,
}

#[derive(Default)]
struct Switches {
    sources: Sources,
    counting: bool,
    /// The roctx context runs.
    markers: bool,
}

fn switch(ctx: &Context, on: bool, what: &'static str) {
    let r = if on { ctx.start() } else { ctx.stop() };
    if let Err(e) = r {
        gpu_trace_model::log::once(
            what,
            format_args!("cannot {} {what}: {e}", if on { "start" } else { "stop" }),
        );
    }
}

impl Services {
    fn apply(&self, s: &Sources) {
        if self.closing.load(Ordering::Acquire) {
            return;
        }
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        // A window closing while other threads launch: API tracing goes off before GPU
        // tracing, so that a launch whose call is recorded was made with its dispatch's
        // record on; a window opens the other way round (as CUDA's backend does).
        let gpu_off = cur.sources.gpu && !s.gpu;
        if s.gpu != cur.sources.gpu && !gpu_off {
            switch(&self.gpu, s.gpu, "GPU activity tracing");
        }
        if s.api != cur.sources.api
            && let Some(c) = &self.api
        {
            switch(c, s.api, "HIP API tracing");
        }
        if gpu_off {
            switch(&self.gpu, false, "GPU activity tracing");
        }
        if let Some(c) = &self.counting {
            let want = match &s.counters {
                Some(names) => {
                    self.state.counting.set_filter(s.kernel_filter.as_ref());
                    self.state.counting.select(names)
                }
                None => false,
            };
            if want != cur.counting {
                switch(c, want, "counter collection");
                cur.counting = want;
            }
            if want && self.state.counting.needs_ranges() && self.markers.is_none() {
                gpu_trace_model::warn_once!(
                    "the counters filter names roctx ranges, but roctx calls cannot be traced here, so no range is seen"
                );
            }
        }
        // Once the counters filter keeps ranges, roctx runs for good: a pop missed would leave
        // its range open.
        self.state.markers_on.store(s.markers, Ordering::Relaxed);
        let markers = s.markers || gpu_trace_model::filter::tx::is_on();
        if markers != cur.markers
            && let Some(c) = &self.markers
        {
            switch(c, markers, "roctx tracing");
            cur.markers = markers;
        }
        gpu_trace_model::verbose!(
            "recording gpu={} api={} roctx={} counters={:?}",
            s.gpu,
            s.api,
            s.markers,
            s.counters
        );
        cur.sources = s.clone();
    }

    fn flush(&self) {
        if let Err(e) = self.buffer.flush() {
            gpu_trace_model::verbose!("buffer flush failed: {e}");
        }
    }
}

struct HipBackend(Arc<Services>);

impl Backend for HipBackend {
    fn flush(&self, _forced: bool) {
        // rocprofiler hands over completed work only; there is nothing partial to force. Once
        // finalisation began, the finalising thread has flushed and the contexts are stopped:
        // no other thread calls into an SDK that is shutting down.
        if !self.0.closing.load(Ordering::Acquire) {
            let flushing = &self.0.state.emitter_flushing;
            flushing.store(true, Ordering::Release);
            self.0.flush();
            flushing.store(false, Ordering::Release);
        }
    }

    fn sources_changed(&self, s: &Sources) {
        self.0.apply(s);
    }
}

fn code_object_ops() -> [i32; 2] {
    type Co = sys::rocprofiler_code_object_operation_t;
    [
        Co::LOAD.0 as i32,
        Co::DEVICE_KERNEL_SYMBOL_REGISTER.0 as i32,
    ]
}

/// A service the trace can do without: on failure one line says what is missing.
fn optional<T>(what: &str, f: impl FnOnce() -> rocprofiler::Result<T>) -> Option<T> {
    match f() {
        Ok(v) => Some(v),
        Err(e) => {
            gpu_trace_model::warn!("{what}: {e}");
            None
        }
    }
}

/// rocprofiler-sdk 1.x stamps records with CLOCK_BOOTTIME, Perfetto's clock. Should a runtime
/// use another clock, say so in the trace with clock snapshots rather than shift every event.
fn gpu_clock(rt: &Runtime) -> GpuClock {
    let Ok(sdk) = rt.timestamp() else {
        return GpuClock::Boottime;
    };
    let boot = gpu_trace_model::clock::boottime_ns();
    if sdk.abs_diff(boot) < 50_000_000 {
        return GpuClock::Boottime;
    }
    gpu_trace_model::verbose!(
        "rocprofiler timestamps differ from CLOCK_BOOTTIME by {} ms; describing them with clock snapshots",
        sdk.abs_diff(boot) / 1_000_000
    );
    let rt = rt.clone();
    GpuClock::Custom {
        name: "rocprofiler.timestamp",
        sample: Arc::new(move || {
            let sdk = rt.timestamp().ok()?;
            Some((sdk, gpu_trace_model::clock::boottime_ns()))
        }),
    }
}

/// The standalone session's data sources and categories are switched on by Perfetto's own
/// thread, shortly after the tracer started; a HIP program's first calls can follow the tool's
/// initialize within microseconds. Wait (boundedly) until everything the session records is
/// on, so that the start of the program is not lost.
///
/// The tracer announces each change of its sources to its backend; until the HIP backend is
/// installed, a [`SourcesWatch`] stands in for it, and this waits for its announcements
/// (`set_backend` announces the sources of the moment, so none is missed).
fn wait_until_recording(tracer: &Tracer, config: &Config) {
    if !config.mode.file() {
        return;
    }
    let want = config.recording;
    let ready = |s: &Sources| {
        (!want.gpu || s.gpu)
            && (!want.api || s.api)
            && (!want.markers || s.markers)
            && (!want.counters || s.counters.is_some())
    };
    let watch = Arc::new(SourcesWatch::default());
    tracer.set_backend(Box::new(Watching(watch.clone())));
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut seen = watch.latest.lock().unwrap_or_else(|e| e.into_inner());
    while !seen.as_ref().is_some_and(ready) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            gpu_trace_model::verbose!(
                "the trace session did not switch everything on within 2 s: {:?}",
                tracer.sources()
            );
            return;
        }
        seen = watch
            .changed
            .wait_timeout(seen, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The latest sources the tracer announced, for [`wait_until_recording`].
#[derive(Default)]
struct SourcesWatch {
    latest: Mutex<Option<Sources>>,
    changed: Condvar,
}

/// The backend until the HIP one is installed: it flushes nothing (there is nothing yet) and
/// records each change of sources in its [`SourcesWatch`].
struct Watching(Arc<SourcesWatch>);

impl Backend for Watching {
    fn sources_changed(&self, s: &Sources) {
        *self.0.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
        self.0.changed.notify_all();
    }
}

impl Tool for HipTool {
    const NAME: &'static CStr = c"gpu-trace";
    type Session = Session;

    fn configure(info: &ConfigureInfo) -> Option<Self> {
        // Every setting, and every problem with them (the CUDA-only ones
        // included) said once; nothing at all in a setuid program (where
        // they are the caller's, and nothing is announced: the record log is
        // one).
        let Some(mut startup) = Startup::from_env(gpu_trace_agent::Backend::Hip) else {
            crate::PROGRAM.off();
            return None;
        };
        let filter = std::mem::take(&mut startup.filter);
        gpu_trace_model::verbose!(
            "rocprofiler-sdk {} ({}), {} tool(s) configured before this one",
            info.version,
            info.runtime_version,
            info.priority
        );
        Some(HipTool {
            startup,
            filter: Mutex::new(Some(filter)),
            windows: Mutex::new(None),
            tracer: OnceLock::new(),
            state: OnceLock::new(),
            finalized: AtomicBool::new(false),
            pid: std::process::id(),
        })
    }

    fn initialize(&self, rt: &Runtime) -> rocprofiler::Result<Session> {
        self.start(rt).inspect_err(|e| {
            crate::PROGRAM.off();
            gpu_trace_agent::output::announce_untraced(&format!(
                "rocprofiler-sdk refused the tool's setup ({e})"
            ));
        })
    }

    fn finalize(&self, _rt: &Runtime, session: Session) {
        self.finish(session.services.as_deref());
    }

    #[cfg(feature = "failpoints")]
    fn load_runtime() -> rocprofiler::Result<Runtime> {
        let hidden = crate::failpoint::hidden_symbols();
        if hidden.is_empty() {
            Runtime::from_process()
        } else {
            crate::ffi::runtime_without(&hidden)
        }
    }
}

impl HipTool {
    /// [`Tool::initialize`]: the contexts, then the tracer.
    fn start(&self, rt: &Runtime) -> rocprofiler::Result<Session> {
        let filter = self
            .filter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default();
        let agents = rt.agents()?;
        let gate: Gate = Arc::default();

        let code_objects = Context::new(rt)?;
        {
            let g = gate.clone();
            code_objects.configure_callback_tracing(
                CallbackTracingKind::CODE_OBJECT,
                &code_object_ops(),
                move |ev| {
                    if let Some(s) = g.get() {
                        catch("code-object callback", || s.gpu.on_code_object(ev));
                    }
                },
            )?;
        }

        let gpu = Context::new(rt)?;
        let buffer = {
            let g = gate.clone();
            Buffer::new(
                &gpu,
                BufferOptions {
                    size: 8 << 20,
                    watermark: 4 << 20,
                    policy: Policy::Lossless,
                },
                move |batch| {
                    if let Some(s) = g.get() {
                        catch("buffer callback", || {
                            s.gpu
                                .on_batch(batch, s.emitter_flushing.load(Ordering::Acquire))
                        });
                    }
                },
            )?
        };
        gpu.configure_buffer_tracing(&buffer, BufferTracingKind::KERNEL_DISPATCH, &[])?;
        gpu.configure_buffer_tracing(&buffer, BufferTracingKind::MEMORY_COPY, &[])?;

        let api = optional("HIP API calls are not recorded", || {
            let ops = OpTable::new(&rt.callback_operations(CallbackTracingKind::HIP_RUNTIME_API)?);
            if ops.traced().is_empty() {
                // An empty list would subscribe to every call.
                gpu_trace_model::warn!(
                    "HIP API calls are not recorded: the runtime names none of the calls traced"
                );
                return Ok(None);
            }
            let ctx = Context::new(rt)?;
            let g = gate.clone();
            ctx.configure_callback_tracing(
                CallbackTracingKind::HIP_RUNTIME_API,
                &ops.traced(),
                move |ev| {
                    if let Some(s) = g.get()
                        && let Some(a) = &s.api
                    {
                        catch("HIP API callback", || a.on_hip(ev));
                    }
                },
            )?;
            Ok(Some((ctx, ops)))
        })
        .flatten();
        let markers = optional("roctx ranges are not recorded", || {
            let ctx = Context::new(rt)?;
            let g = gate.clone();
            ctx.configure_callback_tracing(
                CallbackTracingKind::MARKER_CORE_API,
                &api::marker_ops(),
                move |ev| {
                    if let Some(s) = g.get() {
                        catch("roctx callback", || {
                            api::on_marker(&s.recorder, ev, s.markers_on.load(Ordering::Relaxed))
                        });
                    }
                },
            )?;
            Ok(ctx)
        });
        let counting = optional("per-kernel counters are unavailable", || {
            let ctx = Context::new(rt)?;
            let (g, g2) = (gate.clone(), gate.clone());
            ctx.configure_dispatch_counting(
                move |req| {
                    if let Some(s) = g.get() {
                        catch("dispatch-counting callback", || {
                            s.counting.on_dispatch(req, &s.gpu)
                        });
                    }
                },
                move |counts| {
                    if let Some(s) = g2.get() {
                        catch("counter-record callback", || {
                            s.counting.on_counts(counts, &s.gpu)
                        });
                    }
                },
            )?;
            Ok(ctx)
        });

        let untraced = |e: &dyn std::fmt::Display| {
            crate::PROGRAM.off();
            // The contexts drop unstarted: the application runs untouched.
            gpu_trace_model::warn!("{e}; the application runs untraced");
            gpu_trace_agent::output::announce_untraced(&e.to_string());
        };
        let settings = match self.startup.trace_settings() {
            Ok(s) => s,
            Err(e) => {
                untraced(&e);
                return Ok(Session { services: None });
            }
        };
        // A window the program opened or closed before this start decides
        // how recording starts (see `gpu_trace_agent::program`).
        let mut plan = self.startup.plan.clone();
        crate::PROGRAM.before_start(&mut plan);
        let mut options = TracerOptions::new(BACKEND, settings);
        options.clock = gpu_clock(rt);
        // The control socket can close and reopen recording at any time.
        options.capture_ranges = plan.switches() || plan.control;
        let tracer = match Tracer::start(options) {
            Ok(t) => t,
            Err(e) => {
                untraced(&e);
                return Ok(Session { services: None });
            }
        };
        if let Some(p) = tracer.output_path() {
            gpu_trace_agent::output::announce_trace(p);
        }
        let telemetry = self
            .startup
            .telemetry(tracer.recorder().clone(), tracer.counters().clone());
        tracer.set_listener(Box::new(telemetry.clone()));
        // Recording opens now unless the plan starts paused or with a delay; the controller
        // switches it from here on, as `gpu-trace start/stop` and the schedule ask.
        // The program's own window, if it asked for one before this start,
        // opens now; its calls switch recording from here on.
        let (windows, open) =
            crate::PROGRAM.start_windows(&plan, tracer.capture_switch(), tracer.recorder().clone());
        *self.windows.lock().unwrap_or_else(|e| e.into_inner()) = windows;
        if open {
            wait_until_recording(&tracer, &self.startup.config);
        }
        let devices: Vec<_> = agents.iter().filter_map(records::describe).collect();
        crate::telemetry::watch(&telemetry, &devices);
        for d in devices {
            tracer.add_device(d);
        }
        let (api_ctx, ops) = match api {
            Some((c, o)) => (Some(c), Some(o)),
            None => (None, None),
        };
        let recorder = tracer.recorder().clone();
        let state = Arc::new(State {
            gpu: GpuRecords::new(
                recorder.clone(),
                tracer.names().clone(),
                tracer.kernels().clone(),
                &agents,
            ),
            emitter_flushing: AtomicBool::new(false),
            api: ops.map(|o| {
                let callsites = self
                    .startup
                    .config
                    .recording
                    .python
                    .then(|| {
                        gpu_trace_agent::callsites::CallSites::start(
                            tracer.names().clone(),
                            tracer.callstacks().clone(),
                        )
                    })
                    .flatten();
                ApiState::new(recorder.clone(), tracer.names().clone(), o, callsites)
            }),
            counting: Counting::new(
                rt.clone(),
                recorder.clone(),
                tracer.counters().clone(),
                &agents,
                filter,
            ),
            recorder,
            markers_on: AtomicBool::new(false),
        });
        let _ = gate.set(state.clone());
        let _ = self.state.set(state.clone());
        if let Err(e) = code_objects.start() {
            self.stop_windows();
            tracer.shutdown(SHUTDOWN_LIMIT);
            return Err(e);
        }
        let services = Arc::new(Services {
            _code_objects: code_objects,
            gpu,
            buffer,
            api: api_ctx,
            markers,
            counting,
            state,
            current: Mutex::new(Switches::default()),
            closing: AtomicBool::new(false),
        });
        tracer.set_backend(Box::new(HipBackend(services.clone())));
        let _ = self.tracer.set(tracer);
        crate::ffi::register_exit_handler();
        Ok(Session {
            services: Some(services),
        })
    }

    /// Stops the window controller (its socket goes with it).
    fn stop_windows(&self) {
        gpu_trace_agent::windows::Windows::stop_in(&self.windows);
    }

    /// Final flush and file finalisation; once, in the process that started tracing.
    fn finish(&self, services: Option<&Services>) {
        if std::process::id() != self.pid || self.finalized.swap(true, Ordering::AcqRel) {
            return;
        }
        // No window opens or closes any more; one still open stays open for the last records.
        self.stop_windows();
        if let Some(s) = services {
            // No more starting and stopping; the buffer's last records must still be read,
            // even if tracing broke (the SDK does not flush for us).
            s.closing.store(true, Ordering::Release);
            s.flush();
        }
        if let Some(t) = self.tracer.get() {
            gpu_trace_model::guard::run("trace finalisation", || {
                if let Some(l) = t.shutdown(SHUTDOWN_LIMIT) {
                    self.startup.report_losses(&l.drops, l.service);
                }
            });
        }
    }
}

/// The process is exiting: finalise now, before the Perfetto SDK's static destructors run
/// (see the module documentation), unless the SDK already did.
pub(crate) fn at_exit(cell: &'static ToolCell<HipTool>) {
    let Some(tool) = cell.tool() else { return };
    if std::process::id() != tool.pid
        || tool.tracer.get().is_none()
        || tool.finalized.load(Ordering::Acquire)
    {
        return;
    }
    gpu_trace_model::verbose!("process exit: asking rocprofiler-sdk to finalise the tool now");
    // The SDK stops our contexts and calls `finalize`.
    cell.finalize_early();
    if !tool.finalized.load(Ordering::Acquire) {
        let services = cell.with_session(|s| s.services.clone()).flatten();
        tool.finish(services.as_deref());
    }
}

/// `gpu_trace_range_push` (`Some(name)`) or `gpu_trace_range_pop`: a roctx push or pop on this
/// thread, as the marker callback records one (while roctx ranges are recorded; the counters
/// filter's range tracking sees it too).
pub(crate) fn range(cell: &'static ToolCell<HipTool>, push: Option<&str>) -> i32 {
    use gpu_trace_agent::program::status;
    use gpu_trace_model::filter::tx;
    use gpu_trace_model::model::Marker;
    let rc = crate::PROGRAM.running();
    if rc != status::OK {
        return rc;
    }
    let Some(s) = cell.tool().and_then(|t| t.state.get()) else {
        return status::PENDING;
    };
    match push {
        Some(name) if tx::is_on() => tx::push(0, name),
        None => tx::pop(0),
        _ => {}
    }
    if !s.markers_on.load(Ordering::Relaxed) {
        return status::OK;
    }
    let thread = gpu_trace_model::clock::thread_id();
    let now = gpu_trace_model::clock::boottime_ns();
    match push {
        Some(name) => s.recorder.marker(thread, now, name, |text| Marker::Push {
            domain: None,
            text,
        }),
        None => s
            .recorder
            .marker(thread, now, "", |_| Marker::Pop { domain: None }),
    }
    status::OK
}
