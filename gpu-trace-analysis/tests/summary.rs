//! The summary of small traces whose true numbers are known, through the
//! library's API.
//!
//! The traces are recorded through the real in-process path: a tracer owns
//! process-global Perfetto state, so each scenario runs in a child process
//! (this test binary, re-run with `GPU_TRACE_ANALYSIS_CHILD=<scenario>`),
//! which records a scripted program with exact timestamps into a file. The
//! expectations are worked out by hand from the script.

use gpu_trace_agent::Config;
use gpu_trace_analysis::render::{self, Report};
use gpu_trace_analysis::{Analyzer, KERNEL_ENGINE, Measure, ReadOptions, Summary, summarize};
use gpu_trace_model::model::*;
use gpu_trace_perfetto::{Tracer, TracerOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CHILD: &str = "GPU_TRACE_ANALYSIS_CHILD";

// ---------------------------------------------------------------- child side

/// The traced "application", run only as a child process.
#[test]
#[ignore = "the traced application of the other tests; runs only in their child processes"]
fn child() {
    let scenario = std::env::var(CHILD).expect("run by a test, which sets the scenario");
    let (config, problems) = Config::from_env();
    assert!(problems.is_empty(), "{problems:?}");
    let settings = config.trace_settings().expect("the settings");
    let tracer =
        Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings)).expect("tracer");
    println!("\nPID={}", std::process::id());
    let app = App::new(&tracer);
    match scenario.as_str() {
        "profiled" => profiled(&app),
        "slow" => step_rank(&app, 2_000),
        "fast" => step_rank(&app, 1_000),
        "launch" => launch(&app),
        "templates" => templates(&app),
        "before" => before_after(&app, false),
        "after" => before_after(&app, true),
        other => panic!("unknown scenario {other}"),
    }
    tracer.shutdown(Duration::from_secs(20));
    println!("DONE");
}

/// Records events by hand, at `t0` + the times of the script (ns).
struct App<'a> {
    tracer: &'a Tracer,
    t0: u64,
    tid: u32,
}

impl App<'_> {
    fn new(tracer: &Tracer) -> App<'_> {
        let mut gpu = Device::new(0, "NVIDIA H200");
        gpu.vendor = Some("NVIDIA".into());
        // The same GPU in every process's trace.
        gpu.uuid = Some([7; 16]);
        gpu.arch_id = "sm_90".into();
        tracer.add_device(gpu);
        App {
            tracer,
            t0: gpu_trace_model::clock::boottime_ns() + 1_000_000,
            tid: gpu_trace_model::clock::thread_id(),
        }
    }

    fn class(&self, mangled: &str) -> KernelId {
        let names = self.tracer.names();
        let n = self.tracer.kernels().names(names, mangled);
        let desc = KernelDesc::new(n.mangled, n.demangled, n.display, names.intern("sm_90"));
        self.tracer.kernels().register(desc)
    }

    fn kernel(&self, corr: u64, stream: u64, span: (u64, u64), k: KernelId) {
        let mut e = KernelExec::new(0, corr, self.t0 + span.0, self.t0 + span.1, k);
        e.context = 1;
        e.stream = stream;
        self.tracer.recorder().kernel(e);
    }

    fn copy(&self, corr: u64, span: (u64, u64), bytes: u64) {
        let kind = MemoryOpKind::Copy {
            kind: CopyKind::HtoD,
            src: MemoryKind::Pinned,
            dst: MemoryKind::Device,
            peer: None,
        };
        let mut op = MemoryOp::new(0, corr, self.t0 + span.0, self.t0 + span.1, bytes, kind);
        op.context = 1;
        op.stream = 7;
        self.tracer.recorder().memory(op);
    }

    fn api(&self, name: &str, span: (u64, u64), corr: u64, submits: bool) {
        let n = self.tracer.names().intern(name);
        let mut call = ApiCall::new(n, self.tid, self.t0 + span.0, self.t0 + span.1, corr);
        call.submits = submits;
        self.tracer.recorder().api(call);
    }

    fn range(&self, text: &str, span: (u64, u64)) {
        let rec = self.tracer.recorder();
        rec.marker(self.tid, self.t0 + span.0, text, |text| Marker::Push {
            domain: None,
            text,
        });
        rec.marker(self.tid, self.t0 + span.1, "", |_| Marker::Pop {
            domain: None,
        });
    }
}

