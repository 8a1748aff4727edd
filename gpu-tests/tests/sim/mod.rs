//! The `EXPECT` lines of a cupti-sim script: what a CUDA program that made these calls would
//! print, derived from the script's CUDA semantics alone (what ran where, on which stream,
//! inside which NVTX range), never from what the injection does with it.

use cupti_sim::Scenario;
use cupti_sim::scenario::{CopyKind, KernelSpec, Op};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// A kernel `name()` (no parameters): its Itanium symbol is `_Z<len><name>v`, so that the
/// demangled name is `name()` and gpu-check's `kernel.<name>` keys find it.
pub(crate) fn kernel(name: &str, duration_us: u64) -> KernelSpec {
    KernelSpec {
        name: name.into(),
        symbol: format!("_Z{}{name}v", name.len()),
        registers: 16,
        static_smem: 0,
        duration_us,
    }
}

/// What ran last on a stream: a kernel (by name) or other work.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    Kernel(String),
    Other,
}

/// One NVTX push range: (thread, depth, domain, kernel submissions inside).
type Range = (usize, usize, Option<String>, u64);

#[derive(Default)]
struct Tally {
    kernels: BTreeMap<String, u64>,
    grid: BTreeMap<String, BTreeSet<[u32; 3]>>,
    block: BTreeMap<String, BTreeSet<[u32; 3]>>,
    /// Kernels each thread submitted itself (a graph launch submits its first node).
    per_thread: BTreeMap<usize, u64>,
    streams_of_thread: BTreeMap<usize, BTreeSet<u32>>,
    graph_kernels: u64,
    graph_launches: u64,
    /// Graph-node kernel executions by name (cupti-sim numbers nodes anew at every launch,
    /// so each is a distinct node id).
    graph_nodes: BTreeMap<String, u64>,
    copies: BTreeMap<&'static str, (u64, u64)>,
    copy_kinds: BTreeMap<&'static str, u64>,
    memsets: u64,
    memset_bytes: u64,
    memset_values: BTreeMap<u8, u64>,
    /// Outermost calls by runtime function.
    api: BTreeMap<&'static str, u64>,
    /// Submission arrows by runtime function (one per call that ran work).
    arrows: BTreeMap<&'static str, u64>,
    /// Per sync function: what each call waits for (None: nothing to wait for).
    waits: BTreeMap<&'static str, Vec<Option<Vec<Work>>>>,
    /// NVTX push ranges by message.
    ranges: BTreeMap<String, Vec<Range>>,
    startend: BTreeMap<String, u64>,
    marks: BTreeMap<String, Vec<usize>>,
}

struct Walker<'a> {
    s: &'a Scenario,
    t: Tally,
    /// Work last queued on each stream (across threads: streams are the device's).
    tails: BTreeMap<u32, Work>,
    graphs: BTreeMap<String, Vec<String>>,
}

struct ThreadState {
    index: usize,
    capturing: BTreeMap<u32, Vec<String>>,
    /// Open push ranges: (message, domain, launches so far).
    open: Vec<(String, Option<String>, u64)>,
}

