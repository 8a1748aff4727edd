//! The tracer: the one root object a backend cdylib creates and keeps.

use crate::categories::{API, MARKERS};
use crate::collector::{Limits, Recorder};
use crate::direct::FileWriter;
use crate::emit::{ClockSpec, CtrSeq, Encoder, PacketSink, RsSeq, Totals, TrackEventSink};
use crate::model::{CounterId, CounterSpec, Device, DropKind};
use crate::names::{Kernels, Names};
use crate::registry::{Counters, Devices};
use crate::sink::{self, DsSink, FileSession, TeSink};
use crate::trace_config::CounterRequest;
use arc_swap::ArcSwapOption;
use gpu_trace_model::backend::BackendInfo;
use gpu_trace_model::capture::RecordingSwitch;
use gpu_trace_model::writer::{FileSink, Mode, Recording, TraceSettings, WriterListener};
use gpu_trace_reader::ServiceLosses;
use perfetto_sdk::producer::Backends;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the backend should record right now. Recomputed when sessions start
/// or stop; the backend enables vendor features accordingly, so that nothing
/// costs anything while nothing is traced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sources {
    /// Kernels, copies, memsets.
    pub gpu: bool,
    /// API calls on CPU threads.
    pub api: bool,
    /// NVTX / roctx.
    pub markers: bool,
    /// Per-kernel counters, with the metric names to collect (empty: the
    /// backend's defaults). `None` when no counters session runs.
    pub counters: Option<Vec<String>>,
    /// Which kernels get counters, when the counters session says
    /// (`instrumented_sampling_config`); `None`: the environment's filter.
    pub kernel_filter: Option<gpu_trace_model::filter::SessionFilter>,
    /// Device telemetry (`gpu.telemetry`). The agent's sampler follows it
    /// (through the [`WriterListener`]); backends only say which GPUs
    /// they use.
    pub telemetry: bool,
    /// Unified-memory migrations and faults (`INJECTION_TRACE=...,uvm`).
    pub uvm: bool,
    /// Device memory in use, from allocations and frees
    /// (`INJECTION_TRACE=...,memory`).
    pub memory: bool,
}

/// Lines for the trace's log (`GpuLog`), from any thread: a backend's
/// warnings that the trace itself should carry (a rejected metric, a
/// feature that is off), beside the one line said on stderr. They are
/// written with the summary.
#[derive(Debug, Clone, Default)]
pub struct Notes(Arc<Mutex<Vec<(bool, String)>>>);

impl Notes {
    /// Adds a warning.
    pub fn warn(&self, message: impl Into<String>) {
        self.push(true, message.into());
    }

    /// Adds an informational line.
    pub fn info(&self, message: impl Into<String>) {
        self.push(false, message.into());
    }

    fn push(&self, warning: bool, message: String) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: a backend that repeats itself cannot grow the trace.
        if v.len() < 256 && !v.iter().any(|(_, m)| *m == message) {
            v.push((warning, message));
        }
    }

    fn take(&self) -> Vec<(bool, String)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Hooks a backend gives the tracer.
pub trait Backend: Send + Sync {
    /// Pushes the vendor's buffered records into the recorder. `forced` at
    /// session stop and process exit, when incomplete records must come out.
    fn flush(&self, forced: bool) {
        let _ = forced;
    }

    /// What should be recorded changed.
    fn sources_changed(&self, sources: &Sources) {
        let _ = sources;
    }

    /// Whether the next flush should come sooner than the flush period
    /// (every [`SOON_FLUSH`]): the backend waits for records to come in
    /// (CUDA, before detaching CUPTI after a window).
    fn wants_flush_soon(&self) -> bool {
        false
    }
}

/// How soon a flush a backend asks for comes (see
/// [`Backend::wants_flush_soon`]).
pub(crate) const SOON_FLUSH: Duration = Duration::from_millis(250);

/// How the backend's GPU timestamps relate to the trace clock.
#[derive(Clone)]
#[non_exhaustive]
pub enum GpuClock {
    /// Already CLOCK_BOOTTIME (CUPTI with our timestamp callback, current
    /// rocprofiler-sdk).
    Boottime,
    /// A separate clock; `sample` returns a simultaneous (gpu, boottime)
    /// pair, written as periodic `ClockSnapshot`s.
    Custom {
        /// Unique name; the clock id is derived from it.
        name: &'static str,
        /// Reads both clocks.
        sample: Arc<dyn Fn() -> Option<(u64, u64)> + Send + Sync>,
    },
}

impl std::fmt::Debug for GpuClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuClock::Boottime => f.write_str("Boottime"),
            GpuClock::Custom { name, .. } => write!(f, "Custom({name})"),
        }
    }
}

impl GpuClock {
    /// The clock id used in the trace for a custom clock.
    pub fn clock_id(name: &str) -> u32 {
        (perfetto_sdk::fnv1a(name.as_bytes()) as u32) | 0x8000_0000
    }
}

/// Everything needed to start a tracer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TracerOptions {
    /// Who the backend is.
    pub backend: BackendInfo,
    /// Where the trace goes and what it records, settled by the agent
    /// (`gpu_trace_agent::Config::trace_settings`).
    pub settings: TraceSettings,
    /// GPU clock.
    pub clock: GpuClock,
    /// Whether recording waits for the backend to open a capture range
    /// (see [`CaptureSwitch`]); otherwise it runs from start to exit.
    pub capture_ranges: bool,
}

impl TracerOptions {
    /// A tracer for `backend` with `settings`, on the BOOTTIME clock,
    /// recording from start to exit.
    pub fn new(backend: BackendInfo, settings: TraceSettings) -> Self {
        Self {
            backend,
            settings,
            clock: GpuClock::Boottime,
            capture_ranges: false,
        }
    }
}