/// Two kernels overlapping on two streams, a third after a gap, a copy,
/// their launches and a synchronisation, one range, and a per-kernel
/// counter on two of the kernels.
fn profiled(app: &App<'_>) {
    let gemm = app.class("_Z4gemmv");
    let relu = app.class("_Z4reluv");
    app.kernel(1, 7, (0, 1_000), gemm);
    app.kernel(2, 8, (500, 2_500), gemm);
    app.kernel(3, 7, (4_000, 4_100), relu);
    app.copy(4, (3_000, 3_500), 4096);
    app.api("cudaLaunchKernel", (0, 100), 1, true);
    app.api("cudaLaunchKernel", (100, 200), 2, true);
    app.api("cudaLaunchKernel", (200, 300), 3, true);
    app.api("cudaMemcpyAsync", (300, 400), 4, true);
    app.api("cudaDeviceSynchronize", (400, 4_200), 100, false);
    app.range("forward", (0, 4_200));
    let sm = app.tracer.register_counter(CounterSpec::new(
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        Unit::Percent,
        CounterGroup::Compute,
    ));
    for (corr, span, v) in [(2, (500, 2_500), 80.0), (3, (4_000, 4_100), 20.0)] {
        app.tracer.recorder().kernel_counters(KernelCounters::new(
            0,
            corr,
            app.t0 + span.0,
            app.t0 + span.1,
            vec![(sm, v)].into(),
        ));
    }
}

/// Two training steps of one rank, each a kernel of `kernel_ns`.
fn step_rank(app: &App<'_>, kernel_ns: u64) {
    let k = app.class("_Z4stepv");
    for (i, at) in [(1, 0u64), (2, 10_000)] {
        app.kernel(i, 7, (at + 100, at + 100 + kernel_ns), k);
        app.api("cudaLaunchKernel", (at, at + 50), i, true);
        app.range(&format!("step {i}"), (at, at + 9_000));
    }
}

/// Kernels whose idle stretches, launch delays and short kernels are
/// known exactly (see `idle_launch_and_temporal_breakdowns_are_exact`).
fn launch(app: &App<'_>) {
    let big = app.class("_Z3bigv");
    let tiny = app.class("_Z4tinyv");
    let nccl = app.class("_Z23ncclDevKernel_AllReducev");
    app.api("cudaMalloc", (0, 500), 100, false);
    app.kernel(1, 7, (1_000, 2_000), big);
    app.api("cudaLaunchKernel", (600, 700), 1, true);
    app.kernel(6, 8, (1_200, 1_800), nccl);
    app.api("cudaLaunchKernel", (700, 800), 6, true);
    app.kernel(2, 7, (5_200, 5_210), tiny);
    app.api("cudaLaunchKernel", (5_000, 5_100), 2, true);
    app.kernel(3, 7, (5_230, 6_230), big);
    app.api("cudaLaunchKernel", (5_100, 5_200), 3, true);
    app.kernel(4, 7, (8_230, 9_230), big);
    app.api("cudaLaunchKernel", (5_300, 5_400), 4, true);
    app.api("cudaDeviceSynchronize", (5_400, 9_300), 101, false);
}

/// A run before and after a change: gemm slower (1000 → 1500 ns, twice),
/// relu the same, `old` gone and `fresh` new.
fn before_after(app: &App<'_>, after: bool) {
    let gemm = app.class("_Z4gemmv");
    let relu = app.class("_Z4reluv");
    let (gemm_ns, last) = if after {
        (1_500, app.class("_Z5freshv"))
    } else {
        (1_000, app.class("_Z3oldv"))
    };
    app.kernel(1, 7, (0, gemm_ns), gemm);
    app.kernel(2, 7, (2_000, 2_000 + gemm_ns), gemm);
    app.kernel(3, 7, (4_000, 4_100), relu);
    app.kernel(4, 7, (5_000, 5_000 + if after { 70 } else { 50 }), last);
    for (corr, at) in [(1, 0), (2, 1_900), (3, 3_900), (4, 4_900)] {
        app.api("cudaLaunchKernel", (at, at + 50), corr, true);
    }
    app.range("step", (0, 6_000));
}

/// The functors and element types of [`templates`]' kernels.
const FUNCTORS: [&str; 8] = [
    "FillFunctor",
    "AddFunctor",
    "MulFunctor",
    "AbsFunctor",
    "NegFunctor",
    "SqrtFunctor",
    "ExpFunctor",
    "CopyFunctor",
];
const TYPES: [(&str, &str); 8] = [
    ("f", "float"),
    ("d", "double"),
    ("i", "int"),
    ("l", "long"),
    ("a", "signed char"),
    ("h", "unsigned char"),
    ("s", "short"),
    ("b", "bool"),
];

