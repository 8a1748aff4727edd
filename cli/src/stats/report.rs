//! The tables of `stats`, per process and over all processes, from what
//! the reads kept.

use super::busy::Intervals;
use super::dist::{Durations, Row, mean_min_max, row, table};
use super::read::{CounterData, FileData, KERNEL_ENGINE, Pid, ProcData, Span, UNKNOWN_PID};
use super::telemetry::{self, DeviceAcc, DeviceTelemetry};
use gpu_trace_reader::DeviceInfo;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::collections::hash_map::Entry;

/// A counter's mean, min and max over the kernels profiled, of one kernel
/// name or of all.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CounterRow {
    /// `None` in the table over all kernels.
    pub(crate) kernel: Option<String>,
    pub(crate) metric: String,
    pub(crate) kernels: u64,
    pub(crate) mean: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

/// A device engine's busy time: the union of its operations' intervals.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EngineRow {
    pub(crate) gpu: i64,
    /// The device's name, where the trace describes it.
    pub(crate) device: String,
    /// [`KERNEL_ENGINE`], or the memory operation ("Memcpy HtoD" ...).
    pub(crate) engine: String,
    pub(crate) ops: u64,
    pub(crate) busy: u64,
    /// Of the scope's span.
    pub(crate) pct: f64,
}

/// A stream's busy time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StreamRow {
    pub(crate) file: String,
    pub(crate) pid: Pid,
    pub(crate) gpu: i64,
    pub(crate) name: String,
    pub(crate) kernels: u64,
    pub(crate) memory: u64,
    pub(crate) busy: u64,
    /// Of its process's span.
    pub(crate) pct: f64,
}

/// A thread's time waiting for the GPU in API calls.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadRow {
    pub(crate) file: String,
    pub(crate) pid: Pid,
    /// `None` for a track that names no thread.
    pub(crate) tid: Option<i64>,
    pub(crate) name: String,
    pub(crate) calls: u64,
    /// Its traced span: first slice's start to last slice's end, ns; of
    /// it, the time recorded when the run was switched on and off.
    pub(crate) span: u64,
    pub(crate) waiting_calls: u64,
    /// The union of its waiting calls, ns.
    pub(crate) waiting: u64,
    /// Of its span.
    pub(crate) pct: f64,
}

/// Every table of one scope.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tables {
    pub(crate) span: Option<Span>,
    pub(crate) kernels: Vec<Row>,
    pub(crate) memory: Vec<Row>,
    pub(crate) api: Vec<Row>,
    pub(crate) ranges: Vec<Row>,
    pub(crate) counters: Vec<CounterRow>,
    pub(crate) counters_by_kernel: Vec<CounterRow>,
    pub(crate) devices: Vec<EngineRow>,
    pub(crate) streams: Vec<StreamRow>,
    pub(crate) threads: Vec<ThreadRow>,
    /// The union of the scope's GPU work on each device (kernels, copies
    /// and memsets: the intervals of the devices table), summed over its
    /// devices, ns.
    pub(crate) gpu_busy: u64,
}

/// One process, or (`file` and `pid` `None`) all of them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scope {
    pub(crate) file: Option<String>,
    pub(crate) pid: Option<Pid>,
    /// Its rank in the job, from its descriptor's labels.
    pub(crate) rank: Option<gpu_trace_model::rank::Rank>,
    pub(crate) tables: Tables,
}

/// What one file says of itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FileHeader {
    pub(crate) path: String,
    pub(crate) size: u64,
    pub(crate) span: Option<Span>,
    pub(crate) devices: Vec<DeviceInfo>,
    pub(crate) pids: Vec<Pid>,
    pub(crate) sources: Vec<String>,
    pub(crate) categories: Vec<String>,
    /// `None`: the trace has no summary line (not finalised).
    pub(crate) losses: Option<Vec<(String, u64)>>,
    pub(crate) truncated_at: Option<u64>,
    /// Where the trace is damaged between packets (not read past).
    pub(crate) damaged_at: Option<u64>,
    /// Packets left out for damage inside them.
    pub(crate) damaged_packets: u64,
    pub(crate) problems: Vec<String>,
    pub(crate) dangling: Vec<(String, u64)>,
    /// Graphics APIs of its GPU work (4 CUDA, 5 HIP).
    pub(crate) apis: Vec<u64>,
    /// Recording windows: how many, and their total time, ns (`None`: the
    /// run was never switched on and off).
    pub(crate) windows: Option<(u32, u64)>,
    /// The windows themselves, [start, end) ns in the trace's clock.
    pub(crate) window_spans: Vec<(u64, u64)>,
}

