//! The summary of a set of traces, per process and over all processes,
//! from what the reads kept: the one type every front end renders.

use crate::diagnose::{
    self, DeviceWork, IdleRow, LaunchRow, OutlierRow, Pairs, TemporalRow, Verdict,
};
use crate::durations::{Durations, Row, mean_min_max, row, table};
use crate::intervals::Intervals;
use crate::launch::LaunchAcc;
use crate::ranks::Ranks;
use crate::read::{CounterData, FileData, ProcData};
use crate::telemetry::{self, DeviceAcc, DeviceTelemetry};
use gpu_trace_model::rank::Rank;
use gpu_trace_reader::{DeviceInfo, Problem};
use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::collections::hash_map::Entry;

/// A process id, as the trace has it.
pub type Pid = i64;

/// The process of events the trace does not attribute to one.
pub const UNKNOWN_PID: Pid = -1;

/// The engine of kernels in the devices table ([`EngineRow::engine`]).
pub const KERNEL_ENGINE: &str = "Kernels";

/// A time span, ns; empty until something is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
}

impl Default for Span {
    fn default() -> Span {
        Span {
            start: u64::MAX,
            end: 0,
        }
    }
}

impl Span {
    /// Widens the span to take in `[start, end)`.
    #[inline]
    pub fn add(&mut self, start: u64, end: u64) {
        self.start = self.start.min(start);
        self.end = self.end.max(end);
    }

    /// Widens the span to take in `o`.
    pub fn join(&mut self, o: Span) {
        if !o.is_empty() {
            self.add(o.start, o.end);
        }
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.start > self.end
    }

    /// Its length, ns (0 when empty).
    pub fn dur(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.end - self.start
        }
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View {
            start_ns: u64,
            end_ns: u64,
            dur_ns: u64,
        }
        View {
            start_ns: self.start,
            end_ns: self.end,
            dur_ns: self.dur(),
        }
        .serialize(s)
    }
}

/// A counter's mean, min and max over the kernels profiled, of one kernel
/// name or of all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRow {
    /// The kernel's name; `None` in the table over all kernels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The counter's name.
    #[serde(rename = "name")]
    pub metric: String,
    /// Kernels profiled.
    pub kernels: u64,
    /// Mean value.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// A device engine's busy time: the union of its operations' intervals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineRow {
    /// The device's `gpu_id`.
    pub gpu: i64,
    /// The device's name, where the trace describes it.
    pub device: String,
    /// [`KERNEL_ENGINE`], or the memory operation ("Memcpy HtoD" ...).
    pub engine: String,
    /// Operations run.
    pub ops: u64,
    /// Busy time, ns.
    #[serde(rename = "busy_ns")]
    pub busy: u64,
    /// Of the scope's recorded time, %.
    #[serde(rename = "busy_pct")]
    pub pct: f64,
}

/// A stream's busy time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamRow {
    /// The trace it is in.
    pub file: String,
    /// Its process.
    pub pid: Pid,
    /// Its device's `gpu_id`.
    pub gpu: i64,
    /// The hardware queue's name, as the trace has it.
    #[serde(rename = "stream")]
    pub name: String,
    /// Kernels run.
    pub kernels: u64,
    /// Memory operations run.
    #[serde(rename = "memops")]
    pub memory: u64,
    /// Busy time: the union of its work, ns.
    #[serde(rename = "busy_ns")]
    pub busy: u64,
    /// Of its process's recorded time, %.
    #[serde(rename = "busy_pct")]
    pub pct: f64,
}

/// A thread's time waiting for the GPU in API calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadRow {
    /// The trace it is in.
    pub file: String,
    /// Its process.
    pub pid: Pid,
    /// `None` for a track that names no thread.
    pub tid: Option<i64>,
    /// The thread's (or track's) name.
    pub name: String,
    /// API calls made.
    #[serde(rename = "api_calls")]
    pub calls: u64,
    /// Its traced span: first slice's start to last slice's end, ns; of
    /// it, the time recorded when the run was switched on and off.
    #[serde(rename = "span_ns")]
    pub span: u64,
    /// API calls that wait for the GPU.
    pub waiting_calls: u64,
    /// The union of its waiting calls, ns.
    #[serde(rename = "waiting_ns")]
    pub waiting: u64,
    /// Of its span, %.
    #[serde(rename = "waiting_pct")]
    pub pct: f64,
}

