//! Per-kernel hardware counters: CUPTI's range profiler in auto-range
//! mode, user replay for one-pass metric sets and kernel replay for the
//! others, set up lazily.
//!
//! Nothing of the profiler exists until a counters session asks for
//! metrics (`-t counters`, `-m`, `INJECTION_METRICS`, or a system session's
//! `gpu.counters.nv`) and a kernel is launched: then CUPTI's profiler is
//! initialised once, each device gets a validated metric set (a bad name
//! is said once and the good ones go on), and each context its range
//! profiler. A profiled launch is bracketed by the driver's launch
//! callbacks on the launching thread; one launch is profiled at a time in
//! the process, and others wait at their entry.
//!
//! - **Kernel replay** (a metric set that needs several passes): at entry
//!   a session starts and a range is pushed, at exit the range is popped,
//!   the session stopped (CUPTI has replayed the kernel once per pass,
//!   saving and restoring its memory) and the values evaluated.
//! - **User replay** (one pass: nothing to replay): the kernel runs once,
//!   as launched. A session stays open over consecutive profiled launches
//!   of a context, one auto range each, and is closed (stopped, decoded,
//!   evaluated) when it holds [`CudaConfig::counters_batch`] kernels, when
//!   a launch that is not profiled (the filter's choice, a graph, a
//!   capturing stream, another context) comes, when the counters session
//!   ends, when the context is destroyed, and at exit. So a filter that
//!   picks one kernel in a thousand leaves the others unprofiled, and
//!   profiling every kernel pays the session's setup once per batch.
//!
//! The values meet the kernel's activity record (its GPU interval) by
//! correlation id, whichever comes first, and go to the recorder as
//! [`KernelCounters`].
//!
//! [`CudaConfig::counters_batch`]: crate::config::CudaConfig::counters_batch
//!
//! Kernels launched through CUDA graphs are not profiled: the range
//! profiler measures one launch at a time, and a graph launch is many.
//! That is said once per process.

use crate::config::CountersReplay;
use cupti::Cupti;
use cupti::callback::{ApiCallback, Site};
use cupti::cbid::{ApiDomain, CallKind};
use cupti::profiler::{
    MetricCatalog, MetricConfig, MetricInfo, MetricKind, Profiler, RangeProfiler, RangeValues,
    Ranges, Replay,
};
use gpu_trace_model::Recorder;
use gpu_trace_model::filter::{KernelFilter, KernelSelector, SessionFilter};
use gpu_trace_model::model::{
    CounterGroup, CounterId, CounterSpec, DropKind, KernelCounters, KernelExec, Unit,
};
use gpu_trace_model::registry::Counters;
use gpu_trace_perfetto::Notes;
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, RwLock};
use std::time::Duration;

use gpu_trace_model::clock::boottime_ns;

/// Collected when a counters session names none: what a performance
/// engineer looks at first (ncu's "speed of light", memory and occupancy
/// numbers), each available on sm_90.
pub(crate) const DEFAULT_METRICS: [&str; 10] = [
    "gpu__time_duration.sum",
    "gpc__cycles_elapsed.max",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "smsp__inst_executed.sum",
];

/// Longest a launch waits for another thread's profiled launch to end.
const GATE_LIMIT: Duration = Duration::from_secs(30);

thread_local! {
    // The launch this thread is profiling: correlation id, entry time.
    static PROFILING: Cell<Option<(u32, u64)>> = const { Cell::new(None) };
}

/// Whether this thread is inside a profiled launch (its exit must reach
/// [`Counting::on_api`] even if counters were switched off meanwhile).
pub(crate) fn profiling() -> bool {
    PROFILING.with(Cell::get).is_some()
}

/// A device's validated metric set and the tracer's ids of its metrics.
struct DeviceMetrics {
    config: MetricConfig,
    ids: Vec<CounterId>,
    /// Index of `gpu__time_duration.sum` among the accepted metrics.
    duration: Option<usize>,
    /// How this device's profiled kernels are replayed.
    replay: Replay,
    /// Profiled kernels per session (1 under kernel replay).
    batch: usize,
}

/// A profiled launch of an open session.
struct Launch {
    corr: u64,
    exit: u64,
}

/// A context's range profiler and its open session, if any.
struct Ctx {
    ctx: cupti::Context,
    rp: RangeProfiler<'static>,
    dm: &'static DeviceMetrics,
    /// The open session's launches, in launch order (its ranges' order).
    open: Option<Vec<Launch>>,
}

/// Time spent profiling, ns, and the kernels profiled.
#[derive(Default)]
struct Cost {
    setup: std::sync::atomic::AtomicU64,
    launch: std::sync::atomic::AtomicU64,
    collect: std::sync::atomic::AtomicU64,
    kernels: std::sync::atomic::AtomicU64,
}

