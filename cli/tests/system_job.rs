//! A whole job in one system-mode trace: a real `traced` (Perfetto's
//! `tracebox`) on private sockets, one `perfetto` session, and
//! `gpu-trace record --mode system` running a launcher that starts two
//! ranks at once, as torchrun does (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`).
//! Each rank is a scripted CUDA program under the simulated driver and
//! CUPTI (`cupti-sim`: this test executable re-run with its ignored child
//! test), with its own kernels. The one file the session writes must hold
//! both processes, each with exactly its own kernels, API calls and NVTX
//! ranges on its own tracks, nothing lost; our reader, Perfetto's trace
//! processor and `gpu-trace stats` must all say so.
//!
//! Skipped, saying why, where there is no `tracebox`.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{Report, RunSpec, Scenario};
use gpu_trace_reader::{Stage, Trace};
use gpu_trace_testkit::{EXIT_FLUSH_FAILURES, tp_check, tp_query, validate};
use perfetto_testd::{PRODUCER_SOCK_VAR, Traced};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

cupti_sim::child_entry!();

/// How long the whole job may take before the test kills it and fails.
const LIMIT: Duration = Duration::from_secs(120);

/// What the session records: GPU work, API calls and NVTX ranges, written
/// into the file while it runs, as the README's system-mode config does.
const JOB_CONFIG: &str = r#"
buffers { size_kb: 65536 fill_policy: RING_BUFFER }
data_sources { config { name: "gpu.renderstages.nv" } }
data_sources {
  config {
    name: "track_event"
    track_event_config { enabled_categories: "cuda" enabled_categories: "nvtx" disabled_categories: "*" }
  }
}
write_into_file: true
file_write_period_ms: 200
incremental_state_config { clear_period_ms: 100 }
"#;

/// The launcher: starts every rank at once, each its own process with the
/// variables torchrun sets, its own cupti-sim spec and report, its stderr
/// in a file and its pid written down; waits for all and fails if one did.
const LAUNCHER: &str = r#"
dir=$1; shift
pids=
for r in 0 1; do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 CUPTI_SIM_SPEC=$dir/rank$r.json \
  CUPTI_SIM_REPORT=$dir/report$r.json "$@" 2>"$dir/rank$r.err" &
  echo $! >"$dir/rank$r.pid"
  pids="$pids $!"
done
status=0
for p in $pids; do wait "$p" || status=1; done
exit $status
"#;