/// Every table of one scope: a process, or all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tables {
    /// First event to last.
    pub span: Option<Span>,
    /// Per kernel name.
    pub kernels: Vec<Row>,
    /// Per memory operation ("Memcpy HtoD", "Memset" ...), with bytes.
    #[serde(rename = "memops")]
    pub memory: Vec<Row>,
    /// Per API function.
    pub api: Vec<Row>,
    /// Per NVTX / roctx range name.
    #[serde(rename = "nvtx")]
    pub ranges: Vec<Row>,
    /// Per per-kernel counter, over the kernels profiled.
    pub counters: Vec<CounterRow>,
    /// Per kernel name and counter, the kernels with the most profiled
    /// launches first.
    pub counters_by_kernel: Vec<CounterRow>,
    /// Per device engine, its busy time.
    pub devices: Vec<EngineRow>,
    /// Per stream, the busiest first.
    pub streams: Vec<StreamRow>,
    /// Per thread, the most waiting first.
    pub threads: Vec<ThreadRow>,
    /// Per device of each process, its idle time by cause.
    pub idle: Vec<IdleRow>,
    /// Per device of each process, its time by kind of work.
    pub temporal: Vec<TemporalRow>,
    /// Per kernel name, its launches; the most first.
    pub launches: Vec<LaunchRow>,
    /// The kernels that started longest after their launch calls returned.
    pub launch_outliers: Vec<OutlierRow>,
    /// The union of the scope's GPU work on each device (kernels, copies
    /// and memsets: the intervals of the devices table), summed over its
    /// devices, ns. Not in the JSON: the ranks table has it per process.
    #[serde(skip)]
    pub gpu_busy: u64,
}

impl Tables {
    /// Kernels run.
    pub fn kernel_count(&self) -> u64 {
        self.kernels.iter().map(|r| r.count).sum()
    }

    /// Copies run (memsets are not).
    pub fn copy_count(&self) -> u64 {
        self.memory
            .iter()
            .filter(|r| r.name.starts_with("Memcpy"))
            .map(|r| r.count)
            .sum()
    }

    /// API calls made.
    pub fn api_count(&self) -> u64 {
        self.api.iter().map(|r| r.count).sum()
    }
}

/// One process of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Process {
    /// The trace it is in.
    pub file: String,
    /// Its pid ([`UNKNOWN_PID`] for work the trace gives no process).
    pub pid: Pid,
    /// Its rank in the job, from its descriptor's labels (the JSON has the
    /// rank's number).
    #[serde(serialize_with = "rank_number")]
    pub rank: Option<Rank>,
    /// Its tables.
    #[serde(flatten)]
    pub tables: Tables,
}

fn rank_number<S: Serializer>(r: &Option<Rank>, s: S) -> Result<S::Ok, S::Error> {
    r.map(|r| r.rank).serialize(s)
}

/// How many events of each kind a trace holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Kernels.
    pub kernels: u64,
    /// Memory copies.
    pub copies: u64,
    /// Memsets.
    pub memsets: u64,
    /// API calls (slices with a graphics API).
    pub api_calls: u64,
    /// NVTX / roctx ranges (the other slices).
    pub ranges: u64,
}

/// What one trace says of itself: its header.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileSummary {
    /// The path, as given.
    pub path: String,
    /// Bytes; 0 when not known (a pipe).
    pub size: u64,
    /// First event to last.
    pub span: Option<Span>,
    /// The devices its `GpuInfo` describes.
    pub devices: Vec<DeviceInfo>,
    /// Its processes, by pid.
    pub pids: Vec<Pid>,
    /// The data sources of its session's config.
    pub sources: Vec<String>,
    /// The track-event categories that config enables.
    pub categories: Vec<String>,
    /// Everything lost, by kind: the tool's own counts (from its summary
    /// line) and the tracing service's (`perfetto_*`). `None`: the trace
    /// has no summary line (not finalised).
    pub losses: Option<Vec<(String, u64)>>,
    /// Where a trace cut short mid-packet stops, bytes.
    pub truncated_at: Option<u64>,
    /// Where the trace is damaged between packets (not read past).
    pub damaged_at: Option<u64>,
    /// Packets left out for damage inside them.
    pub damaged_packets: u64,
    /// What the reader (and this summary) found wrong.
    pub problems: Vec<Problem>,
    /// API calls whose submission arrow points at GPU work that is not in
    /// the trace: (name, start ns), in trace order.
    pub dangling: Vec<(String, u64)>,
    /// Graphics APIs of its GPU work (4 CUDA, 5 HIP).
    pub apis: Vec<u64>,
    /// Recording windows: how many, and their total time, ns (`None`: the
    /// run was never switched on and off).
    pub windows: Option<(u32, u64)>,
    /// The windows themselves, [start, end) ns in the trace's clock.
    pub window_spans: Vec<(u64, u64)>,
    /// Events of each kind.
    pub counts: Counts,
    /// What a reader should be told of the trace, one line each (text
    /// from the trace unescaped): where it is cut short, GPU work it
    /// lacks, its problems (the first five), or that it holds nothing.
    pub warnings: Vec<String>,
}