/// Why a tracer did not start. The application runs on regardless.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Data-source registration failed.
    #[error(transparent)]
    Register(#[from] sink::RegisterError),
    /// File mode without a file ([`TraceSettings::output`]).
    #[error("file mode needs an output path")]
    NoOutput,
    /// The in-process session did not start.
    #[error(transparent)]
    Session(#[from] sink::SessionError),
    /// The session started but did not enable our data source.
    #[error("the tracing session for {0} did not start recording")]
    NotEnabled(PathBuf),
    /// A thread could not be spawned.
    #[error("could not start the emitter thread: {0}")]
    Thread(std::io::Error),
    /// A previous internal error switched tracing off.
    #[error("tracing was switched off by an earlier internal error")]
    Broken,
}

enum CycleKind {
    /// Write what is recorded, after the backend's periodic flush.
    Flush,
    /// Session stop: force the backend's records out, write them and the
    /// summary (once).
    Stop,
    /// Process exit, before the session stops: as `Stop`, without the summary.
    Drain,
    /// Write the summary now, with the service's losses known so far.
    Summary,
}

struct Request {
    kind: CycleKind,
    done: Box<dyn FnOnce() + Send>,
}

#[derive(Default)]
struct Ctl {
    wake: bool,
    exit: bool,
    requests: Vec<Request>,
}

pub(crate) struct Inner {
    settings: TraceSettings,
    info: BackendInfo,
    /// Where the encoder's packets go.
    out: Out,
    clock: GpuClock,
    recorder: Recorder,
    names: Arc<Names>,
    kernels: Arc<Kernels>,
    devices: Arc<Devices>,
    counters: Arc<Counters>,
    callstacks: Arc<gpu_trace_model::callstack::Callstacks>,
    /// The agent, told of telemetry and of the trace's end.
    listener: ArcSwapOption<Box<dyn WriterListener>>,
    /// Telemetry is recorded, as the listener was last told.
    telemetry_on: Mutex<Option<bool>>,
    backend: ArcSwapOption<Box<dyn Backend>>,
    ctl: Mutex<Ctl>,
    cv: Condvar,
    counter_requests: Mutex<[Option<CounterRequest>; 8]>,
    sources: Mutex<Sources>,
    /// Serialises `Backend::sources_changed` calls, each with the latest
    /// sources; holds the sources last delivered.
    notify: Mutex<Option<Sources>>,
    /// A helper thread is delivering sources the emitter noticed.
    delivering: AtomicBool,
    /// Recording waits for capture ranges.
    capture_ranges: bool,
    /// Inside a capture range (always, without capture ranges).
    capturing: AtomicBool,
    /// A capture range was ever opened.
    captured: AtomicBool,
    /// Reads the standalone session's buffer on request (file mode).
    reader: Mutex<Option<sink::SessionReader>>,
    /// The tracing service's losses, as last learnt (file mode).
    service_losses: Mutex<Option<ServiceLosses>>,
    /// Lines a backend asked to have in the trace (see [`Notes`]).
    notes: Notes,
    /// The summary lines were written.
    summary_written: AtomicBool,
}

/// The kernel selection of the counters sessions running: the first one's
/// (in the service's order of data-source instances), whether it names
/// kernels or leaves them to the environment's filter. Sessions that ask
/// for another selection get the first one's, which is said once.
fn kernel_filter<'a>(
    mut reqs: impl Iterator<Item = &'a CounterRequest>,
) -> Option<gpu_trace_model::filter::SessionFilter> {
    let first = reqs.next()?;
    if reqs.any(|r| r.selection != first.selection) {
        crate::log::once(
            "kernel selections differ",
            format_args!(
                "counters sessions running at once select different kernels; all get the kernels of the first one ({})",
                first
                    .selection
                    .as_ref()
                    .map_or_else(|| "the environment's filter".to_owned(), |s| s.describe())
            ),
        );
    }
    first
        .selection
        .as_ref()
        .map(|spec| gpu_trace_model::filter::SessionFilter {
            session: first.session,
            spec: spec.clone(),
        })
}

/// Where the encoder's packets go: the Perfetto SDK's sequences (system
/// mode, and standalone mode through the in-process service), or the
/// direct file writer's (standalone mode).
pub(crate) enum Out {
    /// The SDK's data sources and track-event categories.
    Sdk(&'static sink::Registry),
    /// The standalone file, written by the emitter.
    Direct(Box<Direct>),
}

/// The direct writer and what it records.
pub(crate) struct Direct {
    /// The file is open: every source the settings ask for is on.
    open: AtomicBool,
    recording: Recording,
    writer: Mutex<Option<FileWriter>>,
    /// The process track's uuid, parent of the process's tracks.
    process_uuid: u64,
}

impl Out {
    /// Whether track-event category `i` ([`API`], [`MARKERS`]) is on: one
    /// relaxed load.
    fn category(&self, i: usize) -> bool {
        match self {
            Out::Sdk(reg) => reg.categories.enabled(i),
            Out::Direct(d) => {
                d.open.load(Ordering::Relaxed)
                    && if i == API {
                        d.recording.api
                    } else {
                        d.recording.markers
                    }
            }
        }
    }

    /// Whether the render-stage, counter and telemetry sequences are on.
    fn sequences(&self) -> [bool; 3] {
        match self {
            Out::Sdk(reg) => [
                reg.rs.is_enabled(),
                reg.ctr.is_enabled(),
                reg.tel.is_enabled(),
            ],
            Out::Direct(d) => {
                let on = d.open.load(Ordering::Relaxed);
                [on, on && d.recording.counters, on && d.recording.telemetry]
            }
        }
    }

    fn direct<R>(&self, f: impl FnOnce(&mut FileWriter) -> R) -> Option<R> {
        let Out::Direct(d) = self else { return None };
        d.writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(f)
    }

    /// Runs `f` on every render-stage sequence.
    fn rs(&self, f: &mut dyn FnMut(&mut RsSeq, &mut dyn PacketSink)) {
        match self {
            Out::Sdk(reg) => reg.rs.trace(|ctx| {
                ctx.with_incremental_state(|ctx, seq| f(seq, &mut DsSink(ctx)));
            }),
            Out::Direct(_) => {
                self.direct(|w| w.rs(f));
            }
        }
    }

    /// Runs `f` on every per-kernel counter sequence.
    fn ctr(&self, f: &mut dyn FnMut(&mut CtrSeq, &mut dyn PacketSink)) {
        match self {
            Out::Sdk(reg) => reg.ctr.trace(|ctx| {
                ctx.with_incremental_state(|ctx, seq| f(seq, &mut DsSink(ctx)));
            }),
            Out::Direct(_) => {
                if self.sequences()[1] {
                    self.direct(|w| w.ctr(f));
                }
            }
        }
    }

    /// Runs `f` on every telemetry sequence.
    fn tel(&self, f: &mut dyn FnMut(&mut CtrSeq, &mut dyn PacketSink)) {
        match self {
            Out::Sdk(reg) => reg.tel.trace(|ctx| {
                ctx.with_incremental_state(|ctx, seq| f(seq, &mut DsSink(ctx)));
            }),
            Out::Direct(_) => {
                if self.sequences()[2] {
                    self.direct(|w| w.tel(f));
                }
            }
        }
    }

    /// Runs `f` on every track-event sequence of category `i`.
    fn te(&self, i: usize, f: &mut dyn FnMut(&mut dyn TrackEventSink)) {
        match self {
            Out::Sdk(reg) => reg.categories.trace(i, &mut |ctx| f(&mut TeSink(ctx))),
            Out::Direct(_) => {
                if self.category(i) {
                    self.direct(|w| w.te(f));
                }
            }
        }
    }

