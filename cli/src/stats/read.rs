//! `gpu-trace stats`: nsys-stats-like summaries of a trace.

use gpu_trace_reader::{
    CounterValue, GpuEvent, KernelInfo, Parts, ReadError, Slice, Stage, Str, Trace, Visitor,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Duration statistics of one group (a kernel name, an API function ...).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// Group name.
    pub(crate) name: String,
    /// Number of instances.
    pub(crate) count: u64,
    /// Sum of durations, ns.
    pub(crate) total: u64,
    /// Mean, ns.
    pub(crate) avg: f64,
    /// Median, ns.
    pub(crate) median: u64,
    /// Minimum, ns.
    pub(crate) min: u64,
    /// Maximum, ns.
    pub(crate) max: u64,
    /// Standard deviation, ns.
    pub(crate) stddev: f64,
    /// Bytes (memory operations), summed.
    pub(crate) bytes: Option<u64>,
}

/// One group's statistics.
fn row(name: String, mut d: Vec<u64>, bytes: Option<u64>) -> Row {
    d.sort_unstable();
    let n = d.len() as f64;
    let total: u64 = d.iter().sum();
    let avg = total as f64 / n;
    let var = d.iter().map(|&x| (x as f64 - avg).powi(2)).sum::<f64>() / n;
    Row {
        name,
        count: d.len() as u64,
        total,
        avg,
        median: d[d.len() / 2],
        min: d[0],
        max: d[d.len() - 1],
        stddev: var.sqrt(),
        bytes,
    }
}

/// What a group's key is found by: kept alive, so that its address (the
/// key) is not reused.
#[allow(dead_code)] // held, never read
enum Holder {
    Kernel(Arc<KernelInfo>),
    Name(Str),
}

/// Durations and bytes by group name. Each event finds its group by the
/// address of its interned name (or kernel), without hashing the text.
#[derive(Default)]
struct Groups {
    by_key: FxHashMap<usize, usize>,
    keep: Vec<Holder>,
    by_name: FxHashMap<String, usize>,
    groups: Vec<(String, Vec<u64>, Option<u64>)>,
}

impl Groups {
    fn named(&mut self, name: &str) -> usize {
        match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                self.groups.push((name.to_owned(), Vec::new(), None));
                self.by_name.insert(name.to_owned(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        }
    }

    fn add_to(&mut self, i: usize, dur: u64, bytes: Option<u64>) {
        let g = &mut self.groups[i];
        g.1.push(dur);
        if let Some(b) = bytes {
            *g.2.get_or_insert(0) += b;
        }
    }

    #[cfg(test)]
    fn add(&mut self, name: &str, dur: u64, bytes: Option<u64>) {
        let i = self.named(name);
        self.add_to(i, dur, bytes);
    }

    fn add_str(&mut self, name: &Str, dur: u64, bytes: Option<u64>) {
        let key = name.as_str().as_ptr() as usize;
        let i = match self.by_key.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.named(name);
                self.keep.push(Holder::Name(name.clone()));
                self.by_key.insert(key, i);
                i
            }
        };
        self.add_to(i, dur, bytes);
    }

    fn add_kernel(&mut self, k: &Arc<KernelInfo>, dur: u64) {
        let key = Arc::as_ptr(k) as usize;
        let i = match self.by_key.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.named(&k.demangled);
                self.keep.push(Holder::Kernel(k.clone()));
                self.by_key.insert(key, i);
                i
            }
        };
        self.add_to(i, dur, None);
    }

    /// The rows, by total time (most first), then name.
    fn rows(self) -> Vec<Row> {
        let mut out: Vec<Row> = self
            .groups
            .into_iter()
            .map(|(name, d, bytes)| row(name, d, bytes))
            .collect();
        out.sort_by(|a, b| b.total.cmp(&a.total).then(a.name.cmp(&b.name)));
        out
    }
}

#[cfg(test)]
fn rows<'a>(items: impl Iterator<Item = (&'a str, u64, Option<u64>)>) -> Vec<Row> {
    let mut g = Groups::default();
    for (name, dur, bytes) in items {
        g.add(name, dur, bytes);
    }
    g.rows()
}