impl FileSummary {
    /// Whether the trace says it holds everything that happened.
    pub fn complete(&self) -> bool {
        self.truncated_at.is_none()
            && self.damaged_at.is_none()
            && self.damaged_packets == 0
            && self.losses.as_ref().is_some_and(|l| l.is_empty())
    }

    /// The losses line, and one line per place something was lost (see
    /// [`crate::render::text::losses`]).
    pub fn losses_text(&self) -> Vec<String> {
        crate::render::text::losses(self)
    }
}

/// The JSON of one device of a file.
#[derive(Serialize)]
struct DeviceView<'a> {
    gpu: usize,
    name: &'a str,
    vendor: &'a str,
    model: &'a str,
    architecture: &'a str,
    pci_bdf: &'a str,
}

/// The JSON of the recording windows of a file.
#[derive(Serialize)]
struct WindowsView<'a> {
    count: u32,
    recorded_ns: u64,
    spans: &'a [(u64, u64)],
}

/// Losses as a JSON object, kind → count.
struct Dropped<'a>(&'a [(String, u64)]);

impl Serialize for Dropped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl Serialize for FileSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View<'a> {
            file: &'a str,
            bytes: u64,
            span: Option<Span>,
            pids: &'a [Pid],
            devices: Vec<DeviceView<'a>>,
            sources: &'a [String],
            track_event_categories: &'a [String],
            dropped: Option<Dropped<'a>>,
            losses: String,
            truncated_at: Option<u64>,
            damaged_at: Option<u64>,
            damaged_packets: u64,
            windows: Option<WindowsView<'a>>,
            problems: Vec<String>,
            dangling_submissions: usize,
            complete: bool,
            counts: Counts,
            warnings: &'a [String],
        }
        View {
            file: &self.path,
            bytes: self.size,
            span: self.span,
            pids: &self.pids,
            devices: self
                .devices
                .iter()
                .map(|d| DeviceView {
                    gpu: d.gpu_id,
                    name: &d.name,
                    vendor: &d.vendor,
                    model: &d.model,
                    architecture: &d.architecture,
                    pci_bdf: &d.pci_bdf,
                })
                .collect(),
            sources: &self.sources,
            track_event_categories: &self.categories,
            dropped: self.losses.as_deref().map(Dropped),
            losses: self.losses_text().join("\n"),
            truncated_at: self.truncated_at,
            damaged_at: self.damaged_at,
            damaged_packets: self.damaged_packets,
            windows: self.windows.map(|(count, recorded_ns)| WindowsView {
                count,
                recorded_ns,
                spans: &self.window_spans,
            }),
            problems: self.problems.iter().map(ToString::to_string).collect(),
            dangling_submissions: self.dangling.len(),
            complete: self.complete(),
            counts: self.counts,
            warnings: &self.warnings,
        }
        .serialize(s)
    }
}

/// Everything `gpu-trace stats` shows of a set of traces.
///
/// Serialised (serde), it is the document `gpu-trace stats --format json`
/// writes: `files` with each trace's header, the tables over all
/// processes at the top level (those of the one process when there is
/// one) with `telemetry`, `dropped` (all files' losses added up) and
/// `complete`, then `processes` with each one's tables, and `ranks` when
/// there are several processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Each trace's header, in the order read.
    pub files: Vec<FileSummary>,
    /// Each process, file by file, by pid.
    pub processes: Vec<Process>,
    /// Over every process of every file (the one process's tables when
    /// there is one).
    pub all: Tables,
    /// Device telemetry, per GPU (one sampled by several traces once).
    pub telemetry: Vec<DeviceTelemetry>,
    /// The processes side by side as the ranks of one job, when there are
    /// several.
    pub ranks: Option<Ranks>,
    /// Where the time goes, in one paragraph with its numbers.
    pub verdict: Verdict,
}