    /// The direct writer's buffer into its file (after every emitter
    /// cycle: what a killed process leaves).
    fn write_out(&self) {
        self.direct(|w| w.write_out());
    }
}

impl Inner {
    /// Nothing is recorded, and the backend waits for no flush.
    fn idle(&self) -> bool {
        *self.sources.lock().unwrap_or_else(|e| e.into_inner()) == Sources::default()
            && !self
                .backend
                .load()
                .as_ref()
                .is_some_and(|b| b.wants_flush_soon())
    }

    pub(crate) fn wake(&self) {
        let mut c = self.ctl.lock().unwrap_or_else(|e| e.into_inner());
        c.wake = true;
        self.cv.notify_one();
    }

    fn request(&self, kind: CycleKind, done: Box<dyn FnOnce() + Send>) {
        let mut c = self.ctl.lock().unwrap_or_else(|e| e.into_inner());
        if c.exit {
            drop(c);
            done();
            return;
        }
        c.requests.push(Request { kind, done });
        self.cv.notify_one();
    }

    pub(crate) fn request_stop_cycle(&self, done: Box<dyn FnOnce() + Send>) {
        self.request(CycleKind::Stop, done);
    }

    pub(crate) fn request_flush_cycle(&self, done: Box<dyn FnOnce() + Send>) {
        self.request(CycleKind::Flush, done);
    }

    pub(crate) fn set_counter_request(&self, inst: u32, req: Option<CounterRequest>) {
        if let Some(slot) = self
            .counter_requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(inst as usize)
        {
            *slot = req;
        }
        self.wake();
    }

    fn compute_sources(&self) -> Sources {
        // After a panic everything is off: the backend stops the vendor's
        // tracing, and the trace only gets its end.
        if crate::guard::tripped() {
            return Sources::default();
        }
        if !self.capturing.load(Ordering::Acquire) {
            return Sources::default();
        }
        let gpu_wanted = self.settings.recording.gpu || self.settings.mode.system();
        let [rs, ctr, tel] = self.out.sequences();
        let reqs = self
            .counter_requests
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // The SDK marks a data-source instance enabled before its setup
        // callback hands over the session's config: until a request has
        // come, an SDK counters sequence counts nothing (defaults in that
        // gap counted dispatches the session never asked for).
        let configured =
            matches!(self.out, Out::Direct(_)) || reqs.iter().flatten().next().is_some();
        let (counters, kernel_filter) = if ctr && configured {
            let mut names: Vec<String> = Vec::new();
            for r in reqs.iter().flatten() {
                for n in &r.names {
                    if !names.contains(n) {
                        names.push(n.clone());
                    }
                }
            }
            if names.is_empty() {
                names = self.settings.metrics.clone();
            }
            (Some(names), kernel_filter(reqs.iter().flatten()))
        } else {
            (None, None)
        };
        drop(reqs);
        // Both are written with the GPU work, on its data source.
        Sources {
            gpu: gpu_wanted && rs,
            api: self.out.category(API),
            markers: self.out.category(MARKERS),
            counters,
            kernel_filter,
            telemetry: tel,
            uvm: self.settings.recording.uvm && rs,
            memory: self.settings.recording.memory && rs,
        }
    }

    /// Recomputes what is enabled. The backend is told by
    /// [`Inner::notify_backend`] (or, for the emitter, by
    /// [`Inner::deliver_aside`]).
    fn refresh_sources(&self) {
        let now = self.compute_sources();
        self.tell_telemetry(now.telemetry);
        let mut s = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        if *s != now {
            crate::verbose!("sources now {now:?}");
            *s = now;
        }
    }

    /// Tells the listener whether telemetry is recorded, when that changed
    /// (or it was never told).
    fn tell_telemetry(&self, on: bool) {
        let mut told = self.telemetry_on.lock().unwrap_or_else(|e| e.into_inner());
        if *told == Some(on) {
            return;
        }
        if let Some(l) = self.listener.load_full() {
            crate::guard::run("telemetry switch", || l.telemetry(on));
            *told = Some(on);
        }
    }

    /// Tells the backend what is enabled, unless it was told already.
    /// Calls are serialised and each passes the latest sources, so that a
    /// thread delayed between computing and delivering a change cannot hand
    /// the backend an older state after a newer one.
    fn notify_backend(&self) {
        let mut delivered = self.notify.lock().unwrap_or_else(|e| e.into_inner());
        let Some(b) = self.backend.load_full() else {
            return;
        };
        let now = self
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if delivered.as_ref() == Some(&now) {
            return;
        }
        crate::guard::run("backend sources_changed", || b.sources_changed(&now));
        *delivered = Some(now);
    }

    /// Whether the backend has not been told the latest sources, and no
    /// one is telling it now. Never waits.
    fn needs_delivery(&self) -> bool {
        if self.backend.load().is_none() {
            return false;
        }
        let Ok(delivered) = self.notify.try_lock() else {
            return false;
        };
        let now = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        delivered.as_ref() != Some(&*now)
    }

    /// Delivers, from a helper thread, sources the emitter noticed (a
    /// system-mode session that started or stopped, or a switch it saw
    /// first). The emitter never calls the backend's `sources_changed`
    /// itself, nor waits for a thread that does: switching the vendor's
    /// tracing (`cuptiActivityEnable`/`Disable`) can wait for the vendor's
    /// delivery thread, which may be waiting for room in our queue, which
    /// only the emitter makes. On the H200 a process toggled ten times a
    /// second from its start hung so. What is not delivered
    /// now is found again at the next cycle.
    fn deliver_aside(inner: &Arc<Inner>) {
        if inner.delivering.swap(true, Ordering::AcqRel) {
            return;
        }
        let i = inner.clone();
        let spawned = crate::thread::spawn("gpu-trace-sources", move || {
            crate::guard::run("sources delivery", || i.notify_backend());
            i.delivering.store(false, Ordering::Release);
        });
        if spawned.is_err() {
            inner.delivering.store(false, Ordering::Release);
        }
    }