/// The lazily built profiler state.
#[derive(Default)]
struct State {
    profiler: Option<Profiler>,
    /// Set after a fault that ends counters for the process.
    off: bool,
    /// Metric sets by device ordinal (`None`: counters unavailable there).
    devices: FxHashMap<u32, Option<&'static DeviceMetrics>>,
    /// Range profilers by context handle (`None`: unavailable there).
    contexts: FxHashMap<u64, Option<Ctx>>,
    /// The context whose session is open (at most one in the process).
    open: Option<u64>,
}

/// A profiled launch, from its entry until its counters and its kernel
/// record have both been written.
struct Entry {
    /// Launch entry and exit (the kernel and its replays ran in between).
    enter: u64,
    exit: Option<u64>,
    /// The counters, once evaluated (`None` with `exit` set: none came).
    values: Option<Box<[(CounterId, f64)]>>,
    /// The kernel's duration as the profiler measured it, ns.
    duration: Option<u64>,
    /// The kernel record, once delivered.
    kernel: Option<KernelExec>,
}

/// Where a profiled launch's counters meet its kernel record.
///
/// Kernel replay leaves the replayed kernel's activity record without
/// timestamps. Such a kernel is placed where it ran: it ends at its
/// launch's exit and lasts what the profiler measured (or the whole
/// launch when `gpu__time_duration` was not collected), and says so in
/// its log line once per process.
pub(crate) struct Join {
    recorder: Recorder,
    notes: Notes,
    pending: Mutex<FxHashMap<u64, Entry>>,
    /// Entries in `pending`: the records thread looks only when some are.
    count: AtomicUsize,
    placed_said: Once,
    /// A user-replay session has run: CUPTI's own kernels may follow.
    user_replay: AtomicBool,
    /// CUPTI's own kernels left out of the trace.
    internal: std::sync::atomic::AtomicU64,
}