/// `at::native::vectorized_elementwise_kernel<4, at::native::F<T>,
/// at::detail::Array<char*, 1>>`, mangled as the compiler does.
fn elementwise(functor: &str, ty: &str) -> String {
    format!(
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_{}{functor}I{ty}EENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
        functor.len()
    )
}

/// 64 instances of one PyTorch-style template kernel, one launch each.
fn templates(app: &App<'_>) {
    let mut corr = 1;
    for f in FUNCTORS {
        for (t, _) in TYPES {
            let k = app.class(&elementwise(f, t));
            let at = corr * 1_000;
            app.kernel(corr, 7, (at, at + 100), k);
            corr += 1;
        }
    }
}

// --------------------------------------------------------------- parent side

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-analysis-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Records `scenario` into `dir` as `name`.pftrace; the trace's path and
/// the process's pid.
fn record_as(scenario: &str, dir: &Path, name: &str) -> (PathBuf, i64) {
    let path = dir.join(format!("{name}.pftrace"));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, scenario);
    for v in gpu_trace_agent::config::vars::ALL {
        cmd.env_remove(v);
    }
    cmd.env(gpu_trace_agent::config::vars::TRACE, "all")
        .env(gpu_trace_agent::config::vars::OUTPUT, &path);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("DONE"),
        "{scenario}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = stdout
        .lines()
        .find_map(|l| l.strip_prefix("PID="))
        .expect("PID line")
        .parse()
        .unwrap();
    (path, pid)
}

/// Records `scenario` into `dir`, named after it.
fn record(scenario: &str, dir: &Path) -> (PathBuf, i64) {
    record_as(scenario, dir, scenario)
}

/// (name, count, total, median) of each row.
fn rows(r: &[gpu_trace_analysis::Row]) -> Vec<(&str, u64, u64, f64)> {
    r.iter()
        .map(|r| (r.name.as_str(), r.count, r.total, r.median))
        .collect()
}