    /// Runs the backend's flush on a helper thread while the emitter goes on
    /// writing: a vendor flush (`cuptiActivityFlushAll`) can wait for the
    /// vendor's delivery thread, which may be waiting for room in our
    /// queue, which only the emitter makes.
    fn backend_flush(&self, forced: bool, mut write: impl FnMut()) {
        let Some(b) = self.backend.load_full() else {
            return;
        };
        let done = AtomicBool::new(false);
        let spawned = std::thread::scope(|s| {
            let flusher = std::thread::Builder::new()
                .name("gpu-trace-flush".into())
                .spawn_scoped(s, || {
                    crate::thread::block_signals();
                    crate::guard::run("backend flush", || b.flush(forced));
                    done.store(true, Ordering::Release);
                    self.wake();
                });
            if flusher.is_err() {
                return false;
            }
            while !done.load(Ordering::Acquire) {
                write();
                let c = self.ctl.lock().unwrap_or_else(|e| e.into_inner());
                if !done.load(Ordering::Acquire) {
                    let _ = self
                        .cv
                        .wait_timeout(c, Duration::from_millis(5))
                        .unwrap_or_else(|e| e.into_inner());
                }
            }
            true
        });
        if !spawned {
            crate::guard::run("backend flush", || b.flush(forced));
        }
    }
}

/// The root object: owns the Perfetto session, the emitter thread and the
/// tables backends intern into.
pub struct Tracer {
    inner: Arc<Inner>,
    emitter: Mutex<Option<std::thread::JoinHandle<()>>>,
    session: Mutex<Option<FileSession>>,
    output: Option<PathBuf>,
    pid: u32,
    shut: AtomicBool,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("backend", &self.inner.info.name)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl Tracer {
    /// Registers the data sources, starts the standalone session (unless in
    /// system mode) and the emitter thread.
    ///
    /// # Errors
    /// When nothing can be traced; the caller prints the error and lets the
    /// application run untraced.
    ///
    /// Threads started here (ours and Perfetto's) keep the application's
    /// signals away from them (see [`crate::thread`]).
    pub fn start(opts: TracerOptions) -> Result<Tracer, StartError> {
        crate::thread::with_signals_blocked(|| Self::start_blocked(opts))
    }

    fn start_blocked(opts: TracerOptions) -> Result<Tracer, StartError> {
        if crate::guard::tripped() {
            return Err(StartError::Broken);
        }
        let settings = opts.settings;
        let suffix = settings
            .suffix
            .clone()
            .unwrap_or_else(|| opts.backend.suffix.to_owned());
        let output = match (settings.mode.file(), &settings.output) {
            (true, Some(p)) => Some(p.clone()),
            (true, None) => return Err(StartError::NoOutput),
            (false, _) => None,
        };
        // The track-event categories the standalone session enables.
        let mut cats = Vec::new();
        if settings.recording.api {
            cats.push(opts.backend.categories.api.name);
        }
        if settings.recording.markers {
            cats.push(opts.backend.categories.markers.name);
        }
        let file_config = || {
            sink::file_trace_config(
                &suffix,
                settings.buffer_kb,
                &cats,
                settings.recording.counters,
                settings.recording.telemetry,
            )
        };
        let direct = settings.mode == Mode::File && settings.file_sink == FileSink::Direct;
        let out = match &output {
            // Standalone: no Perfetto in the process at all.
            Some(path) if direct => {
                let process_uuid = crate::direct::process_track_uuid();
                Out::Direct(Box::new(Direct {
                    open: AtomicBool::new(true),
                    recording: settings.recording,
                    writer: Mutex::new(Some(FileWriter::create(
                        path,
                        &file_config(),
                        process_uuid,
                    )?)),
                    process_uuid,
                }))
            }
            _ => {
                let mut backends = Backends::empty();
                if settings.mode.file() {
                    backends |= Backends::IN_PROCESS;
                }
                if settings.mode.system() {
                    backends |= Backends::SYSTEM;
                }
                Out::Sdk(sink::register(&suffix, &opts.backend.categories, backends)?)
            }
        };
        // A batch is written whole between two pacing checks: keep it to an
        // eighth of the buffer.
        let limits = Limits {
            events: settings
                .limits
                .events
                .min(
                    settings.buffer_kb as usize * 1024
                        / 8
                        / std::mem::size_of::<crate::model::Event>(),
                )
                .max(64),
            ..settings.limits
        };
        let recorder = Recorder::new(limits);
        let names = Arc::new(Names::default());
        let counters = Arc::new(Counters::default());
        let inner = Arc::new(Inner {
            recorder: recorder.clone(),
            names: names.clone(),
            kernels: Arc::new(Kernels::default()),
            devices: Arc::new(Devices::default()),
            counters,
            callstacks: Arc::default(),
            listener: ArcSwapOption::const_empty(),
            telemetry_on: Mutex::new(None),
            backend: ArcSwapOption::const_empty(),
            ctl: Mutex::new(Ctl::default()),
            cv: Condvar::new(),
            counter_requests: Mutex::new(Default::default()),
            sources: Mutex::new(Sources::default()),
            notify: Mutex::new(None),
            delivering: AtomicBool::new(false),
            capture_ranges: opts.capture_ranges,
            capturing: AtomicBool::new(!opts.capture_ranges),
            captured: AtomicBool::new(false),
            reader: Mutex::new(None),
            service_losses: Mutex::new(None),
            notes: Notes::default(),
            summary_written: AtomicBool::new(false),
            info: opts.backend,
            out,
            clock: opts.clock,
            settings: settings.clone(),
        });
        let weak = Arc::downgrade(&inner);
        recorder.set_wake(Box::new(move || {
            if let Some(i) = weak.upgrade() {
                i.wake();
            }
        }));
        // A panic anywhere stops recording at once; the emitter, woken,
        // switches every source off and the backend the vendor's tracing.
        let weak = Arc::downgrade(&inner);
        crate::guard::on_trip(move || {
            if let Some(i) = weak.upgrade() {
                i.recorder.close();
                i.wake();
            }
        });
        sink::set_route(Some(inner.clone()));

        let emitter = {
            let inner = inner.clone();
            crate::thread::spawn("gpu-trace-emit", move || emitter_loop(inner)).map_err(|e| {
                sink::set_route(None);
                StartError::Thread(e)
            })?
        };

        let mut tracer = Tracer {
            inner: inner.clone(),
            emitter: Mutex::new(Some(emitter)),
            session: Mutex::new(None),
            output: None,
            pid: std::process::id(),
            shut: AtomicBool::new(false),
        };

        if let (Some(path), Out::Direct(_)) = (&output, &inner.out) {
            crate::verbose!("writing {}", path.display());
            tracer.output = Some(path.clone());
        } else if let (Some(path), Out::Sdk(reg)) = (output, &inner.out) {
            let session = FileSession::start(file_config(), &path, settings.flush_period)
                .inspect_err(|_| tracer.abandon())?;
            if !reg.rs.is_enabled() {
                session.stop(Duration::from_secs(2));
                tracer.abandon();
                return Err(StartError::NotEnabled(path));
            }
            *inner.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.reader());
            *tracer.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
            crate::verbose!("writing {}", path.display());
            tracer.output = Some(path);
        }
        inner.refresh_sources();
        inner.notify_backend();
        Ok(tracer)
    }

    fn abandon(&self) {
        sink::set_route(None);
        self.stop_emitter();
    }

    /// The trace's log, for warnings the trace should carry.
    pub fn notes(&self) -> Notes {
        self.inner.notes.clone()
    }

    /// Where the standalone trace is written (`None` in system mode).
    pub fn output_path(&self) -> Option<&std::path::Path> {
        self.output.as_deref()
    }