impl Summary {
    /// Whether every trace says it holds everything that happened.
    pub fn complete(&self) -> bool {
        self.files.iter().all(FileSummary::complete)
    }

    /// Whether there is more than one process to show.
    pub fn several(&self) -> bool {
        self.processes.len() > 1
    }

    /// Every file's losses added up, by kind, in the order first seen.
    pub fn dropped(&self) -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = Vec::new();
        for (k, v) in self.files.iter().flat_map(|f| f.losses.iter().flatten()) {
            match all.iter_mut().find(|(x, _)| x == k) {
                Some(e) => e.1 += v,
                None => all.push((k.clone(), *v)),
            }
        }
        all
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View<'a> {
            files: &'a [FileSummary],
            #[serde(flatten)]
            all: &'a Tables,
            telemetry: &'a [DeviceTelemetry],
            dropped: Dropped<'a>,
            complete: bool,
            processes: &'a [Process],
            #[serde(skip_serializing_if = "Option::is_none")]
            ranks: Option<&'a Ranks>,
            verdict: &'a Verdict,
        }
        let dropped = self.dropped();
        View {
            files: &self.files,
            all: &self.all,
            telemetry: &self.telemetry,
            dropped: Dropped(&dropped),
            complete: self.complete(),
            processes: &self.processes,
            ranks: self.ranks.as_ref(),
            verdict: &self.verdict,
        }
        .serialize(s)
    }
}

/// Where a device of a file is the same device in another: by UUID where
/// the trace has one, else only within its file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum DeviceKey {
    Uuid(Vec<u8>),
    InFile(usize, i64),
}

/// What the tables over all processes gather as the processes are done.
#[derive(Default)]
struct All {
    span: Span,
    /// When the processes were recorded (their spans, or their windows).
    recorded: Intervals,
    /// Whether any of them was switched on and off: busy shares are then of
    /// `recorded`, not of the whole span.
    switched: bool,
    kernels: Named<Durations>,
    memory: Named<(Durations, u64)>,
    api: Named<Durations>,
    ranges: Named<Durations>,
    engines: FxHashMap<(DeviceKey, String), (i64, String, u64, Intervals)>,
    streams: Vec<StreamRow>,
    threads: Vec<ThreadRow>,
    counters: Vec<CounterData>,
    idle: Vec<IdleRow>,
    temporal: Vec<TemporalRow>,
    launches: Named<LaunchAcc>,
    outliers: Vec<OutlierRow>,
}

/// Items by name, in first-seen order.
struct Named<T> {
    index: FxHashMap<String, usize>,
    items: Vec<(String, T)>,
}

impl<T> Default for Named<T> {
    fn default() -> Self {
        Named {
            index: FxHashMap::default(),
            items: Vec::new(),
        }
    }
}

impl<T> Named<T> {
    fn add(&mut self, name: String, v: T, join: impl FnOnce(&mut T, T)) {
        match self.index.entry(name) {
            Entry::Occupied(o) => join(&mut self.items[*o.get()].1, v),
            Entry::Vacant(e) => {
                self.items.push((e.key().clone(), v));
                e.insert(self.items.len() - 1);
            }
        }
    }
}

fn device_key(devices: &[DeviceInfo], file_index: usize, gpu: i64) -> DeviceKey {
    match usize::try_from(gpu).ok().and_then(|g| devices.get(g)) {
        Some(d) if !d.uuid.is_empty() => DeviceKey::Uuid(d.uuid.clone()),
        _ => DeviceKey::InFile(file_index, gpu),
    }
}

fn device_name(devices: &[DeviceInfo], gpu: i64) -> String {
    usize::try_from(gpu)
        .ok()
        .and_then(|g| devices.get(g))
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

fn pct(part: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * part as f64 / of as f64
    }
}

