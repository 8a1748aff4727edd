//! Compares a decoded trace with what the program said it did.
//!
//! [`check`] runs the checks every case shares (see [`common`]) and then
//! one check per `EXPECT` key. Which keys a case must state is in
//! [`CASES`]; a key the checker does not know is a failure, so that a typo
//! in a test program cannot silently drop a check.

use crate::expect::{self, Expect, Record, parse_u64};
use crate::names::{api_base, api_is, kernel_is};
use gpu_trace_reader::{ArgVal, GpuEvent, Slice, Stage, Thread, Trace};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// `gpu_api` value of CUDA API slices.
pub const GPU_API_CUDA: u64 = 4;

/// Bit that marks a GPU event id from the second id space (events after
/// the first of one correlation: graph nodes).
pub use gpu_trace_reader::SECONDARY_EVENT_ID_BIT as SECONDARY_ID_BIT;

/// Cases and the keys each must state (`prefix.` = at least one key with
/// that prefix).
pub const CASES: &[(&str, &[&str])] = &[
    (
        "empty_kernels",
        &[
            "kernels",
            "threads",
            "per_thread",
            "stream_per_thread",
            "kernel.",
        ],
    ),
    (
        "memops",
        &[
            "memcpy",
            "memset",
            "copy_kinds",
            "copy_bytes.",
            "memset_bytes",
        ],
    ),
    (
        "graph",
        &["kernels", "graph_kernels", "graph_launches", "graph_nodes."],
    ),
    ("launch_paths", &["kernels", "kernel.", "submit_api."]),
    ("nosync_exit", &["kernels", "min_dur_ns."]),
    ("device_reset", &["kernels", "contexts", "kernel."]),
    (
        "nvtx",
        &["kernels", "range.", "startend.", "mark.", "domain."],
    ),
    ("multi_stream_sync", &["kernels", "api.", "waits."]),
    ("occupancy", &["kernels", "records"]),
    ("multi_context", &["kernels", "contexts", "context."]),
    ("alloc", &["kernels", "memory_steps", "busy_exact"]),
    (
        "managed",
        &["kernels", "uvm_bytes.", "min_uvm.", "busy_exact"],
    ),
    ("torch_nvtx", &["min_kernels", "range.", "min_launches_in."]),
    ("torch_loop", &["min_kernels"]),
    ("capture_range", &["kernels", "kernel.", "api."]),
    (
        "graph_copies",
        &[
            "kernels",
            "graph_kernels",
            "memcpy",
            "memset",
            "copy_bytes.",
            "memset_bytes",
            "arrows.",
        ],
    ),
];

/// Settings of one check.
#[derive(Debug, Clone)]
pub struct Options {
    /// Text every used device's name must contain ("" accepts any).
    pub device_name: String,
    /// How much later than a synchronising call's end the work it waited
    /// for may end (the GPU and CPU clocks are converted, not shared).
    pub sync_slack_ns: u64,
    /// A forced loss is expected (`gpu-check --expect-loss STDERR`): the
    /// program's stderr. The trace must then report dropped events, the
    /// stderr must say so in exactly one line with the same count, and the
    /// expected counts become upper bounds; see [`loss`].
    pub expect_loss: Option<String>,
    /// The trace's device memory curve (`GpuMemTotalEvent`s, which the
    /// reader does not decode): [`crate::check_files`] reads it when the
    /// program states `memory_steps`.
    pub memory: Vec<crate::activity::MemoryTotal>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            device_name: "H200".into(),
            sync_slack_ns: 20_000,
            expect_loss: None,
            memory: Vec::new(),
        }
    }
}

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The case's name as printed.
    pub case: String,
    /// Key numbers, printed on the verdict line.
    pub numbers: Vec<(String, String)>,
    /// Lines printed before the verdict (tables, skipped checks).
    pub notes: Vec<String>,
    /// What differs; empty when the case passed.
    pub failures: Vec<String>,
}

impl Report {
    /// A report for `case`.
    pub fn new(case: &str) -> Self {
        Report {
            case: case.to_owned(),
            ..Default::default()
        }
    }

    /// Whether nothing failed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Records a failure.
    pub fn fail(&mut self, msg: impl Into<String>) {
        self.failures.push(msg.into());
    }

    /// Records a key number.
    pub fn number(&mut self, key: &str, v: impl ToString) {
        self.numbers.push((key.to_owned(), v.to_string()));
    }

    /// Records a note.
    pub fn note(&mut self, msg: impl Into<String>) {
        self.notes.push(msg.into());
    }

    /// Notes, then `PASS case: numbers` or `FAIL case: first failure`
    /// followed by every failure on its own line. The verdict line is the
    /// last line that starts with `PASS` or `FAIL`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for n in &self.notes {
            let _ = writeln!(s, "{n}");
        }
        let nums: Vec<String> = self
            .numbers
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if self.passed() {
            let _ = writeln!(s, "PASS {}: {}", self.case, nums.join(" "));
        } else {
            for f in &self.failures {
                let _ = writeln!(s, "  differs: {f}");
            }
            let _ = writeln!(s, "  numbers: {}", nums.join(" "));
            let more = match self.failures.len() {
                1 => String::new(),
                n => format!(" (and {} more above)", n - 1),
            };
            let _ = writeln!(s, "FAIL {}: {}{more}", self.case, self.failures[0]);
        }
        s
    }
}

/// Indexes over a trace shared by the checks.
pub struct Ctx<'a> {
    /// The trace.
    pub t: &'a Trace,
    /// GPU event index by event id (first one for duplicate ids).
    pub by_id: HashMap<u64, usize>,
    /// Event id → indices of the slices that submitted it.
    pub submitters: HashMap<u64, Vec<usize>>,
    /// Indices of CUDA API slices.
    pub api: Vec<usize>,
    /// Indices of CUDA API slices that no other CUDA API slice on their
    /// track encloses (driver calls inside a runtime call are not counted
    /// twice).
    pub outer_api: Vec<usize>,
}