    /// The recording handle for backends.
    pub fn recorder(&self) -> &Recorder {
        &self.inner.recorder
    }

    /// The string table.
    pub fn names(&self) -> &Arc<Names> {
        &self.inner.names
    }

    /// The source call stacks API calls refer to.
    pub fn callstacks(&self) -> &Arc<gpu_trace_model::callstack::Callstacks> {
        &self.inner.callstacks
    }

    /// The kernel table.
    pub fn kernels(&self) -> &Arc<Kernels> {
        &self.inner.kernels
    }

    /// Describes a GPU (written as `GpuInfo`).
    pub fn add_device(&self, d: Device) {
        self.inner.devices.upsert(d);
    }

    /// The device table, for backends that describe devices from their own
    /// threads.
    pub fn devices(&self) -> &Arc<Devices> {
        &self.inner.devices
    }

    /// Registers a counter and returns its id.
    pub fn register_counter(&self, spec: CounterSpec) -> CounterId {
        self.inner.counters.register(spec)
    }

    /// The counter table, for backends that register counters from their own threads
    /// (when a counters session names them).
    pub fn counters(&self) -> &Arc<Counters> {
        &self.inner.counters
    }

    /// Installs the agent's listener and tells it at once whether telemetry
    /// is recorded now; it is told again whenever that changes, and asked
    /// for its last lines when the trace ends.
    pub fn set_listener(&self, l: Box<dyn WriterListener>) {
        self.inner.listener.store(Some(Arc::new(l)));
        *self
            .inner
            .telemetry_on
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        let on = self
            .inner
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .telemetry;
        self.inner.tell_telemetry(on);
    }

    /// Who the backend is.
    pub fn backend(&self) -> &BackendInfo {
        &self.inner.info
    }

    /// The settings the tracer runs with.
    pub fn settings(&self) -> &TraceSettings {
        &self.inner.settings
    }

    /// Installs the backend hooks and tells it what is enabled now.
    pub fn set_backend(&self, b: Box<dyn Backend>) {
        {
            let mut delivered = self.inner.notify.lock().unwrap_or_else(|e| e.into_inner());
            self.inner.backend.store(Some(Arc::new(b)));
            // A new backend has been told nothing yet.
            *delivered = None;
        }
        self.inner.notify_backend();
    }

    /// What should be recorded now.
    pub fn sources(&self) -> Sources {
        self.inner
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether GPU activity is being recorded: one relaxed load, for hot paths.
    pub fn gpu_enabled(&self) -> bool {
        self.inner.out.sequences()[0]
    }

    /// Whether API calls are recorded: one relaxed load.
    pub fn api_enabled(&self) -> bool {
        self.inner.out.category(API)
    }

    /// Whether NVTX / roctx are recorded: one relaxed load.
    pub fn markers_enabled(&self) -> bool {
        self.inner.out.category(MARKERS)
    }

    /// The switch a backend flips at the application's capture-range calls
    /// (see [`TracerOptions::capture_ranges`]).
    pub fn capture_switch(&self) -> CaptureSwitch {
        CaptureSwitch(self.inner.clone())
    }

    /// Writes everything recorded so far, after asking the backend to flush.
    /// Returns false if the emitter did not answer within `limit`.
    pub fn flush(&self, limit: Duration) -> bool {
        self.run_cycle(CycleKind::Flush, limit)
    }

    /// Flushes, stops the session and finalises the file, and returns what
    /// was lost on the way (for the agent's line on stderr). Idempotent
    /// (`None` after the first), does nothing in a forked child (`None`),
    /// and never waits longer than `limit` overall.
    pub fn shutdown(&self, limit: Duration) -> Option<Losses> {
        if std::process::id() != self.pid || self.shut.swap(true, Ordering::AcqRel) {
            return None;
        }
        self.stop_listener();
        let session = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let mut report = None;
        match session {
            Some(s) => {
                // Everything recorded is written while the session still
                // runs, then the service's statistics are read, so that the
                // summary in the trace can say what Perfetto lost too.
                self.run_cycle(CycleKind::Drain, limit);
                let losses = s.sync(limit);
                *self
                    .inner
                    .service_losses
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = losses;
                self.run_cycle(CycleKind::Summary, limit);
                *self.inner.reader.lock().unwrap_or_else(|e| e.into_inner()) = None;
                // Stopping runs our stop callback, which writes anything
                // that came in since.
                report = s.stop(limit);
                if report.is_none() {
                    crate::warn!(
                        "the trace session did not stop within {limit:?}; the file holds data up to the last write"
                    );
                }
            }
            None => {
                // System mode: what is left, then the summary, goes to
                // whichever sessions are still running. The direct writer
                // gets them the same way, then ends its file.
                self.run_cycle(CycleKind::Drain, limit);
                self.run_cycle(CycleKind::Summary, limit);
                if let Out::Direct(d) = &self.inner.out {
                    d.open.store(false, Ordering::Relaxed);
                    let writer = d.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
                    report = writer.map(|mut w| {
                        let r = w.finish(limit);
                        sink::SessionReport {
                            losses: None,
                            bytes: r.bytes,
                            error: r.error,
                        }
                    });
                }
            }
        }
        self.inner.recorder.close();
        sink::set_route(None);
        self.stop_emitter();
        if let Some(r) = &report {
            if let Some(e) = &r.error {
                crate::warn!(
                    "writing {} failed ({e}); the file holds what was written before",
                    self.output
                        .as_deref()
                        .unwrap_or(std::path::Path::new("?"))
                        .display()
                );
            }
            if r.losses.is_some() {
                *self
                    .inner
                    .service_losses
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = r.losses;
            }
        }
        if let (Some(p), Some(r)) = (&self.output, &report) {
            crate::verbose!("trace written to {} ({} bytes)", p.display(), r.bytes);
        }
        Some(Losses {
            drops: self.inner.recorder.drop_counts().to_vec(),
            service: *self
                .inner
                .service_losses
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        })
    }

    /// Asks the agent to stop what feeds the trace (the telemetry
    /// sampler) before the last events are written, and puts the lines it
    /// gives into the trace's log.
    fn stop_listener(&self) {
        let Some(l) = self.inner.listener.load_full() else {
            return;
        };
        let lines = crate::guard::run("trace end", || l.ending()).unwrap_or_default();
        for (warning, line) in lines {
            if warning {
                self.inner.notes.warn(line);
            } else {
                self.inner.notes.info(line);
            }
        }
    }

    fn run_cycle(&self, kind: CycleKind, limit: Duration) -> bool {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.inner.request(
            kind,
            Box::new(move || {
                let _ = tx.send(());
            }),
        );
        rx.recv_timeout(limit).is_ok()
    }

    fn stop_emitter(&self) {
        {
            let mut c = self.inner.ctl.lock().unwrap_or_else(|e| e.into_inner());
            c.exit = true;
            self.inner.cv.notify_one();
        }
        if let Some(h) = self
            .emitter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = h.join();
        }
    }