impl Join {
    pub(crate) fn new(recorder: Recorder, notes: Notes) -> Self {
        Self {
            recorder,
            notes,
            pending: Mutex::new(FxHashMap::default()),
            count: AtomicUsize::new(0),
            placed_said: Once::new(),
            user_replay: AtomicBool::new(false),
            internal: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether a kernel record is CUPTI's own: under user replay the range
    /// profiler launches a `WaitNs` kernel on a stream of its own after
    /// each profiled kernel (seen on the H200). It is not the program's
    /// work and is left out, counted.
    pub(crate) fn is_profiler_kernel(&self, name: Option<&std::ffi::CStr>) -> bool {
        if !self.user_replay.load(Ordering::Relaxed) || name != Some(c"WaitNs") {
            return false;
        }
        self.internal.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn map(&self) -> std::sync::MutexGuard<'_, FxHashMap<u64, Entry>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expect(&self, corr: u64, enter: u64) {
        let e = Entry {
            enter,
            exit: None,
            values: None,
            duration: None,
            kernel: None,
        };
        if self.map().insert(corr, e).is_none() {
            self.count.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The launch returned: `values` are its counters (`None`: none came;
    /// `launched` false: no kernel ran, nothing will be delivered).
    fn exited(
        &self,
        corr: u64,
        exit: u64,
        values: Option<Box<[(CounterId, f64)]>>,
        duration: Option<u64>,
        launched: bool,
    ) {
        let mut m = self.map();
        let Some(e) = m.get_mut(&corr) else { return };
        if !launched {
            m.remove(&corr);
            drop(m);
            self.count.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        e.exit = Some(exit);
        e.values = values;
        e.duration = duration;
        if e.kernel.is_some() {
            let e = m.remove(&corr);
            drop(m);
            self.count.fetch_sub(1, Ordering::AcqRel);
            if let Some(e) = e {
                self.finish(corr, e);
            }
        }
    }

    /// Whether a launch is being profiled or waits for its record (CUPTI's
    /// delivery thread asks for every kernel: cheap when none is).
    pub(crate) fn is_pending(&self, corr: u64) -> bool {
        self.count.load(Ordering::Acquire) != 0 && self.map().contains_key(&corr)
    }

    /// A kernel record (CUPTI's delivery thread). Returns it back when it
    /// is not a profiled launch's (the caller records it as usual).
    pub(crate) fn kernel(&self, k: KernelExec) -> Option<KernelExec> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Some(k);
        }
        let corr = k.correlation_id;
        let mut m = self.map();
        let Some(e) = m.get_mut(&corr) else {
            return Some(k);
        };
        if e.kernel.is_some() {
            return Some(k);
        }
        e.kernel = Some(k);
        if e.exit.is_some() {
            let e = m.remove(&corr);
            drop(m);
            self.count.fetch_sub(1, Ordering::AcqRel);
            if let Some(e) = e {
                self.finish(corr, e);
            }
        }
        None
    }

    fn finish(&self, corr: u64, e: Entry) {
        let Some(mut k) = e.kernel else { return };
        if k.start == 0 || k.end < k.start {
            let exit = e.exit.unwrap_or(e.enter);
            let took = e.duration.unwrap_or(exit.saturating_sub(e.enter));
            k.end = exit;
            k.start = exit.saturating_sub(took).max(e.enter).min(exit);
            self.placed_said.call_once(|| {
                let line = "profiled kernels have no GPU timestamps under kernel replay: each is drawn ending at its launch's return, lasting what the profiler measured";
                gpu_trace_model::verbose!("{line}");
                self.notes.info(line);
            });
        }
        let (device, start, end) = (k.device, k.start, k.end);
        self.recorder.kernel(k);
        if let Some(values) = e.values {
            self.recorder
                .kernel_counters(KernelCounters::new(device, corr, start, end, values));
        }
    }
}

/// Per-kernel counters of one process.
pub(crate) struct Counting {
    cupti: Cupti,
    registry: Arc<Counters>,
    notes: Notes,
    join: Arc<Join>,
    recorder: Recorder,
    /// Which launches are profiled (kernels known by mangled name).
    selector: KernelSelector<Box<str>>,
    replay: CountersReplay,
    batch: usize,
    /// Counters wanted now (a counters session runs).
    on: AtomicBool,
    /// A user-replay session is open: every launch must be looked at.
    open: AtomicBool,
    /// The session's metric names (empty: the defaults).
    wanted: RwLock<Vec<String>>,
    state: Mutex<State>,
    /// One profiled launch at a time: set while one runs.
    busy: Mutex<bool>,
    free: Condvar,
    graphs_said: Once,
    /// The filter names NVTX ranges that cannot be seen: said once.
    blind_said: Once,
    cost: Cost,
}

impl Counting {
    pub(crate) fn new(
        cupti: Cupti,
        registry: Arc<Counters>,
        notes: Notes,
        recorder: Recorder,
        filter: KernelFilter,
        replay: CountersReplay,
        batch: usize,
    ) -> Self {
        Self {
            cupti,
            registry,
            join: Arc::new(Join::new(recorder.clone(), notes.clone())),
            notes,
            recorder,
            selector: KernelSelector::new(filter),
            replay,
            batch: batch.max(1),
            on: AtomicBool::new(false),
            open: AtomicBool::new(false),
            wanted: RwLock::new(Vec::new()),
            state: Mutex::new(State::default()),
            busy: Mutex::new(false),
            free: Condvar::new(),
            graphs_said: Once::new(),
            blind_said: Once::new(),
            cost: Cost::default(),
        }
    }

    pub(crate) fn join(&self) -> Arc<Join> {
        self.join.clone()
    }

    /// A counters session started (`Some(names)`) or ended (`None`);
    /// `selection` is its own kernel filter (`None`: the environment's).
    pub(crate) fn set(&self, wanted: Option<&[String]>, selection: Option<&SessionFilter>) {
        match wanted {
            Some(names) => {
                *self.wanted.write().unwrap_or_else(|e| e.into_inner()) = names.to_vec();
                self.selector.set(selection);
                let current = self.selector.current();
                let filter = current.filter();
                if !filter.is_everything() {
                    gpu_trace_model::verbose!("counters for {}", filter.describe());
                }
                if filter.has_ranges() && std::env::var_os("NVTX_INJECTION64_PATH").is_none() {
                    self.blind_said.call_once(|| {
                        let line = format!(
                            "the counters filter names NVTX ranges ({}), but NVTX_INJECTION64_PATH is not set, so no NVTX range is seen; set it to libgpu_trace_cuda.so (gpu-trace record does)",
                            filter.describe()
                        );
                        gpu_trace_model::warn!("{line}");
                        self.notes.warn(line);
                    });
                }
                self.on.store(true, Ordering::Release);
            }
            None => {
                self.on.store(false, Ordering::Release);
                self.close_open();
            }
        }
    }

    /// Closes an open session (at exit, before the last records are
    /// written).
    pub(crate) fn finish(&self) {
        self.close_open();
    }

    /// A context is being destroyed: its session is closed and its range
    /// profiler disabled while the context still exists.
    pub(crate) fn forget_context(&self, handle: u64) {
        self.gated(|| {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if st.open == Some(handle) {
                self.close(&mut st, handle, None);
            }
            if let Some(Some(c)) = st.contexts.remove(&handle) {
                let ctx = c.ctx;
                let drop_it = move || drop(c);
                match crate::api::driver() {
                    Some(d) => {
                        let _ = crate::api::internal(|| d.with_current(ctx, drop_it));
                    }
                    None => drop_it(),
                }
            }
        });
    }

    /// Closes the open session, if any, holding the launch gate (so that
    /// no profiled launch is between its entry and exit).
    fn close_open(&self) {
        if !self.open.load(Ordering::Acquire) {
            return;
        }
        self.gated(|| {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(h) = st.open {
                self.close(&mut st, h, None);
            }
        });
    }

    /// Runs `f` holding the launch gate; gives up after [`GATE_LIMIT`].
    fn gated<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        if !self.acquire() {
            return None;
        }
        let r = f();
        self.release();
        Some(r)
    }

    fn acquire(&self) -> bool {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = std::time::Instant::now() + GATE_LIMIT;
        while *busy {
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else {
                return false;
            };
            busy = self
                .free
                .wait_timeout(busy, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *busy = true;
        true
    }

    /// Whether the filter in force looks at NVTX ranges (the NVTX callbacks
    /// must then run).
    pub(crate) fn needs_ranges(&self) -> bool {
        self.selector.current().filter().has_ranges()
    }

    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// A driver API callback; only kernel and graph launches matter.
    pub(crate) fn on_api(&self, cb: &ApiCallback<'_>) {
        if cb.domain() != ApiDomain::Driver {
            return;
        }
        match (cb.kind(), cb.site()) {
            (CallKind::KernelLaunch, Site::Enter) => {
                if self.is_on() && self.chosen(cb) {
                    self.begin(cb);
                } else {
                    // Its kernel must not become a range of the open session.
                    self.close_open();
                }
            }
            (CallKind::KernelLaunch, Site::Exit) => {
                if let Some((corr, enter)) = PROFILING.with(Cell::get)
                    && corr == cb.correlation_id()
                {
                    self.end(cb, enter);
                }
            }
            (CallKind::GraphLaunch, Site::Enter) => {
                self.close_open();
                if !self.is_on() {
                    return;
                }
                self.graphs_said.call_once(|| {
                    let line = "kernels launched through CUDA graphs get no counters (the range profiler measures one launch at a time); their GPU work is traced as usual";
                    gpu_trace_model::warn!("{line}");
                    self.notes.warn(line);
                });
            }
            _ => {}
        }
    }

    /// Whether the filter in force picks this launch (and counts it).
    fn chosen(&self, cb: &ApiCallback<'_>) -> bool {
        let sel = self.selector.current();
        let filter = sel.filter();
        let chosen = !filter.is_done()
            && sel.choose(
                || kernel_name(cb),
                |mangled: &str| {
                    (
                        mangled.to_owned(),
                        gpu_trace_model::names::demangle(mangled),
                    )
                },
            );
        if chosen && gpu_trace_model::log::verbose() && !filter.is_everything() {
            let name = cb.symbol_name().map(|s| s.to_string_lossy());
            gpu_trace_model::log::line(format_args!(
                "counters: the filter picks {} (correlation id {})",
                name.as_deref().unwrap_or("a kernel"),
                cb.correlation_id()
            ));
        }
        chosen
    }

    fn begin(&self, cb: &ApiCallback<'_>) {
        let Some(ctx) = cb.context() else { return };
        // Work captured into a graph does not run now: nothing to measure,
        // and profiling calls must not reach a capturing stream.
        if let Some(stream) = cb.stream()
            && crate::api::is_capturing(stream)
        {
            self.close_open();
            return;
        }
        let t0 = boottime_ns();
        // One profiled launch at a time in the process.
        if !self.acquire() {
            self.recorder.dropped(DropKind::Counters, 1);
            return;
        }
        let corr = cb.correlation_id();
        let handle = ctx.as_u64();
        let started = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(h) = st.open
                && h != handle
            {
                self.close(&mut st, h, Some(handle));
            }
            let opened = match self.profiler_for(&mut st, ctx) {
                Some(c) => {
                    let was_open = c.open.is_some();
                    // Auto ranges are found inside a pushed one.
                    let r = if was_open {
                        Ok(())
                    } else {
                        c.rp.start().and_then(|()| c.rp.push_range(c"kernel"))
                    };
                    match r {
                        Ok(()) if was_open => Ok(false),
                        Ok(()) => {
                            c.open = Some(Vec::with_capacity(c.dm.batch));
                            Ok(true)
                        }
                        Err(e) => {
                            let _ = c.rp.stop();
                            Err(Some(e))
                        }
                    }
                }
                None => Err(None),
            };
            match opened {
                Ok(true) => {
                    if st
                        .contexts
                        .get(&handle)
                        .and_then(Option::as_ref)
                        .is_some_and(|c| c.dm.replay == Replay::User)
                    {
                        self.join.user_replay.store(true, Ordering::Relaxed);
                    }
                    st.open = Some(handle);
                    self.open.store(true, Ordering::Release);
                    true
                }
                Ok(false) => true,
                Err(Some(e)) => {
                    self.fault(&mut st, &format!("cannot start profiling a kernel: {e}"));
                    false
                }
                Err(None) => false,
            }
        };
        if started {
            let enter = boottime_ns();
            self.cost.setup.fetch_add(enter - t0, Ordering::Relaxed);
            self.join.expect(u64::from(corr), enter);
            PROFILING.with(|p| p.set(Some((corr, enter))));
        } else {
            self.release();
        }
    }

    fn end(&self, cb: &ApiCallback<'_>, enter: u64) {
        PROFILING.with(|p| p.set(None));
        let exit = boottime_ns();
        self.cost
            .launch
            .fetch_add(exit.saturating_sub(enter), Ordering::Relaxed);
        let corr = u64::from(cb.correlation_id());
        let handle = cb.context_handle();
        let launched = cb.return_value().unwrap_or(0) == 0;
        let mut replayed = false;
        {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let full = match st.contexts.get_mut(&handle) {
                Some(Some(c)) if c.open.is_some() => {
                    replayed = launched && c.dm.replay == Replay::Kernel;
                    let batch = c.open.get_or_insert_with(Vec::new);
                    if launched {
                        batch.push(Launch { corr, exit });
                    } else {
                        // No kernel ran: no range, nothing will be delivered.
                        self.join.exited(corr, exit, None, None, false);
                    }
                    batch.len() >= c.dm.batch
                }
                _ => {
                    self.join.exited(corr, exit, None, None, launched);
                    if launched {
                        self.recorder.dropped(DropKind::Counters, 1);
                    }
                    false
                }
            };
            if full {
                self.close(&mut st, handle, Some(handle));
            }
        }
        self.release();
        // A replayed launch takes its passes' time on this thread, and
        // CUPTI would deliver its record a buffer later: behind the API
        // calls and counters written since, so that Perfetto's trace
        // processor, which sorts between the service's reads, drops the
        // kernel as out of order. Its record is asked for now, while the
        // launch is the newest thing in the trace.
        if replayed && let Some(a) = cupti::activity::Activity::get() {
            let t0 = boottime_ns();
            if let Err(e) = crate::api::internal(|| a.flush_all(true)) {
                gpu_trace_model::verbose!("activity flush after a replayed kernel failed: {e}");
            }
            self.cost
                .collect
                .fetch_add(boottime_ns() - t0, Ordering::Relaxed);
        }
    }

    /// Closes the session open on context `handle`: pops its range, stops
    /// it, decodes and evaluates its ranges, and hands each launch its
    /// values. `current` is the context current on this thread, if known;
    /// otherwise the session's context is made current for the calls.
    fn close(&self, st: &mut State, handle: u64, current: Option<u64>) {
        if st.open == Some(handle) {
            st.open = None;
            self.open.store(false, Ordering::Release);
        }
        let Some(Some(c)) = st.contexts.get_mut(&handle) else {
            return;
        };
        let Some(batch) = c.open.take() else { return };
        let t0 = boottime_ns();
        let r = if current == Some(handle) {
            collect(c)
        } else {
            match crate::api::driver() {
                Some(d) => {
                    let ctx = c.ctx;
                    crate::api::internal(|| d.with_current(ctx, || collect(c)))
                        .unwrap_or_else(|e| Err(format!("cannot make its context current: {e}")))
                }
                None => collect(c),
            }
        };
        let dm = c.dm;
        let n = batch.len();
        match r {
            Ok(ranges) if ranges.len() == n => {
                for (l, range) in batch.into_iter().zip(ranges) {
                    let (values, duration) = values_of(dm, range);
                    if values.is_empty() {
                        self.join.exited(l.corr, l.exit, None, None, true);
                        self.recorder.dropped(DropKind::Counters, 1);
                    } else {
                        self.join
                            .exited(l.corr, l.exit, Some(values), duration, true);
                    }
                }
            }
            r => {
                match r {
                    Ok(ranges) => gpu_trace_model::warn_once!(
                        "the profiler returned {} range(s) for {n} profiled kernel(s); their counters are missing (counted as dropped)",
                        ranges.len()
                    ),
                    // Under user replay nothing was replayed, and the whole
                    // batch is lost.
                    Err(e) if n > 0 && dm.replay == Replay::User => gpu_trace_model::warn_once!(
                        "a profiler session of {n} kernel(s) failed ({e}); their counters are missing (counted as dropped)"
                    ),
                    Err(e) if n > 0 => gpu_trace_model::warn_once!(
                        "a profiled kernel's replay failed ({e}); its counters are missing (counted as dropped)"
                    ),
                    Err(_) => {}
                }
                for l in batch {
                    self.join.exited(l.corr, l.exit, None, None, true);
                }
                self.recorder.dropped(DropKind::Counters, n as u64);
            }
        }
        self.cost
            .collect
            .fetch_add(boottime_ns() - t0, Ordering::Relaxed);
        self.cost.kernels.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// What profiling cost, said at exit (verbose) and written into the
    /// trace, with the CUPTI kernels left out.
    pub(crate) fn report(&self) {
        let n = self.cost.kernels.load(Ordering::Relaxed);
        if n == 0 {
            return;
        }
        // CUPTI's own kernels are counted as their records come: those still
        // in CUPTI's buffers (the last ones, at least) are delivered first.
        if self.join.user_replay.load(Ordering::Relaxed)
            && let Some(a) = cupti::activity::Activity::get()
            && let Err(e) = a.flush_all(true)
        {
            gpu_trace_model::verbose!("activity flush failed: {e}");
        }
        let ms = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
        let line = format!(
            "counters: {n} kernel(s) profiled; per kernel {:.2} ms setup, {:.2} ms in the launch (replay passes), {:.2} ms collecting",
            ms(&self.cost.setup) / n as f64,
            ms(&self.cost.launch) / n as f64,
            ms(&self.cost.collect) / n as f64
        );
        gpu_trace_model::verbose!("{line}");
        self.notes.info(line);
        let internal = self.join.internal.load(Ordering::Relaxed);
        if internal > 0 {
            let line = format!(
                "counters: {internal} WaitNs kernel(s) that CUPTI's profiler launched itself are left out of the trace"
            );
            gpu_trace_model::verbose!("{line}");
            self.notes.info(line);
        }
    }

    fn release(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.free.notify_one();
    }

    /// Counters end for the process: one line, in the trace too.
    fn fault(&self, st: &mut State, why: &str) {
        if !st.off {
            st.off = true;
            let line = format!(
                "per-kernel counters are off: {why}; kernels, copies and API calls are traced as usual"
            );
            gpu_trace_model::warn!("{line}");
            self.notes.warn(line);
        }
        self.on.store(false, Ordering::Release);
    }

    /// The range profiler of `ctx`, made on first use.
    fn profiler_for<'s>(&self, st: &'s mut State, ctx: cupti::Context) -> Option<&'s mut Ctx> {
        if st.off {
            return None;
        }
        let handle = ctx.as_u64();
        if !st.contexts.contains_key(&handle) {
            let made = self.make_profiler(st, ctx);
            st.contexts.insert(handle, made);
        }
        st.contexts.get_mut(&handle).and_then(Option::as_mut)
    }

    fn make_profiler(&self, st: &mut State, ctx: cupti::Context) -> Option<Ctx> {
        if st.profiler.is_none() {
            match Profiler::initialize(&self.cupti) {
                Ok(p) => st.profiler = Some(p),
                Err(e) => {
                    self.fault(st, &describe(&e));
                    return None;
                }
            }
        }
        let device = match ctx.device_id(&self.cupti) {
            Ok(d) => d,
            Err(e) => {
                gpu_trace_model::warn_once!(
                    "a context's device is unknown ({e}); its kernels get no counters"
                );
                return None;
            }
        };
        let dm = match st.devices.get(&device) {
            Some(d) => (*d)?,
            None => {
                let d = self.device_metrics(st, ctx, device);
                st.devices.insert(device, d);
                d?
            }
        };
        match RangeProfiler::enable(
            &self.cupti,
            ctx,
            &dm.config,
            dm.batch,
            dm.replay,
            Ranges::Auto,
        ) {
            Ok(rp) => Some(Ctx {
                ctx,
                rp,
                dm,
                open: None,
            }),
            Err(e) => {
                self.fault(st, &describe(&e));
                None
            }
        }
    }

    fn device_metrics(
        &self,
        st: &mut State,
        ctx: cupti::Context,
        device: u32,
    ) -> Option<&'static DeviceMetrics> {
        let profiler = st.profiler.as_ref()?;
        let chip = match profiler.chip_name(device as usize) {
            Ok(c) => c,
            Err(e) => {
                self.fault(st, &describe(&e));
                return None;
            }
        };
        let availability = match profiler.counter_availability(ctx) {
            Ok(a) => Some(a),
            Err(e) if e.is_permission_denied() => {
                self.fault(st, &describe(&e));
                return None;
            }
            Err(_) => None,
        };
        let wanted = self
            .wanted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let names: Vec<&str> = if wanted.is_empty() {
            DEFAULT_METRICS.to_vec()
        } else {
            wanted.iter().map(String::as_str).collect()
        };
        let catalog = MetricCatalog::new(&self.cupti, &chip).ok();
        let known: Vec<MetricInfo> = catalog
            .as_ref()
            .and_then(|c| c.base_metrics().ok())
            .unwrap_or_default();
        let config = match MetricConfig::new(&self.cupti, &chip, availability.as_deref(), &names) {
            Ok(c) => c,
            Err(cupti::Error::NoValidMetrics { rejected }) => {
                for (name, why) in &rejected {
                    self.reject(&chip, name, why, &known);
                }
                self.fault(
                    st,
                    &format!("none of the metrics asked for is available on {chip}"),
                );
                return None;
            }
            Err(e) => {
                self.fault(st, &describe(&e));
                return None;
            }
        };
        for (name, e) in config.rejected() {
            self.reject(&chip, name, &e.to_string(), &known);
        }
        let ids = config
            .accepted()
            .map(|name| {
                let info = catalog.as_ref().and_then(|c| c.properties(name).ok());
                self.registry.register(spec(name, info.as_ref()))
            })
            .collect();
        let passes = config.num_passes();
        let replay = match self.replay {
            CountersReplay::Auto if passes == 1 => Replay::User,
            CountersReplay::Auto | CountersReplay::Kernel => Replay::Kernel,
            CountersReplay::User if passes == 1 => Replay::User,
            CountersReplay::User => {
                let line = format!(
                    "{}=user: the metrics need {passes} passes and a launch cannot be replayed by the tool, so kernels are replayed by CUPTI (kernel replay)",
                    crate::config::vars::COUNTERS_REPLAY
                );
                gpu_trace_model::warn!("{line}");
                self.notes.warn(line);
                Replay::Kernel
            }
        };
        let batch = if replay == Replay::User {
            self.batch
        } else {
            1
        };
        if replay == Replay::User && config.accepted().any(|m| m.contains("inst_executed")) {
            let line = format!(
                "counters use user replay (one pass, no kernel replay): CUPTI instruments each profiled kernel, which adds about 8 instructions per warp to inst_executed counts; {}=kernel gives exact counts at about 20 ms per kernel",
                crate::config::vars::COUNTERS_REPLAY
            );
            gpu_trace_model::warn!("{line}");
            self.notes.warn(line);
        }
        gpu_trace_model::verbose!(
            "counters on {chip} (device {device}): {} metric(s), {passes} pass(es) per profiled kernel, {}",
            config.accepted().count(),
            match replay {
                Replay::User =>
                    format!("user replay (no replay, up to {batch} kernels per session)"),
                _ => "kernel replay".to_owned(),
            }
        );
        let duration = config
            .accepted()
            .position(|m| m == "gpu__time_duration.sum");
        Some(Box::leak(Box::new(DeviceMetrics {
            config,
            ids,
            duration,
            replay,
            batch,
        })))
    }

    /// One line for a metric that is not available, in the trace too.
    fn reject(&self, chip: &str, name: &str, why: &str, known: &[MetricInfo]) {
        let near = nearest(name, known.iter().map(|m| m.name.as_str()));
        let hint = if near.is_empty() {
            String::new()
        } else if near[0] == base_name(name) {
            format!(
                "; {} exists: add a rollup such as .sum, .avg, .max or .pct_of_peak_sustained_elapsed",
                near[0]
            )
        } else {
            format!("; nearest: {}", near.join(", "))
        };
        let why = if why.contains("INVALID_PARAMETER") || why.contains("INVALID_METRIC_NAME") {
            "no such metric".to_owned()
        } else {
            why.to_owned()
        };
        let line = format!(
            "metric {} is not available on {chip} ({why}){hint}; the other metrics are collected",
            gpu_trace_model::log::quoted(name)
        );
        gpu_trace_model::warn!("{line}");
        self.notes.warn(line);
    }
}

/// Ends a session and evaluates its ranges (one per profiled kernel, in
/// launch order).
fn collect(c: &mut Ctx) -> Result<Vec<RangeValues>, String> {
    let popped = c.rp.pop_range();
    let stopped = c.rp.stop();
    popped.map_err(|e| e.to_string())?;
    if !stopped.map_err(|e| e.to_string())? {
        return Err("not every replay pass ran".to_owned());
    }
    c.rp.decode().map_err(|e| e.to_string())?;
    c.rp.evaluate().map_err(|e| e.to_string())
}

/// A range's values under the tracer's ids, and the kernel's duration as
/// the profiler measured it.
fn values_of(dm: &DeviceMetrics, range: RangeValues) -> (Box<[(CounterId, f64)]>, Option<u64>) {
    let duration = dm
        .duration
        .and_then(|i| range.values.get(i))
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v as u64);
    let values = dm
        .ids
        .iter()
        .zip(range.values)
        .filter(|(_, (_, v))| v.is_finite())
        .map(|(id, (_, v))| (*id, v))
        .collect();
    (values, duration)
}

/// The launched kernel's mangled name (borrowed from CUPTI).
fn kernel_name<'a>(cb: &ApiCallback<'a>) -> std::borrow::Cow<'a, str> {
    cb.symbol_name()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default()
}