/// Rank `r`'s program: after a second (while the tool connects to `traced`
/// and the session starts its data sources in this process), `launches`
/// of its kernels inside an NVTX range, a pause long enough that the ranks
/// surely overlap in time, then the same again. Kernel names are the
/// rank's own but for `allreduce`, which both launch (in different
/// numbers): one name in two processes must stay two processes' kernels.
fn rank_scenario(r: usize) -> Scenario {
    let k = |name: &str, symbol: &str, us| KernelSpec {
        name: name.into(),
        symbol: symbol.into(),
        registers: 32,
        static_smem: 0,
        duration_us: us,
    };
    let launch = |kernel: &str| Op::Launch {
        kernel: kernel.into(),
        grid: [8, 1, 1],
        block: [128, 1, 1],
        stream: 0,
        layer: Layer::Runtime,
    };
    let (kernels, batch): (Vec<KernelSpec>, Vec<&str>) = match r {
        0 => (
            vec![
                k("fwd0", "_Z9rank0_fwdPf", 30),
                k("allreduce", "_Z9allreducePfi", 100),
            ],
            vec!["fwd0", "fwd0", "allreduce"],
        ),
        _ => (
            vec![
                k("fwd1", "_Z9rank1_fwdPf", 45),
                k("bwd1", "_Z9rank1_bwdPf", 70),
                k("allreduce", "_Z9allreducePfi", 100),
            ],
            vec!["fwd1", "bwd1", "bwd1", "allreduce", "allreduce"],
        ),
    };
    let step = |n: usize| {
        let mut ops = vec![Op::NvtxPush {
            message: format!("rank {r} step {n}"),
            domain: None,
        }];
        ops.extend(batch.iter().map(|k| launch(k)));
        ops.push(Op::DeviceSync);
        ops.push(Op::NvtxPop { domain: None });
        ops
    };
    let mut ops = vec![Op::SleepUs { us: 1_000_000 }];
    ops.extend(step(0));
    ops.push(Op::SleepUs { us: 400_000 });
    ops.extend(step(1));
    // Idle past the session's incremental-state clears, so that the
    // rank's last entry into its track-event sequences (the flush at exit)
    // finds them reset and the SDK describes the process there again.
    ops.push(Op::SleepUs { us: 400_000 });
    let s = Scenario {
        kernels,
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

/// The job's scratch directory.
fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-job-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `gpu-trace record --mode system` with this build's injection libraries
/// and the fake CUPTI, pointed at `traced`, running the launcher over this
/// executable's child test, in a process group of its own so that a hung
/// job can be killed whole.
struct Job {
    child: Option<Child>,
}

impl Job {
    fn start(dir: &Path, traced: &Traced) -> Job {
        let cuda = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
        let launcher = dir.join("launch.sh");
        std::fs::write(&launcher, LAUNCHER).unwrap();
        for r in 0..2 {
            let spec = RunSpec::new(&cuda, rank_scenario(r));
            std::fs::write(
                dir.join(format!("rank{r}.json")),
                serde_json::to_vec(&spec).unwrap(),
            )
            .unwrap();
        }
        let child = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
            .arg("record")
            .arg("--mode")
            .arg("system")
            .arg("--lib-dir")
            .arg(cuda.parent().unwrap())
            .arg("--")
            .arg("sh")
            .arg(&launcher)
            .arg(dir)
            .arg(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                cupti_sim::host::CHILD_TEST,
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env_remove("CUDA_INJECTION64_PATH")
            .env_remove("NVTX_INJECTION64_PATH")
            .env_remove(gpu_trace_agent::config::vars::OUTPUT)
            .env(
                "GPU_TRACE_CUPTI_PATH",
                cupti_sim::host::fake_library().unwrap(),
            )
            .env(PRODUCER_SOCK_VAR, traced.producer_sock())
            // Each rank writes what it recorded within its idle end.
            .env(gpu_trace_agent::config::vars::FLUSH_PERIOD_MS, "100")
            .env("RUST_BACKTRACE", "0")
            .current_dir(dir)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("record.err")).unwrap())
            .spawn()
            .expect("gpu-trace record starts");
        Job { child: Some(child) }
    }

    /// Waits for the job (at most [`LIMIT`]) and returns its exit code.
    fn wait(mut self, dir: &Path) -> Option<i32> {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s.code();
            }
            if Instant::now() >= deadline {
                kill_group(&mut child);
                panic!(
                    "the job did not finish within {LIMIT:?}; gpu-trace record said:\n{}",
                    read(&dir.join("record.err"))
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Kills `child`'s process group (it leads one) and reaps it.
fn kill_group(child: &mut Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let _ = child.wait();
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            kill_group(c);
        }
    }
}

/// The (sequence, pid) whose last process descriptor on that sequence has
/// no labels: the SDK's, not followed by ours.
fn sequences_ending_unnamed(trace: &[u8]) -> Vec<(u64, u64)> {
    use gpu_trace_reader::pb::Fields;
    use gpu_trace_reader::wire::{self, packet as P, track_descriptor as D};
    let mut last: BTreeMap<(u64, u64), bool> = BTreeMap::new();
    for f in Fields::new(trace) {
        let (n, v) = f.unwrap();
        if n != wire::TRACE_PACKET {
            continue;
        }
        let (mut seq, mut desc) = (0, None);
        for f in Fields::new(v.as_bytes().unwrap()) {
            let (n, v) = f.unwrap();
            match n {
                P::SEQUENCE_ID => seq = v.as_u64().unwrap(),
                P::TRACK_DESCRIPTOR => {
                    for f in Fields::new(v.as_bytes().unwrap()) {
                        let (n, v) = f.unwrap();
                        if n == D::PROCESS {
                            desc = Some(v.as_bytes().unwrap());
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(d) = desc {
            let (mut pid, mut labelled) = (0, false);
            for f in Fields::new(d) {
                let (n, v) = f.unwrap();
                match n {
                    D::PROCESS_PID => pid = v.as_u64().unwrap(),
                    D::PROCESS_LABELS => labelled = true,
                    _ => {}
                }
            }
            last.insert((seq, pid), labelled);
        }
    }
    last.into_iter()
        .filter(|&(_, labelled)| !labelled)
        .map(|(k, _)| k)
        .collect()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// What the trace shows of one process.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    /// Kernel executions by symbol.
    kernels: BTreeMap<String, u64>,
    /// CUDA API slices by name.
    api: BTreeMap<String, u64>,
    /// NVTX ranges by message.
    ranges: BTreeMap<String, u64>,
}

/// What the script of a rank makes the trace show (API calls as the
/// default driver layer draws them).
fn expected(s: &Scenario) -> Seen {
    let e = s.expected(Layer::Driver, false);
    Seen {
        kernels: e.kernels,
        api: e.api_slices,
        ranges: e.nvtx_pushes,
    }
}

/// Each process's kernels (by the pid of their context), API slices and
/// NVTX ranges (by the pid of their thread's track).
fn seen(t: &Trace) -> BTreeMap<i64, Seen> {
    let mut by: BTreeMap<i64, Seen> = BTreeMap::new();
    for g in &t.gpu_events {
        assert_eq!(g.stage, Stage::Kernel, "only kernels were scripted: {g:?}");
        let pid = g.context.as_ref().expect("a kernel's context").pid;
        let k = g.kernel.as_ref().expect("a kernel's name");
        *by.entry(pid)
            .or_default()
            .kernels
            .entry(k.name.clone())
            .or_default() += 1;
    }
    for s in &t.slices {
        let pid = t
            .thread_of(s.track)
            .unwrap_or_else(|| panic!("{} on a track of no thread", s.name))
            .pid;
        let p = by.entry(pid).or_default();
        let m = if s.name.starts_with("cu") {
            &mut p.api
        } else {
            &mut p.ranges
        };
        *m.entry(s.name.to_string()).or_default() += 1;
    }
    by
}

/// `gpu-trace stats --format json` of `path`.
fn stats_json(path: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(["stats", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The kernel rows of a `stats` scope as name → (count, total ns).
fn kernel_rows(scope: &Value) -> BTreeMap<String, (u64, u64)> {
    scope["kernels"]
        .as_array()
        .unwrap_or_else(|| panic!("no kernels in {scope}"))
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                (
                    r["count"].as_u64().unwrap(),
                    r["total_ns"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// A rank's kernels as `stats` must count them: name → (count, total ns)
/// from the script's launches and durations.
fn kernel_totals(s: &Scenario, names: &BTreeMap<String, String>) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (symbol, n) in s.expected(Layer::Driver, false).kernels {
        let k = s.kernels.iter().find(|k| k.symbol == symbol).unwrap();
        let e = m.entry(names[&symbol].clone()).or_default();
        e.0 += n;
        e.1 += n * k.duration_us * 1_000;
    }
    m
}

#[test]
fn a_two_rank_job_lands_in_one_system_mode_trace() {
    let traced = Traced::start("job");
    let rec = traced.record("job", JOB_CONFIG);
    traced.wait_until("started session", Duration::from_secs(10), |s| {
        s.sessions_started == 1
    });
    let dir = tmpdir("two-ranks");
    let code = Job::start(&dir, &traced).wait(&dir);
    let record_err = read(&dir.join("record.err"));
    assert_eq!(code, Some(0), "{record_err}");
    assert_eq!(
        record_err.trim_end(),
        "gpu-trace: system mode: the running traced session holds the trace"
    );
    let path = rec.stop();

    // Each rank ran its script under the tool, nothing left behind, and
    // said nothing (a session was there to take everything).
    let scenarios = [rank_scenario(0), rank_scenario(1)];
    let mut pids = Vec::new();
    for r in 0..2 {
        let report: Report =
            serde_json::from_str(&read(&dir.join(format!("report{r}.json")))).unwrap();
        let err = read(&dir.join(format!("rank{r}.err")));
        assert_eq!(report.initialize_injection, Some(1), "rank {r}: {err}");
        assert!(report.violations.is_empty(), "rank {r}: {report:#?}");
        assert_eq!(
            (report.records_dropped, report.records_undelivered),
            (0, 0),
            "rank {r}: {report:#?}"
        );
        assert_eq!(
            err.lines().filter(|l| l.starts_with("gpu-trace")).count(),
            0,
            "{err}"
        );
        let pid: i64 = read(&dir.join(format!("rank{r}.pid")))
            .trim()
            .parse()
            .unwrap();
        pids.push(pid);
    }
    assert_ne!(pids[0], pids[1]);

    // Our reader: both processes, each exactly its own work.
    let t = Trace::open(&path).expect("the session's trace");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.data_sources, ["gpu.renderstages.nv", "track_event"]);
    let losses = t.losses.expect("the service's statistics");
    assert_eq!(losses.lost(), 0, "{:?}", losses.describe());
    let by_pid = seen(&t);
    assert_eq!(
        by_pid.keys().copied().collect::<Vec<_>>(),
        {
            let mut p = pids.clone();
            p.sort_unstable();
            p
        },
        "the processes of the trace are the ranks"
    );
    for (r, s) in scenarios.iter().enumerate() {
        assert_eq!(by_pid[&pids[r]], expected(s), "rank {r} (pid {})", pids[r]);
        let p = t.process(pids[r]).expect("each rank described");
        assert!(p.name.ends_with(&format!(" [rank {r}/2]")), "{p:?}");
    }
    // The SDK describes the process by its command line whenever a rank
    // enters a track-event sequence the session has cleared (every 100 ms
    // here), also only to flush it at exit; on every sequence, ours with
    // the rank comes after each of those.
    let unnamed = sequences_ending_unnamed(&std::fs::read(&path).unwrap());
    assert!(
        unnamed.is_empty(),
        "sequences whose last process descriptor lacks the rank: {unnamed:?}"
    );
    // Each process's GPU queue says whose it is: the trace processor keys
    // a queue's track by its name, and both ranks ran on stream 10 of GPU
    // 0.
    for g in &t.gpu_events {
        let pid = g.context.as_ref().unwrap().pid;
        assert_eq!(g.queue.as_str(), format!("GPU 0 · pid {pid} · stream 10"));
    }
    // Every arrow stays in its process: an API call submits its own
    // process's kernel (event ids do not clash across processes).
    let by_id = t.gpu_events_by_id();
    assert_eq!(by_id.len(), t.gpu_events.len(), "event ids unique");
    let mut arrows = 0;
    for s in &t.slices {
        let pid = t.thread_of(s.track).unwrap().pid;
        for id in &s.submissions {
            let g = by_id
                .get(id)
                .unwrap_or_else(|| panic!("{} points at no GPU event ({id})", s.name));
            assert_eq!(
                g.context.as_ref().unwrap().pid,
                pid,
                "{} → {}",
                s.name,
                g.name
            );
            arrows += 1;
        }
    }
    assert_eq!(arrows, t.gpu_events.len(), "one arrow per kernel");
    // The ranks ran at the same time: their GPU spans overlap.
    let span = |pid: i64| {
        let ks = t
            .gpu_events
            .iter()
            .filter(|g| g.context.as_ref().unwrap().pid == pid);
        let start = ks.clone().map(|g| g.ts).min().unwrap();
        let end = ks.map(|g| g.ts + g.dur).max().unwrap();
        (start, end)
    };
    let (a, b) = (span(pids[0]), span(pids[1]));
    assert!(a.0 < b.1 && b.0 < a.1, "the ranks overlap: {a:?} {b:?}");
    // Each process left its summary: nothing dropped.
    let dropped: Vec<&str> = t
        .logs
        .iter()
        .filter(|l| l.message.starts_with("gpu-trace dropped:"))
        .map(|l| l.message.as_str())
        .collect();
    assert_eq!(dropped, ["gpu-trace dropped: none"; 2]);

    // Perfetto's trace processor: no error or loss, the same events, and
    // each process's events on tracks of its own.
    if let Some(a) = tp_check(&path, &t, &[EXIT_FLUSH_FAILURES]) {
        assert_eq!(a.unfinished, 0);
        assert_eq!(a.gpu_slices, t.gpu_events.len());
        // Every arrow (submissions and waits) joins two slices of one
        // process.
        assert!(a.flows > t.gpu_events.len(), "{a:?}");
        let crossing = tp_query(
            &path,
            "with owner as ( \
               select id, upid from gpu_slice \
               union all \
               select s.id, thread.upid from slice s \
                 join thread_track k on s.track_id = k.id join thread using (utid)) \
             select count(*) from flow f \
               left join owner o on o.id = f.slice_out left join owner i on i.id = f.slice_in \
              where o.upid is null or i.upid is null or o.upid != i.upid;",
        )
        .unwrap();
        assert_eq!(
            crossing,
            [["0"]],
            "arrows between processes, or from slices of none"
        );
        // GPU slices: (pid, kernel, count), and no track shared.
        let rows = tp_query(
            &path,
            "select p.pid, extract_arg(g.arg_set_id, 'kernel_name'), count(*) \
               from gpu_slice g join process p using (upid) group by 1, 2;",
        )
        .unwrap();
        let mut tp: BTreeMap<i64, BTreeMap<String, u64>> = BTreeMap::new();
        for r in rows {
            tp.entry(r[0].parse().unwrap())
                .or_default()
                .insert(r[1].clone(), r[2].parse().unwrap());
        }
        for (r, s) in scenarios.iter().enumerate() {
            assert_eq!(
                tp[&pids[r]],
                s.expected(Layer::Driver, false).kernels,
                "rank {r} in the trace processor"
            );
        }
        // The rank's name outlives the clears: the trace processor names a
        // process after its latest descriptor.
        let names = tp_query(&path, "select pid, name from process where pid > 0;").unwrap();
        for (r, pid) in pids.iter().enumerate() {
            let name = names
                .iter()
                .find(|row| row[0] == pid.to_string())
                .map(|row| row[1].as_str());
            assert!(
                name.is_some_and(|n| n.ends_with(&format!(" [rank {r}/2]"))),
                "rank {r} in the trace processor: {name:?}"
            );
        }
        let shared = tp_query(
            &path,
            "select s.track_id, group_concat(distinct p.pid) from gpu_slice s \
               join process p using (upid) group by s.track_id \
             having count(distinct p.pid) > 1;",
        )
        .unwrap();
        assert!(
            shared.is_empty(),
            "GPU tracks holding two processes' kernels: {shared:?}"
        );
        // Thread slices: on threads of their own process, each process
        // with its own API calls and ranges.
        let rows = tp_query(
            &path,
            "select p.pid, s.name, count(*) from slice s \
               join thread_track k on s.track_id = k.id join thread using (utid) \
               join process p using (upid) group by 1, 2;",
        )
        .unwrap();
        let mut tp: BTreeMap<i64, BTreeMap<String, u64>> = BTreeMap::new();
        for r in rows {
            tp.entry(r[0].parse().unwrap())
                .or_default()
                .insert(r[1].clone(), r[2].parse().unwrap());
        }
        for (r, s) in scenarios.iter().enumerate() {
            let e = expected(s);
            let mut want = e.api.clone();
            want.extend(e.ranges.clone());
            assert_eq!(
                tp[&pids[r]], want,
                "rank {r}'s thread slices in the trace processor"
            );
        }
    }
    validate(&path);

    // `gpu-trace stats`: both processes, each with exact totals, and the
    // job's totals over both.
    let v = stats_json(&path);
    let mut sorted = pids.clone();
    sorted.sort_unstable();
    assert_eq!(v["files"][0]["pids"], serde_json::json!(sorted), "{v}");
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{v}");
    let names: BTreeMap<String, String> = t
        .kernels()
        .map(|g| {
            let k = g.kernel.as_ref().unwrap();
            (k.name.clone(), k.demangled.clone())
        })
        .collect();
    let mut all: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (r, s) in scenarios.iter().enumerate() {
        let p = procs
            .iter()
            .find(|p| p["pid"].as_i64() == Some(pids[r]))
            .unwrap_or_else(|| panic!("no process {} in {v}", pids[r]));
        let want = kernel_totals(s, &names);
        assert_eq!(kernel_rows(p), want, "rank {r}");
        for (k, (n, ns)) in want {
            let e = all.entry(k).or_default();
            e.0 += n;
            e.1 += ns;
        }
    }
    assert_eq!(kernel_rows(&v), all, "the job's totals");
    assert_eq!(all["allreduce(float*, int)"], (2 + 4, 6 * 100_000));
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(["stats", "--report", "kernels"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("Processes: 2 ({}, {})", sorted[0], sorted[1])),
        "{text}"
    );
    assert!(text.contains("== All 2 processes =="), "{text}");

    if std::env::var_os("GPU_TRACE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
}