    /// Events dropped so far, by kind.
    pub fn recorder_drops(&self) -> Vec<(DropKind, u64)> {
        self.inner.recorder.drop_counts().to_vec()
    }
}

/// What a trace lost, as [`Tracer::shutdown`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Losses {
    /// Events dropped before they were written, by kind.
    pub drops: Vec<(DropKind, u64)>,
    /// The tracing service's losses, as last learnt (file mode).
    pub service: Option<ServiceLosses>,
}

/// Opens and closes capture ranges: recording runs (as far as the session
/// asks for it) only while a range is open. Cheap to clone. The agent's
/// recording windows drive it as a [`RecordingSwitch`].
#[derive(Clone)]
pub struct CaptureSwitch(Arc<Inner>);

impl std::fmt::Debug for CaptureSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CaptureSwitch")
            .field(&self.0.capturing.load(Ordering::Relaxed))
            .finish()
    }
}

impl CaptureSwitch {
    /// Opens (`true`) or closes a range. The backend's `sources_changed`
    /// runs on this thread before it returns, so that work the caller
    /// submits next is already inside (or outside) the range. Does nothing
    /// without [`TracerOptions::capture_ranges`], or when nothing changes.
    pub fn set(&self, open: bool) {
        let i = &self.0;
        if !i.capture_ranges || i.capturing.swap(open, Ordering::AcqRel) == open {
            return;
        }
        if open {
            i.captured.store(true, Ordering::Relaxed);
        }
        crate::verbose!("recording switched {}", if open { "on" } else { "off" });
        // Delivered on this thread even when another one (the emitter)
        // stored the change first: the range is switched when this returns.
        i.refresh_sources();
        i.notify_backend();
        // An idle emitter waits a whole flush period: back to its pace.
        i.wake();
    }

    /// Whether a range is open.
    pub fn is_open(&self) -> bool {
        self.0.capturing.load(Ordering::Relaxed)
    }

    /// Whether a range was ever opened (to tell, at exit, a run whose
    /// application never asked for recording).
    pub fn ever_opened(&self) -> bool {
        self.0.captured.load(Ordering::Relaxed)
    }
}

impl RecordingSwitch for CaptureSwitch {
    fn set(&self, open: bool) {
        CaptureSwitch::set(self, open);
    }

    fn is_open(&self) -> bool {
        CaptureSwitch::is_open(self)
    }
}

const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

/// When the direct writer's first backend flush comes, whatever the flush
/// period: a process that replaces its program (`exec`) runs no exit
/// handler, so its file holds what was written before, as a killed
/// process's does; and the GPUs the first records name are described (and
/// their telemetry started) this soon.
const EARLY_FLUSH: Duration = Duration::from_millis(100);
const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(1);

