//! The workspace's test kit: helpers that tests and benches share, in a
//! crate that is never published, so that no shipped crate carries them.
//!
//! - checking a trace: the official-schema validator ([`validate`]), the
//!   trace processor ([`tp_query`], [`tp_check`], [`tp_agrees_with_reader`])
//!   and our reader ([`reader_check`], [`checked_trace`]);
//! - reading what a test looks for: [`kernel_counts`],
//!   [`recording_windows`];
//! - running simulated programs: [`wait_announce`];
//! - a backend descriptor for tests and benches: [`BACKEND`];
//! - a second local user for the shared-folder tests ([`users`]);
//! - a fake amdgpu sysfs tree for the HIP telemetry tests ([`amdgpu`]).

use gpu_trace_model::backend::{BackendInfo, Categories, Category};
use gpu_trace_model::schema::RecordingWindow;
use gpu_trace_reader::{GpuEvent, Slice, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub mod amdgpu;
pub mod sim_host;
pub mod users;

/// Runs the official-schema validator (`tools/validate_pftrace.py`) on
/// `path` with a Python that has `perfetto==0.59.1` (see
/// [`validator_python`]), and panics with its output if it rejects the
/// trace. Without such a Python it says "skipped" on stderr, with what to
/// set, or panics where [`REQUIRE_SCHEMA_VAR`] is set.
pub fn validate(path: &Path) {
    let Some(py) = validator_python() else {
        let msg = "schema validation skipped: no python with perfetto==0.59.1 \
                   (set GPU_TRACE_PYTHON to one, or make .venv at the workspace root \
                   and `pip install perfetto==0.59.1` into it)";
        if std::env::var_os(REQUIRE_SCHEMA_VAR).is_some() {
            panic!("{msg}, and {REQUIRE_SCHEMA_VAR} is set");
        }
        say(msg);
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/validate_pftrace.py");
    let out = Command::new(py)
        .arg(script)
        .arg(path)
        .output()
        .expect("the validator runs");
    assert!(
        out.status.success(),
        "validator rejected {}:\n{}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Python the schema validator runs with, looked for once per process:
/// the one `GPU_TRACE_PYTHON` names (as given: a wrong one fails loudly),
/// else the workspace's `.venv/bin/python`, else `python3`, whichever first
/// imports `perfetto`'s trace protos. `None` when none does.
pub fn validator_python() -> Option<&'static Path> {
    static PYTHON: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("GPU_TRACE_PYTHON") {
                return Some(PathBuf::from(p));
            }
            let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
            [venv, PathBuf::from("python3")].into_iter().find(|py| {
                Command::new(py)
                    .args([
                        "-c",
                        "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
        })
        .as_deref()
}

/// Set (to anything) where the schema check must run: [`validate`] then
/// panics instead of skipping (CI sets it).
pub const REQUIRE_SCHEMA_VAR: &str = "GPU_TRACE_REQUIRE_SCHEMA";

/// Writes `msg` to stderr past the test harness's capture (which only
/// takes `print!`/`eprint!`), so that a skip shows in a plain `cargo test`,
/// naming the test (the harness names each test's thread after it). Each
/// test says a given line once.
fn say(msg: &str) {
    use std::io::Write;
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let test = std::thread::current()
        .name()
        .map(|n| format!(" [{n}]"))
        .unwrap_or_default();
    let line = format!("{msg}{test}");
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&line) {
        let _ = writeln!(std::io::stderr(), "{line}");
        said.push(line);
    }
}

/// Perfetto's own trace processor, the engine of the UI, where a developer
/// has one: the binary `GPU_TRACE_TP` names (which must exist), else
/// `trace_processor_shell` on `PATH`. No package registry carries it, so
/// the checks that use it are optional: `None`, after saying "skipped" on
/// stderr, where there is none. Our reader's own checks ([`reader_check`])
/// run either way.
pub fn trace_processor() -> Option<PathBuf> {
    static TP: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let found = TP.get_or_init(|| {
        if let Some(p) = std::env::var_os("GPU_TRACE_TP") {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "GPU_TRACE_TP={} is not a file", p.display());
            return Some(p);
        }
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("trace_processor_shell"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        say("trace processor checks skipped: no trace_processor_shell \
             (set GPU_TRACE_TP, or put it on PATH)");
    }
    found.clone()
}

/// A name no other call of this process uses, for scratch files.
fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs the `;`-separated statements of `sql` on `trace` in one trace
/// processor run and returns the rows of each statement that has result
/// columns, in order, each row as its CSV fields (quotes removed, NULL as
/// `[NULL]`). `None` when skipped; panics when the trace processor fails.
pub fn tp_tables(trace: &Path, sql: &str) -> Option<Vec<Vec<Vec<String>>>> {
    let tp = trace_processor()?;
    let q = std::env::temp_dir().join(unique("gpu-trace-tp") + ".sql");
    std::fs::write(&q, sql).expect("query file");
    let out = Command::new(tp)
        .arg("-q")
        .arg(&q)
        .arg(trace)
        .output()
        .expect("the trace processor runs");
    let _ = std::fs::remove_file(&q);
    assert!(
        out.status.success(),
        "trace processor failed on {}:\n{}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        csv_tables(&text)
            .into_iter()
            .map(|mut t| {
                t.remove(0); // the header
                t
            })
            .collect(),
    )
}

/// Runs `sql` on `trace` in the trace processor and returns the rows of
/// the last statement, each as its CSV fields (quotes removed). `None` when
/// skipped; panics when the trace processor fails.
pub fn tp_query(trace: &Path, sql: &str) -> Option<Vec<Vec<String>>> {
    tp_tables(trace, sql).map(|mut t| t.pop().unwrap_or_default())
}

/// The tables of the trace processor's CSV output: one per statement with
/// result columns, separated by blank lines, each a header and rows.
/// Strings are quoted, quotes inside them are not escaped, and a header
/// may span lines (it repeats an expression's text): a quoted field ends
/// at a quote followed by a comma, a line end or the end of the output.
fn csv_tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let text = text.trim_end_matches('\n');
    let mut tables = Vec::new();
    let (mut table, mut row) = (Vec::new(), Vec::new());
    let mut rest = text;
    while !rest.is_empty() {
        let (field, after) = match rest.strip_prefix('"') {
            Some(r) => {
                let end = r
                    .match_indices('"')
                    .map(|(i, _)| i)
                    .find(|&i| matches!(r.as_bytes().get(i + 1), None | Some(b',' | b'\n')))
                    .unwrap_or(r.len());
                (&r[..end], r.get(end + 1..).unwrap_or_default())
            }
            None => {
                let end = rest.find([',', '\n']).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        row.push(field.to_owned());
        rest = match after.as_bytes().first() {
            Some(b',') => &after[1..],
            Some(b'\n') => {
                table.push(std::mem::take(&mut row));
                if after.as_bytes().get(1) == Some(&b'\n') {
                    tables.push(std::mem::take(&mut table));
                    &after[2..]
                } else {
                    &after[1..]
                }
            }
            _ => after,
        };
    }
    if !row.is_empty() {
        table.push(row);
    }
    if !table.is_empty() {
        tables.push(table);
    }
    tables
}

/// The trace processor's `stats` rows that are errors or data losses, as
/// `name[idx]=value`. `None` when skipped.
pub fn tp_problems(trace: &Path) -> Option<Vec<String>> {
    let rows = tp_query(
        trace,
        "select name, idx, severity, value from stats \
         where value > 0 and severity in ('error', 'data_loss');",
    )?;
    Some(
        rows.into_iter()
            .map(|r| format!("{}[{}]={} ({})", r[0], r[1], r[3], r[2]))
            .collect(),
    )
}

/// The stat a flush leaves when traced sends it while a traced process is
/// exiting: the process is gone before its acknowledgement leaves, and the
/// trace processor lists that as a data loss. Nothing is lost by it (the
/// process wrote everything before it exited), so the tests of processes
/// that exit while a traced session runs allow it ([`tp_check`]).
pub const EXIT_FLUSH_FAILURES: &str = "traced_flushes_failed";

/// Checks a trace whole: first what our reader found in it
/// ([`reader_check`]), which always runs, then, where there is a trace
/// processor, that it reports no error or data loss for `path`, but stats
/// whose name starts with one of `allowed`, and that it shows what our
/// reader decoded (`t`, see [`tp_agrees_with_reader`]). `None` when the
/// trace processor's part is skipped.
pub fn tp_check(path: &Path, t: &Trace, allowed: &[&str]) -> Option<TpAgreement> {
    reader_check(path, t, allowed);
    let problems: Vec<String> = tp_problems(path)?
        .into_iter()
        .filter(|p| !allowed.iter().any(|a| p.starts_with(a)))
        .collect();
    assert!(
        problems.is_empty(),
        "{}: trace processor: {problems:?}",
        path.display()
    );
    tp_agrees_with_reader(path, t)
}

/// The half of [`tp_check`] that needs no trace processor: our reader
/// found no problem in `t` (its checks follow the trace processor's rules:
/// references it could not resolve, clock snapshots that go back, packets
/// out of its sort window or without their incremental state, arrows to
/// events not in the trace, slices that do not close), and the service
/// lost nothing. A failed flush is allowed where `allowed` has
/// [`EXIT_FLUSH_FAILURES`].
pub fn reader_check(path: &Path, t: &Trace, allowed: &[&str]) {
    assert!(
        t.problems.is_empty(),
        "{}: our reader: {:?}",
        path.display(),
        t.problems
    );
    if let Some(l) = &t.losses {
        let mut l = *l;
        if allowed.contains(&EXIT_FLUSH_FAILURES) {
            l.flushes_failed = 0;
        }
        assert!(
            l.counts().is_empty(),
            "{}: the service lost data: {:?}",
            path.display(),
            l.describe()
        );
    }
}

/// What [`tp_agrees_with_reader`] compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpAgreement {
    /// GPU slices (render-stage events).
    pub gpu_slices: usize,
    /// Track-event slices and instants.
    pub slices: usize,
    /// Slices the trace processor shows as never ended (`dur = -1`); the
    /// reader counts them in its problems instead.
    pub unfinished: usize,
    /// Flows (submission and wait arrows).
    pub flows: usize,
    /// Wait arrows of the trace the trace processor does not draw (see
    /// [`tp_wait_arrows`]).
    pub hidden_waits: usize,
    /// GPU counter values.
    pub counter_values: usize,
    /// Log lines (`GpuLog`).
    pub logs: usize,
}

/// Loads `path` in the trace processor and checks that it shows exactly
/// what our reader decoded from it (`t`): every GPU slice with its start,
/// duration, name and GPU; every track-event slice and instant with its
/// start, duration, name and (for slices) depth; every submission arrow
/// and every wait arrow it can draw ([`tp_wait_arrows`]) between the same
/// two slices; every GPU counter value with its GPU
/// and time (the GPU counters: the reader does not decode the "GPU Memory"
/// tracks of `GpuMemTotalEvent`s). Panics with the differences. `None`
/// when skipped.
pub fn tp_agrees_with_reader(path: &Path, t: &Trace) -> Option<TpAgreement> {
    let tables = tp_tables(
        path,
        "select s.ts, s.dur, s.name, extract_arg(k.dimension_arg_set_id, 'gpu') \
           from gpu_slice s join track k on s.track_id = k.id \
          where k.type = 'gpu_render_stage';
         select s.ts, s.dur, s.name, s.depth from slice s \
          where s.id not in (select id from gpu_slice);
         select o.ts, o.name, i.ts, i.name from flow f \
           join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id;
         select k.name, k.gpu_id, c.ts, printf('%.17g', c.value) \
           from counter c join gpu_counter_track k on c.track_id = k.id \
          where k.type = 'gpu_counter';
         select s.ts, extract_arg(s.arg_set_id, 'message') from gpu_slice s \
           join track k on s.track_id = k.id where k.name = 'GPU Log';",
    )?;
    let [gpu, slices, flows, counters, logs]: [Vec<Vec<String>>; 5] = tables
        .try_into()
        .unwrap_or_else(|t: Vec<_>| panic!("expected 5 result tables, got {}", t.len()));
    let int = |s: &str| -> i64 {
        s.parse()
            .unwrap_or_else(|_| panic!("not an integer in the trace processor's output: {s:?}"))
    };

    // GPU slices.
    let tp_gpu: Vec<(i64, i64, String, i64)> = gpu
        .iter()
        .map(|r| (int(&r[0]), int(&r[1]), r[2].clone(), int(&r[3])))
        .collect();
    let ours_gpu: Vec<(i64, i64, String, i64)> = t
        .gpu_events
        .iter()
        .map(|e| {
            (
                e.ts as i64,
                e.dur as i64,
                e.name.to_string(),
                e.gpu_id.unwrap_or(-1),
            )
        })
        .collect();
    same_multiset("GPU slices (ts, dur, name, gpu)", tp_gpu, ours_gpu);

    // Track-event slices (with their depth) and instants.
    let (unfinished, finished): (Vec<_>, Vec<_>) = slices.iter().partition(|r| r[1] == "-1");
    // Each slice of ours takes one equal row of the trace processor's; the
    // rows left must be exactly the instants (which the reader does not
    // nest, so their depth is not compared).
    let mut pool: BTreeMap<(i64, i64, String, i64), usize> = BTreeMap::new();
    for r in &finished {
        *pool
            .entry((int(&r[0]), int(&r[1]), r[2].clone(), int(&r[3])))
            .or_default() += 1;
    }
    let mut missing = Vec::new();
    for s in &t.slices {
        let key = (
            s.ts as i64,
            s.dur as i64,
            s.name.to_string(),
            s.depth as i64,
        );
        match pool.get_mut(&key) {
            Some(n) if *n > 0 => *n -= 1,
            _ => missing.push(key),
        }
    }
    assert!(
        missing.is_empty(),
        "{} slices (ts, dur, name, depth) of our reader are not in the trace processor, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    let extra = pool
        .into_iter()
        .flat_map(|(k, n)| std::iter::repeat_n(k, n));
    let tp_instants: Vec<(i64, String)> = extra
        .into_iter()
        .map(|(ts, dur, name, _)| {
            assert_eq!(
                dur, 0,
                "{name} at {ts}: a slice only the trace processor has"
            );
            (ts, name)
        })
        .collect();
    let ours_instants: Vec<(i64, String)> = t
        .instants
        .iter()
        .map(|i| (i.ts as i64, i.name.to_string()))
        .collect();
    same_multiset("instants (ts, name)", tp_instants, ours_instants);

    // Arrows: API slice → GPU slice for submissions, GPU slice → API slice
    // for waits.
    let tp_flows: Vec<(i64, String, i64, String)> = flows
        .iter()
        .map(|r| (int(&r[0]), r[1].clone(), int(&r[2]), r[3].clone()))
        .collect();
    let by_id = t.gpu_events_by_id();
    let mut ours_flows = Vec::new();
    for s in &t.slices {
        for g in s.submissions.iter().filter_map(|id| by_id.get(id)) {
            ours_flows.push((
                s.ts as i64,
                s.name.to_string(),
                g.ts as i64,
                g.name.to_string(),
            ));
        }
    }
    let waits = tp_wait_arrows(t);
    for (g, s) in &waits.drawn {
        ours_flows.push((
            g.ts as i64,
            g.name.to_string(),
            s.ts as i64,
            s.name.to_string(),
        ));
    }
    let n_flows = tp_flows.len();
    same_multiset(
        "flows (from ts, from name, to ts, to name)",
        tp_flows,
        ours_flows,
    );

    // Counter values, compared exactly (%.17g round-trips a double).
    let tp_counters: Vec<(String, i64, i64, u64)> = counters
        .iter()
        .map(|r| {
            let v: f64 = r[3].parse().expect("a counter value");
            (r[0].clone(), int(&r[1]), int(&r[2]), v.to_bits())
        })
        .collect();
    let ours_counters: Vec<(String, i64, i64, u64)> = t
        .counters
        .iter()
        .map(|c| (c.name.to_string(), c.gpu_id, c.ts as i64, c.value.to_bits()))
        .collect();
    same_multiset(
        "counter values (name, gpu, ts, value bits)",
        tp_counters,
        ours_counters,
    );

    // The trace's log lines (what was lost, what was off): the UI shows
    // them on its "GPU Log" track.
    let tp_logs: Vec<(i64, String)> = logs.iter().map(|r| (int(&r[0]), r[1].clone())).collect();
    let ours_logs: Vec<(i64, String)> = t
        .logs
        .iter()
        .map(|l| (l.ts as i64, l.message.clone()))
        .collect();
    same_multiset("log lines (ts, message)", tp_logs, ours_logs);

    Some(TpAgreement {
        gpu_slices: gpu.len(),
        slices: finished.len(),
        unfinished: unfinished.len(),
        flows: n_flows,
        hidden_waits: waits.hidden.len(),
        counter_values: counters.len(),
        logs: logs.len(),
    })
}

/// The wait arrows (GPU slice → API slice) of a trace, as the trace
/// processor draws them.
#[derive(Debug, Default)]
pub struct WaitArrows<'a> {
    /// Drawn.
    pub drawn: Vec<(&'a GpuEvent, &'a Slice)>,
    /// In the trace but not drawn.
    pub hidden: Vec<(&'a GpuEvent, &'a Slice)>,
}

/// Splits the wait arrows of `t` (each API slice's wait ids that resolve)
/// into those the trace processor draws and those it does not.
///
/// Perfetto v58's `GpuTracker` remembers one waiting slice per GPU event
/// id until it parses that event (`event_id_to_terminating_slice_`, each
/// new wait replacing the previous one), and parses in timestamp order. So
/// of the API slices that wait for one GPU event and begin before it (or
/// with it), only the one that begins last gets its arrow; those that
/// begin after the event started all get theirs. Two synchronisations
/// that wait for the same work, both issued before it started (a stream
/// and a device sync, say), thus show one arrow in the UI.
pub fn tp_wait_arrows(t: &Trace) -> WaitArrows<'_> {
    let by_id = t.gpu_events_by_id();
    let mut waiters: BTreeMap<u64, Vec<&Slice>> = BTreeMap::new();
    for s in &t.slices {
        for id in s.waits.iter().filter(|id| by_id.contains_key(id)) {
            waiters.entry(*id).or_default().push(s);
        }
    }
    let mut out = WaitArrows::default();
    for (id, mut list) in waiters {
        let g = by_id[&id];
        list.sort_by_key(|s| s.ts);
        let early = list.iter().filter(|s| s.ts <= g.ts).count();
        for (i, s) in list.into_iter().enumerate() {
            if i + 1 < early {
                out.hidden.push((g, s));
            } else {
                out.drawn.push((g, s));
            }
        }
    }
    out
}

/// Panics, naming up to ten differences each way, unless `tp` and `ours`
/// hold the same items the same number of times.
fn same_multiset<T: Ord + std::fmt::Debug>(what: &str, mut tp: Vec<T>, mut ours: Vec<T>) {
    tp.sort();
    ours.sort();
    if tp == ours {
        return;
    }
    let (mut only_tp, mut only_ours) = (Vec::new(), Vec::new());
    let (mut a, mut b) = (tp.iter().peekable(), ours.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x == y => {
                a.next();
                b.next();
            }
            (Some(x), Some(y)) if x < y => only_tp.push(a.next().unwrap()),
            (Some(_), Some(_)) | (None, Some(_)) => only_ours.push(b.next().unwrap()),
            (Some(_), None) => only_tp.push(a.next().unwrap()),
            (None, None) => break,
        }
    }
    panic!(
        "the trace processor and our reader disagree on {what}: {} vs {} items;\n\
         only in the trace processor ({}): {:?}\nonly in our reader ({}): {:?}",
        tp.len(),
        ours.len(),
        only_tp.len(),
        &only_tp[..only_tp.len().min(10)],
        only_ours.len(),
        &only_ours[..only_ours.len().min(10)],
    );
}

/// A backend for tests and benches that mimics the CUDA one (its category
/// names, `gpu_api` 4 and suffix "nv"), so that their trace configs and
/// checks read like real ones. The writer itself names no backend.
pub static BACKEND: BackendInfo = BackendInfo::new(
    "CUDA",
    Categories {
        api: Category::new(
            "cuda",
            "API calls of the tests' simulated CUDA-like backend",
        ),
        markers: Category::new("nvtx", "Markers of the tests' simulated CUDA-like backend"),
    },
    4,
    "nv",
);

/// A simulated program's Announce: waits (at most 60 s) until it has written
/// its pid into `path`, and returns the pid.
pub fn wait_announce(path: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(
            Instant::now() < until,
            "the program never reached {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kernels in the trace by name.
pub fn kernel_counts(t: &Trace) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in &t.gpu_events {
        if let Some(k) = &e.kernel {
            *m.entry(k.name.to_string()).or_default() += 1;
        }
    }
    m
}

/// The recording windows in the trace's log: (opening line, start,
/// duration).
pub fn recording_windows(t: &Trace) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for l in &t.logs {
        match RecordingWindow::parse(&l.message) {
            Some(w) if w.opened => out.push((l.message.clone(), l.ts, 0)),
            Some(_) => {
                if let Some(w) = out.last_mut() {
                    w.2 = l.ts - w.1;
                }
            }
            None => {}
        }
    }
    out
}

/// Opens a recording-windows test's trace and checks it whole: decoded
/// without problems, nothing dropped, the validator, and the trace processor
/// agreeing with no slice left unfinished.
pub fn checked_trace(path: &Path) -> Trace {
    let t = Trace::open(path).expect("trace");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.drop_counts(), Some(vec![]), "nothing dropped");
    validate(path);
    if let Some(a) = tp_check(path, &t, &[]) {
        assert_eq!(a.unfinished, 0, "slices that never end");
        assert_eq!(a.gpu_slices, t.gpu_events.len());
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_tables_split_statements_and_keep_commas_in_strings() {
        let out = "\"a\",\"b(x,\n  y)\"\n\"f(int, char*)\",1\n\"\",[NULL]\n\n\"n\"\n\n\"x\",\"y\"\n\"GPU 0 · stream 1\",2.500000\n";
        assert_eq!(
            csv_tables(out),
            [
                vec![
                    vec!["a", "b(x,\n  y)"],
                    vec!["f(int, char*)", "1"],
                    vec!["", "[NULL]"]
                ],
                vec![vec!["n"]],
                vec![vec!["x", "y"], vec!["GPU 0 · stream 1", "2.500000"]],
            ]
        );
        assert!(csv_tables("").is_empty());
    }
}