/// The order of a device's engines: kernels first, then memory operations
/// by name.
fn engine_order(a: &EngineRow, b: &EngineRow) -> std::cmp::Ordering {
    (a.gpu, a.engine != KERNEL_ENGINE, &a.engine).cmp(&(
        b.gpu,
        b.engine != KERNEL_ENGINE,
        &b.engine,
    ))
}

fn durations_rows(list: &mut [(String, Durations)]) -> Vec<Row> {
    table(
        list.iter_mut()
            .map(|(n, d)| row(n.clone(), d, None))
            .collect(),
    )
}

/// Per metric, and per kernel name and metric.
fn counter_rows(samples: &[CounterData]) -> (Vec<CounterRow>, Vec<CounterRow>) {
    let mut by_metric: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut by_kernel: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for s in samples {
        by_metric
            .entry(s.metric.as_str())
            .or_default()
            .push(s.value);
        by_kernel
            .entry((s.kernel.as_str(), s.metric.as_str()))
            .or_default()
            .push(s.value);
    }
    let mk = |kernel: Option<&str>, metric: &str, v: &[f64]| {
        let (mean, min, max) = mean_min_max(v);
        CounterRow {
            kernel: kernel.map(str::to_owned),
            metric: metric.to_owned(),
            kernels: v.len() as u64,
            mean,
            min,
            max,
        }
    };
    let metrics = by_metric.iter().map(|(m, v)| mk(None, m, v)).collect();
    // Kernels with the most profiled launches first.
    let mut launches: BTreeMap<&str, usize> = BTreeMap::new();
    for ((k, _), v) in &by_kernel {
        let n = launches.entry(k).or_default();
        *n = (*n).max(v.len());
    }
    let mut kernels: Vec<CounterRow> = by_kernel
        .iter()
        .map(|((k, m), v)| mk(Some(k), m, v))
        .collect();
    kernels.sort_by(|a, b| {
        let (ka, kb) = (
            a.kernel.as_deref().unwrap_or(""),
            b.kernel.as_deref().unwrap_or(""),
        );
        launches[kb]
            .cmp(&launches[ka])
            .then_with(|| ka.cmp(kb))
            .then_with(|| a.metric.cmp(&b.metric))
    });
    (metrics, kernels)
}

/// What a process's busy shares are of.
struct Recorded<'a> {
    /// The file's recording windows, when the run was switched on and off.
    windows: Option<&'a [(u64, u64)]>,
    /// Whether the process is the file's only one (the window lines do
    /// not say whose they are).
    alone: bool,
}

impl Recorded<'_> {
    /// When `p` was recorded, for a run switched on and off (`None`: not
    /// switched, its whole span). A process alone in its file was recorded
    /// in its windows, idle stretches included, and while the work they
    /// submitted drained after them: the windows and its engines' busy
    /// time. Several processes share the window lines, so each one's are
    /// the windows within its own span.
    fn seen(&self, p: &ProcData) -> Option<Intervals> {
        let windows = self.windows?;
        let mut seen = Intervals::default();
        for &(start, end) in windows {
            if self.alone {
                seen.add(start, end);
            } else {
                seen.add(start.max(p.span.start), end.min(p.span.end));
            }
        }
        if self.alone {
            for e in &p.engines {
                seen.union(e.busy.clone());
            }
        }
        Some(seen)
    }
}