fn describe(e: &cupti::Error) -> String {
    if e.is_permission_denied() {
        e.to_string()
    } else {
        format!("{e} (another profiler such as ncu or nsys may hold the GPU's counters)")
    }
}

fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Up to three names closest to `name`'s base name.
pub(crate) fn nearest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Vec<String> {
    let base = base_name(name);
    let mut scored: Vec<(usize, &str)> = known
        .map(|k| (strsim::levenshtein(base, k), k))
        .filter(|(d, k)| *d <= (k.len().max(base.len()) / 3).max(2))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, k)| k.to_owned())
        .collect()
}

/// The counter descriptor of a metric: units from its name's rollup and
/// CUPTI's dimension.
pub(crate) fn spec(name: &str, info: Option<&MetricInfo>) -> CounterSpec {
    let (unit, per) = units(name, info.map(|i| i.dim_unit.as_str()).unwrap_or(""));
    let kind = match info.map(|i| i.kind) {
        Some(MetricKind::Throughput) => " (throughput)",
        Some(MetricKind::Ratio) => " (ratio)",
        _ => "",
    };
    let mut spec = CounterSpec::new(name, unit, CounterGroup::Compute);
    spec.description = match info {
        Some(i) if !i.description.is_empty() => format!("{}{kind}", i.description),
        _ => name.to_owned(),
    };
    spec.per = per;
    spec
}

