//! GPU time by Python line (`gpu-trace stats --report python`): each
//! kernel's time goes to the Python call stack of the API call that
//! launched it (the trace's arrow from the call to the kernel, and the
//! call's interned call stack).
//!
//! Two views: by innermost frame (the line that made the call), and
//! top-down by outermost frames, cut at a depth. Every launch carries its
//! stack when call sites are recorded (nothing is sampled), so the shares
//! are exact; kernels whose call had no stack (a thread not running
//! Python, or one that had released the GIL where its frames could not be
//! read by layout) are counted apart.

use gpu_trace_reader::{CallFrame, Callstack, Stage, Trace};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// The top-down view's depth unless asked otherwise.
pub const DEFAULT_DEPTH: usize = 4;

/// One frame, as the rows name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Site {
    /// The function (`Model.forward`).
    pub function: String,
    /// Its file.
    pub file: String,
    /// The line.
    pub line: u32,
}

impl Site {
    fn of(f: &CallFrame) -> Site {
        Site {
            function: f.function.to_string(),
            file: f.file.to_string(),
            line: f.line,
        }
    }

    /// `file:line function`.
    pub fn label(&self) -> String {
        format!("{}:{} {}", self.file, self.line, self.function)
    }
}

/// Kernel time under one frame (innermost, or a node of the top-down view).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteRow {
    /// The frame.
    pub site: Site,
    /// Depth in the top-down view (0: outermost); 0 in the by-line view.
    pub depth: usize,
    /// Kernels.
    pub count: u64,
    /// Their GPU time, ns.
    pub total_ns: u64,
    /// Of all kernel time in the traces, 0..1.
    pub share: f64,
    /// The by-line view: the kernels launched there, longest total first,
    /// at most [`KERNELS_PER_LINE`] (empty in the top-down view).
    pub kernels: Vec<KernelShare>,
}

/// Kernels listed per line.
pub const KERNELS_PER_LINE: usize = 8;

/// One kernel name under a line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelShare {
    /// The kernel's name, as the trace shows it.
    pub name: String,
    /// Launches from that line.
    pub count: u64,
    /// Their GPU time, ns.
    pub total_ns: u64,
}

/// The report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PythonReport {
    /// Kernels in the traces, and their GPU time (ns).
    pub kernels: u64,
    /// Total kernel time, ns.
    pub kernel_ns: u64,
    /// Kernels whose launch had a Python stack, and their time.
    pub attributed: u64,
    /// Their time, ns.
    pub attributed_ns: u64,
    /// Whether every launch had its stack read (true: nothing sampled).
    pub every_launch: bool,
    /// By innermost frame, longest total first.
    pub by_line: Vec<SiteRow>,
    /// Top-down: outermost frames first, children under their parent,
    /// longest first, down to `depth`.
    pub top_down: Vec<SiteRow>,
    /// The top-down view's depth.
    pub depth: usize,
}

/// The report over `traces`, the top-down view cut at `depth` frames.
pub fn report<'a>(traces: impl IntoIterator<Item = &'a Trace>, depth: usize) -> PythonReport {
    let depth = depth.max(1);
    let mut r = PythonReport {
        depth,
        every_launch: true,
        ..Default::default()
    };
    let mut lines: FxHashMap<Site, (u64, u64)> = FxHashMap::default();
    let mut line_kernels: FxHashMap<Site, FxHashMap<String, (u64, u64)>> = FxHashMap::default();
    let mut tree: BTreeMap<Vec<Site>, (u64, u64)> = BTreeMap::new();
    for t in traces {
        let mut stacks: FxHashMap<u64, &Callstack> = FxHashMap::default();
        for s in &t.slices {
            if let Some(c) = &s.callstack {
                for &id in &s.submissions {
                    stacks.insert(id, c);
                }
            }
        }
        for k in t.gpu_events.iter().filter(|e| e.stage == Stage::Kernel) {
            r.kernels += 1;
            r.kernel_ns += k.dur;
            let Some(stack) = stacks.get(&k.event_id).filter(|c| !c.is_empty()) else {
                continue;
            };
            r.attributed += 1;
            r.attributed_ns += k.dur;
            let inner = Site::of(&stack[stack.len() - 1]);
            let e = line_kernels
                .entry(inner.clone())
                .or_default()
                .entry(k.name.to_string())
                .or_default();
            e.0 += 1;
            e.1 += k.dur;
            let e = lines.entry(inner).or_default();
            e.0 += 1;
            e.1 += k.dur;
            let mut path = Vec::with_capacity(depth);
            for f in stack.iter().take(depth) {
                path.push(Site::of(f));
                let e = tree.entry(path.clone()).or_default();
                e.0 += 1;
                e.1 += k.dur;
            }
        }
    }
    let share = |ns: u64| {
        if r.kernel_ns == 0 {
            0.0
        } else {
            ns as f64 / r.kernel_ns as f64
        }
    };
    let mut by_line: Vec<SiteRow> = lines
        .into_iter()
        .map(|(site, (count, total_ns))| {
            let mut kernels: Vec<KernelShare> = line_kernels
                .remove(&site)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, (count, total_ns))| KernelShare {
                    name,
                    count,
                    total_ns,
                })
                .collect();
            kernels.sort_by(|a, b| {
                b.total_ns
                    .cmp(&a.total_ns)
                    .then_with(|| a.name.cmp(&b.name))
            });
            kernels.truncate(KERNELS_PER_LINE);
            SiteRow {
                site,
                depth: 0,
                count,
                total_ns,
                share: share(total_ns),
                kernels,
            }
        })
        .collect();
    by_line.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.site.cmp(&b.site))
    });
    r.by_line = by_line;
    // Depth first, the longest child first.
    let mut top_down = Vec::new();
    let mut stack: Vec<Vec<Site>> = children(&tree, &[]);
    stack.reverse();
    while let Some(path) = stack.pop() {
        let (count, total_ns) = tree[&path];
        let mut kids = children(&tree, &path);
        kids.reverse();
        stack.extend(kids);
        top_down.push(SiteRow {
            depth: path.len() - 1,
            site: path[path.len() - 1].clone(),
            count,
            total_ns,
            share: share(total_ns),
            kernels: Vec::new(),
        });
    }
    r.top_down = top_down;
    r
}