/// The tables of one process; its durations and intervals go on to `all`
/// (when there are several processes).
fn process(
    file: &str,
    file_index: usize,
    devices: &[DeviceInfo],
    pid: Pid,
    mut p: ProcData,
    recorded: Recorded<'_>,
    all: Option<&mut All>,
) -> Tables {
    // Busy shares are of the time recorded.
    let mut seen = recorded.seen(&p);
    let span = seen.as_mut().map_or(p.span.dur(), Intervals::total);
    let mut t = Tables {
        span: (!p.span.is_empty()).then_some(p.span),
        kernels: durations_rows(&mut p.kernels),
        api: durations_rows(&mut p.api),
        ranges: durations_rows(&mut p.ranges),
        memory: table(
            p.memory
                .iter_mut()
                .map(|(n, d, b)| row(n.clone(), d, Some(*b)))
                .collect(),
        ),
        ..Tables::default()
    };
    (t.counters, t.counters_by_kernel) = counter_rows(&p.counters);
    let mut per_gpu: BTreeMap<i64, Intervals> = BTreeMap::new();
    for e in &p.engines {
        per_gpu.entry(e.gpu).or_default().union(e.busy.clone());
    }
    t.gpu_busy = per_gpu.values_mut().map(Intervals::total).sum();
    if p.span.is_empty() {
        per_gpu.clear();
    }
    t.devices = p
        .engines
        .iter_mut()
        .map(|e| {
            let busy = e.busy.total();
            EngineRow {
                gpu: e.gpu,
                device: device_name(devices, e.gpu),
                engine: e.engine.clone(),
                ops: e.ops,
                busy,
                pct: pct(busy, span),
            }
        })
        .collect();
    t.devices.sort_by(engine_order);
    t.streams = p
        .streams
        .iter_mut()
        .map(|s| {
            let busy = s.busy.total();
            StreamRow {
                file: file.to_owned(),
                pid,
                gpu: s.gpu,
                name: s.name.clone(),
                kernels: s.kernels,
                memory: s.memory,
                busy,
                pct: pct(busy, span),
            }
        })
        .collect();
    t.streams.sort_by(|a, b| {
        b.busy
            .cmp(&a.busy)
            .then_with(|| (a.gpu, &a.name).cmp(&(b.gpu, &b.name)))
    });
    t.threads = p
        .threads
        .iter_mut()
        .map(|th| {
            let waiting = th.waiting.total();
            // Of the thread's span, the time recorded.
            let recorded = match &mut seen {
                Some(seen) if !th.span.is_empty() => seen.within(th.span.start, th.span.end),
                _ => th.span.dur(),
            };
            ThreadRow {
                file: file.to_owned(),
                pid,
                tid: th.tid,
                name: th.name.clone(),
                calls: th.calls,
                span: recorded,
                waiting_calls: th.waiting_calls,
                waiting,
                pct: pct(waiting, recorded),
            }
        })
        .collect();
    t.threads
        .sort_by(|a, b| b.waiting.cmp(&a.waiting).then_with(|| a.tid.cmp(&b.tid)));
    // Per device: its idle time by cause, and its time by kind of work.
    // A device's pairs: its one log, read as it is when it was written in
    // order (mostly), else sorted.
    let mut pairs: BTreeMap<i64, Pairs> = BTreeMap::new();
    for (gpu, log) in std::mem::take(&mut p.pairs) {
        let mine = match pairs.remove(&gpu) {
            None if log.in_order() => Pairs::Log(log),
            None => Pairs::Sorted(log.sorted()),
            Some(other) => {
                let mut v = other.into_sorted();
                v.extend(log.iter());
                v.sort_unstable();
                Pairs::Sorted(v)
            }
        };
        pairs.insert(gpu, mine);
    }
    for (gpu, busy) in per_gpu {
        let mut d = DeviceWork {
            file,
            pid,
            gpu,
            device: device_name(devices, gpu),
            busy,
            compute: None,
            kernels_ns: 0,
            comm: Intervals::default(),
            memory: Intervals::default(),
            pairs: pairs.remove(&gpu).unwrap_or(Pairs::Sorted(Vec::new())),
        };
        for e in p.engines.iter_mut().filter(|e| e.gpu == gpu) {
            if e.engine == KERNEL_ENGINE {
                d.kernels_ns = e.busy.total();
                d.compute = e.compute.take();
                d.comm = std::mem::take(&mut e.comm);
            } else {
                d.memory.union(e.busy.clone());
            }
        }
        let (idle, temporal) =
            diagnose::device_rows(d, (p.span.start, p.span.end), seen.as_mut(), span);
        t.idle.push(idle);
        t.temporal.push(temporal);
    }
    t.launches = diagnose::launch_rows(&mut p.launches);
    t.launch_outliers = diagnose::outlier_rows(file, pid, &p.outliers);
    let Some(all) = all else { return t };
    for (n, l) in p.launches {
        all.launches.add(n, l, LaunchAcc::append);
    }
    all.idle.extend(t.idle.iter().cloned());
    all.temporal.extend(t.temporal.iter().cloned());
    all.outliers.extend(t.launch_outliers.iter().cloned());
    all.span.join(p.span);
    match seen {
        Some(seen) => {
            all.switched = true;
            all.recorded.union(seen);
        }
        None if !p.span.is_empty() => all.recorded.add(p.span.start, p.span.end),
        None => {}
    }
    for (n, d) in p.kernels {
        all.kernels.add(n, d, Durations::append);
    }
    for (n, d) in p.api {
        all.api.add(n, d, Durations::append);
    }
    for (n, d) in p.ranges {
        all.ranges.add(n, d, Durations::append);
    }
    for (n, d, b) in p.memory {
        all.memory.add(n, (d, b), |x, (d, b)| {
            x.0.append(d);
            x.1 += b;
        });
    }
    for e in p.engines {
        let key = device_key(devices, file_index, e.gpu);
        match all.engines.entry((key, e.engine)) {
            Entry::Occupied(mut o) => {
                let x = o.get_mut();
                x.2 += e.ops;
                x.3.union(e.busy);
            }
            Entry::Vacant(v) => {
                v.insert((e.gpu, device_name(devices, e.gpu), e.ops, e.busy));
            }
        }
    }
    all.streams.extend(t.streams.iter().cloned());
    all.threads.extend(t.threads.iter().cloned());
    all.counters.extend(p.counters);
    t
}