impl Walker<'_> {
    fn launched(&mut self, th: &mut ThreadState, stream: u32) {
        *self.t.per_thread.entry(th.index).or_default() += 1;
        self.t
            .streams_of_thread
            .entry(th.index)
            .or_default()
            .insert(stream);
        for r in &mut th.open {
            r.2 += 1;
        }
    }

    fn walk(&mut self, th: &mut ThreadState, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Launch {
                    kernel,
                    grid,
                    block,
                    stream,
                    ..
                } => {
                    *self.t.api.entry("cudaLaunchKernel").or_default() += 1;
                    if let Some(c) = th.capturing.get_mut(stream) {
                        c.push(kernel.clone());
                        self.t.arrows.entry("cudaLaunchKernel").or_default();
                        continue;
                    }
                    *self.t.arrows.entry("cudaLaunchKernel").or_default() += 1;
                    *self.t.kernels.entry(kernel.clone()).or_default() += 1;
                    self.t.grid.entry(kernel.clone()).or_default().insert(*grid);
                    self.t
                        .block
                        .entry(kernel.clone())
                        .or_default()
                        .insert(*block);
                    self.tails.insert(*stream, Work::Kernel(kernel.clone()));
                    self.launched(th, *stream);
                }
                Op::Memcpy {
                    bytes,
                    kind,
                    stream,
                } => {
                    let f = if stream.is_some() {
                        "cudaMemcpyAsync"
                    } else {
                        "cudaMemcpy"
                    };
                    *self.t.api.entry(f).or_default() += 1;
                    *self.t.arrows.entry(f).or_default() += 1;
                    // cupti-sim's copies are pageable host memory to and from device memory.
                    let (dir, k) = match kind {
                        CopyKind::H2D => ("HtoD", "HtoD:pageable:device"),
                        CopyKind::D2H => ("DtoH", "DtoH:device:pageable"),
                        CopyKind::D2D => ("DtoD", "DtoD:device:device"),
                    };
                    let c = self.t.copies.entry(dir).or_default();
                    c.0 += 1;
                    c.1 += bytes;
                    *self.t.copy_kinds.entry(k).or_default() += 1;
                    self.tails.insert(stream.unwrap_or(0), Work::Other);
                }
                Op::Memset {
                    bytes,
                    value,
                    stream,
                } => {
                    let f = if stream.is_some() {
                        "cudaMemsetAsync"
                    } else {
                        "cudaMemset"
                    };
                    *self.t.api.entry(f).or_default() += 1;
                    *self.t.arrows.entry(f).or_default() += 1;
                    self.t.memsets += 1;
                    self.t.memset_bytes += bytes;
                    *self.t.memset_values.entry(*value).or_default() += 1;
                    self.tails.insert(stream.unwrap_or(0), Work::Other);
                }
                Op::StreamSync { stream } => {
                    *self.t.api.entry("cudaStreamSynchronize").or_default() += 1;
                    let w = self.tails.get(stream).cloned().map(|w| vec![w]);
                    self.t
                        .waits
                        .entry("cudaStreamSynchronize")
                        .or_default()
                        .push(w);
                }
                Op::DeviceSync => {
                    *self.t.api.entry("cudaDeviceSynchronize").or_default() += 1;
                    let all: Vec<Work> = self.tails.values().cloned().collect();
                    self.t
                        .waits
                        .entry("cudaDeviceSynchronize")
                        .or_default()
                        .push((!all.is_empty()).then_some(all));
                }
                Op::BeginCapture { stream } => {
                    th.capturing.insert(*stream, Vec::new());
                }
                Op::EndCapture { stream, graph } => {
                    let nodes = th.capturing.remove(stream).unwrap_or_default();
                    self.graphs.insert(graph.clone(), nodes);
                }
                Op::GraphLaunch { graph, stream } => {
                    *self.t.api.entry("cudaGraphLaunch").or_default() += 1;
                    let nodes = self.graphs.get(graph).cloned().unwrap_or_default();
                    if nodes.is_empty() {
                        self.t.arrows.entry("cudaGraphLaunch").or_default();
                        continue;
                    }
                    // One arrow per launch, to its first node.
                    *self.t.arrows.entry("cudaGraphLaunch").or_default() += 1;
                    self.t.graph_launches += 1;
                    for n in &nodes {
                        *self.t.kernels.entry(n.clone()).or_default() += 1;
                        *self.t.graph_nodes.entry(n.clone()).or_default() += 1;
                        self.t.graph_kernels += 1;
                    }
                    let last = nodes.last().expect("not empty").clone();
                    self.tails.insert(*stream, Work::Kernel(last));
                    self.launched(th, *stream);
                }
                Op::ProfilerStart
                | Op::ProfilerStop
                | Op::SleepUs { .. }
                | Op::Announce { .. }
                | Op::WaitFile { .. } => {}
                // Not in the synthetic programs (their own suite checks them).
                Op::Alloc { .. }
                | Op::Free { .. }
                | Op::Uvm { .. }
                | Op::MemcpyPeer { .. }
                | Op::Signals { .. }
                | Op::Fork { .. }
                | Op::Exec { .. }
                | Op::GpuTrace { .. } => {}
                // Recorded at its pop; its depth is the number of ranges open around it.
                Op::NvtxPush { message, domain } => {
                    th.open.push((message.clone(), domain.clone(), 0));
                }
                Op::NvtxPop { .. } => {
                    let (msg, domain, launches) = th.open.pop().expect("pop of a push");
                    let depth = th.open.len();
                    self.t
                        .ranges
                        .entry(msg)
                        .or_default()
                        .push((th.index, depth, domain, launches));
                }
                Op::NvtxMark { message } => {
                    self.t
                        .marks
                        .entry(message.clone())
                        .or_default()
                        .push(th.index);
                }
                Op::NvtxStart { message, .. } => {
                    *self.t.startend.entry(message.clone()).or_default() += 1;
                }
                Op::NvtxEnd { .. } => {}
                Op::Repeat { times, ops } => {
                    for _ in 0..*times {
                        self.walk(th, ops);
                    }
                }
            }
        }
    }
}

/// Thread labels for `thread.` keys: the scripted thread's index.
fn label(i: usize) -> String {
    format!("t{i}")
}