/// The nodes right under `parent`, longest total first.
fn children(tree: &BTreeMap<Vec<Site>, (u64, u64)>, parent: &[Site]) -> Vec<Vec<Site>> {
    let mut out: Vec<(&Vec<Site>, u64)> = tree
        .range(parent.to_vec()..)
        .take_while(|(p, _)| p.starts_with(parent))
        .filter(|(p, _)| p.len() == parent.len() + 1)
        .map(|(p, v)| (p, v.1))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    out.into_iter().map(|(p, _)| p.clone()).collect()
}

/// `12.3 ms`-style durations, as the other tables write them.
fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The report as text tables.
pub fn to_text(r: &PythonReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "GPU time by Python line: {} of {} kernels ({:.1}% of {} ms) launched from Python; {}.",
        r.attributed,
        r.kernels,
        100.0 * r.attributed_ns as f64 / r.kernel_ns.max(1) as f64,
        ms(r.kernel_ns),
        if r.every_launch {
            "every launch's stack was read (no sampling)"
        } else {
            "stacks were sampled"
        }
    );
    if r.attributed < r.kernels {
        let _ = writeln!(
            out,
            "{} kernels had no Python stack: launched from a thread not running Python (or with no Python frames), or with the GIL released where frames cannot be read by layout (before its self-check, or after it failed: see INJECTION_VERBOSE=1).",
            r.kernels - r.attributed
        );
    }
    let _ = writeln!(out, "\nBy innermost frame");
    let _ = writeln!(
        out,
        "{:>7}  {:>12}  {:>8}  Python line",
        "Time %", "Total ms", "Kernels"
    );
    for row in &r.by_line {
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>12}  {:>8}  {}",
            row.share * 100.0,
            ms(row.total_ns),
            row.count,
            row.site.label()
        );
    }
    let _ = writeln!(out, "\nTop-down, {} frames deep", r.depth);
    let _ = writeln!(
        out,
        "{:>7}  {:>12}  {:>8}  Python frame",
        "Time %", "Total ms", "Kernels"
    );
    for row in &r.top_down {
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>12}  {:>8}  {}{}",
            row.share * 100.0,
            ms(row.total_ns),
            row.count,
            "  ".repeat(row.depth),
            row.site.label()
        );
    }
    out
}

/// The report as CSV: one row per frame of each view (`view` is
/// `by_line` or `top_down`).
pub fn to_csv(r: &PythonReport) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "view", "depth", "function", "file", "line", "kernels", "total_ns", "share",
    ]);
    for (view, rows) in [("by_line", &r.by_line), ("top_down", &r.top_down)] {
        for row in rows {
            let _ = w.write_record([
                view.to_owned(),
                row.depth.to_string(),
                row.site.function.clone(),
                row.site.file.clone(),
                row.site.line.to_string(),
                row.count.to_string(),
                row.total_ns.to_string(),
                format!("{:.6}", row.share),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The report as JSON.
pub fn to_json(r: &PythonReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}