#[test]
fn the_summary_of_a_profiled_program() {
    let dir = scratch("profiled");
    let (path, pid) = record("profiled", &dir);
    let mut a = Analyzer::new();
    let f = a.read(&path, &ReadOptions::default()).expect("reads");
    assert!(f.complete(), "{:?}", f.losses);
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    assert_eq!(f.pids, [pid]);
    assert_eq!(
        (f.counts.kernels, f.counts.copies, f.counts.memsets),
        (3, 1, 0)
    );
    assert_eq!((f.counts.api_calls, f.counts.ranges), (5, 1));
    assert_eq!(f.span.map(|s| s.dur()), Some(4_200));
    let s = a.finish();
    assert_eq!(s.processes.len(), 1);
    assert!(s.ranks.is_none(), "one process is no job");
    let t = &s.all;
    assert_eq!(t, &s.processes[0].tables, "one process: its tables are all");
    assert_eq!(
        rows(&t.kernels),
        [("gemm()", 2, 3_000, 1_500.0), ("relu()", 1, 100, 100.0)]
    );
    assert_eq!(rows(&t.memory), [("Memcpy HtoD", 1, 500, 500.0)]);
    assert_eq!(t.memory[0].bytes, Some(4096));
    assert_eq!(rows(&t.ranges), [("forward", 1, 4_200, 4_200.0)]);
    assert_eq!(t.api_count(), 5);
    // Busy: [0, 2500) ∪ [4000, 4100) for kernels, of a 4.2 µs span.
    let kernels = t
        .devices
        .iter()
        .find(|e| e.engine == KERNEL_ENGINE)
        .unwrap();
    assert_eq!((kernels.ops, kernels.busy), (3, 2_600));
    assert_eq!(kernels.device, "NVIDIA H200");
    // Copies run apart from the kernels: the GPU was busy 3.1 µs.
    assert_eq!(t.gpu_busy, 3_100);
    // The synchronisation waited 3.8 µs of the thread's 4.2 µs.
    let th = &t.threads[0];
    assert_eq!((th.waiting_calls, th.waiting, th.span), (1, 3_800, 4_200));
    // Each counter value found its kernel, in the one pass.
    let by_kernel: Vec<(&str, f64)> = t
        .counters_by_kernel
        .iter()
        .map(|c| (c.kernel.as_deref().unwrap(), c.mean))
        .collect();
    assert_eq!(by_kernel, [("gemm()", 80.0), ("relu()", 20.0)]);
    assert_eq!((t.counters[0].kernels, t.counters[0].mean), (2, 50.0));

    // In memory, the same summary.
    let bytes = std::fs::read(&path).unwrap();
    let mut b = Analyzer::new();
    b.read_bytes(&path.display().to_string(), &bytes)
        .expect("reads");
    assert_eq!(b.finish(), s);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_json_is_the_summary_trimmed_to_the_options() {
    let dir = scratch("json");
    let (path, pid) = record("profiled", &dir);
    let s = summarize(&[&path], &ReadOptions::default()).expect("reads");
    let whole = serde_json::to_value(&s).unwrap();
    assert_eq!(render::to_json(&s, &render::Options::default()), whole);
    assert_eq!(whole["files"][0]["counts"]["kernels"], 3);
    assert_eq!(whole["files"][0]["complete"], true);
    assert_eq!(whole["processes"][0]["pid"], pid);
    assert_eq!(whole["kernels"][0]["total_ns"], 3_000);
    assert_eq!(whole["devices"][0]["busy_ns"], 2_600);
    assert!(whole.get("ranks").is_none(), "no ranks for one process");
    let o = render::Options {
        reports: vec![Report::Kernels, Report::Counters],
        top: Some(1),
        ..render::Options::default()
    };
    let v = render::to_json(&s, &o);
    for scope in [&v, &v["processes"][0]] {
        assert_eq!(scope["kernels"].as_array().unwrap().len(), 1, "{scope}");
        assert_eq!(scope["counters_by_kernel"][0]["kernel"], "gemm()");
        assert_eq!(scope["counters_by_kernel"].as_array().unwrap().len(), 1);
        for gone in ["memops", "api", "devices", "streams", "threads"] {
            assert!(scope.get(gone).is_none(), "{gone} in {scope}");
        }
        assert!(scope.get("span").is_some());
    }
    assert!(v.get("telemetry").is_none());
    // The same tables as text and CSV.
    let text = render::to_text(&s, &o);
    assert!(
        text.contains("GPU kernels") && text.contains("gemm()"),
        "{text}"
    );
    assert!(!text.contains("relu()\n"), "--top 1: {text}");
    let csv = render::to_csv(&s, &o);
    assert!(csv.starts_with("report,scope,file,pid,name,count"), "{csv}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ranks_of_a_job_name_the_slow_one() {
    let dir = scratch("ranks");
    let (fast, _) = record("fast", &dir);
    let (slow, slow_pid) = record("slow", &dir);
    let (fast2, _) = record_as("fast", &dir, "fast-again");
    let s: Summary = summarize(&[&fast, &slow, &fast2], &ReadOptions::default()).expect("reads");
    assert_eq!(s.processes.len(), 3);
    // One GPU (by UUID) over the three traces.
    let kernels = s
        .all
        .devices
        .iter()
        .filter(|e| e.engine == KERNEL_ENGINE)
        .count();
    assert_eq!(kernels, 1, "{:?}", s.all.devices);
    assert_eq!(s.all.kernel_count(), 6);
    let r = s.ranks.as_ref().expect("several processes");
    assert_eq!(r.measure, Measure::GpuPerStep, "every rank has steps");
    let st = r.straggler.as_ref().expect("a straggler");
    assert_eq!(r.rows[st.row].pid, slow_pid);
    assert_eq!((st.value, st.others), (2_000.0, 1_000.0));
    assert!(
        r.verdict().starts_with("slowest rank: rank #1"),
        "{}",
        r.verdict()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_that_is_no_trace_is_an_error_and_nothing_is_kept() {
    let dir = scratch("bad");
    let bad = dir.join("bad.pftrace");
    std::fs::write(&bad, b"\xff\xff\xff\xff not a trace").unwrap();
    let mut a = Analyzer::new();
    assert!(a.read(&bad, &ReadOptions::default()).is_err());
    assert!(
        a.read(dir.join("missing.pftrace"), &ReadOptions::default())
            .is_err()
    );
    assert_eq!(a.files().count(), 0);
    assert_eq!(a.finish(), Summary::default());
    assert!(summarize(&[&bad], &ReadOptions::default()).is_err());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn idle_launch_and_temporal_breakdowns_are_exact() {
    let dir = scratch("launch");
    let (path, pid) = record("launch", &dir);
    let s = summarize(&[&path], &ReadOptions::default()).expect("reads");
    let t = &s.all;
    // Idle: [0, 1000) and [2000, 5200) before work whose call began after
    // the GPU went idle (host), [5210, 5230) 20 ns between kernels already
    // submitted (kernel), [6230, 8230) with the next kernel submitted at
    // 5300 (other), and [9230, 9300) after the last work (host).
    assert_eq!(t.idle.len(), 1);
    let i = &t.idle[0];
    assert_eq!((i.pid, i.gpu), (pid, 0));
    assert_eq!((i.recorded_ns, i.busy_ns, i.idle_ns), (9_300, 3_010, 6_290));
    assert_eq!(
        (i.host_wait_ns, i.kernel_wait_ns, i.other_wait_ns),
        (1_000 + 3_200 + 70, 20, 2_000)
    );
    // Temporal: compute 3010, the all-reduce's 600 inside the first kernel.
    let tb = &t.temporal[0];
    assert_eq!(
        (tb.compute_ns, tb.communication_ns, tb.memory_ns, tb.idle_ns),
        (3_010, 600, 0, 6_290)
    );
    assert_eq!(tb.overlap_pct, 100.0);
    // Launches: big's delays 300, 30 and 2830 ns after calls of 100 ns.
    let l: Vec<(&str, u64, f64, u64, f64, u64, u64)> = t
        .launches
        .iter()
        .map(|l| {
            (
                l.short_name.as_str(),
                l.launches,
                l.api_median_ns,
                l.api_p99_ns,
                l.delay_median_ns,
                l.delay_p99_ns,
                l.short_kernels,
            )
        })
        .collect();
    assert_eq!(
        l,
        [
            ("big", 3, 100.0, 100, 300.0, 2_830, 0),
            ("ncclDevKernel_AllReduce", 1, 100.0, 100, 400.0, 400, 0),
            ("tiny", 1, 100.0, 100, 100.0, 100, 1),
        ]
    );
    // The worst outlier, with its call.
    let o = &t.launch_outliers[0];
    assert_eq!(
        (
            o.short_name.as_str(),
            o.delay_ns,
            o.kernel_ns,
            o.api.as_str(),
            o.api_ns
        ),
        ("big", 2_830, 1_000, "cudaLaunchKernel", 100)
    );
    assert_eq!(o.start_ns - o.api_start_ns, 8_230 - 5_300);
    let delays: Vec<u64> = t.launch_outliers.iter().map(|o| o.delay_ns).collect();
    assert_eq!(delays, [2_830, 400, 300, 100, 30]);
    // One kernel of five ran shorter than its launch; 4270 of 9300 ns
    // waiting on the host.
    assert_eq!(
        s.verdict.text,
        "host-bound: 45.9% of GPU time idle waiting on the host; 20.0% of kernels shorter than their launch. \
         Idle 67.6% of GPU time (9.300 µs recorded): 45.9% waiting on the host, 0.2% between back-to-back kernels, 21.5% on submitted work."
    );
    assert_eq!(s.verdict.findings[0].kind, "host-bound");
    // Every form of the report carries them.
    let o = render::Options::default();
    let text = render::to_text(&s, &o);
    assert!(text.starts_with("Verdict: host-bound: 45.9%"), "{text}");
    assert!(text.contains("GPU idle time by cause"), "{text}");
    let csv = render::to_csv(&s, &o);
    assert!(
        csv.contains("\nreport,scope,file,pid,rank,gpu,device,recorded_ns,busy_ns,idle_ns"),
        "{csv}"
    );
    let json = render::to_json(&s, &o);
    assert_eq!(json["idle"][0]["host_wait_ns"], 4_270);
    assert_eq!(json["launches"][0]["delay_p99_ns"], 2_830);
    assert_eq!(json["verdict"]["findings"][0]["kind"], "host-bound");
}

#[test]
fn sixty_four_template_kernels_get_distinct_short_names() {
    let dir = scratch("templates");
    let (path, _) = record("templates", &dir);
    let s = summarize(&[&path], &ReadOptions::default()).expect("reads");
    let k = &s.all.kernels;
    assert_eq!(k.len(), 64);
    let mut short: Vec<&str> = k.iter().map(|r| r.short_name.as_deref().unwrap()).collect();
    short.sort_unstable();
    short.dedup();
    assert_eq!(short.len(), 64, "{short:?}");
    let fill = k
        .iter()
        .find(|r| r.mangled.as_deref() == Some(elementwise("FillFunctor", "f").as_str()))
        .expect("FillFunctor<float>");
    assert_eq!(
        fill.name,
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
    );
    assert_eq!(
        fill.short_name.as_deref(),
        Some("vectorized_elementwise_kernel<…, FillFunctor<float>, …>")
    );
    // Still distinct when cut to the default column of 60 characters.
    let mut cut: Vec<String> = short
        .iter()
        .map(|n| gpu_trace_analysis::render::text::clip(n, 60).into_owned())
        .collect();
    cut.dedup();
    assert_eq!(cut.len(), 64, "{cut:?}");
    // The text table shows them; --names full the whole names, cut.
    let mut o = render::Options {
        reports: vec![Report::Kernels],
        ..render::Options::default()
    };
    let text = render::to_text(&s, &o);
    assert!(
        text.contains("vectorized_elementwise_kernel<…, SqrtFunctor<float>, …>"),
        "{text}"
    );
    o.names = gpu_trace_analysis::NameStyle::Full;
    let text = render::to_text(&s, &o);
    assert_eq!(
        text.matches("void at::native::vectorized_elementwise_kernel<4, at::nativ…")
            .count(),
        64
    );
    // CSV and JSON carry the full, base and mangled names besides.
    let csv = render::to_csv(&s, &o);
    assert!(csv.contains(",\"vectorized_elementwise_kernel<…, FillFunctor<float>, …>\",vectorized_elementwise_kernel,_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"), "{csv}");
    let json = render::to_json(&s, &o);
    assert!(
        json["kernels"][0]["mangled"]
            .as_str()
            .unwrap()
            .starts_with("_ZN2at6native")
    );
}

#[test]
fn a_diff_finds_the_slower_the_new_and_the_gone_kernel() {
    let dir = scratch("diff");
    let (a, _) = record("before", &dir);
    let (b, _) = record("after", &dir);
    let sa = summarize(&[&a], &ReadOptions::default()).expect("reads");
    let sb = summarize(&[&b], &ReadOptions::default()).expect("reads");
    let d = gpu_trace_analysis::diff::diff(&sa, &sb);
    use gpu_trace_analysis::diff::Change;
    let k: Vec<(&str, Change, u64, u64, i64, f64)> = d
        .kernels
        .iter()
        .map(|r| {
            (
                r.short_name.as_str(),
                r.change,
                r.count_a,
                r.count_b,
                r.total_delta_ns,
                r.mean_delta_ns,
            )
        })
        .collect();
    // By the size of the change: gemm +1000, fresh +70, old -50, relu 0.
    assert_eq!(
        k,
        [
            ("gemm", Change::Both, 2, 2, 1_000, 500.0),
            ("fresh", Change::New, 0, 1, 70, 70.0),
            ("old", Change::Gone, 1, 0, -50, -50.0),
            ("relu", Change::Both, 1, 1, 0, 0.0),
        ]
    );
    assert_eq!(d.kernels[0].total_delta_pct, Some(50.0));
    assert_eq!(d.kernels[1].total_delta_pct, None);
    // The API calls and the range are there on both sides.
    assert_eq!(d.api[0].name, "cudaLaunchKernel");
    assert_eq!((d.api[0].count_a, d.api[0].count_b), (4, 4));
    assert_eq!(d.nvtx[0].name, "step");
    // Each side's idle time: A busy 2000 + 100 + 50 of 6000 ns (the range
    // spans the recorded time), B 3000 + 100 + 70.
    assert_eq!((d.a.recorded_ns, d.a.busy_ns), (6_000, 2_150));
    assert_eq!((d.b.recorded_ns, d.b.busy_ns), (6_000, 3_170));
    assert_eq!(
        d.a.idle_ns,
        d.a.host_wait_ns + d.a.kernel_wait_ns + d.a.other_wait_ns
    );
    // Text, CSV and JSON.
    let o = render::Options::default();
    let text = render::diff_to_text(&d, &o);
    assert!(text.contains("new"), "{text}");
    let csv = render::diff_to_csv(&d, &o);
    assert!(
        csv.contains("kernels,gemm(),gemm,,2,2,2000,3000,1000,1500,0,1000,500,50"),
        "{csv}"
    );
    let json = render::diff_to_json(&d, &o);
    assert_eq!(json["kernels"][2]["change"], "gone");
}