/// Hashes GPU event ids, which differ in their middle bits
/// (`correlation << 22 | pid`), with splitmix64's finaliser: every bit of
/// the id reaches the bits the table indexes and tags by.
#[derive(Default, Clone, Copy)]
struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// A set of GPU event ids, as bits in pages of consecutive correlations.
/// Ids are `correlation << 22 | pid` (and a flag bit) with correlations
/// counting up, so a trace's ids fill few pages densely: an eighth of a
/// byte an id, and a page found again mostly by the last lookup. Any id
/// is stored exactly, whatever its layout.
#[derive(Default)]
struct IdSet {
    index: HashMap<u64, u32, IdHash>,
    pages: Vec<[u64; PAGE_WORDS]>,
    /// The page of the last insert and of the last lookup.
    last_insert: Option<(u64, u32)>,
    last_lookup: Option<(u64, u32)>,
}

/// Correlations per page: bits 22.. of an id.
const PAGE_BITS: u32 = 10;
const PAGE_WORDS: usize = (1 << PAGE_BITS) / 64;
const PAGE_MASK: u64 = ((1 << PAGE_BITS) - 1) << 22;

impl IdSet {
    /// The page key of `id` and its bit in the page.
    #[inline]
    fn split(id: u64) -> (u64, usize) {
        (id & !PAGE_MASK, ((id & PAGE_MASK) >> 22) as usize)
    }

    fn insert(&mut self, id: u64) {
        let (key, bit) = Self::split(id);
        let page = match self.last_insert {
            Some((k, p)) if k == key => p,
            _ => {
                let next = self.pages.len() as u32;
                let p = *self.index.entry(key).or_insert(next);
                if p == next {
                    self.pages.push([0; PAGE_WORDS]);
                }
                self.last_insert = Some((key, p));
                p
            }
        };
        self.pages[page as usize][bit / 64] |= 1 << (bit % 64);
    }

