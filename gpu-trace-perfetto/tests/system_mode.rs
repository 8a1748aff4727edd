//! System mode against a real tracing service: a private `traced`
//! (Perfetto's `tracebox`, `../shared/tools/perfetto/`) on sockets in a
//! temporary directory, sessions recorded with `tracebox perfetto --txt -c`,
//! and traced applications with `INJECTION_MODE=system`. Skipped, saying
//! so, without `tracebox`.
//!
//! As in `e2e.rs`, each application is a child process: the test binary
//! re-runs itself with `GPU_TRACE_SYSTEM_CHILD=<scenario>` and the `child`
//! test plays the application. It talks on its stdout (`PID=`, `ENABLED
//! ...`, `ROUND n`, `DISABLED`, `DONE`) and, in the `loop` scenario, runs
//! until its stdin is closed.

use gpu_trace_agent::Config;
use gpu_trace_model::Recorder;
use gpu_trace_model::model::*;
use gpu_trace_perfetto::{Backend, Sources, Tracer, TracerOptions};
use gpu_trace_reader::{Stage, Trace};
use gpu_trace_testkit::{EXIT_FLUSH_FAILURES, tp_check, tp_tables, validate};
use perfetto_testd::{PRODUCER_SOCK_VAR, Traced};
use smallvec::smallvec;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHILD: &str = "GPU_TRACE_SYSTEM_CHILD";
/// Which sources the `burst` child waits for before it records:
/// `gpu,api,markers,counters`, any of them.
const WAIT_VAR: &str = "GPU_TRACE_SYSTEM_WAIT";
/// `switching`: the `loop` child runs with [`SwitchingBackend`].
const BACKEND_VAR: &str = "GPU_TRACE_SYSTEM_BACKEND";

/// The backend's flushes so far: the emitter's cycles.
static FLUSHES: AtomicU64 = AtomicU64::new(0);

/// A backend whose source switch waits for the emitter to go on writing,
/// as CUPTI's can (enabling or disabling activity may wait for its delivery
/// thread, which waits for room in our queue). Prints `SWITCHED gpu=0|1
/// emitter_ran=0|1 thread=NAME`.
struct SwitchingBackend;

impl Backend for SwitchingBackend {
    fn flush(&self, _forced: bool) {
        FLUSHES.fetch_add(1, Ordering::SeqCst);
    }

    fn sources_changed(&self, s: &Sources) {
        let start = FLUSHES.load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while FLUSHES.load(Ordering::SeqCst) < start + 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        println!(
            "SWITCHED gpu={} emitter_ran={} thread={}",
            u8::from(s.gpu),
            u8::from(FLUSHES.load(Ordering::SeqCst) >= start + 2),
            std::thread::current().name().unwrap_or("?")
        );
    }
}

// ---------------------------------------------------------------- child side