/// The `EXPECT` line of `case` for a program that ran `s` (threads one after another, as the
/// scripts of these tests are written: streams are not shared between threads that overlap).
pub(crate) fn expect_line(case: &str, s: &Scenario) -> String {
    let mut w = Walker {
        s,
        t: Tally::default(),
        tails: BTreeMap::new(),
        graphs: BTreeMap::new(),
    };
    for (i, th) in s.threads.iter().enumerate() {
        let mut st = ThreadState {
            index: i,
            capturing: BTreeMap::new(),
            open: Vec::new(),
        };
        w.walk(&mut st, &th.ops);
        assert!(st.open.is_empty(), "thread {i} leaves NVTX ranges open");
    }
    let _ = w.s;
    let t = w.t;
    let mut o = format!("EXPECT case={case}");
    let mut kv = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(o, " {k}={v}");
    };
    kv("kernels", &t.kernels.values().sum::<u64>());
    for (k, n) in &t.kernels {
        kv(&format!("kernel.{k}"), n);
    }
    for (head, m) in [("grid", &t.grid), ("block", &t.block)] {
        for (k, dims) in m {
            if let [d] = dims.iter().collect::<Vec<_>>()[..] {
                kv(
                    &format!("{head}.{k}"),
                    &format!("{},{},{}", d[0], d[1], d[2]),
                );
            }
        }
    }
    for k in t.grid.keys() {
        kv(&format!("submit_api.{k}"), &"cudaLaunchKernel");
    }
    if !t.per_thread.is_empty() {
        kv("threads", &t.per_thread.len());
        let per: Vec<String> = t.per_thread.values().map(u64::to_string).collect();
        kv("per_thread", &per.join(","));
        let mut all = BTreeSet::new();
        let one = t
            .streams_of_thread
            .values()
            .all(|s| s.len() == 1 && s.iter().all(|x| all.insert(*x)));
        kv("stream_per_thread", &u8::from(one));
        let streams: BTreeSet<u32> = t.streams_of_thread.values().flatten().copied().collect();
        kv("streams", &streams.len());
    }
    if t.graph_kernels > 0 {
        kv("graph_kernels", &t.graph_kernels);
        kv("graph_launches", &t.graph_launches);
        for (k, n) in &t.graph_nodes {
            kv(&format!("graph_nodes.{k}"), n);
        }
    }
    kv("memcpy", &t.copies.values().map(|c| c.0).sum::<u64>());
    for (dir, (n, bytes)) in &t.copies {
        kv(&format!("copy.{dir}"), n);
        kv(&format!("copy_bytes.{dir}"), bytes);
    }
    if !t.copy_kinds.is_empty() {
        let v: Vec<String> = t
            .copy_kinds
            .iter()
            .map(|(k, n)| format!("{k}:{n}"))
            .collect();
        kv("copy_kinds", &v.join(","));
    }
    kv("memset", &t.memsets);
    if t.memsets > 0 {
        kv("memset_bytes", &t.memset_bytes);
        let v: Vec<String> = t
            .memset_values
            .iter()
            .map(|(k, n)| format!("{k}:{n}"))
            .collect();
        kv("memset_values", &v.join(","));
    }
    for (f, n) in &t.api {
        kv(&format!("api.{f}"), n);
    }
    for (f, n) in &t.arrows {
        kv(&format!("arrows.{f}"), n);
    }
    for (f, calls) in &t.waits {
        // Each call waits for work; name the kernel when every call waits for that one alone.
        if calls.iter().any(Option::is_none) {
            continue;
        }
        let targets: BTreeSet<&Work> = calls.iter().flatten().flatten().collect();
        let v = match targets.iter().collect::<Vec<_>>()[..] {
            [Work::Kernel(k)] if calls.iter().flatten().all(|c| c.len() == 1) => k.clone(),
            _ => "any".into(),
        };
        kv(&format!("waits.{f}"), &v);
    }
    for (msg, inst) in &t.ranges {
        let depths: BTreeSet<usize> = inst.iter().map(|r| r.1).collect();
        match depths.iter().collect::<Vec<_>>()[..] {
            [d] => kv(&format!("range.{msg}"), &format!("{}@{d}", inst.len())),
            _ => kv(&format!("range.{msg}"), &inst.len()),
        }
        let doms: BTreeSet<&Option<String>> = inst.iter().map(|r| &r.2).collect();
        if let [Some(d)] = doms.iter().collect::<Vec<_>>()[..] {
            kv(&format!("domain.{msg}"), d);
        }
        let threads: BTreeSet<usize> = inst.iter().map(|r| r.0).collect();
        if let [i] = threads.iter().collect::<Vec<_>>()[..] {
            kv(&format!("thread.{msg}"), &label(*i));
        }
        kv(
            &format!("kernels_in.{msg}"),
            &inst.iter().map(|r| r.3).sum::<u64>(),
        );
    }
    for (msg, n) in &t.startend {
        kv(&format!("startend.{msg}"), n);
    }
    for (msg, threads) in &t.marks {
        kv(&format!("mark.{msg}"), &threads.len());
        let set: BTreeSet<&usize> = threads.iter().collect();
        if let [i] = set.iter().collect::<Vec<_>>()[..] {
            kv(&format!("thread.{msg}"), &label(**i));
        }
    }
    o
}