    fn contains(&mut self, id: u64) -> bool {
        let (key, bit) = Self::split(id);
        let page = match self.last_lookup {
            Some((k, p)) if k == key => p,
            _ => match self.index.get(&key) {
                Some(&p) => {
                    self.last_lookup = Some((key, p));
                    p
                }
                None => return false,
            },
        };
        self.pages[page as usize][bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// A slice whose submissions are not all among the GPU events read so far.
struct Waiting {
    ts: u64,
    depth: u32,
    begin: u32,
    name: Str,
    /// Submissions not seen yet.
    missing: u32,
}

/// Accumulates a summary from the events of a trace as they stream by.
#[derive(Default)]
struct Acc {
    kernels: Groups,
    memory: Groups,
    api: Groups,
    ranges: Groups,
    /// The per-kernel values of each counter, in trace order.
    counters: BTreeMap<String, Vec<f64>>,
    /// Per (device, counter): whether its next sample is a kernel's value
    /// (a kernel's counters are written as its value at its start, then a
    /// return to zero at its end).
    next_is_value: HashMap<(i64, String), bool>,
    /// Every per-kernel value with its device and time, to meet the kernel
    /// that starts there (see [`by_kernel`]).
    samples: Vec<Sample>,
    /// Every GPU event id read so far.
    ids: IdSet,
    /// Submission ids not seen (yet) among the GPU events, with the
    /// slices waiting for them (indices into `waiting`). GPU work is
    /// mostly written before its slice, so this stays small.
    awaited: HashMap<u64, (u32, Vec<u32>), IdHash>,
    /// Slices with submissions not seen (yet); `None` once all are.
    waiting: Vec<Option<Waiting>>,
    /// Free slots of `waiting`.
    free: Vec<u32>,
    /// The submissions of one slice not seen yet (reused).
    missing: Vec<u64>,
    /// Whether a track's events were out of time order.
    unordered: bool,
}

impl Visitor for Acc {
    /// Kernels are summarised by name: their grid, block and args are
    /// left undecoded.
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }

    fn gpu_event(&mut self, e: &GpuEvent) {
        self.ids.insert(e.event_id);
        if !self.awaited.is_empty()
            && let Some((first, more)) = self.awaited.remove(&e.event_id)
        {
            for w in std::iter::once(first).chain(more) {
                self.seen(w);
            }
        }
        match e.stage {
            Stage::Kernel => match &e.kernel {
                Some(k) if !k.demangled.is_empty() => self.kernels.add_kernel(k, e.dur),
                _ => self.kernels.add_str(&e.name, e.dur, None),
            },
            Stage::Memcpy | Stage::Memset => {
                self.memory
                    .add_str(&e.name, e.dur, Some(e.bytes().unwrap_or(0)))
            }
            Stage::Other(_) => {}
        }
    }

    fn slice(&mut self, s: &Slice, begin: u32) {
        match s.gpu_api {
            Some(_) => self.api.add_str(&s.name, s.dur, None),
            None => self.ranges.add_str(&s.name, s.dur, None),
        }
        let mut missing = std::mem::take(&mut self.missing);
        missing.clear();
        missing.extend(
            s.submissions
                .iter()
                .copied()
                .filter(|&id| !self.ids.contains(id)),
        );
        if missing.is_empty() {
            self.missing = missing;
            return;
        }
        let w = Waiting {
            ts: s.ts,
            depth: s.depth,
            begin,
            name: s.name.clone(),
            missing: missing.len() as u32,
        };
        let slot = match self.free.pop() {
            Some(i) => {
                self.waiting[i as usize] = Some(w);
                i
            }
            None => {
                self.waiting.push(Some(w));
                self.waiting.len() as u32 - 1
            }
        };
        for &id in &missing {
            match self.awaited.entry(id) {
                Entry::Occupied(mut o) => o.get_mut().1.push(slot),
                Entry::Vacant(v) => {
                    v.insert((slot, Vec::new()));
                }
            }
        }
        self.missing = missing;
    }

    fn counter(&mut self, c: &CounterValue) {
        // Per-kernel counters return to zero at the kernel's end: every
        // other sample of a device's counter is that reset, not a value (a
        // kernel's value may be zero too).
        let next = self
            .next_is_value
            .entry((c.gpu_id, c.name.to_string()))
            .or_insert(true);
        let is_value = *next;
        *next = !*next;
        if !is_value {
            return;
        }
        self.samples.push(Sample {
            gpu: c.gpu_id,
            ts: c.ts,
            name: c.name.to_string(),
            value: c.value,
        });
        match self.counters.get_mut(c.name.as_str()) {
            Some(v) => v.push(c.value),
            None => {
                self.counters.insert(c.name.to_string(), vec![c.value]);
            }
        }
    }

    fn unordered_track(&mut self, _: u64) {
        self.unordered = true;
    }
}

impl Acc {
    /// One submission of slice `w` is among the GPU events.
    fn seen(&mut self, w: u32) {
        if let Some(x) = &mut self.waiting[w as usize] {
            x.missing -= 1;
            if x.missing == 0 {
                self.waiting[w as usize] = None;
                self.free.push(w);
            }
        }
    }

    /// The summary, with what `t` holds besides the events.
    fn finish(self, t: &Trace) -> Summary {
        // What is still awaited was never seen: every GPU event read after
        // a slice answered its wait.
        let mut dangling: Vec<Waiting> = self.waiting.into_iter().flatten().collect();
        dangling.sort_by_key(|w| (w.ts, w.depth, w.begin));
        Summary {
            kernels: self.kernels.rows(),
            memory: self.memory.rows(),
            api: self.api.rows(),
            ranges: self.ranges.rows(),
            counters: self
                .counters
                .into_iter()
                .map(|(n, v)| {
                    let (mean, min, max) = mean_min_max(&v);
                    (n, v.len() as u64, mean, min, max)
                })
                .collect(),
            counters_by_kernel: Vec::new(),
            losses: t.drop_counts().map(|ours| {
                // The service's last statistics are final; the tool's copy
                // of them in its summary may be a moment older.
                let mut all: Vec<(String, u64)> = ours
                    .into_iter()
                    .filter(|(k, n)| *n > 0 && (t.losses.is_none() || !k.starts_with("perfetto_")))
                    .collect();
                if let Some(l) = t.losses {
                    all.extend(
                        l.counts()
                            .into_iter()
                            .map(|(k, n)| (format!("perfetto_{k}"), n)),
                    );
                }
                all
            }),
            dangling: dangling
                .into_iter()
                .map(|w| (w.name.to_string(), w.ts))
                .collect(),
            devices: t
                .devices
                .iter()
                .map(|d| format!("GPU {}: {} ({})", d.gpu_id, d.name, d.model))
                .collect(),
        }
    }
}

/// All summaries of one trace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// Kernels by name.
    pub(crate) kernels: Vec<Row>,
    /// Copies and memsets by name ("Memcpy HtoD", "Memset").
    pub(crate) memory: Vec<Row>,
    /// API calls by function.
    pub(crate) api: Vec<Row>,
    /// NVTX / roctx ranges by text (slices without a GPU API).
    pub(crate) ranges: Vec<Row>,
    /// Per-kernel counters: name → (kernels, mean, min, max).
    pub(crate) counters: Vec<(String, u64, f64, f64, f64)>,
    /// The same per kernel name: (kernel, counter, kernels, mean, min, max).
    pub(crate) counters_by_kernel: Vec<(String, String, u64, f64, f64, f64)>,
    /// Everything lost, by kind: the tool's own counts (from its summary
    /// line) and the tracing service's (`perfetto_*`, from its statistics).
    /// `None` when the trace has no summary line: it was not finalised, so
    /// what was lost is unknown.
    pub(crate) losses: Option<Vec<(String, u64)>>,
    /// Devices.
    pub(crate) devices: Vec<String>,
    /// API slices whose submission arrow points at GPU work that is not in
    /// the trace: (name, start ns), in trace order.
    pub(crate) dangling: Vec<(String, u64)>,
}

/// One per-kernel counter value.
#[derive(Debug, Clone)]
struct Sample {
    gpu: i64,
    ts: u64,
    name: String,
    value: f64,
}

/// Finds the kernels that start where counter samples are (a second,
/// cheap pass over a trace that has counters: only their keys are kept).
#[derive(Default)]
struct KernelsAt {
    wanted: HashMap<(i64, u64), Option<String>>,
}

impl Visitor for KernelsAt {
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }

    fn gpu_event(&mut self, e: &GpuEvent) {
        if e.stage != Stage::Kernel {
            return;
        }
        if let Some(slot) = self.wanted.get_mut(&(e.gpu_id.unwrap_or(0), e.ts)) {
            *slot = Some(kernel_name(e));
        }
    }
}

/// The kernel's name as the kernels table shows it.
fn kernel_name(e: &GpuEvent) -> String {
    match &e.kernel {
        Some(k) if !k.demangled.is_empty() => k.demangled.to_string(),
        _ => e.name.to_string(),
    }
}

/// Per kernel name and counter: (kernels, mean, min, max).
fn by_kernel(
    samples: &[Sample],
    names: &HashMap<(i64, u64), Option<String>>,
) -> Vec<(String, String, u64, f64, f64, f64)> {
    let mut groups: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for s in samples {
        let kernel = names
            .get(&(s.gpu, s.ts))
            .and_then(Clone::clone)
            .unwrap_or_else(|| "(kernel not in the trace)".to_owned());
        groups
            .entry((kernel, s.name.clone()))
            .or_default()
            .push(s.value);
    }
    groups
        .into_iter()
        .map(|((k, m), v)| {
            let (mean, min, max) = mean_min_max(&v);
            (k, m, v.len() as u64, mean, min, max)
        })
        .collect()
}