impl FileHeader {
    /// Whether the trace says it holds everything that happened.
    pub(crate) fn complete(&self) -> bool {
        self.truncated_at.is_none()
            && self.damaged_at.is_none()
            && self.damaged_packets == 0
            && self.losses.as_ref().is_some_and(|l| l.is_empty())
    }
}

/// Everything `stats` shows of a set of traces.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Summary {
    pub(crate) files: Vec<FileHeader>,
    pub(crate) processes: Vec<Scope>,
    /// Over every process of every file (the one process's tables when
    /// there is one).
    pub(crate) all: Tables,
    /// Device telemetry, per GPU (one sampled by several traces once).
    pub(crate) telemetry: Vec<DeviceTelemetry>,
    /// The processes side by side as the ranks of one job, when there are
    /// several.
    pub(crate) ranks: Option<super::ranks::Ranks>,
}

impl Summary {
    /// Whether every trace says it holds everything that happened.
    pub(crate) fn complete(&self) -> bool {
        self.files.iter().all(FileHeader::complete)
    }

    /// Whether there is more than one process to show.
    pub(crate) fn several(&self) -> bool {
        self.processes.len() > 1
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
        by_metric.entry(&s.metric).or_default().push(s.value);
        by_kernel
            .entry((&s.kernel, &s.metric))
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
    let Some(all) = all else { return t };
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

/// The summary of the files, in the order given.
pub(crate) fn build(files: Vec<FileData>) -> Summary {
    let n_procs: usize = files.iter().map(|f| f.procs.len()).sum();
    let mut all = (n_procs > 1).then(All::default);
    let mut out = Summary::default();
    // Telemetry by device, in the order first seen.
    let mut devices: Vec<(DeviceKey, i64, String, Vec<String>, DeviceAcc)> = Vec::new();
    for (i, mut f) in files.into_iter().enumerate() {
        let accs = telemetry::of_tracks(&mut f.telemetry, f.end, f.window_spans.as_deref());
        for (gpu, acc) in accs {
            let key = device_key(&f.devices, i, gpu);
            match devices.iter_mut().find(|d| d.0 == key) {
                Some(d) => {
                    d.3.push(f.path.clone());
                    d.4.join(acc);
                }
                None => devices.push((
                    key,
                    gpu,
                    device_name(&f.devices, gpu),
                    vec![f.path.clone()],
                    acc,
                )),
            }
        }
        out.files.push(FileHeader {
            path: f.path.clone(),
            size: f.size,
            span: (!f.span.is_empty()).then_some(f.span),
            devices: f.devices.clone(),
            pids: f.procs.keys().copied().collect(),
            sources: f.sources,
            categories: f.categories,
            losses: f.losses,
            truncated_at: f.truncated_at,
            damaged_at: f.damaged_at,
            damaged_packets: f.damaged_packets,
            problems: f.problems,
            dangling: f.dangling,
            apis: f.apis,
            windows: f.windows,
            window_spans: f.window_spans.clone().unwrap_or_default(),
        });
        let alone = f.procs.len() == 1;
        for (pid, p) in f.procs {
            let recorded = Recorded {
                windows: f.window_spans.as_deref().filter(|w| !w.is_empty()),
                alone,
            };
            let tables = process(&f.path, i, &f.devices, pid, p, recorded, all.as_mut());
            let rank = f.processes.iter().find(|d| d.pid == pid).and_then(|d| {
                gpu_trace_model::rank::Rank::from_labels(d.labels.iter().map(String::as_str))
            });
            out.processes.push(Scope {
                file: Some(f.path.clone()),
                pid: Some(pid),
                rank,
                tables,
            });
        }
    }
    out.telemetry = devices
        .into_iter()
        .map(|(_, gpu, device, files, acc)| telemetry::table(gpu, device, files, acc))
        .collect();
    out.ranks = super::ranks::of(&out.processes);
    out.all = match all {
        Some(a) => a.tables(),
        None => out
            .processes
            .first()
            .map(|s| s.tables.clone())
            .unwrap_or_default(),
    };
    out
}

/// How a pid reads.
pub(crate) fn pid_text(pid: Pid) -> String {
    if pid == UNKNOWN_PID {
        "?".to_owned()
    } else {
        pid.to_string()
    }
}