impl<'a> Ctx<'a> {
    /// Builds the indexes.
    pub fn new(t: &'a Trace) -> Self {
        let mut by_id = HashMap::with_capacity(t.gpu_events.len());
        for (i, e) in t.gpu_events.iter().enumerate() {
            by_id.entry(e.event_id).or_insert(i);
        }
        let mut submitters: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, s) in t.slices.iter().enumerate() {
            for &id in &s.submissions {
                submitters.entry(id).or_default().push(i);
            }
        }
        let api: Vec<usize> = (0..t.slices.len())
            .filter(|&i| t.slices[i].gpu_api == Some(GPU_API_CUDA))
            .collect();
        let outer_api = outermost(t, &api);
        Ctx {
            t,
            by_id,
            submitters,
            api,
            outer_api,
        }
    }

    /// The GPU event with `id`.
    pub fn event(&self, id: u64) -> Option<&'a GpuEvent> {
        self.by_id.get(&id).map(|&i| &self.t.gpu_events[i])
    }

    /// The single slice that submitted `e`, if exactly one did.
    pub fn submitter(&self, e: &GpuEvent) -> Option<&'a Slice> {
        match self.submitters.get(&e.event_id).map(Vec::as_slice) {
            Some([i]) => Some(&self.t.slices[*i]),
            _ => None,
        }
    }

    /// Kernels named `name`.
    pub fn kernels_named(&self, name: &'a str) -> impl Iterator<Item = &'a GpuEvent> + 'a {
        self.t.kernels().filter(move |k| kernel_is(k, name))
    }

    /// Slices that submitted at least one kernel.
    pub fn launches(&self) -> impl Iterator<Item = &'a Slice> + '_ {
        self.t.slices.iter().filter(|s| {
            s.submissions
                .iter()
                .any(|id| self.event(*id).is_some_and(|e| e.stage == Stage::Kernel))
        })
    }

    /// Outermost CUDA API slices of function `f` (or its driver twin).
    pub fn api_calls(&self, f: &str) -> Vec<&'a Slice> {
        self.outer_api
            .iter()
            .map(|&i| &self.t.slices[i])
            .filter(|s| api_is(&s.name, f))
            .collect()
    }
}

fn outermost(t: &Trace, api: &[usize]) -> Vec<usize> {
    let mut by_track: HashMap<u64, Vec<usize>> = HashMap::new();
    for &i in api {
        by_track.entry(t.slices[i].track).or_default().push(i);
    }
    let mut out = Vec::with_capacity(api.len());
    for (_, mut v) in by_track {
        v.sort_by_key(|&i| (t.slices[i].ts, std::cmp::Reverse(t.slices[i].dur)));
        let mut open_end: Option<u64> = None;
        for i in v {
            let s = &t.slices[i];
            match open_end {
                Some(end) if s.ts < end => {}
                _ => {
                    out.push(i);
                    open_end = Some(s.ts + s.dur);
                }
            }
        }
    }
    out.sort_unstable();
    out
}

/// An argument of a kernel, from its launch args or its interned
/// description.
pub fn kernel_arg<'a>(e: &'a GpuEvent, name: &str) -> Option<&'a ArgVal> {
    e.arg(name).or_else(|| {
        e.kernel
            .as_ref()?
            .args
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    })
}

/// The CUDA graph node id of a kernel; 0 when it was not a graph node.
pub fn graph_node(e: &GpuEvent) -> u64 {
    e.arg("graph_node_id").and_then(ArgVal::as_u64).unwrap_or(0)
}

fn stream(e: &GpuEvent) -> Option<u64> {
    e.arg("stream").and_then(ArgVal::as_u64)
}

fn ctx_id(e: &GpuEvent) -> Option<u64> {
    e.context.map(|c| c.iid)
}

fn show_names<'b>(it: impl Iterator<Item = &'b str>) -> String {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for s in it {
        *n.entry(s).or_default() += 1;
    }
    let v: Vec<String> = n.iter().take(12).map(|(k, c)| format!("{k}×{c}")).collect();
    v.join(", ")
}

/// Runs the common checks and every expectation; `case` must be one of
/// [`CASES`] and match the program's `case=` key.
pub fn check(case: &str, label: &str, t: &Trace, e: &Expect, o: &Options) -> Report {
    let mut r = Report::new(label);
    let Some((_, required)) = CASES.iter().find(|(c, _)| *c == case) else {
        r.fail(format!("unknown case {case:?}"));
        return r;
    };
    match e.get("case") {
        Some(c) if c == case => {}
        Some(c) => r.fail(format!("the output is from case {c:?}, not {case:?}")),
        None => r.fail("the EXPECT lines name no case="),
    }
    for key in *required {
        let present = match key.strip_suffix('.') {
            Some(p) => e.main.keys().any(|k| k.starts_with(&format!("{p}."))),
            None => e.main.contains_key(*key),
        };
        if !present {
            r.fail(format!("the program did not state {key}"));
        }
    }
    let cx = Ctx::new(t);
    common(&cx, o, &mut r);
    telemetry(t, &mut r);
    if let Some(stderr) = &o.expect_loss {
        loss(t, stderr, &mut r);
    }
    expectations(&cx, e, o, &mut r);
    if o.expect_loss.is_none() && !e.main.contains_key("busy_exact") {
        // Everywhere else a difference is worth a look, not a failure.
        crate::activity::busy(t, false, &mut r);
    }
    r
}

/// GPU telemetry, where the trace has it: plausible values per GPU, and
/// what sampling cost (the sampler's own `gpu-trace telemetry:` log line).
pub fn telemetry(t: &Trace, r: &mut Report) {
    use gpu_trace_reader::wire::counters::GROUP_COMPUTE;
    let tel: Vec<_> = t
        .counters
        .iter()
        .filter(|c| !c.groups.is_empty() && !c.groups.contains(&GROUP_COMPUTE))
        // The busy % derived from the activity is checked by `activity::busy`.
        .filter(|c| !crate::activity::is_busy(&c.name))
        .collect();
    if tel.is_empty() {
        r.note("no GPU telemetry in the trace");
        return;
    }
    let range = |name: &str| -> Option<(f64, f64)> {
        match name {
            "clocks.sm" | "clocks.mem" => Some((1.0, 10_000.0)),
            "power.draw" => Some((0.0, 5_000.0)),
            "temperature.gpu" => Some((-20.0, 150.0)),
            n if n.starts_with("utilization.") => Some((0.0, 100.0)),
            "gpm.sm_active" | "gpm.sm_occupancy" | "gpm.tensor_active" | "gpm.dram_bandwidth" => {
                Some((0.0, 100.5))
            }
            _ => None,
        }
    };
    let mut bad = BTreeMap::new();
    for c in &tel {
        if let Some((lo, hi)) = range(&c.name)
            && !(lo..=hi).contains(&c.value)
        {
            bad.entry(c.name.to_string()).or_insert(c.value);
        }
    }
    for (name, v) in bad {
        r.fail(format!(
            "telemetry {name} = {v}: out of any plausible range"
        ));
    }
    let gpus: BTreeSet<i64> = tel.iter().map(|c| c.gpu_id).collect();
    r.number("telemetry_gpus", gpus.len());
    r.number(
        "telemetry_clock_samples",
        tel.iter().filter(|c| &*c.name == "clocks.sm").count(),
    );
    r.number(
        "telemetry_gpm",
        u8::from(tel.iter().any(|c| c.name.starts_with("gpm."))),
    );
    match t.log("gpu-trace telemetry:") {
        Some(l) => {
            // "... (0.581% of one core) ..."
            let pct = l
                .message
                .split_once("% of one core")
                .and_then(|(head, _)| head.rsplit('(').next())
                .and_then(|v| v.trim().parse::<f64>().ok());
            match pct {
                Some(p) => r.number("telemetry_core_pct", format!("{p:.3}")),
                None => r.fail(format!("unreadable telemetry cost line: {}", l.message)),
            }
        }
        None => r.fail("telemetry in the trace but no `gpu-trace telemetry:` cost line"),
    }
}