fn units(name: &str, dim: &str) -> (Unit, Option<Unit>) {
    let rollup = name.split_once('.').map_or("", |(_, r)| r);
    if rollup.contains("pct") {
        return (Unit::Percent, None);
    }
    let per = rollup.contains("per_second").then_some(Unit::Second);
    let dim = dim.to_ascii_lowercase();
    let unit = if rollup.contains("ratio") {
        Unit::None
    } else if dim.contains("byte") || name.contains("bytes") {
        Unit::Byte
    } else if dim.contains("nsecond") || name.contains("time_duration") {
        Unit::Nanosecond
    } else if dim.contains("inst") || name.contains("inst_executed") {
        Unit::Instruction
    } else {
        Unit::None
    };
    (unit, per)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_rollup_and_the_dimension() {
        assert_eq!(
            units(
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "percent"
            ),
            (Unit::Percent, None)
        );
        assert_eq!(units("dram__bytes_read.sum", "bytes"), (Unit::Byte, None));
        assert_eq!(
            units("dram__bytes_read.sum.per_second", "bytes"),
            (Unit::Byte, Some(Unit::Second))
        );
        assert_eq!(
            units("gpu__time_duration.sum", "nsecond"),
            (Unit::Nanosecond, None)
        );
        assert_eq!(
            units("smsp__inst_executed.sum", "inst"),
            (Unit::Instruction, None)
        );
        assert_eq!(
            units("gpc__cycles_elapsed.max", "cycle"),
            (Unit::None, None)
        );
    }

    #[test]
    fn nearest_names_are_close_and_few() {
        let known = [
            "sm__cycles_elapsed",
            "sm__cycles_active",
            "dram__bytes_read",
            "lts__t_sectors",
        ];
        assert_eq!(
            nearest("sm__cycles_elapsd.avg", known.iter().copied()),
            ["sm__cycles_elapsed"]
        );
        assert_eq!(
            nearest("dram__bytes_read.sum", known.iter().copied())[0],
            "dram__bytes_read"
        );
        assert_eq!(
            nearest("lts__t_sector", known.iter().copied()),
            ["lts__t_sectors"]
        );
        assert!(nearest("not_a_metric", known.iter().copied()).is_empty());
    }

    #[test]
    fn the_defaults_are_well_formed_and_distinct() {
        let mut d = DEFAULT_METRICS.to_vec();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), DEFAULT_METRICS.len());
        let (ok, bad) = gpu_trace_model::names::parse_metric_list(&DEFAULT_METRICS.join(","));
        assert!(bad.is_empty() && ok.len() == DEFAULT_METRICS.len());
    }
}