impl All {
    fn tables(mut self) -> Tables {
        let span = if self.switched {
            self.recorded.total()
        } else {
            self.span.dur()
        };
        let mut t = Tables {
            span: (!self.span.is_empty()).then_some(self.span),
            kernels: durations_rows(&mut { self.kernels.items }),
            api: durations_rows(&mut { self.api.items }),
            ranges: durations_rows(&mut { self.ranges.items }),
            memory: table(
                self.memory
                    .items
                    .into_iter()
                    .map(|(n, (mut d, b))| row(n, &mut d, Some(b)))
                    .collect(),
            ),
            streams: self.streams,
            threads: self.threads,
            launches: diagnose::launch_rows(&mut self.launches.items),
            idle: self.idle,
            temporal: self.temporal,
            launch_outliers: {
                let mut o = self.outliers;
                diagnose::worst_first(&mut o);
                o
            },
            ..Tables::default()
        };
        (t.counters, t.counters_by_kernel) = counter_rows(&self.counters);
        let mut per_gpu: FxHashMap<&DeviceKey, Intervals> = FxHashMap::default();
        for ((key, _), e) in &self.engines {
            per_gpu.entry(key).or_default().union(e.3.clone());
        }
        t.gpu_busy = per_gpu.values_mut().map(Intervals::total).sum();
        t.devices = self
            .engines
            .into_iter()
            .map(|((_, engine), (gpu, device, ops, mut busy))| {
                let busy = busy.total();
                EngineRow {
                    gpu,
                    device,
                    engine,
                    ops,
                    busy,
                    pct: pct(busy, span),
                }
            })
            .collect();
        t.devices.sort_by(engine_order);
        t.streams.sort_by(|a, b| {
            b.busy
                .cmp(&a.busy)
                .then_with(|| (a.pid, a.gpu, &a.name).cmp(&(b.pid, b.gpu, &b.name)))
        });
        t.threads.sort_by(|a, b| {
            b.waiting
                .cmp(&a.waiting)
                .then_with(|| (a.pid, a.tid).cmp(&(b.pid, b.tid)))
        });
        t
    }
}