fn emitter_loop(inner: Arc<Inner>) {
    crate::collector::mark_drainer_thread();
    let clock = match &inner.clock {
        GpuClock::Boottime => ClockSpec::Boottime,
        GpuClock::Custom { name, .. } => ClockSpec::Custom(GpuClock::clock_id(name)),
    };
    let sampler = match &inner.clock {
        GpuClock::Boottime => None,
        GpuClock::Custom { sample, .. } => Some(sample.clone()),
    };
    let mut enc = Encoder::new(
        std::process::id(),
        inner.info,
        clock,
        sampler,
        crate::emit::Tables {
            names: inner.names.clone(),
            kernels: inner.kernels.clone(),
            devices: inner.devices.clone(),
            counters: inner.counters.clone(),
            callstacks: inner.callstacks.clone(),
            thread_names: inner.recorder.thread_names(),
        },
    );
    if inner.settings.mode.system() {
        // A system session's file holds every traced process of the host.
        enc.name_process_in_queues();
    }
    enc.set_rank(inner.settings.rank);
    if let Out::Direct(d) = &inner.out {
        enc.set_process_uuid(d.process_uuid);
    }
    let mut last_backend_flush = Instant::now();
    // The in-process service flushed at once and soon after its start;
    // the direct writer's first flush comes as soon (see EARLY_FLUSH).
    let mut early_flush = matches!(inner.out, Out::Direct(_));
    let mut last_snapshot: Option<Instant> = None;
    let mut marks = Watermarks::default();
    let limits = inner.recorder.limits();
    let mut pacer = Pacer::new(
        inner.settings.buffer_kb as u64 * 1024,
        limits.events * limits.sealed,
    );
    loop {
        let (requests, exit) = {
            let mut c = inner.ctl.lock().unwrap_or_else(|e| e.into_inner());
            if !c.wake && !c.exit && c.requests.is_empty() {
                // Nothing recorded (paused, or no session): wake for the
                // backend's flush only. A switch or a session that turns
                // anything on wakes the emitter at once.
                let wait = if inner.idle() {
                    inner.settings.flush_period.max(DRAIN_INTERVAL)
                } else {
                    DRAIN_INTERVAL
                };
                c = inner
                    .cv
                    .wait_timeout(c, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            c.wake = false;
            (std::mem::take(&mut c.requests), c.exit)
        };
        let any = |f: fn(&CycleKind) -> bool| requests.iter().any(|r| f(&r.kind));
        let stop = any(|k| matches!(k, CycleKind::Stop));
        let forced = stop || any(|k| matches!(k, CycleKind::Drain));
        let summary = stop || any(|k| matches!(k, CycleKind::Summary));
        let mut more = false;
        let ok = crate::guard::run("trace emitter", || {
            inner.refresh_sources();
            if inner.needs_delivery() {
                Inner::deliver_aside(&inner);
            }
            let since = last_backend_flush.elapsed();
            let soon = since >= SOON_FLUSH
                && inner
                    .backend
                    .load()
                    .as_ref()
                    .is_some_and(|b| b.wants_flush_soon());
            let period = if early_flush {
                EARLY_FLUSH.min(inner.settings.flush_period)
            } else {
                inner.settings.flush_period
            };
            if !requests.is_empty() || since >= period || soon {
                let started = activity_now(&inner.clock);
                inner.backend_flush(forced, || {
                    cycle(&inner, &mut enc, &mut pacer, false);
                });
                last_backend_flush = Instant::now();
                early_flush = false;
                marks.flushed(started);
            }
            if let GpuClock::Custom { sample, .. } = &inner.clock
                && last_snapshot.is_none_or(|t| t.elapsed() >= SNAPSHOT_INTERVAL)
            {
                last_snapshot = Some(Instant::now());
                if let Some((gpu, boot)) = sample() {
                    write_rs(
                        &inner,
                        &mut |enc: &mut Encoder, _seq, sink| {
                            enc.write_clock_snapshot(gpu, boot, sink)
                        },
                        &mut enc,
                    );
                }
            }
            more = cycle(&inner, &mut enc, &mut pacer, !requests.is_empty());
            if forced {
                let points = enc.finish_activity();
                write_activity(&inner, &mut enc, &points);
            } else if !more && let Some((gpu, host)) = marks.drained() {
                let points = enc.advance_activity(gpu, host);
                write_activity(&inner, &mut enc, &points);
            }
            if summary && !inner.summary_written.swap(true, Ordering::AcqRel) {
                write_summary(&inner, &mut enc);
            }
            if !requests.is_empty() {
                // Whoever waits on a request expects its data to be in the
                // service's buffer.
                pacer.sync(&inner, &mut enc);
            }
            // The direct writer's file ends with everything written so far
            // (and with whole packets) after every cycle.
            inner.out.write_out();
        });
        for r in requests {
            (r.done)();
        }
        if more {
            inner.ctl.lock().unwrap_or_else(|e| e.into_inner()).wake = true;
        }
        if ok.is_none() {
            // Stop recording: nothing will drain the buffers any more.
            inner.recorder.close();
            sink::set_route(None);
        }
        if exit || ok.is_none() {
            // Answer requests that raced with the exit.
            let mut c = inner.ctl.lock().unwrap_or_else(|e| e.into_inner());
            c.exit = true;
            for r in std::mem::take(&mut c.requests) {
                (r.done)();
            }
            return;
        }
    }
}

/// When the backend's flushes started, to know which busy and wait
/// intervals can no longer change. Once a flush has been delivered and
/// everything recorded has been written, every record of work that ended
/// before the *previous* flush started has been seen: CUPTI's and
/// rocprofiler's flushes hand over all completed records, and a record
/// can complete a little after its work ends, so the watermark lags by one
/// flush period (`INJECTION_FLUSH_PERIOD_MS`) to leave it that long.
#[derive(Debug, Default)]
struct Watermarks {
    prev: Option<(u64, u64)>,
    flushed: Option<(u64, u64)>,
}

impl Watermarks {
    /// A flush that started at `at` (GPU clock, BOOTTIME) was delivered.
    fn flushed(&mut self, at: Option<(u64, u64)>) {
        if let Some(at) = at {
            self.flushed = Some(at);
        }
    }

    /// Everything recorded was written: the watermarks now passed.
    fn drained(&mut self) -> Option<(u64, u64)> {
        let f = self.flushed.take()?;
        self.prev.replace(f)
    }
}

/// Now in the GPU clock and in BOOTTIME.
fn activity_now(clock: &GpuClock) -> Option<(u64, u64)> {
    match clock {
        GpuClock::Boottime => {
            let t = crate::clock::boottime_ns();
            Some((t, t))
        }
        GpuClock::Custom { sample, .. } => sample(),
    }
}

/// Writes busy points with the GPU work and wait points with the API calls.
fn write_activity(inner: &Inner, enc: &mut Encoder, points: &crate::emit::ActivityPoints) {
    if points.is_empty() {
        return;
    }
    if !points.busy.is_empty() {
        write_rs(
            inner,
            &mut |enc: &mut Encoder, seq, sink| enc.write_busy(seq, &points.busy, sink),
            enc,
        );
    }
    if !points.waits.is_empty() {
        inner
            .out
            .te(API, &mut |sink| enc.write_waits(&points.waits, sink));
    }
}

type RsWrite<'x> =
    dyn FnMut(&mut Encoder, &mut crate::emit::RsSeq, &mut dyn crate::emit::PacketSink) + 'x;

fn write_rs(inner: &Inner, f: &mut RsWrite<'_>, enc: &mut Encoder) {
    inner.out.rs(&mut |seq, sink| f(enc, seq, sink));
}

/// Most events in a group of batches written between two pacing checks.
const GROUP_EVENTS: usize = 16 * 1024;
/// How long the emitter waits for the service to take committed chunks.
const ACK_LIMIT: Duration = Duration::from_secs(2);
/// How long the emitter waits for the session to read its buffer.
const READ_LIMIT: Duration = Duration::from_secs(5);
/// Bytes the emitter writes between two flushes of its writers: a quarter
/// of the shared memory (`sink::SHMEM_KB`).
const SHMEM_MARK: u64 = sink::SHMEM_KB as u64 * 1024 / 4;

/// Keeps the emitter from outrunning Perfetto, without making it wait for
/// Perfetto in the common case: for packets that go through the SDK (system
/// mode, and [`FileSink::Service`]); the direct file writer writes as the
/// emitter encodes and needs no pacing. Both limits are counted in bytes the
/// emitter itself wrote ([`sink::bytes_written`]), and each works as a
/// window of two:
/// - every `ack_mark` bytes it flushes its writers; before the next flush
///   it waits for the acknowledgements of the previous one, so at most two
///   marks (half the shared memory) are ever uncommitted, and the shared
///   memory never fills (where the SDK's track-event writers would drop
///   silently);
/// - every `read_mark` bytes (an eighth of the central buffer) it asks the
///   standalone session to read the buffer into the file; before the next
///   request it waits for the previous read, so the ring never holds more
///   than about half its size unread, and never overwrites what was not
///   read.
///
/// The waits are the emitter's alone; upstream, full batches queue up to
/// [`crate::Limits::sealed`] and vendor threads wait for room.
struct Pacer {
    flushed_at: u64,
    requested_at: u64,
    ack_mark: u64,
    read_mark: u64,
    acks: Option<sink::Acks>,
    read: Option<std::sync::mpsc::Receiver<()>>,
    /// Events per group: about `ack_mark` bytes of packets (events encode
    /// to fewer bytes than they take in memory).
    group_events: usize,
}

impl Pacer {
    /// `queue_events`: how many events the recorder's queue holds. A part
    /// is at most half of it, so that a thread waiting for room gets it
    /// after half a queue is written.
    fn new(buffer_bytes: u64, queue_events: usize) -> Self {
        let now = sink::bytes_written();
        let read_mark = buffer_bytes / 8;
        let ack_mark = SHMEM_MARK.min(read_mark);
        Self {
            flushed_at: now,
            requested_at: now,
            ack_mark,
            read_mark,
            acks: None,
            read: None,
            group_events: (ack_mark as usize / std::mem::size_of::<crate::model::Event>())
                .min(queue_events / 2)
                .clamp(1, GROUP_EVENTS),
        }
    }

    /// Flushes the writers now and waits for it (a request's data must be
    /// in the buffer when it is answered).
    fn sync(&mut self, inner: &Inner, enc: &mut Encoder) {
        let Out::Sdk(reg) = &inner.out else { return };
        self.wait_acks();
        sink::flush_writers(&reg.categories, &mut |s| enc.describe_process_on_reset(s))
            .wait(ACK_LIMIT);
        self.flushed_at = sink::bytes_written();
    }

    fn wait_acks(&mut self) {
        if let Some(a) = self.acks.take()
            && !a.wait(ACK_LIMIT)
        {
            crate::verbose!("the tracing service did not take our chunks within {ACK_LIMIT:?}");
        }
    }

    fn check(&mut self, inner: &Inner, enc: &mut Encoder) {
        let Out::Sdk(reg) = &inner.out else { return };
        let now = sink::bytes_written();
        if now - self.flushed_at >= self.ack_mark {
            self.wait_acks();
            self.acks = Some(sink::flush_writers(&reg.categories, &mut |s| {
                enc.describe_process_on_reset(s)
            }));
            self.flushed_at = now;
        }
        if now - self.requested_at >= self.read_mark {
            if let Some(r) = self.read.take()
                && r.recv_timeout(READ_LIMIT).is_err()
            {
                crate::verbose!("the trace buffer was not read within {READ_LIMIT:?}");
            }
            let reader = inner
                .reader
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            self.read = reader.map(|r| r.request());
            self.requested_at = now;
        }
    }
}

/// How long a cycle that no request waits for may write before the emitter
/// looks at its requests and sources again.
const CYCLE_LIMIT: Duration = Duration::from_millis(200);

/// Writes what is recorded, part after part. With `all`, until nothing is
/// left (someone waits for it); else for at most [`CYCLE_LIMIT`]. Returns
/// whether events were left.
fn cycle(inner: &Inner, enc: &mut Encoder, pacer: &mut Pacer, all: bool) -> bool {
    let started = Instant::now();
    loop {
        let batches = inner.recorder.drain_some(pacer.group_events);
        if batches.is_empty() {
            return false;
        }
        write_group(inner, enc, &batches);
        pacer.check(inner, enc);
        inner.recorder.recycle(batches);
        if !all && started.elapsed() >= CYCLE_LIMIT {
            return true;
        }
    }
}

fn write_group(inner: &Inner, enc: &mut Encoder, batches: &[crate::collector::Batch]) {
    let ids = enc.prepare(batches);
    write_rs(
        inner,
        &mut |enc: &mut Encoder, seq, sink| enc.write_render_stages(seq, batches, &ids, sink),
        enc,
    );
    let has = |f: fn(&crate::model::Event) -> bool| batches.iter().any(|b| b.events.iter().any(f));
    if has(|e| matches!(e, crate::model::Event::Api(_))) {
        inner
            .out
            .te(API, &mut |sink| enc.write_api_calls(batches, sink));
    }
    if has(|e| matches!(e, crate::model::Event::Log(_))) {
        write_rs(
            inner,
            &mut |enc: &mut Encoder, seq, sink| enc.write_logs(seq, batches, sink),
            enc,
        );
    }
    if has(|e| matches!(e, crate::model::Event::Marker(_))) {
        inner
            .out
            .te(MARKERS, &mut |sink| enc.write_markers(batches, sink));
    }
    if has(|e| matches!(e, crate::model::Event::KernelCounters(_))) {
        inner
            .out
            .ctr(&mut |seq, sink| enc.write_counters(seq, batches, sink));
    }
    if has(|e| matches!(e, crate::model::Event::Counters(_))) {
        inner
            .out
            .tel(&mut |seq, sink| enc.write_telemetry(seq, batches, sink));
    }
}

fn write_summary(inner: &Inner, enc: &mut Encoder) {
    let t: Totals = enc.totals();
    let drops = inner.recorder.drop_counts();
    let mut summary = format!(
        "gpu-trace summary: kernels={} memory_ops={} api_calls={} markers={} counter_samples={} telemetry_samples={}",
        t.kernels, t.memory_ops, t.api_calls, t.markers, t.counter_samples, t.telemetry_samples
    );
    for (key, n) in [
        ("uvm_events", t.uvm_events),
        ("memory_samples", t.memory_samples),
    ] {
        if n > 0 {
            summary.push_str(&format!(" {key}={n}"));
        }
    }
    let mut lines = vec![(false, summary)];
    let losses = *inner
        .service_losses
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let dropped = gpu_trace_reader::loss_counts(&drops, losses);
    let mut notes = inner.notes.take();
    let late = enc.activity_late();
    if late > 0 {
        notes.push((
            true,
            format!(
                "{late} activity records arrived after their {} ms interval was written; the busy and GPU-wait counters leave them out",
                crate::busy::INTERVAL / 1_000_000
            ),
        ));
    }
    lines.push((
        !dropped.is_empty(),
        format!(
            "gpu-trace dropped: {}",
            if dropped.is_empty() {
                "none".to_owned()
            } else {
                dropped.join(" ")
            }
        ),
    ));
    lines.extend(notes);
    for (warning, msg) in &lines {
        write_rs(
            inner,
            &mut |enc: &mut Encoder, seq, sink| enc.write_log(seq, *warning, msg, sink),
            enc,
        );
    }
    if inner.settings.mode == Mode::System {
        crate::verbose!("{}", lines[0].1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_model::filter::FilterSpec;

    fn request(session: u64, tx: Option<&str>) -> CounterRequest {
        CounterRequest {
            instrumented: true,
            session,
            selection: tx.map(|g| {
                Arc::new(FilterSpec {
                    tx_include: vec![g.to_owned()],
                    ..Default::default()
                })
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_counters_session_selects_the_kernels() {
        assert_eq!(kernel_filter([].iter()), None);
        assert_eq!(kernel_filter([request(3, None)].iter()), None);
        let f = kernel_filter([request(4, Some("train*")), request(5, None)].iter())
            .expect("the first session's");
        assert_eq!(
            (f.session, f.spec.tx_include.as_slice()),
            (4, &["train*".to_owned()][..])
        );
        assert_eq!(
            kernel_filter([request(6, None), request(7, Some("x"))].iter()),
            None,
            "the first leaves it to the environment"
        );
    }

    #[test]
    fn the_watermark_is_the_previous_flush_once_everything_is_written() {
        let mut w = Watermarks::default();
        // Nothing flushed, nothing passed.
        assert_eq!(w.drained(), None);
        // The first flush only marks a start: work ending before it may
        // still be in the vendor's hands.
        w.flushed(Some((100, 1_100)));
        assert_eq!(w.drained(), None);
        // Once the second flush is written out, the first one's start is
        // passed (in both clocks), once.
        w.flushed(Some((200, 1_200)));
        assert_eq!(w.drained(), Some((100, 1_100)));
        assert_eq!(w.drained(), None);
        // A flush whose clocks could not be read moves nothing.
        w.flushed(None);
        assert_eq!(w.drained(), None);
        w.flushed(Some((300, 1_300)));
        assert_eq!(w.drained(), Some((200, 1_200)));
    }
}
