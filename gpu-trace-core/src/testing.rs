//! Helpers for this workspace's tests. Not an API.

use crate::reader::{GpuEvent, Slice, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Runs the official-schema validator (`tools/validate_pftrace.py`) on
/// `path` with a Python that has `perfetto==0.59.1` (see
/// [`validator_python`]), and panics with its output if it rejects the
/// trace. Without such a Python it says "skipped" on stderr, with what to
/// set, or panics where [`REQUIRE_PERFETTO_VAR`] is set.
pub fn validate(path: &Path) {
    let Some(py) = validator_python() else {
        let msg = "schema validation skipped: no python with perfetto==0.59.1 \
                   (set GPU_TRACE_PYTHON to one, or make .venv at the workspace root \
                   and `pip install perfetto==0.59.1` into it)";
        if std::env::var_os(REQUIRE_PERFETTO_VAR).is_some() {
            panic!("{msg}, and {REQUIRE_PERFETTO_VAR} is set");
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

/// Set (to anything) where the Perfetto tools must be present: the helpers
/// below then panic instead of skipping (CI sets it).
pub const REQUIRE_PERFETTO_VAR: &str = "GPU_TRACE_REQUIRE_PERFETTO";

/// A binary of `../shared/tools/perfetto/`, or the one `var` names; `None`,
/// after saying "`what` skipped" on stderr, where there is none.
fn perfetto_tool(var: &str, name: &str, what: &str) -> Option<PathBuf> {
    let p = match std::env::var_os(var) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/tools/perfetto")
            .join(name),
    };
    if p.is_file() {
        return Some(p);
    }
    let msg = format!("{what} skipped: no {} (set {var})", p.display());
    if std::env::var_os(REQUIRE_PERFETTO_VAR).is_some() {
        panic!("{msg}, and {REQUIRE_PERFETTO_VAR} is set");
    }
    say(&msg);
    None
}

/// Writes `msg` to stderr past the test harness's capture (which only
/// takes `print!`/`eprint!`), so that a skip shows in a plain `cargo test`,
/// naming the test (the harness names each test's thread after it).
fn say(msg: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .map(|n| format!(" [{n}]"))
        .unwrap_or_default();
    let _ = writeln!(std::io::stderr(), "{msg}{test}");
}

/// Perfetto's own trace processor (`../shared/tools/perfetto/`, or the
/// binary `GPU_TRACE_TP` names), the engine of the UI. `None`, after saying
/// "skipped" on stderr, where there is none.
pub fn trace_processor() -> Option<PathBuf> {
    perfetto_tool(
        "GPU_TRACE_TP",
        "trace_processor_shell",
        "trace processor checks",
    )
}

/// Perfetto's `tracebox` (`traced` and the `perfetto` command;
/// `../shared/tools/perfetto/`, or the binary `GPU_TRACE_TRACEBOX` names).
/// `None`, after saying "skipped" on stderr, where there is none.
pub fn tracebox() -> Option<PathBuf> {
    perfetto_tool("GPU_TRACE_TRACEBOX", "tracebox", "system-mode tests")
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

/// Asserts that the trace processor reports no error or data loss for
/// `path`, but stats whose name starts with one of `allowed`, and that it
/// shows what our reader decoded (`t`, see [`tp_agrees_with_reader`]).
/// `None` when skipped.
pub fn tp_check(path: &Path, t: &Trace, allowed: &[&str]) -> Option<TpAgreement> {
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

/// The variable naming the socket producers connect to.
pub const PRODUCER_SOCK_VAR: &str = "PERFETTO_PRODUCER_SOCK_NAME";
/// The variable naming the socket consumers (the `perfetto` command) use.
pub const CONSUMER_SOCK_VAR: &str = "PERFETTO_CONSUMER_SOCK_NAME";

/// A private tracing service: `tracebox traced` on sockets in a temporary
/// directory of its own. Killed, and its directory removed (unless
/// `GPU_TRACE_KEEP` is set), on drop.
#[derive(Debug)]
pub struct Traced {
    tracebox: PathBuf,
    child: Child,
    dir: PathBuf,
}

/// What `traced` says of itself (`perfetto --query-raw`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceState {
    /// Connected producers: (id, pid, name).
    pub producers: Vec<(u64, u64, String)>,
    /// Registered data sources: (name, producer id).
    pub data_sources: Vec<(String, u64)>,
    /// Sessions.
    pub sessions: u64,
    /// Started sessions.
    pub sessions_started: u64,
}

impl ServiceState {
    /// The pids of the producers that registered data source `name`.
    pub fn pids_with(&self, name: &str) -> Vec<u64> {
        let mut pids: Vec<u64> = self
            .data_sources
            .iter()
            .filter(|(n, _)| n == name)
            .filter_map(|(_, id)| self.producers.iter().find(|p| p.0 == *id).map(|p| p.1))
            .collect();
        pids.sort_unstable();
        pids
    }
}

impl Traced {
    /// Starts `traced` and waits until both its sockets accept connections.
    /// `None`, after saying "skipped", without `tracebox`.
    pub fn start(tag: &str) -> Option<Traced> {
        let tracebox = tracebox()?;
        let dir = std::env::temp_dir().join(unique(&format!("gpu-trace-traced-{tag}")));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("traced's directory");
        let log = std::fs::File::create(dir.join("traced.log")).expect("traced's log");
        let child = Command::new(&tracebox)
            .arg("traced")
            .env(PRODUCER_SOCK_VAR, dir.join("producer.sock"))
            .env(CONSUMER_SOCK_VAR, dir.join("consumer.sock"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("traced's log"))
            .stderr(log)
            .spawn()
            .expect("tracebox traced starts");
        let mut t = Traced {
            tracebox,
            child,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let up = [t.producer_sock(), t.consumer_sock()]
                .iter()
                .all(|s| std::os::unix::net::UnixStream::connect(s).is_ok());
            if up {
                return Some(t);
            }
            if let Ok(Some(status)) = t.child.try_wait() {
                panic!("traced exited ({status}):\n{}", t.log());
            }
            assert!(
                Instant::now() < deadline,
                "traced's sockets did not accept connections within 10 s:\n{}",
                t.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Where producers connect (set it as [`PRODUCER_SOCK_VAR`]).
    pub fn producer_sock(&self) -> PathBuf {
        self.dir.join("producer.sock")
    }

    /// Where consumers connect.
    pub fn consumer_sock(&self) -> PathBuf {
        self.dir.join("consumer.sock")
    }

    /// The service's own directory (sockets, configs, traces, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What `traced` printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("traced.log")).unwrap_or_default()
    }

    /// `tracebox perfetto`, talking to this service.
    pub fn perfetto(&self) -> Command {
        let mut c = Command::new(&self.tracebox);
        c.arg("perfetto")
            .env(CONSUMER_SOCK_VAR, self.consumer_sock())
            .env(PRODUCER_SOCK_VAR, self.producer_sock())
            .stdin(Stdio::null());
        c
    }

    /// Starts recording with the text config `config` into
    /// `<dir>/<name>.pftrace` (`perfetto --txt -c <name>.pbtx -o ...`), in
    /// the background.
    pub fn record(&self, name: &str, config: &str) -> Recording {
        let cfg = self.dir.join(format!("{name}.pbtx"));
        let out = self.dir.join(format!("{name}.pftrace"));
        let log = self.dir.join(format!("{name}.perfetto.log"));
        std::fs::write(&cfg, config).expect("config file");
        let log_file = std::fs::File::create(&log).expect("perfetto's log");
        let child = self
            .perfetto()
            .arg("--txt")
            .arg("-c")
            .arg(&cfg)
            .arg("-o")
            .arg(&out)
            .stdout(log_file.try_clone().expect("perfetto's log"))
            .stderr(log_file)
            .spawn()
            .expect("tracebox perfetto starts");
        Recording {
            child: Some(child),
            out,
            log,
        }
    }

    /// The service's state (`perfetto --query-raw`, decoded).
    pub fn state(&self) -> ServiceState {
        let out = self
            .perfetto()
            .arg("--query-raw")
            .output()
            .expect("perfetto --query-raw runs");
        assert!(
            out.status.success(),
            "perfetto --query-raw failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        decode_service_state(&out.stdout)
    }

    /// Polls the service's state (every 20 ms, at most `limit`) until
    /// `done` holds; panics, with the last state, at the deadline.
    pub fn wait_until(
        &self,
        what: &str,
        limit: Duration,
        done: impl Fn(&ServiceState) -> bool,
    ) -> ServiceState {
        let deadline = Instant::now() + limit;
        loop {
            let s = self.state();
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "traced: no {what} within {limit:?}; last state {s:?}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var_os("GPU_TRACE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("kept {}", self.dir.display());
        }
    }
}

/// `TracingServiceState`: producers (1: id 1, name 2, pid 5), data sources
/// (2: descriptor 1 with name 1, producer id 2), sessions (3), started
/// sessions (4).
fn decode_service_state(data: &[u8]) -> ServiceState {
    use gpu_trace_reader::pb::Fields;
    let mut s = ServiceState::default();
    for (n, v) in Fields::new(data).flatten() {
        match n {
            1 => {
                let (mut id, mut pid, mut name) = (0, 0, String::new());
                for (f, x) in Fields::new(v.as_bytes().unwrap_or_default()).flatten() {
                    match f {
                        1 => id = x.as_u64().unwrap_or(0),
                        2 => name = x.as_str().unwrap_or_default().to_owned(),
                        5 => pid = x.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                s.producers.push((id, pid, name));
            }
            2 => {
                let (mut name, mut producer) = (String::new(), 0);
                for (f, x) in Fields::new(v.as_bytes().unwrap_or_default()).flatten() {
                    match f {
                        1 => {
                            for (g, y) in Fields::new(x.as_bytes().unwrap_or_default()).flatten() {
                                if g == 1 {
                                    name = y.as_str().unwrap_or_default().to_owned();
                                }
                            }
                        }
                        2 => producer = x.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                s.data_sources.push((name, producer));
            }
            3 => s.sessions = v.as_u64().unwrap_or(0),
            4 => s.sessions_started = v.as_u64().unwrap_or(0),
            _ => {}
        }
    }
    s
}

/// A `perfetto` command recording in the background. Killed on drop if
/// still running.
#[derive(Debug)]
pub struct Recording {
    child: Option<Child>,
    out: PathBuf,
    log: PathBuf,
}

impl Recording {
    /// The trace file it writes.
    pub fn output(&self) -> &Path {
        &self.out
    }

    /// What the command printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the session (SIGTERM, as Ctrl-C would), waits at most 30 s for
    /// the command to write the trace and exit, and returns the trace's path.
    pub fn stop(mut self) -> PathBuf {
        if let Some(c) = &self.child {
            let pid = rustix::process::Pid::from_child(c);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        self.finish(Duration::from_secs(30))
    }

    /// Waits at most `limit` for the session to end by itself
    /// (`duration_ms`) and returns the trace's path.
    pub fn wait(mut self, limit: Duration) -> PathBuf {
        self.finish(limit)
    }

    fn finish(&mut self, limit: Duration) -> PathBuf {
        let mut child = self.child.take().expect("a running command");
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(s) = child.try_wait().expect("perfetto's status") {
                break s;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("perfetto did not finish within {limit:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            status.success(),
            "perfetto failed ({status}):\n{}",
            self.log()
        );
        assert!(
            self.out.is_file(),
            "perfetto wrote no {}:\n{}",
            self.out.display(),
            self.log()
        );
        self.out.clone()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
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

    #[test]
    fn service_state_is_decoded() {
        use gpu_trace_reader::pb::Writer;
        let mut w = Writer::new();
        w.nested(1, |p| {
            p.varint(1, 3).string(2, "app").varint(5, 4242);
        });
        w.nested(2, |d| {
            d.nested(1, |x| {
                x.string(1, "gpu.renderstages.nv");
            })
            .varint(2, 3);
        });
        w.varint(3, 2).varint(4, 1);
        let s = decode_service_state(w.as_bytes());
        assert_eq!(s.producers, [(3, 4242, "app".to_owned())]);
        assert_eq!(s.pids_with("gpu.renderstages.nv"), [4242]);
        assert!(s.pids_with("gpu.counters.nv").is_empty());
        assert_eq!((s.sessions, s.sessions_started), (2, 1));
    }
}

#[cfg(feature = "perfetto")]
crate::track_categories! {
    pub static TEST_CATEGORIES = {
        api: ("cuda", "API calls of the tests' simulated CUDA-like backend"),
        markers: ("nvtx", "Markers of the tests' simulated CUDA-like backend"),
    };
}

/// A backend for tests and benches that mimics the CUDA one (its category
/// names, `gpu_api` 4 and suffix "nv"), so that their trace configs and
/// checks read like real ones. Core itself names no backend.
#[cfg(feature = "perfetto")]
pub static BACKEND: crate::BackendInfo = crate::BackendInfo {
    name: "CUDA",
    categories: &TEST_CATEGORIES,
    gpu_api: 4,
    suffix: "nv",
};

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
        if let Some(rest) = l.message.strip_prefix("recording window ") {
            if rest.contains(" opened ") {
                out.push((l.message.clone(), l.ts, 0));
            } else if let Some(w) = out.last_mut() {
                w.2 = l.ts - w.1;
            }
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