/// The summary of the files, in the order given: each one's header and
/// what its read kept.
pub(crate) fn build(files: Vec<(FileSummary, FileData)>) -> Summary {
    let n_procs: usize = files.iter().map(|f| f.1.procs.len()).sum();
    let mut all = (n_procs > 1).then(All::default);
    let mut out = Summary::default();
    // Kernel names' mangled names.
    let mut mangled: FxHashMap<String, String> = FxHashMap::default();
    // Telemetry by device, in the order first seen.
    let mut devices: Vec<(DeviceKey, i64, String, Vec<String>, DeviceAcc)> = Vec::new();
    for (i, (header, mut f)) in files.into_iter().enumerate() {
        // A run never switched on and off has no windows (`None`); one
        // switched has them, even none.
        let windows = header.windows.map(|_| header.window_spans.as_slice());
        let accs = telemetry::of_tracks(&mut f.telemetry, f.end, windows);
        for (gpu, acc) in accs {
            let key = device_key(&header.devices, i, gpu);
            match devices.iter_mut().find(|d| d.0 == key) {
                Some(d) => {
                    d.3.push(header.path.clone());
                    d.4.join(acc);
                }
                None => devices.push((
                    key,
                    gpu,
                    device_name(&header.devices, gpu),
                    vec![header.path.clone()],
                    acc,
                )),
            }
        }
        let alone = f.procs.len() == 1;
        for (pid, mut p) in f.procs {
            for (d, m) in std::mem::take(&mut p.mangled) {
                mangled.entry(d).or_insert(m);
            }
            let recorded = Recorded {
                windows: Some(header.window_spans.as_slice()).filter(|w| !w.is_empty()),
                alone,
            };
            let tables = process(
                &header.path,
                i,
                &header.devices,
                pid,
                p,
                recorded,
                all.as_mut(),
            );
            let rank = f
                .processes
                .iter()
                .find(|d| d.pid == pid)
                .and_then(|d| Rank::from_labels(d.labels.iter().map(String::as_str)));
            out.processes.push(Process {
                file: header.path.clone(),
                pid,
                rank,
                tables,
            });
        }
        out.files.push(header);
    }
    out.telemetry = devices
        .into_iter()
        .map(|(_, gpu, device, files, acc)| telemetry::table(gpu, device, files, acc))
        .collect();
    out.ranks = crate::ranks::of(&out.processes);
    for p in &mut out.processes {
        let rank = p.rank.map(|r| r.rank);
        p.tables.idle.iter_mut().for_each(|r| r.rank = rank);
        p.tables.temporal.iter_mut().for_each(|r| r.rank = rank);
    }
    out.all = match all {
        Some(mut a) => {
            let rank_of = |file: &str, pid: Pid| {
                out.processes
                    .iter()
                    .find(|p| p.file == file && p.pid == pid)
                    .and_then(|p| p.rank.map(|r| r.rank))
            };
            for r in &mut a.idle {
                r.rank = rank_of(&r.file, r.pid);
            }
            for r in &mut a.temporal {
                r.rank = rank_of(&r.file, r.pid);
            }
            a.tables()
        }
        None => out
            .processes
            .first()
            .map(|s| s.tables.clone())
            .unwrap_or_default(),
    };
    name_kernels(&mut out, &mangled);
    let top = out.all.kernels.first().map(|k| {
        (
            k.short_name.clone().unwrap_or_else(|| k.name.clone()),
            k.pct,
        )
    });
    let straggler = out.ranks.as_ref().and_then(|r| {
        r.straggler
            .as_ref()
            .map(|s| (r.verdict(), 100.0 * s.excess))
    });
    if out.processes.is_empty() {
        return out;
    }
    out.verdict = diagnose::verdict(
        &out.all.idle,
        &out.all.temporal,
        &out.all.launches,
        top.as_ref().map(|(k, p)| (k.as_str(), *p)),
        straggler,
    );
    out
}

/// Gives every kernel row its unique short name (over every kernel name
/// of the summary, so that a name reads the same in every table) and its
/// mangled name.
fn name_kernels(out: &mut Summary, mangled: &FxHashMap<String, String>) {
    let mut names: Vec<&str> = out
        .processes
        .iter()
        .flat_map(|p| p.tables.kernels.iter().map(|r| r.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let short: FxHashMap<String, String> = names
        .iter()
        .map(|n| n.to_string())
        .zip(crate::names::short_names(&names))
        .collect();
    let name = |n: &str| short.get(n).cloned().unwrap_or_else(|| n.to_owned());
    let tables =
        std::iter::once(&mut out.all).chain(out.processes.iter_mut().map(|p| &mut p.tables));
    for t in tables {
        for r in &mut t.kernels {
            r.short_name = Some(name(&r.name));
            r.mangled = Some(mangled.get(&r.name).unwrap_or(&r.name).clone());
        }
        for r in &mut t.launches {
            r.short_name = name(&r.name);
        }
        for r in &mut t.launch_outliers {
            r.short_name = name(&r.kernel);
        }
    }
}

/// How a pid reads: `?` for [`UNKNOWN_PID`].
pub fn pid_text(pid: Pid) -> String {
    if pid == UNKNOWN_PID {
        "?".to_owned()
    } else {
        pid.to_string()
    }
}