/// The traced "application", run only as a child process (the tests below
/// re-run this binary with `--ignored --exact child`).
#[test]
#[ignore = "the traced application of the other tests; runs only in their child processes"]
fn child() {
    let scenario = std::env::var(CHILD).expect("run by a test, which sets GPU_TRACE_SYSTEM_CHILD");
    let (config, problems) = Config::from_env();
    for p in &problems {
        eprintln!("gpu-trace: {p}");
    }
    let settings = config.trace_settings().expect("the settings");
    let tracer = Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings))
        .expect("the tracer starts in system mode");
    println!("PID={}", std::process::id());
    let w = Workload::new(&tracer);
    match scenario.as_str() {
        "burst" => {
            let want = std::env::var(WAIT_VAR).unwrap_or_else(|_| "gpu".into());
            let s = wait_for_sources(&tracer, &want, Duration::from_secs(20));
            println!("ENABLED {}", describe(&s));
            w.burst(&s);
        }
        "loop" => {
            // Until the parent closes stdin: a round of work every 10 ms,
            // recorded only while a session asks for it, as a backend does.
            let (tx, stop) = mpsc::channel::<()>();
            std::thread::spawn(move || {
                let _ = std::io::stdin().read_to_end(&mut Vec::new());
                let _ = tx.send(());
            });
            if std::env::var(BACKEND_VAR).is_ok_and(|b| b == "switching") {
                tracer.set_backend(Box::new(SwitchingBackend));
            }
            println!("READY");
            let mut on = false;
            let mut round = 0;
            while stop.try_recv().is_err() {
                let s = tracer.sources();
                if s.gpu != on {
                    on = s.gpu;
                    println!("{}", if on { "ENABLED" } else { "DISABLED" });
                }
                w.round(&s, round);
                round += 1;
                if on {
                    println!("ROUND {round}");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        other => panic!("unknown scenario {other}"),
    }
    tracer.shutdown(Duration::from_secs(20));
    println!("DONE");
}

fn describe(s: &Sources) -> String {
    format!(
        "gpu={} api={} markers={} counters={}",
        u8::from(s.gpu),
        u8::from(s.api),
        u8::from(s.markers),
        u8::from(s.counters.is_some())
    )
}

/// Polls the tracer's sources until every one named in `want` is on.
fn wait_for_sources(tracer: &Tracer, want: &str, limit: Duration) -> Sources {
    let deadline = Instant::now() + limit;
    loop {
        let s = tracer.sources();
        let on = want.split(',').all(|w| match w {
            "gpu" => s.gpu,
            "api" => s.api,
            "markers" => s.markers,
            "counters" => s.counters.is_some(),
            other => panic!("unknown source {other}"),
        });
        if on {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "sources {want} not enabled within {limit:?}: {}",
            describe(&s)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

const THREADS: u64 = 2;
const LAUNCHES: u64 = 100;
/// GPU work of one `burst`: a copy every tenth launch, kernels otherwise.
const BURST_GPU: u64 = THREADS * LAUNCHES;
const BURST_COPIES: u64 = THREADS * LAUNCHES / 10;
/// API slices of one `burst`: the launches and a synchronisation per thread.
const BURST_API: u64 = THREADS * (LAUNCHES + 1);
/// Per-kernel counter samples of one `burst`, per counter (every 20th launch).
const BURST_SAMPLES: u64 = THREADS * LAUNCHES / 20;
const SM: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

/// Two GPUs, a kernel, two counters and the calls the work is made of.
struct Workload {
    rec: Recorder,
    kernel: KernelId,
    counters: [CounterId; 2],
    launch: NameId,
    memcpy: NameId,
    sync: NameId,
}

impl Workload {
    fn new(tracer: &Tracer) -> Self {
        for id in 0..2 {
            let mut gpu = Device::new(id, "NVIDIA H200");
            gpu.vendor = Some("NVIDIA".into());
            gpu.uuid = Some([id as u8; 16]);
            gpu.pci_bdf = Some(format!("0000:0{id}:00.0"));
            gpu.architecture = "Hopper".into();
            gpu.arch_id = "sm_90".into();
            gpu.sm_count = 132;
            gpu.total_memory = Some(141 << 30);
            tracer.add_device(gpu);
        }
        let names = tracer.names().clone();
        let kernels = tracer.kernels().clone();
        let n = kernels.names(&names, "_Z10loopKernelPfi");
        let mut desc = KernelDesc::new(n.mangled, n.demangled, n.display, names.intern("sm_90"));
        desc.args = vec![(
            names.intern("launch__registers_per_thread"),
            ArgValue::Uint(40),
        )];
        let kernel = kernels.register(desc);
        let counter = |name: &str, description: &str, unit, group| {
            let mut spec = CounterSpec::new(name, unit, group);
            spec.description = description.into();
            tracer.register_counter(spec)
        };
        let counters = [
            counter(SM, "SM throughput", Unit::Percent, CounterGroup::Compute),
            counter(
                "dram__bytes_read.sum",
                "DRAM bytes read",
                Unit::Byte,
                CounterGroup::Memory,
            ),
        ];
        Workload {
            rec: tracer.recorder().clone(),
            kernel,
            counters,
            launch: names.intern("cudaLaunchKernel"),
            memcpy: names.intern("cudaMemcpyAsync"),
            sync: names.intern("cudaStreamSynchronize"),
        }
    }

    /// One launch (or copy, every tenth) of thread `t`: its API slice, its
    /// GPU work and, every twentieth, its counters; what `s` enables.
    fn launch(&self, s: &Sources, thread: u32, t: u64, i: u64, corr: u64, clock: u64) {
        let device = (t % 2) as u32;
        let copy = i % 10 == 5;
        if s.api {
            let mut call = ApiCall::new(
                if copy { self.memcpy } else { self.launch },
                thread,
                clock,
                clock + 2_000,
                corr,
            );
            call.submits = true;
            self.rec.api(call);
        }
        let (gs, ge) = (clock + 5_000, clock + 9_000);
        if s.gpu && copy {
            let mut op = MemoryOp::new(
                device,
                corr,
                gs,
                ge,
                4096,
                MemoryOpKind::Copy {
                    kind: CopyKind::HtoD,
                    src: MemoryKind::Pinned,
                    dst: MemoryKind::Device,
                    peer: None,
                },
            );
            op.context = device + 1;
            op.stream = 10 + t;
            self.rec.memory(op);
        } else if s.gpu {
            let mut exec = KernelExec::new(device, corr, gs, ge, self.kernel);
            exec.context = device + 1;
            exec.stream = 10 + t;
            exec.grid = Dim3::new(512, 1, 1);
            exec.block = Dim3::new(128, 1, 1);
            self.rec.kernel(exec);
        }
        if s.gpu && s.counters.is_some() && i.is_multiple_of(20) {
            self.rec.kernel_counters(KernelCounters::new(
                device,
                corr,
                gs,
                ge,
                vec![(self.counters[0], 42.0), (self.counters[1], 8192.0)].into(),
            ));
        }
    }

    /// `THREADS` threads of `LAUNCHES` launches each inside an NVTX range,
    /// then a synchronisation that waits for the last one; a mark.
    fn burst(&self, s: &Sources) {
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                scope.spawn(move || {
                    let tid = gpu_trace_model::clock::thread_id();
                    let mut clock = now();
                    if s.markers {
                        self.rec
                            .marker(tid, clock, &format!("worker {t}"), |text| Marker::Push {
                                domain: None,
                                text,
                            });
                    }
                    let corr = |i: u64| 1 + t * 100_000 + i;
                    for i in 0..LAUNCHES {
                        clock += 20_000;
                        self.launch(s, tid, t, i, corr(i), clock);
                    }
                    clock += 20_000;
                    if s.api {
                        let mut call =
                            ApiCall::new(self.sync, tid, clock, clock + 10_000, 900_000 + t);
                        call.waits = smallvec![corr(LAUNCHES - 1)];
                        self.rec.api(call);
                    }
                    if s.markers {
                        self.rec
                            .marker(tid, clock + 20_000, "", |_| Marker::Pop { domain: None });
                    }
                });
            }
        });
        if s.markers {
            let tid = gpu_trace_model::clock::thread_id();
            self.rec
                .marker(tid, now(), "checkpoint", |text| Marker::Mark {
                    domain: None,
                    text,
                });
        }
    }

    /// One round of the `loop`: a range holding a few launches.
    fn round(&self, s: &Sources, round: u64) {
        let tid = gpu_trace_model::clock::thread_id();
        let mut clock = now();
        if s.markers {
            self.rec.marker(tid, clock, "round", |text| Marker::Push {
                domain: None,
                text,
            });
        }
        for i in 0..10 {
            clock += 20_000;
            self.launch(s, tid, 0, i, 1 + round * 10 + i, clock);
        }
        if s.markers {
            self.rec
                .marker(tid, clock + 20_000, "", |_| Marker::Pop { domain: None });
        }
    }
}

fn now() -> u64 {
    gpu_trace_model::clock::boottime_ns()
}

// --------------------------------------------------------------- parent side

/// Renderstages, counters and the CUDA and NVTX categories, in a ring
/// buffer (the README's system-mode config, without writing into the file
/// periodically). The duration only bounds a session a test forgot.
const FULL: &str = r#"
buffers { size_kb: 32768 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.nv" } }
data_sources {
  config {
    name: "gpu.counters.nv"
    gpu_counter_config {
      counter_names: "sm__throughput.avg.pct_of_peak_sustained_elapsed"
      instrumented_sampling: true
    }
  }
}
data_sources {
  config {
    name: "track_event"
    track_event_config { enabled_categories: "cuda" enabled_categories: "nvtx" disabled_categories: "*" }
  }
}
"#;

/// A traced application in a child process; killed on drop if still
/// running.
struct App {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl App {
    fn start(scenario: &str, traced: &Traced, envs: &[(&str, &str)]) -> App {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--ignored",
            "--exact",
            "child",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir(traced.dir())
        .env(CHILD, scenario);
        for v in gpu_trace_agent::config::vars::ALL {
            cmd.env_remove(v);
        }
        cmd.env_remove("PERFETTO_CONSUMER_SOCK_NAME")
            .env("INJECTION_MODE", "system")
            .env(PRODUCER_SOCK_VAR, traced.producer_sock());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (err, sink) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        App {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            stderr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn transcript(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.seen.join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// The next line of the child's that starts with `prefix`, within 20 s.
    fn wait_line(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.starts_with(prefix) {
                        return l;
                    }
                }
                Err(_) => panic!("no {prefix:?} line within 20 s\n{}", self.transcript()),
            }
        }
    }

    /// Closes its stdin and waits (at most 30 s) for it to finish well.
    fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        self.wait_line("DONE");
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "the child did not exit\n{}",
                self.transcript()
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(status.success(), "child failed\n{}", self.transcript());
        self.seen.extend(self.lines.try_iter());
        std::mem::take(&mut self.seen)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What every system-mode trace must be: decoded by our reader (problems
/// other than ranges a session stop cut open make it fail), without errors
/// or data losses in the trace processor, the same in both, and accepted by
/// the schema validator.
fn check_valid(path: &Path, cut_ranges_allowed: bool) -> Trace {
    let t = Trace::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let problems: Vec<_> = t
        .problems
        .iter()
        .filter(|p| {
            !(cut_ranges_allowed
                && matches!(p.kind, gpu_trace_reader::ProblemKind::Unpaired { .. })
                && p.text.contains("unterminated slices"))
        })
        .collect();
    assert!(problems.is_empty(), "{}: {problems:?}", path.display());
    tp_check(path, &t, &[EXIT_FLUSH_FAILURES]);
    validate(path);
    t
}

/// One burst's worth of GPU slices, API slices and arrows for each of
/// `pids`, in the trace processor: each process's GPU work on its own
/// process, each submitting API slice with exactly one arrow to later GPU
/// work of the same process, one wait arrow per thread.
fn check_bursts_in_tp(path: &Path, pids: &[u32]) {
    let Some(tables) = tp_tables(
        path,
        "select p.pid, count(*), sum(g.dur > 0) from gpu_slice g
           join track k on g.track_id = k.id join process p on p.upid = g.upid
          where k.type = 'gpu_render_stage' group by 1;
         select p.pid, count(*), sum((select count(*) from flow f join gpu_slice g
                                       on f.slice_in = g.id
                                      where f.slice_out = s.id and g.ts > s.ts
                                        and g.upid = p.upid) = 1)
           from slice s join thread_track tt on s.track_id = tt.id
           join thread using (utid) join process p using (upid)
          where extract_arg(s.arg_set_id,
                            'gpu_correlation.render_stage_submission_event_ids[0]') is not null
          group by 1;
         select p.pid, count(*) from flow f join slice s on f.slice_in = s.id
           join thread_track tt on s.track_id = tt.id join thread using (utid)
           join process p using (upid)
          where s.name = 'cudaStreamSynchronize' group by 1;",
    ) else {
        return;
    };
    let [gpu, submitters, waits]: [Vec<Vec<String>>; 3] = tables.try_into().unwrap();
    let rows = |n: u64| -> Vec<Vec<String>> {
        let mut v: Vec<Vec<String>> = pids
            .iter()
            .map(|p| vec![p.to_string(), n.to_string(), n.to_string()])
            .collect();
        v.sort();
        v
    };
    let sorted = |mut v: Vec<Vec<String>>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(gpu),
        rows(BURST_GPU),
        "(pid, GPU slices, with a duration)"
    );
    assert_eq!(
        sorted(submitters),
        rows(BURST_GPU),
        "(pid, submitting API slices, with one arrow to later GPU work of their process)"
    );
    let mut want_waits: Vec<Vec<String>> = pids
        .iter()
        .map(|p| vec![p.to_string(), THREADS.to_string()])
        .collect();
    want_waits.sort();
    assert_eq!(sorted(waits), want_waits, "(pid, wait arrows)");
}

#[test]
fn a_session_started_first_records_the_whole_run_once() {
    let traced = Traced::start("full");
    let rec = traced.record("full", FULL);
    traced.wait_until("started session", Duration::from_secs(10), |s| {
        s.sessions_started == 1
    });
    let app = App::start(
        "burst",
        &traced,
        &[
            (WAIT_VAR, "gpu,api,markers,counters"),
            ("INJECTION_METRICS", SM),
        ],
    );
    let pid = app.pid();
    let out = app.finish();
    assert!(
        out.contains(&"ENABLED gpu=1 api=1 markers=1 counters=1".to_owned()),
        "{out:?}"
    );
    let path = rec.stop();
    let t = check_valid(&path, false);
    assert_eq!(
        t.data_sources,
        ["gpu.renderstages.nv", "gpu.counters.nv", "track_event"]
    );
    assert_eq!(t.kernels().count() as u64, BURST_GPU - BURST_COPIES);
    assert_eq!(
        t.memory_ops().filter(|c| c.stage == Stage::Memcpy).count() as u64,
        BURST_COPIES
    );
    let api: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name.starts_with("cuda"))
        .collect();
    assert_eq!(api.len() as u64, BURST_API);
    let ids = t.gpu_events_by_id();
    for s in api.iter().filter(|s| s.name != "cudaStreamSynchronize") {
        assert_eq!(s.submissions.len(), 1, "{s:?}");
        assert!(ids.contains_key(&s.submissions[0]), "dangling {s:?}");
    }
    let ranges: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name.starts_with("worker "))
        .collect();
    assert_eq!(ranges.len() as u64, THREADS);
    assert!(ranges.iter().all(|r| r.depth == 0));
    assert!(
        t.slices
            .iter()
            .filter(|s| s.name.starts_with("cuda"))
            .all(|s| s.depth == 1)
    );
    assert_eq!(t.instants.len(), 1);
    let sm: Vec<_> = t
        .counters
        .iter()
        .filter(|c| c.name == SM && c.value > 0.0)
        .collect();
    assert_eq!(sm.len() as u64, BURST_SAMPLES);
    assert!(sm.iter().all(|c| c.value == 42.0));
    // At exit the application wrote its summary into the running session.
    let summary = t.log("gpu-trace summary:").expect("summary");
    assert!(
        summary
            .message
            .contains(&format!("kernels={}", BURST_GPU - BURST_COPIES)),
        "{}",
        summary.message
    );
    check_bursts_in_tp(&path, &[pid]);
    if let Some(tables) = tp_tables(
        &path,
        &format!(
            "select count(*) from counter c join gpu_counter_track k on c.track_id = k.id
              where k.name = '{SM}' and c.value = 42;
             select count(*) from slice s join slice p on s.parent_id = p.id
              where s.name like 'cuda%' and p.name like 'worker %';"
        ),
    ) {
        assert_eq!(tables[0], [[BURST_SAMPLES.to_string()]], "counter values");
        assert_eq!(
            tables[1],
            [[BURST_API.to_string()]],
            "API slices in their range"
        );
    }
}

#[test]
fn only_the_data_sources_a_session_enables_record() {
    let traced = Traced::start("only");
    // Render stages alone: no track events, no counters.
    let rec = traced.record(
        "renderstages",
        r#"
buffers { size_kb: 8192 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.nv" } }
"#,
    );
    let app = App::start("burst", &traced, &[(WAIT_VAR, "gpu")]);
    let out = app.finish();
    assert!(
        out.contains(&"ENABLED gpu=1 api=0 markers=0 counters=0".to_owned()),
        "{out:?}"
    );
    let path = rec.stop();
    let t = check_valid(&path, false);
    assert_eq!(t.data_sources, ["gpu.renderstages.nv"]);
    assert_eq!(t.gpu_events.len() as u64, BURST_GPU);
    assert!(t.slices.is_empty() && t.instants.is_empty());
    // No per-kernel counters; the busy % derived from the GPU work comes
    // with the render stages.
    assert!(!t.counters.is_empty());
    assert!(
        t.counters.iter().all(|c| c.name.ends_with(" busy")),
        "{:?}",
        t.counters
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
    );
    if let Some(tables) = tp_tables(
        &path,
        "select count(*) from gpu_slice g join track k on g.track_id = k.id
          where k.type = 'gpu_render_stage';
         select count(*) from slice where id not in (select id from gpu_slice);
         select count(*) from counter c join track k on c.track_id = k.id
          where k.name not like '% busy';
         select count(*) from flow;",
    ) {
        assert_eq!(
            tables,
            [
                [[BURST_GPU.to_string()]],
                [["0".to_owned()]],
                [["0".to_owned()]],
                [["0".to_owned()]]
            ],
            "(GPU slices, other slices, counter values but busy %, arrows)"
        );
    }

    // The CUDA category without NVTX: API slices, no ranges or marks.
    let rec = traced.record(
        "cuda-only",
        r#"
buffers { size_kb: 8192 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.nv" } }
data_sources {
  config {
    name: "track_event"
    track_event_config { enabled_categories: "cuda" disabled_categories: "*" }
  }
}
"#,
    );
    let app = App::start("burst", &traced, &[(WAIT_VAR, "gpu,api")]);
    let out = app.finish();
    assert!(
        out.contains(&"ENABLED gpu=1 api=1 markers=0 counters=0".to_owned()),
        "{out:?}"
    );
    let path = rec.stop();
    let t = check_valid(&path, false);
    assert_eq!(t.gpu_events.len() as u64, BURST_GPU);
    assert_eq!(t.slices.len() as u64, BURST_API);
    assert!(t.slices.iter().all(|s| s.name.starts_with("cuda")));
    assert!(t.instants.is_empty() && t.counters.iter().all(|c| c.name.ends_with(" busy")));
    if let Some(rows) = tp_tables(
        &path,
        "select count(*) from slice where id not in (select id from gpu_slice)
            and name not like 'cuda%';
         select count(*) from counter c join track k on c.track_id = k.id
          where k.name not like '% busy' and k.name != 'GPU wait';",
    ) {
        assert_eq!(
            rows,
            [[["0"]], [["0"]]],
            "(other slices, counter values but busy % and GPU wait)"
        );
    }
}

#[test]
fn the_suffix_override_names_the_data_sources() {
    let traced = Traced::start("suffix");
    let mut app = App::start(
        "burst",
        &traced,
        &[
            ("INJECTION_DATA_SOURCE_NAME_SUFFIX", "mytool"),
            (WAIT_VAR, "gpu"),
        ],
    );
    let pid = u64::from(app.pid());
    // The application registers under the suffix, and only under it,
    // before any session runs.
    let state = traced.wait_until("data sources of the app", Duration::from_secs(20), |s| {
        s.pids_with("gpu.renderstages.mytool") == [pid]
    });
    assert_eq!(state.pids_with("gpu.counters.mytool"), [pid], "{state:?}");
    assert_eq!(state.pids_with("track_event"), [pid], "{state:?}");
    for n in ["gpu.renderstages.nv", "gpu.counters.nv"] {
        assert!(state.pids_with(n).is_empty(), "{n}: {state:?}");
    }
    // A session for the suffixed render stages and the default counter
    // name, which nobody serves: GPU work, no counters.
    let rec = traced.record(
        "suffix",
        r#"
buffers { size_kb: 8192 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.mytool" } }
data_sources { config { name: "gpu.counters.nv" } }
"#,
    );
    assert_eq!(
        app.wait_line("ENABLED"),
        "ENABLED gpu=1 api=0 markers=0 counters=0"
    );
    app.finish();
    let path = rec.stop();
    let t = check_valid(&path, false);
    assert_eq!(t.gpu_events.len() as u64, BURST_GPU);
    // No per-kernel counters (only the busy % of the render stages).
    assert!(t.counters.iter().all(|c| c.name.ends_with(" busy")));
    assert!(
        t.gpu_events
            .iter()
            .all(|e| e.context.map(|c| c.pid) == Some(pid as i64))
    );
}

#[test]
fn sessions_that_start_late_and_stop_early_give_valid_traces() {
    let traced = Traced::start("late");
    let mut app = App::start("loop", &traced, &[]);
    app.wait_line("READY");
    let pid = u64::from(app.pid());
    traced.wait_until("data sources of the app", Duration::from_secs(20), |s| {
        s.pids_with("gpu.renderstages.nv") == [pid]
    });
    // Two sessions in turn, each starting and stopping while the
    // application works: the second must describe everything anew.
    let mut traces = Vec::new();
    for name in ["late-1", "late-2"] {
        let rec = traced.record(name, FULL);
        app.wait_line("ENABLED");
        for _ in 0..5 {
            app.wait_line("ROUND");
        }
        traces.push(rec.stop());
        app.wait_line("DISABLED");
    }
    app.finish();
    for path in &traces {
        // Ranges open at the stop stay open: the reader counts them as
        // problems, the trace processor shows them as not ended.
        let t = check_valid(path, true);
        let kernels: Vec<_> = t.kernels().collect();
        assert!(
            kernels.len() >= 5,
            "{}: {} kernels",
            path.display(),
            kernels.len()
        );
        assert!(
            kernels.iter().all(|k| k.name == "loopKernel"
                && k.kernel
                    .as_ref()
                    .is_some_and(|i| i.name == "_Z10loopKernelPfi")),
            "{}: kernels without their names",
            path.display()
        );
        assert!(t.slices.iter().any(|s| s.name == "cudaLaunchKernel"));
        assert!(!t.counters.is_empty(), "{}", path.display());
    }
}

#[test]
fn two_traced_processes_land_in_one_file() {
    let traced = Traced::start("two");
    let rec = traced.record("two", FULL);
    traced.wait_until("started session", Duration::from_secs(10), |s| {
        s.sessions_started == 1
    });
    let wait = [(WAIT_VAR, "gpu,api,markers,counters")];
    let a = App::start("burst", &traced, &wait);
    let b = App::start("burst", &traced, &wait);
    let pids = [a.pid(), b.pid()];
    a.finish();
    b.finish();
    let path = rec.stop();
    let t = check_valid(&path, false);
    assert_eq!(t.gpu_events.len() as u64, 2 * BURST_GPU);
    let by_id = t.gpu_events_by_id();
    assert_eq!(
        by_id.len(),
        t.gpu_events.len(),
        "event ids unique across processes"
    );
    let mut pids_seen: Vec<i64> = t
        .gpu_events
        .iter()
        .filter_map(|e| e.context.map(|c| c.pid))
        .collect();
    pids_seen.sort_unstable();
    pids_seen.dedup();
    let mut want: Vec<i64> = pids.iter().map(|&p| i64::from(p)).collect();
    want.sort_unstable();
    assert_eq!(pids_seen, want);
    check_bursts_in_tp(&path, &pids);
    if let Some(rows) = tp_tables(
        &path,
        "select count(distinct p.pid) from gpu_slice g join process p using (upid);",
    ) {
        assert_eq!(rows, [[["2"]]], "processes with GPU slices");
    }
}

#[test]
fn the_emitter_goes_on_writing_while_the_backend_switches() {
    let traced = Traced::start("switch");
    let mut app = App::start("loop", &traced, &[(BACKEND_VAR, "switching")]);
    app.wait_line("READY");
    // A session's start and stop are noticed by the emitter: it must hand
    // the switch to another thread, or wait for itself (5 s, then
    // `emitter_ran=0`); with a real vendor it would hang the process.
    let rec = traced.record("switch", FULL);
    let on = app.wait_line("SWITCHED gpu=1");
    for _ in 0..3 {
        app.wait_line("ROUND");
    }
    let path = rec.stop();
    let off = app.wait_line("SWITCHED gpu=0");
    app.finish();
    for l in [&on, &off] {
        assert!(l.contains(" emitter_ran=1 "), "{l}");
        assert!(!l.ends_with("thread=gpu-trace-emit"), "{l}");
    }
    check_valid(&path, true);
}