fn mean_min_max(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// Summarises a decoded trace.
pub(crate) fn summarize(t: &Trace) -> Summary {
    let mut acc = Acc::default();
    for e in &t.gpu_events {
        acc.gpu_event(e);
    }
    for (i, s) in t.slices.iter().enumerate() {
        acc.slice(s, i as u32);
    }
    for c in &t.counters {
        acc.counter(c);
    }
    let mut at = KernelsAt::default();
    for s in &acc.samples {
        at.wanted.insert((s.gpu, s.ts), None);
    }
    if !at.wanted.is_empty() {
        for e in &t.gpu_events {
            at.gpu_event(e);
        }
    }
    let samples = std::mem::take(&mut acc.samples);
    let mut s = acc.finish(t);
    s.counters_by_kernel = by_kernel(&samples, &at.wanted);
    s
}

/// Summarises the trace at `p` as it is read, drawing a progress bar
/// labelled `prefix`: memory holds the durations of the groups, not the
/// decoded trace. Also returns the trace without its events (problems,
/// logs ...). A trace whose track events are out of time order is decoded
/// whole instead, so that its slices pair as [`Trace::open`] pairs them.
pub(crate) fn summarize_file(p: &Path, prefix: &str) -> Result<(Summary, Trace), ReadError> {
    let mut acc = Acc::default();
    let t = Trace::visit_showing_progress(p, prefix, &mut acc)?;
    if acc.unordered {
        let t = Trace::open_showing_progress(p, prefix)?;
        return Ok((summarize(&t), t));
    }
    let samples = std::mem::take(&mut acc.samples);
    let mut s = acc.finish(&t);
    if !samples.is_empty() {
        let mut at = KernelsAt::default();
        for x in &samples {
            at.wanted.insert((x.gpu, x.ts), None);
        }
        Trace::visit(p, &mut at)?;
        s.counters_by_kernel = by_kernel(&samples, &at.wanted);
    }
    Ok((s, t))
}

fn table(out: &mut String, title: &str, rows: &[Row], with_bytes: bool) {
    if rows.is_empty() {
        return;
    }
    let grand: u64 = rows.iter().map(|r| r.total).sum::<u64>().max(1);
    let _ = writeln!(out, "\n{title}\n");
    let _ = write!(
        out,
        " Time(%)  Total Time (ns)  Instances    Avg (ns)    Med (ns)    Min (ns)    Max (ns)  StdDev (ns)"
    );
    if with_bytes {
        let _ = write!(out, "   Total (MB)");
    }
    let _ = writeln!(out, "  Name");
    for r in rows {
        let _ = write!(
            out,
            " {:>7.1}  {:>15}  {:>9}  {:>10.1}  {:>10}  {:>10}  {:>10}  {:>11.1}",
            100.0 * r.total as f64 / grand as f64,
            r.total,
            r.count,
            r.avg,
            r.median,
            r.min,
            r.max,
            r.stddev
        );
        if with_bytes {
            let _ = write!(out, "  {:>11.3}", r.bytes.unwrap_or(0) as f64 / 1e6);
        }
        let _ = writeln!(out, "  {}", r.name);
    }
}

/// Renders the summary as text tables.
pub(crate) fn render(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Losses: {}", loss_line(s));
    for d in &s.devices {
        let _ = writeln!(out, "{d}");
    }
    table(&mut out, "GPU kernels", &s.kernels, false);
    table(&mut out, "GPU memory operations", &s.memory, true);
    table(&mut out, "API calls", &s.api, false);
    table(&mut out, "NVTX / roctx ranges", &s.ranges, false);
    if !s.counters.is_empty() {
        let _ = writeln!(out, "\nPer-kernel counters\n");
        let _ = writeln!(
            out,
            " Kernels          Mean           Min           Max  Name"
        );
        for (n, k, mean, min, max) in &s.counters {
            let _ = writeln!(out, " {k:>7}  {mean:>12.4}  {min:>12.4}  {max:>12.4}  {n}");
        }
    }
    if !s.counters_by_kernel.is_empty() {
        let _ = writeln!(out, "\nPer-kernel counters by kernel\n");
        let mut last = "";
        for (kernel, n, k, mean, min, max) in &s.counters_by_kernel {
            if kernel != last {
                let _ = writeln!(out, " {kernel}");
                let _ = writeln!(
                    out,
                    "   Kernels          Mean           Min           Max  Counter"
                );
                last = kernel;
            }
            let _ = writeln!(
                out,
                "   {k:>7}  {mean:>12.4}  {min:>12.4}  {max:>12.4}  {n}"
            );
        }
    }
    out
}

/// Whether the trace says it holds everything that happened.
pub(crate) fn complete(s: &Summary) -> bool {
    s.losses.as_ref().is_some_and(|l| l.is_empty())
}

fn loss_line(s: &Summary) -> String {
    match &s.losses {
        None => "unknown: the trace has no summary (the process did not finish tracing; data after the last write is missing)".to_owned(),
        Some(l) if l.is_empty() => "none".to_owned(),
        Some(l) => format!(
            "{} (the trace is incomplete)",
            l.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "name": r.name, "count": r.count, "total_ns": r.total, "avg_ns": r.avg,
        "median_ns": r.median, "min_ns": r.min, "max_ns": r.max, "stddev_ns": r.stddev,
        "bytes": r.bytes,
    })
}

/// Renders the summary as JSON.
pub(crate) fn to_json(s: &Summary) -> serde_json::Value {
    serde_json::json!({
        "devices": s.devices,
        "kernels": s.kernels.iter().map(row_json).collect::<Vec<_>>(),
        "memory": s.memory.iter().map(row_json).collect::<Vec<_>>(),
        "api": s.api.iter().map(row_json).collect::<Vec<_>>(),
        "ranges": s.ranges.iter().map(row_json).collect::<Vec<_>>(),
        "counters": s.counters.iter().map(|(n, k, mean, min, max)| serde_json::json!({
            "name": n, "kernels": k, "mean": mean, "min": min, "max": max})).collect::<Vec<_>>(),
        "counters_by_kernel": s.counters_by_kernel.iter().map(|(kernel, n, k, mean, min, max)| serde_json::json!({
            "kernel": kernel, "name": n, "kernels": k, "mean": mean, "min": min, "max": max})).collect::<Vec<_>>(),
        "dropped": s.losses.iter().flatten().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        "complete": complete(s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(gpu: i64, ts: u64, name: &str, v: f64) -> CounterValue {
        CounterValue {
            gpu_id: gpu,
            name: name.into(),
            ts,
            value: v,
            groups: Vec::new(),
            units: Default::default(),
            description: "".into(),
        }
    }

    #[test]
    fn per_kernel_counters_keep_zero_values_and_skip_the_resets() {
        let mut acc = Acc::default();
        // Kernel at 100 (bytes 0, a real value), at 300 (bytes 64) on GPU 0,
        // and one at 100 on GPU 1; each followed by its reset to zero.
        for (gpu, ts, v) in [
            (0, 100, 0.0),
            (0, 200, 0.0),
            (1, 100, 8.0),
            (0, 300, 64.0),
            (1, 150, 0.0),
            (0, 400, 0.0),
        ] {
            acc.counter(&value(gpu, ts, "bytes", v));
        }
        assert_eq!(acc.counters["bytes"], [0.0, 8.0, 64.0]);
        let names: HashMap<(i64, u64), Option<String>> = [
            ((0, 100), Some("a".to_owned())),
            ((0, 300), Some("b".to_owned())),
            ((1, 100), Some("a".to_owned())),
        ]
        .into_iter()
        .collect();
        let rows = by_kernel(&acc.samples, &names);
        assert_eq!(
            rows,
            [
                ("a".to_owned(), "bytes".to_owned(), 2, 4.0, 0.0, 8.0),
                ("b".to_owned(), "bytes".to_owned(), 1, 64.0, 64.0, 64.0),
            ]
        );
    }

    #[test]
    fn id_set_holds_exactly_the_ids_inserted() {
        let mut set = IdSet::default();
        let ids: Vec<u64> = (0..5000u64)
            .map(|c| c << 22 | 4242)
            .chain([
                0,
                1,
                u64::MAX,
                gpu_trace_reader::SECONDARY_EVENT_ID_BIT | 7 << 22 | 4242,
            ])
            .collect();
        for &id in ids.iter().step_by(2) {
            set.insert(id);
        }
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(set.contains(id), i % 2 == 0, "{id:#x}");
        }
        assert!(!set.contains(4243));
    }

    #[test]
    fn rows_are_sorted_by_total_and_have_exact_statistics() {
        let r = rows(
            [
                ("a", 10, None),
                ("b", 100, None),
                ("a", 30, None),
                ("a", 20, None),
            ]
            .into_iter(),
        );
        assert_eq!(r[0].name, "b");
        let a = &r[1];
        assert_eq!(
            (a.count, a.total, a.min, a.max, a.median),
            (3, 60, 10, 30, 20)
        );
        assert!((a.avg - 20.0).abs() < 1e-9);
        assert!((a.stddev - (200.0f64 / 3.0).sqrt()).abs() < 1e-9);
    }
}