/// The line a traced process prints on stderr when anything was lost.
pub const LOSS_LINE: &str = "gpu-trace: the trace is incomplete:";

/// `key=N` in a line of `key=value` tokens (the value's leading digits, so
/// that `thread_buffer=12;` reads 12).
fn count_in(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace().find_map(|tok| {
        let v = tok.strip_prefix(key)?.strip_prefix('=')?;
        let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// The checks of an expected loss (`--expect-loss`): the trace's
/// `gpu-trace dropped:` line counts `thread_buffer=N` with N > 0, and the
/// program's stderr has exactly one line starting with [`LOSS_LINE`], which
/// states the same `thread_buffer=N`. (The common checks still run; drops
/// and the dangling arrows and unsubmitted events they cause are then
/// numbers, not failures.)
pub fn loss(t: &Trace, stderr: &str, r: &mut Report) {
    let in_trace = t
        .drop_counts()
        .and_then(|d| d.into_iter().find(|(k, _)| k == "thread_buffer"))
        .map_or(0, |(_, n)| n);
    r.number("thread_buffer", in_trace);
    if in_trace == 0 {
        r.fail("a loss was forced, but the trace counts thread_buffer=0 dropped events");
    }
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| l.starts_with(LOSS_LINE))
        .collect();
    match lines.as_slice() {
        [] => r.fail(format!("the program's stderr has no line starting with {LOSS_LINE:?}")),
        [line] => match count_in(line, "thread_buffer") {
            None => r.fail(format!("the stderr loss line names no thread_buffer=N: {line:?}")),
            Some(0) => r.fail("the stderr loss line says thread_buffer=0"),
            Some(n) if n != in_trace => r.fail(format!(
                "the stderr loss line says thread_buffer={n}, the trace says thread_buffer={in_trace}"
            )),
            Some(_) => {}
        },
        more => r.fail(format!(
            "the program's stderr has {} lines starting with {LOSS_LINE:?}, expected one",
            more.len()
        )),
    }
    let launches = t
        .slices
        .iter()
        .filter(|s| !s.submissions.is_empty())
        .count();
    r.note(format!(
        "  forced loss: {} kernels and {launches} submitting API slices written, thread_buffer={in_trace} events dropped",
        t.kernels().count()
    ));
}

/// Checks every trace must pass: no decoding problems, no drops, known
/// devices, unique GPU events, every submission and wait resolving to GPU
/// work that started after the call began, and every kernel or memory
/// operation submitted by exactly one API slice (graph nodes after the
/// first of a launch excepted).
pub fn common(cx: &Ctx<'_>, o: &Options, r: &mut Report) {
    let t = cx.t;
    // Dangling submission arrows are counted below, with what a loss
    // explains.
    let problems: Vec<String> = t
        .problems
        .iter()
        .filter(|p| p.kind != gpu_trace_reader::ProblemKind::Dangling)
        .map(ToString::to_string)
        .collect();
    if !problems.is_empty() {
        r.fail(format!(
            "the reader found {} problems: {}",
            problems.len(),
            problems[..problems.len().min(5)].join("; ")
        ));
    }
    // Under an expected loss, the events dropped (all kinds together), which
    // may leave as many dangling arrows, unsubmitted events and unresolved
    // waits.
    let lossy = o.expect_loss.is_some();
    let dropped = lossy.then(|| {
        t.drop_counts()
            .map_or(0, |d| d.iter().map(|(_, n)| *n).sum::<u64>())
    });
    match t.drop_counts() {
        None => r.fail("no `gpu-trace dropped:` line: the trace was not finalised"),
        Some(_) if lossy => {}
        Some(d) if d.iter().any(|(_, n)| *n > 0) => {
            let v: Vec<String> = d.iter().map(|(k, n)| format!("{k}={n}")).collect();
            r.fail(format!("events were dropped: {}", v.join(" ")));
        }
        Some(_) => {}
    }
    if let Some(l) = t.losses
        && l.lost() > 0
    {
        r.fail(format!("the tracing service lost data: {l:?}"));
    }

    // Devices.
    if t.devices.is_empty() {
        r.fail("no GpuInfo devices");
    }
    let used: BTreeSet<i64> = t.gpu_events.iter().filter_map(|e| e.gpu_id).collect();
    for g in &used {
        match t.devices.get(*g as usize) {
            Some(d) if d.name.contains(&o.device_name) => {}
            Some(d) => r.fail(format!(
                "GPU {g} is {:?}, expected a name containing {:?}",
                d.name, o.device_name
            )),
            None => r.fail(format!("GPU {g} has no GpuInfo entry")),
        }
    }
    if t.gpu_events.iter().any(|e| e.gpu_id.is_none()) {
        r.fail("GPU events without gpu_id");
    }
    if let Some(d) = t.devices.first() {
        r.note(format!(
            "  device: {} ({} {})",
            d.name, d.architecture, d.model
        ));
    }

    // Unique GPU events.
    if cx.by_id.len() != t.gpu_events.len() {
        r.fail(format!(
            "{} GPU events share an event id",
            t.gpu_events.len() - cx.by_id.len()
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(t.gpu_events.len());
    let mut dup = 0usize;
    for e in &t.gpu_events {
        if !seen.insert((e.gpu_id, e.queue.as_str(), e.ts, e.dur, e.name.as_str())) {
            dup += 1;
        }
    }
    if dup > 0 {
        r.fail(format!(
            "{dup} GPU events are written twice (same GPU, queue, start, duration and name)"
        ));
    }
    let no_desc = t
        .kernels()
        .filter(|k| k.kernel.is_none() || k.grid.is_none() || k.block.is_none())
        .count();
    if no_desc > 0 {
        r.fail(format!(
            "{no_desc} kernels lack their interned kernel, grid or block"
        ));
    }

    // Submissions.
    let mut dangling = 0usize;
    let mut early = Vec::new();
    let mut min_gap = u64::MAX;
    let mut not_api = 0usize;
    for s in &t.slices {
        if s.submissions.is_empty() {
            continue;
        }
        if s.gpu_api != Some(GPU_API_CUDA) {
            not_api += 1;
        }
        for id in &s.submissions {
            match cx.event(*id) {
                None => dangling += 1,
                Some(g) if g.ts <= s.ts => early.push(format!(
                    "{} starts {} ns before its {} began",
                    g.name,
                    s.ts - g.ts,
                    s.name
                )),
                Some(g) => min_gap = min_gap.min(g.ts - s.ts),
            }
        }
    }
    // An arrow to an id the trace lacks is a launch whose work never came
    // (or a call that submitted nothing: a captured or zero-byte operation).
    r.number("dangling_arrows", dangling);
    if dangling > 0 {
        let names = show_names(
            t.slices
                .iter()
                .filter(|s| s.submissions.iter().any(|id| cx.event(*id).is_none()))
                .map(|s| s.name.as_str()),
        );
        let msg = format!("{dangling} submission arrows point at no GPU event (from {names})");
        match dropped {
            Some(d) if dangling as u64 <= d => r.note(format!("  expected with a loss: {msg}")),
            Some(d) => r.fail(format!("{msg}: more than the {d} events dropped")),
            None => r.fail(msg),
        }
    }
    if !early.is_empty() {
        r.fail(format!(
            "{} GPU events start before the call that submitted them: {}",
            early.len(),
            early[0]
        ));
    }
    if not_api > 0 {
        r.fail(format!(
            "{not_api} slices with submissions lack gpu_api=CUDA"
        ));
    }
    if min_gap != u64::MAX {
        r.number("min_launch_to_start_ns", min_gap);
    }

    // Every GPU event has exactly one submitter, except graph nodes (any
    // event with a graph_node_id) after the first of their launch, and
    // unified-memory migrations and faults, which the driver does on its
    // own.
    let mut multi = Vec::new();
    let mut orphans = Vec::new();
    let mut graph_followers = 0usize;
    for e in t.gpu_events.iter().filter(|e| !crate::activity::is_uvm(e)) {
        match cx.submitters.get(&e.event_id).map(Vec::len).unwrap_or(0) {
            1 => {}
            0 if graph_node(e) != 0 => graph_followers += 1,
            0 => orphans.push(e),
            n => multi.push((e, n)),
        }
    }
    if !orphans.is_empty() {
        let secondary: Vec<&&GpuEvent> = orphans
            .iter()
            .filter(|e| e.event_id & SECONDARY_ID_BIT != 0)
            .collect();
        let memops = secondary
            .iter()
            .filter(|e| matches!(e.stage, Stage::Memcpy | Stage::Memset))
            .count();
        let hint = if memops > 0 {
            format!(
                "; {memops} of them copies/memsets, likely graph memcpy/memset nodes without a graph_node_id"
            )
        } else {
            String::new()
        };
        let msg = format!(
            "{} GPU events have no submitting API slice ({} with a second-space id, i.e. a correlation id seen twice or 0{hint}): {}",
            orphans.len(),
            secondary.len(),
            show_names(orphans.iter().map(|e| e.name.as_str()))
        );
        match dropped {
            Some(d) if orphans.len() as u64 <= d => {
                r.note(format!("  expected with a loss: {msg}"))
            }
            Some(d) => r.fail(format!("{msg}: more than the {d} events dropped")),
            None => r.fail(msg),
        }
    }
    if !multi.is_empty() {
        r.fail(format!(
            "{} GPU events are submitted by several slices: {}",
            multi.len(),
            show_names(multi.iter().map(|(e, _)| e.name.as_str()))
        ));
    }
    r.number("unsubmitted", orphans.len());
    if graph_followers > 0 {
        r.number("graph_nodes_without_arrow", graph_followers);
    }

    // Waits.
    let mut waits = 0usize;
    let mut bad_waits = 0usize;
    for s in &t.slices {
        for id in &s.waits {
            waits += 1;
            if cx.event(*id).is_none() {
                bad_waits += 1;
            }
        }
    }
    if bad_waits > 0 {
        let msg = format!("{bad_waits} wait arrows point at no GPU event");
        match dropped {
            Some(d) if bad_waits as u64 <= d => r.note(format!("  expected with a loss: {msg}")),
            Some(d) => r.fail(format!("{msg}: more than the {d} events dropped")),
            None => r.fail(msg),
        }
    }

    // API slices sit on thread tracks of the process that ran the work.
    let pids: BTreeSet<i64> = t
        .gpu_events
        .iter()
        .filter_map(|e| e.context.map(|c| c.pid))
        .collect();
    if pids.len() > 1 {
        r.fail(format!("GPU events carry several pids: {pids:?}"));
    }
    let mut off_thread = 0usize;
    for &i in &cx.api {
        match t.thread_of(t.slices[i].track) {
            None => off_thread += 1,
            Some(Thread { pid, .. }) if !pids.is_empty() && !pids.contains(&pid) => {
                r.fail(format!(
                    "API slice {} is on a thread of pid {pid}, GPU work came from {pids:?}",
                    t.slices[i].name
                ));
                break;
            }
            Some(_) => {}
        }
    }
    if off_thread > 0 {
        r.fail(format!("{off_thread} API slices are not on a thread track"));
    }

    // The tool's own summary agrees with what the file holds.
    let kernels = t.kernels().count();
    let memops = t.memory_ops().count();
    if let Some(l) = t.log("gpu-trace summary:") {
        let field = |k: &str| {
            l.message
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse::<usize>().ok())
        };
        if field("kernels") != Some(kernels) || field("memory_ops") != Some(memops) {
            r.fail(format!(
                "the file holds kernels={kernels} memory_ops={memops}, the tool's summary says {:?}",
                l.message
            ));
        }
    } else {
        r.fail("no `gpu-trace summary:` line: the trace was not finalised");
    }
    r.number("kernels", kernels);
    r.number("memory_ops", memops);
    // Unified-memory migrations and faults are GPU slices too (run.sh
    // compares the sum with the trace processor's).
    let uvm = crate::activity::uvm_event_count(t);
    if uvm > 0 {
        r.number("uvm_events", uvm);
    }
    r.number("api_slices", cx.api.len());
    r.number(
        "submissions",
        t.slices.iter().map(|s| s.submissions.len()).sum::<usize>(),
    );
    r.number("waits", waits);
    r.number(
        "ranges",
        t.slices.iter().filter(|s| s.gpu_api.is_none()).count(),
    );
    r.number("marks", t.instants.len());
}

fn num(r: &mut Report, key: &str, v: &str) -> Option<u64> {
    let n = parse_u64(v);
    if n.is_none() {
        r.fail(format!("EXPECT {key}={v}: not a number"));
    }
    n
}

fn eq_count(r: &mut Report, what: &str, got: usize, want: u64) {
    if got as u64 != want {
        r.fail(format!("{what}: trace has {got}, program says {want}"));
    }
}

/// Runs one check per `EXPECT` key.
pub fn expectations(cx: &Ctx<'_>, e: &Expect, o: &Options, r: &mut Report) {
    if o.expect_loss.is_some() {
        return lossy_expectations(cx, e, r);
    }
    let t = cx.t;
    let mut labels: HashMap<&str, HashMap<String, BTreeSet<u64>>> = HashMap::new();
    for (key, v) in &e.main {
        let key = key.as_str();
        let v = v.as_str();
        let (head, name) = match key.split_once('.') {
            Some((h, n)) => (h, n),
            None => (key, ""),
        };
        match (head, name) {
            ("case" | "arg" | "records", _) => {}
            ("kernels", "") => {
                if let Some(n) = num(r, key, v) {
                    eq_count(r, "kernels", t.kernels().count(), n);
                }
            }
            ("min_kernels", "") => {
                if let Some(n) = num(r, key, v) {
                    let got = t.kernels().count();
                    if (got as u64) < n {
                        r.fail(format!(
                            "kernels: trace has {got}, program says at least {n}"
                        ));
                    }
                }
            }
            ("memcpy", "") => {
                if let Some(n) = num(r, key, v) {
                    let got = t
                        .gpu_events
                        .iter()
                        .filter(|g| g.stage == Stage::Memcpy)
                        .count();
                    eq_count(r, "copies", got, n);
                }
            }
            ("memset", "") => {
                if let Some(n) = num(r, key, v) {
                    let got = t
                        .gpu_events
                        .iter()
                        .filter(|g| g.stage == Stage::Memset)
                        .count();
                    eq_count(r, "memsets", got, n);
                }
            }
            ("kernel", k) => {
                if let Some(n) = num(r, key, v) {
                    eq_count(
                        r,
                        &format!("kernels named {k}"),
                        cx.kernels_named(k).count(),
                        n,
                    );
                }
            }
            ("grid" | "block", k) => match expect::parse_dim3(v) {
                Ok(d) => {
                    let bad = cx
                        .kernels_named(k)
                        .filter(|g| (if head == "grid" { g.grid } else { g.block }) != Some(d))
                        .count();
                    if bad > 0 {
                        r.fail(format!("{bad} kernels {k} have a {head} other than {v}"));
                    }
                }
                Err(err) => r.fail(format!("EXPECT {key}: {err}")),
            },
            ("min_dur_ns", k) => {
                if let Some(n) = num(r, key, v) {
                    let short: Vec<u64> = cx
                        .kernels_named(k)
                        .filter(|g| g.dur < n)
                        .map(|g| g.dur)
                        .collect();
                    if !short.is_empty() {
                        r.fail(format!(
                            "{} kernels {k} last less than {n} ns (shortest {} ns)",
                            short.len(),
                            short.iter().min().unwrap_or(&0)
                        ));
                    }
                }
            }
            ("submit_api", k) => {
                let mut wrong: Vec<String> = Vec::new();
                let mut n = 0;
                for g in cx.kernels_named(k) {
                    n += 1;
                    match cx.submitter(g) {
                        Some(s) if api_is(&s.name, v) => {}
                        Some(s) => wrong.push(s.name.to_string()),
                        None => wrong.push("<no single submitter>".into()),
                    }
                }
                if n == 0 {
                    r.fail(format!("no kernel {k} to check its launch API"));
                } else if !wrong.is_empty() {
                    r.fail(format!(
                        "kernel {k} was launched with {v}, its submitting slice is {}",
                        show_names(wrong.iter().map(String::as_str))
                    ));
                }
            }
            ("context" | "thread", _) => {
                let tracks: BTreeSet<u64> = if head == "context" {
                    cx.kernels_named(name).filter_map(ctx_id).collect()
                } else {
                    t.slices
                        .iter()
                        .filter(|s| s.name == name && s.gpu_api.is_none())
                        .map(|s| s.track)
                        .chain(
                            t.instants
                                .iter()
                                .filter(|i| i.name == name)
                                .map(|i| i.track),
                        )
                        .collect()
                };
                if tracks.len() != 1 {
                    r.fail(format!(
                        "{name} is on {} {}s, expected one",
                        tracks.len(),
                        if head == "context" {
                            "context"
                        } else {
                            "track"
                        }
                    ));
                }
                labels
                    .entry(head)
                    .or_default()
                    .entry(v.to_owned())
                    .or_default()
                    .extend(tracks);
            }
            ("gpus", k) => {
                if let Some(n) = num(r, key, v) {
                    let g: BTreeSet<i64> = cx.kernels_named(k).filter_map(|g| g.gpu_id).collect();
                    eq_count(r, &format!("GPUs that ran {k}"), g.len(), n);
                }
            }
            ("graph_kernels", "") => {
                if let Some(n) = num(r, key, v) {
                    let got = t.kernels().filter(|g| graph_node(g) != 0).count();
                    eq_count(r, "kernels with a graph_node_id", got, n);
                }
            }
            ("graph_nodes", k) => {
                if let Some(n) = num(r, key, v) {
                    let ks: Vec<&GpuEvent> = cx.kernels_named(k).collect();
                    let ids: BTreeSet<u64> = ks.iter().map(|g| graph_node(g)).collect();
                    if ids.contains(&0) {
                        r.fail(format!("some kernels {k} lack a graph_node_id"));
                    }
                    eq_count(r, &format!("distinct graph nodes of {k}"), ids.len(), n);
                }
            }
            ("graph_launches", "") => {
                if let Some(n) = num(r, key, v) {
                    graph_launches(cx, n, r);
                }
            }
            ("copy", dir) => {
                if let Some(n) = num(r, key, v) {
                    eq_count(r, &format!("copies {dir}"), copies(t, dir).count(), n);
                }
            }
            ("copy_bytes", dir) => {
                if let Some(n) = num(r, key, v) {
                    let got: u64 = copies(t, dir).filter_map(GpuEvent::bytes).sum();
                    if got != n {
                        r.fail(format!(
                            "bytes copied {dir}: trace has {got}, program says {n}"
                        ));
                    }
                }
            }
            ("copy_kinds", "") => copy_kinds(t, v, r),
            ("memset_bytes", "") => {
                if let Some(n) = num(r, key, v) {
                    let got: u64 = t
                        .gpu_events
                        .iter()
                        .filter(|g| g.stage == Stage::Memset)
                        .filter_map(GpuEvent::bytes)
                        .sum();
                    if got != n {
                        r.fail(format!("bytes set: trace has {got}, program says {n}"));
                    }
                }
            }
            ("memset_values", "") => memset_values(t, v, r),
            ("api" | "api_opt", f) => {
                if let Some(n) = num(r, key, v) {
                    let got = cx.api_calls(f).len();
                    if head == "api_opt" && got == 0 {
                        r.note(format!("  skipped: no {f} slices (not traced)"));
                    } else {
                        eq_count(r, &format!("{f} calls"), got, n);
                    }
                }
            }
            ("arrows", f) => {
                if let Some(n) = num(r, key, v) {
                    let got: usize = cx.api_calls(f).iter().map(|s| s.submissions.len()).sum();
                    eq_count(r, &format!("submission arrows from {f} calls"), got, n);
                }
            }
            ("waits", f) => waits(cx, f, v, o, r),
            ("threads" | "per_thread" | "stream_per_thread", "") => {}
            ("streams", "") => {
                if let Some(n) = num(r, key, v) {
                    let s: BTreeSet<(Option<i64>, Option<u64>)> =
                        t.kernels().map(|g| (g.gpu_id, stream(g))).collect();
                    eq_count(r, "streams that ran kernels", s.len(), n);
                }
            }
            ("contexts", "") => {
                if let Some(n) = num(r, key, v) {
                    let c: BTreeSet<u64> = t.gpu_events.iter().filter_map(ctx_id).collect();
                    eq_count(r, "contexts that ran GPU work", c.len(), n);
                }
            }
            ("range", rn) => nvtx_range(cx, rn, v, r),
            ("startend", rn) => {
                if let Some(n) = num(r, key, v) {
                    let got: Vec<&Slice> = t
                        .slices
                        .iter()
                        .filter(|s| s.name == rn && t.thread_of(s.track).is_none())
                        .collect();
                    eq_count(r, &format!("start/end ranges {rn}"), got.len(), n);
                }
            }
            ("mark", m) => {
                if let Some(n) = num(r, key, v) {
                    let got = t.instants.iter().filter(|i| i.name == m).count();
                    eq_count(r, &format!("marks {m}"), got, n);
                }
            }
            ("domain", x) => {
                let mut found = 0;
                let mut wrong = BTreeSet::new();
                for a in
                    t.slices
                        .iter()
                        .filter(|s| s.name == x)
                        .map(|s| s.arg("domain"))
                        .chain(
                            t.instants.iter().filter(|i| i.name == x).map(|i| {
                                i.args.iter().find(|(n, _)| n == "domain").map(|(_, v)| v)
                            }),
                        )
                {
                    found += 1;
                    let d = a.and_then(ArgVal::as_str).unwrap_or("<none>");
                    if d != v {
                        wrong.insert(d.to_owned());
                    }
                }
                if found == 0 {
                    r.fail(format!("no range or mark {x} to check its domain"));
                } else if !wrong.is_empty() {
                    r.fail(format!("{x} has domain {wrong:?}, expected {v:?}"));
                }
            }
            ("kernels_in", rn) => {
                if let Some(n) = num(r, key, v) {
                    let mut got = 0usize;
                    for s in t
                        .slices
                        .iter()
                        .filter(|s| s.name == rn && s.gpu_api.is_none())
                    {
                        got += cx
                            .launches()
                            .filter(|l| {
                                l.track == s.track && l.ts >= s.ts && l.ts + l.dur <= s.ts + s.dur
                            })
                            .count();
                    }
                    eq_count(r, &format!("launches inside {rn} on its thread"), got, n);
                }
            }
            ("min_launches_in", rn) => {
                if let Some(n) = num(r, key, v) {
                    let launches: Vec<u64> = {
                        let mut l: Vec<u64> = cx.launches().map(|l| l.ts).collect();
                        l.sort_unstable();
                        l
                    };
                    let mut instances = 0;
                    let mut short = 0;
                    for s in t
                        .slices
                        .iter()
                        .filter(|s| s.name == rn && s.gpu_api.is_none())
                    {
                        instances += 1;
                        let a = launches.partition_point(|&x| x < s.ts);
                        let b = launches.partition_point(|&x| x <= s.ts + s.dur);
                        if ((b - a) as u64) < n {
                            short += 1;
                        }
                    }
                    if instances == 0 {
                        r.fail(format!("no range {rn}"));
                    } else if short > 0 {
                        r.fail(format!(
                            "{short} of {instances} ranges {rn} contain fewer than {n} kernel launches"
                        ));
                    }
                }
            }
            ("memory_steps", "") => crate::activity::memory_steps(&o.memory, v, r),
            ("min_uvm", k) => {
                if let Some(n) = num(r, key, v) {
                    crate::activity::min_uvm(t, k, n, r);
                }
            }
            ("uvm_bytes", what) => {
                if let Some(n) = num(r, key, v) {
                    crate::activity::uvm_bytes(t, what, n, r);
                }
            }
            ("busy_exact", "") => crate::activity::busy(t, v == "1", r),
            _ => r.fail(format!("unknown EXPECT key {key}")),
        }
    }
    for (head, m) in labels {
        // Different labels, different contexts/tracks.
        let mut owner: HashMap<u64, &str> = HashMap::new();
        for (label, ids) in &m {
            for id in ids {
                if let Some(other) = owner.insert(*id, label)
                    && other != label
                {
                    r.fail(format!(
                        "{head}s {other:?} and {label:?} should differ but share {id:#x}"
                    ));
                }
            }
            if ids.len() > 1 {
                r.fail(format!("{head} {label:?} spans {} ids", ids.len()));
            }
        }
    }
    if e.main.contains_key("threads")
        || e.main.contains_key("per_thread")
        || e.main.contains_key("stream_per_thread")
    {
        threads(cx, e, r);
    }
    let occ: Vec<&Record> = e.records_of("occ").collect();
    if let Some(v) = e.get("records")
        && let Some(n) = num(r, "records", v)
    {
        eq_count(
            r,
            "EXPECT record lines (program output)",
            e.records.len(),
            n,
        );
    }
    if !occ.is_empty() {
        occupancy(cx, &occ, r);
    }
    for rec in &e.records {
        if rec.kind != "occ" {
            r.fail(format!("unknown record kind {:?}", rec.kind));
        }
    }
}

/// The expectations under a forced loss: what was written is at most what
/// the program did, and what was written is right; counts that drops make
/// inexact are skipped with a note.
fn lossy_expectations(cx: &Ctx<'_>, e: &Expect, r: &mut Report) {
    let t = cx.t;
    let mut skipped = Vec::new();
    for (key, v) in &e.main {
        let key = key.as_str();
        let v = v.as_str();
        let (head, name) = key.split_once('.').unwrap_or((key, ""));
        let at_most = |r: &mut Report, what: &str, got: usize| {
            if let Some(n) = num(r, key, v)
                && got as u64 > n
            {
                r.fail(format!(
                    "{what}: trace has {got}, more than the {n} the program made"
                ));
            }
        };
        match (head, name) {
            ("case" | "arg" | "records", _) => {}
            ("kernels", "") => at_most(r, "kernels", t.kernels().count()),
            ("kernel", k) => at_most(
                r,
                &format!("kernels named {k}"),
                cx.kernels_named(k).count(),
            ),
            ("memcpy", "") => at_most(
                r,
                "copies",
                t.gpu_events
                    .iter()
                    .filter(|g| g.stage == Stage::Memcpy)
                    .count(),
            ),
            ("memset", "") => at_most(
                r,
                "memsets",
                t.gpu_events
                    .iter()
                    .filter(|g| g.stage == Stage::Memset)
                    .count(),
            ),
            ("grid" | "block", k) => match expect::parse_dim3(v) {
                Ok(d) => {
                    let bad = cx
                        .kernels_named(k)
                        .filter(|g| (if head == "grid" { g.grid } else { g.block }) != Some(d))
                        .count();
                    if bad > 0 {
                        r.fail(format!("{bad} kernels {k} have a {head} other than {v}"));
                    }
                }
                Err(err) => r.fail(format!("EXPECT {key}: {err}")),
            },
            _ => skipped.push(key),
        }
    }
    if !skipped.is_empty() {
        r.note(format!(
            "  skipped under --expect-loss (inexact after drops): {}",
            skipped.join(" ")
        ));
    }
}

fn copies<'a>(t: &'a Trace, dir: &'a str) -> impl Iterator<Item = &'a GpuEvent> + 'a {
    t.gpu_events.iter().filter(move |g| {
        g.stage == Stage::Memcpy && g.name.strip_prefix("Memcpy ").unwrap_or(&g.name) == dir
    })
}

fn copy_kinds(t: &Trace, v: &str, r: &mut Report) {
    let want = match expect::parse_tally(v, 3) {
        Ok(w) => w,
        Err(e) => return r.fail(format!("EXPECT copy_kinds: {e}")),
    };
    let mut want_map: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (k, n) in want {
        *want_map.entry(k).or_default() += n;
    }
    let mut got: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for g in t.gpu_events.iter().filter(|g| g.stage == Stage::Memcpy) {
        let dir = g.name.strip_prefix("Memcpy ").unwrap_or(&g.name).to_owned();
        let kind = |a: &str| {
            g.arg(a)
                .and_then(ArgVal::as_str)
                .unwrap_or("<none>")
                .to_owned()
        };
        *got.entry(vec![dir, kind("src_kind"), kind("dst_kind")])
            .or_default() += 1;
    }
    if got != want_map {
        let fmt = |m: &BTreeMap<Vec<String>, u64>| {
            m.iter()
                .map(|(k, n)| format!("{}:{n}", k.join(":")))
                .collect::<Vec<_>>()
                .join(",")
        };
        r.fail(format!(
            "copies by direction:src:dst differ: trace {}, program {}",
            fmt(&got),
            fmt(&want_map)
        ));
    }
}

fn memset_values(t: &Trace, v: &str, r: &mut Report) {
    let want = match expect::parse_tally(v, 1) {
        Ok(w) => w,
        Err(e) => return r.fail(format!("EXPECT memset_values: {e}")),
    };
    let mut want_map: BTreeMap<u64, u64> = BTreeMap::new();
    for (k, n) in want {
        match parse_u64(&k[0]) {
            Some(val) => *want_map.entry(val).or_default() += n,
            None => return r.fail(format!("EXPECT memset_values: {:?} is not a value", k[0])),
        }
    }
    let mut got: BTreeMap<u64, u64> = BTreeMap::new();
    for g in t.gpu_events.iter().filter(|g| g.stage == Stage::Memset) {
        let val = g.arg("value").and_then(ArgVal::as_u64).unwrap_or(u64::MAX);
        *got.entry(val).or_default() += 1;
    }
    if got != want_map {
        r.fail(format!(
            "memsets by value differ: trace {got:?}, program {want_map:?}"
        ));
    }
}

fn graph_launches(cx: &Ctx<'_>, n: u64, r: &mut Report) {
    let t = cx.t;
    let launches: Vec<&Slice> = t
        .slices
        .iter()
        .filter(|s| {
            s.submissions
                .iter()
                .any(|id| cx.event(*id).is_some_and(|g| graph_node(g) != 0))
        })
        .collect();
    eq_count(r, "slices that launched graph kernels", launches.len(), n);
    let names: BTreeSet<&str> = launches.iter().map(|s| api_base(&s.name)).collect();
    if names.iter().any(|s| !api_is(s, "cudaGraphLaunch")) {
        r.fail(format!("graph kernels were submitted by {names:?}"));
    }
    let graph_kernels = t.kernels().filter(|g| graph_node(g) != 0).count();
    let with_arrow = t
        .kernels()
        .filter(|g| graph_node(g) != 0 && cx.submitters.contains_key(&g.event_id))
        .count();
    if with_arrow as u64 != n {
        r.fail(format!(
            "{with_arrow} of {graph_kernels} graph kernels carry an arrow, expected one per launch ({n})"
        ));
    }
    r.number("graph_kernels", graph_kernels);
}

fn waits(cx: &Ctx<'_>, f: &str, v: &str, o: &Options, r: &mut Report) {
    let calls = cx.api_calls(f);
    if calls.is_empty() {
        return r.fail(format!("no {f} slices to check their wait arrows"));
    }
    let mut without = 0;
    let mut wrong_target = BTreeSet::new();
    let mut late = Vec::new();
    let mut later_submitted = 0;
    let mut arrows = 0;
    for s in &calls {
        if s.waits.is_empty() {
            without += 1;
        }
        for id in &s.waits {
            let Some(g) = cx.event(*id) else { continue };
            arrows += 1;
            if v != "any" && !kernel_is(g, v) {
                wrong_target.insert(g.name.clone());
            }
            let end = g.ts + g.dur;
            if end > s.ts + s.dur + o.sync_slack_ns {
                late.push(end - (s.ts + s.dur));
            }
            if let Some(sub) = cx.submitter(g)
                && sub.ts > s.ts
            {
                later_submitted += 1;
            }
        }
    }
    r.number(&format!("wait_arrows.{f}"), arrows);
    if without > 0 {
        r.fail(format!(
            "{without} of {} {f} calls have no wait arrow",
            calls.len()
        ));
    }
    if !wrong_target.is_empty() {
        r.fail(format!(
            "{f} waits for {wrong_target:?}, expected kernels {v}"
        ));
    }
    if !late.is_empty() {
        r.fail(format!(
            "{} {f} wait targets end after the call returned (by up to {} ns, slack {} ns)",
            late.len(),
            late.iter().max().unwrap_or(&0),
            o.sync_slack_ns
        ));
    }
    if later_submitted > 0 {
        r.fail(format!(
            "{later_submitted} {f} wait targets were submitted after the call began"
        ));
    }
}

fn nvtx_range(cx: &Ctx<'_>, name: &str, v: &str, r: &mut Report) {
    let t = cx.t;
    let (count, depth) = match v.split_once('@') {
        Some((c, d)) => (parse_u64(c), Some(d.parse::<u32>().ok())),
        None => (parse_u64(v), None),
    };
    let Some(count) = count else {
        return r.fail(format!("EXPECT range.{name}={v}: not COUNT[@DEPTH]"));
    };
    let inst: Vec<&Slice> = t
        .slices
        .iter()
        .filter(|s| s.name == name && s.gpu_api.is_none() && t.thread_of(s.track).is_some())
        .collect();
    eq_count(r, &format!("ranges {name}"), inst.len(), count);
    match depth {
        Some(Some(d)) => {
            let depths: BTreeSet<u32> = inst.iter().map(|s| s.depth).collect();
            if depths.iter().any(|x| *x != d) {
                r.fail(format!(
                    "ranges {name} sit at depths {depths:?}, expected {d}"
                ));
            }
        }
        Some(None) => r.fail(format!("EXPECT range.{name}={v}: bad depth")),
        None => {}
    }
}

fn threads(cx: &Ctx<'_>, e: &Expect, r: &mut Report) {
    let t = cx.t;
    let mut per: BTreeMap<i64, (u64, BTreeSet<Option<u64>>)> = BTreeMap::new();
    for g in t.kernels() {
        let Some(s) = cx.submitter(g) else { continue };
        let Some(Thread { tid, .. }) = t.thread_of(s.track) else {
            continue;
        };
        let p = per.entry(tid).or_default();
        p.0 += 1;
        p.1.insert(stream(g));
    }
    let mut table = String::from("  thread      kernels  streams\n");
    for (tid, (n, s)) in &per {
        let _ = writeln!(table, "  {tid:<10} {n:>8}  {s:?}");
    }
    r.note(table.trim_end().to_owned());
    if let Some(v) = e.get("threads")
        && let Some(n) = num(r, "threads", v)
    {
        eq_count(r, "threads that launched kernels", per.len(), n);
    }
    if let Some(v) = e.get("per_thread") {
        match expect::parse_list(v) {
            Ok(mut want) => {
                let mut got: Vec<u64> = per.values().map(|p| p.0).collect();
                got.sort_unstable();
                want.sort_unstable();
                if got != want {
                    r.fail(format!(
                        "kernels per launching thread: trace {got:?}, program {want:?}"
                    ));
                }
            }
            Err(err) => r.fail(format!("EXPECT per_thread: {err}")),
        }
    }
    if e.get("stream_per_thread") == Some("1") {
        let mut all = BTreeSet::new();
        for (tid, (_, s)) in &per {
            if s.len() != 1 {
                r.fail(format!("thread {tid} launched on {} streams", s.len()));
            }
            for x in s {
                if !all.insert(*x) {
                    r.fail(format!("stream {x:?} is used by several threads"));
                }
            }
        }
    }
}

fn occupancy(cx: &Ctx<'_>, recs: &[&Record], r: &mut Report) {
    const LIMITS: [&str; 4] = [
        "launch__occupancy_limit_blocks",
        "launch__occupancy_limit_warps",
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
    ];
    let mut table = String::from(
        "  kernel                   block  dyn_smem  regs(drv/trace)  static_smem(drv/trace)  blocks/SM(drv/trace)  occupancy%(drv/trace)  limits b/w/r/s\n",
    );
    for rec in recs {
        let fields = (|| -> Result<_, String> {
            Ok((
                rec.get("kernel")?.to_owned(),
                rec.u64("block")?,
                rec.u64("dyn_smem")?,
                rec.u64("regs")?,
                rec.u64("static_smem")?,
                rec.u64("blocks_per_sm")?,
                rec.f64("occupancy_pct")?,
            ))
        })();
        let (name, block, dyn_smem, regs, static_smem, blocks, pct) = match fields {
            Ok(f) => f,
            Err(e) => {
                r.fail(e);
                continue;
            }
        };
        let ks: Vec<&GpuEvent> = cx.kernels_named(&name).collect();
        let Some(k) = ks.first() else {
            r.fail(format!("no kernel {name} in the trace"));
            let _ = writeln!(table, "  {name:<24} (missing)");
            continue;
        };
        let u = |g: &GpuEvent, a: &str| kernel_arg(g, a).and_then(ArgVal::as_u64);
        let limits: Vec<Option<u64>> = LIMITS.iter().map(|a| u(k, a)).collect();
        let trace_blocks = limits.iter().flatten().min().copied();
        let trace_pct =
            kernel_arg(k, "sm__maximum_warps_per_active_cycle_pct").and_then(ArgVal::as_f64);
        let show = |x: Option<u64>| x.map_or("-".to_owned(), |v| v.to_string());
        let _ = writeln!(
            table,
            "  {name:<24} {block:>5}  {dyn_smem:>8}  {:>15}  {:>22}  {:>20}  {:>21}  {}",
            format!("{regs}/{}", show(u(k, "launch__registers_per_thread"))),
            format!(
                "{static_smem}/{}",
                show(u(k, "launch__shared_mem_per_block_static"))
            ),
            format!("{blocks}/{}", show(trace_blocks)),
            format!(
                "{pct:.2}/{}",
                trace_pct.map_or("-".to_owned(), |p| format!("{p:.2}"))
            ),
            limits
                .iter()
                .map(|l| show(*l))
                .collect::<Vec<_>>()
                .join("/"),
        );
        // Every launch of the kernel must agree (they share one config).
        for g in &ks {
            let lim: Vec<Option<u64>> = LIMITS.iter().map(|a| u(g, a)).collect();
            if lim != limits {
                r.fail(format!("launches of {name} disagree on occupancy limits"));
                break;
            }
        }
        let vol = k
            .block
            .map(|b| b.iter().map(|x| *x as u64).product::<u64>());
        if vol != Some(block) {
            r.fail(format!(
                "{name}: block has {vol:?} threads, program says {block}"
            ));
        }
        match trace_blocks {
            None => r.fail(format!("{name}: no launch__occupancy_limit_* args")),
            Some(b) if b != blocks => r.fail(format!(
                "{name}: blocks per SM from the trace's limits {b}, the driver says {blocks}"
            )),
            Some(_) => {}
        }
        match trace_pct {
            None => r.fail(format!("{name}: no sm__maximum_warps_per_active_cycle_pct")),
            Some(p) if (p - pct).abs() > 0.01 => r.fail(format!(
                "{name}: theoretical occupancy {p:.4}% in the trace, {pct:.4}% from the driver"
            )),
            Some(_) => {}
        }
        // CUPTI reports registers as allocated: the compiled count rounded
        // up to the allocation unit (at least 16), as ncu shows them.
        if let Some(got) = u(k, "launch__registers_per_thread")
            && !(got >= regs && got <= regs.div_ceil(8).max(2) * 8)
        {
            r.fail(format!(
                "{name}: launch__registers_per_thread={got}, program says {regs} (allocated: up to {})",
                regs.div_ceil(8).max(2) * 8
            ));
        }
        for (arg, want) in [
            ("launch__shared_mem_per_block_static", static_smem),
            ("launch__shared_mem_per_block_dynamic", dyn_smem),
            ("launch__block_size", block),
        ] {
            if let Some(got) = u(k, arg)
                && got != want
            {
                r.fail(format!("{name}: {arg}={got}, program says {want}"));
            }
        }
        if let (Ok(w), Some(got)) = (
            rec.u64("active_warps"),
            kernel_arg(k, "sm__maximum_warps_avg_per_active_cycle").and_then(ArgVal::as_f64),
        ) && (got - w as f64).abs() > 0.01
        {
            r.fail(format!(
                "{name}: sm__maximum_warps_avg_per_active_cycle={got}, program says {w}"
            ));
        }
    }
    r.note(table.trim_end().to_owned());
}
