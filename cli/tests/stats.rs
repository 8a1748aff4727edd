//! `gpu-trace stats` on traces whose true numbers are known.
//!
//! The traces are recorded through the real in-process path: a child
//! process (this test binary, re-run with `GPU_TRACE_STATS_CHILD=<scenario>`)
//! starts a `gpu_trace_perfetto::Tracer` writing into a file and records a
//! scripted program with exact timestamps; the expectations below are
//! worked out by hand from that script. A system-mode test records two such
//! programs into one file through a private `traced`.

use gpu_trace_agent::Config;
use gpu_trace_model::model::*;
use gpu_trace_perfetto::{Tracer, TracerOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const CHILD: &str = "GPU_TRACE_STATS_CHILD";

// ---------------------------------------------------------------- child side

/// The traced "application", run only as a child process.
#[test]
#[ignore = "the traced application of the other tests; runs only in their child processes"]
fn child() {
    let scenario = std::env::var(CHILD).expect("run by a test, which sets GPU_TRACE_STATS_CHILD");
    let (config, problems) = Config::from_env();
    assert!(problems.is_empty(), "{problems:?}");
    let system = config.mode == gpu_trace_agent::config::Mode::System;
    let settings = config.trace_settings().expect("the settings");
    let tracer =
        Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings)).expect("tracer");
    // The test harness has printed "test child ... " without a newline.
    println!("\nPID={}", std::process::id());
    if system {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = tracer.sources();
            if s.gpu && s.api && s.markers {
                break;
            }
            assert!(Instant::now() < deadline, "sources not enabled: {s:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    match scenario.as_str() {
        "known" => known(&tracer),
        "second" => second(&tracer),
        "telemetry" => telemetry(&tracer, false),
        "telemetry-windowed" => telemetry(&tracer, true),
        "windowed-busy" => windowed_busy(&tracer),
        "python" => python(&tracer),
        other => panic!("unknown scenario {other}"),
    }
    tracer.shutdown(Duration::from_secs(20));
    if let Some(p) = tracer.output_path() {
        println!("OUTPUT={}", p.display());
    }
    println!("DONE");
}

/// Records events by hand, at `t0` + the times of the script.
struct App<'a> {
    tracer: &'a Tracer,
    t0: u64,
}

impl App<'_> {
    fn new(tracer: &Tracer) -> App<'_> {
        for id in 0..2 {
            let mut gpu = Device::new(id, "NVIDIA H200");
            gpu.vendor = Some("NVIDIA".into());
            gpu.uuid = Some([id as u8 + 1; 16]);
            gpu.arch_id = "sm_90".into();
            tracer.add_device(gpu);
        }
        App {
            tracer,
            t0: gpu_trace_model::clock::boottime_ns() + 1_000_000,
        }
    }

    fn kernel_class(&self, mangled: &str) -> KernelId {
        let names = self.tracer.names();
        let n = self.tracer.kernels().names(names, mangled);
        let desc = KernelDesc::new(n.mangled, n.demangled, n.display, names.intern("sm_90"));
        self.tracer.kernels().register(desc)
    }

    fn kernel(&self, corr: u64, device: u32, stream: u64, span: (u64, u64), k: KernelId) {
        let mut e = KernelExec::new(device, corr, self.t0 + span.0, self.t0 + span.1, k);
        e.context = device + 1;
        e.stream = stream;
        self.tracer.recorder().kernel(e);
    }

    fn mem(&self, corr: u64, stream: u64, span: (u64, u64), bytes: u64, kind: MemoryOpKind) {
        let mut op = MemoryOp::new(0, corr, self.t0 + span.0, self.t0 + span.1, bytes, kind);
        op.context = 1;
        op.stream = stream;
        self.tracer.recorder().memory(op);
    }

    fn copy(&self, corr: u64, stream: u64, span: (u64, u64), bytes: u64, kind: CopyKind) {
        let peer = (kind == CopyKind::PtoP).then_some((0, 1));
        let k = MemoryOpKind::Copy {
            kind,
            src: MemoryKind::Device,
            dst: MemoryKind::Device,
            peer,
        };
        self.mem(corr, stream, span, bytes, k);
    }

    /// An API call on the calling thread.
    fn api(&self, name: &str, span: (u64, u64), corr: u64, submits: bool, waits: &[u64]) {
        let tid = gpu_trace_model::clock::thread_id();
        let n = self.tracer.names().intern(name);
        let mut call = ApiCall::new(n, tid, self.t0 + span.0, self.t0 + span.1, corr);
        call.submits = submits;
        call.waits = waits.iter().copied().collect();
        self.tracer.recorder().api(call);
    }

    fn range(&self, text: &str, span: (u64, u64)) {
        let tid = gpu_trace_model::clock::thread_id();
        let rec = self.tracer.recorder();
        rec.marker(tid, self.t0 + span.0, text, |text| Marker::Push {
            domain: None,
            text,
        });
        rec.marker(tid, self.t0 + span.1, "", |_| Marker::Pop { domain: None });
    }
}

/// The script of [`Known`]; all times are ns after the start.
fn known(tracer: &Tracer) {
    let app = App::new(tracer);
    let busy = app.kernel_class("_Z4busyii");
    let tiny = app.kernel_class("_Z4tinyv");
    let other = app.kernel_class("_Z5otherv");
    // GPU 0, streams 7 and 8: busy() twice overlapping across the streams
    // ([0,1000) with [500,2000), [3000,3400) with [3000,3600)), tiny()
    // three times; GPU 1, stream 9: other().
    app.kernel(1, 0, 7, (0, 1000), busy);
    app.kernel(2, 0, 8, (500, 2000), busy);
    app.kernel(4, 0, 7, (3000, 3400), busy);
    app.kernel(5, 0, 8, (3000, 3600), busy);
    app.kernel(6, 0, 7, (5000, 5100), tiny);
    app.kernel(7, 0, 7, (6000, 6300), tiny);
    app.kernel(8, 0, 7, (7000, 7200), tiny);
    app.kernel(3, 1, 9, (1000, 9000), other);
    app.copy(9, 7, (2000, 2500), 4096, CopyKind::HtoD);
    app.copy(10, 8, (8000, 8500), 4096, CopyKind::HtoD);
    app.copy(11, 8, (2200, 2400), 1024, CopyKind::DtoH);
    app.copy(12, 7, (4000, 4800), 8192, CopyKind::PtoP);
    // Overlaps the last tiny() on stream 7.
    app.mem(
        13,
        7,
        (7100, 7300),
        100,
        MemoryOpKind::Set {
            value: 0,
            memory: MemoryKind::Device,
        },
    );
    let sm = tracer.register_counter(CounterSpec::new(
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        Unit::Percent,
        CounterGroup::Compute,
    ));
    for (corr, span, v) in [
        (1, (0, 1000), 50.0),
        (2, (500, 2000), 70.0),
        (6, (5000, 5100), 10.0),
    ] {
        tracer.recorder().kernel_counters(KernelCounters::new(
            0,
            corr,
            app.t0 + span.0,
            app.t0 + span.1,
            vec![(sm, v)].into(),
        ));
    }
    // This thread: launches, then calls that wait (one nested in another).
    println!("TID_A={}", gpu_trace_model::clock::thread_id());
    app.api("cudaLaunchKernel", (0, 100), 1, true, &[]);
    app.api("cudaLaunchKernel", (100, 200), 2, true, &[]);
    app.api("cudaStreamSynchronize", (2000, 3000), 100, false, &[]);
    app.api("cuStreamSynchronize", (2100, 2900), 101, false, &[]);
    app.api("cudaMemcpy", (8000, 8600), 102, false, &[]);
    app.api("cudaDeviceSynchronize", (9000, 10_000), 103, false, &[]);
    app.range("step 1", (0, 5000));
    app.range("step 2", (5000, 10_000));
    // A process-wide range, on a track of its own.
    let rec = tracer.recorder();
    let tid = gpu_trace_model::clock::thread_id();
    rec.marker(tid, app.t0, "epoch", |text| Marker::Start {
        id: 1,
        domain: None,
        text,
    });
    rec.marker(tid, app.t0 + 10_000, "", |_| Marker::End { id: 1 });
    // Another thread: a launch, a wait by name, an asynchronous copy call,
    // and a call that waits by its wait arrow only.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("worker".into())
            .spawn_scoped(scope, || {
                println!("TID_B={}", gpu_trace_model::clock::thread_id());
                app.api("cudaLaunchKernel", (1000, 1100), 3, true, &[]);
                app.api("cudaEventSynchronize", (4000, 5000), 104, false, &[]);
                app.api("cudaMemcpyAsync", (5000, 5100), 105, false, &[]);
                app.api("cudaStreamQuery", (6000, 6500), 106, false, &[7]);
            })
            .unwrap();
    });
}

/// Launches with Python call stacks: `train.py` runs `step` (line 5),
/// which calls `Model.forward` (line 12, one 1000 ns and one 3000 ns kernel,
/// two launches of one line) and `loss` (line 20, a 500 ns kernel); one
/// 500 ns kernel is launched without a stack.
fn python(tracer: &Tracer) {
    use gpu_trace_model::callstack::SourceFrame;
    let app = App::new(tracer);
    let k = app.kernel_class("_Z4gemmv");
    let names = tracer.names();
    let cs = tracer.callstacks();
    let frame = |f: &str, line| {
        cs.frame(SourceFrame {
            function: names.intern(f),
            file: names.intern("train.py"),
            line,
        })
    };
    let (module, step) = (frame("<module>", 30), frame("step", 5));
    let forward = cs.stack(&[module, step, frame("Model.forward", 12)]);
    let loss = cs.stack(&[module, frame("step", 6), frame("loss", 20)]);
    let tid = gpu_trace_model::clock::thread_id();
    let launch = |corr: u64, at: u64, stack| {
        let n = names.intern("cuLaunchKernel");
        let mut call = ApiCall::new(n, tid, app.t0 + at, app.t0 + at + 50, corr);
        call.submits = true;
        call.callstack = stack;
        tracer.recorder().api(call);
    };
    launch(1, 0, Some(forward));
    launch(2, 100, Some(forward));
    launch(3, 200, Some(loss));
    launch(4, 300, None);
    app.kernel(1, 0, 7, (1000, 2000), k);
    app.kernel(2, 0, 7, (2000, 5000), k);
    app.kernel(3, 0, 7, (5000, 5500), k);
    app.kernel(4, 0, 7, (5500, 6000), k);
}

/// A second process: busy() twice more on the same GPU 0 (same UUID), and
/// events it lost.
fn second(tracer: &Tracer) {
    let app = App::new(tracer);
    let busy = app.kernel_class("_Z4busyii");
    app.kernel(1, 0, 7, (0, 2000), busy);
    app.kernel(2, 0, 7, (3000, 7000), busy);
    app.api("cudaLaunchKernel", (0, 100), 1, true, &[]);
    app.api("cudaLaunchKernel", (3000, 3100), 2, true, &[]);
    tracer.recorder().dropped(DropKind::ThreadBuffer, 5);
    tracer.recorder().dropped(DropKind::VendorRecords, 2);
}

/// Telemetry samples at known times (ns after the start) on two GPUs, with
/// a kernel that runs to 10 µs (the trace goes on after the samples);
/// `windowed`: one recording window, [500, 3500).
fn telemetry(tracer: &Tracer, windowed: bool) {
    use gpu_trace_model::telemetry::Metric;
    let app = App::new(tracer);
    let k = app.kernel_class("_Z4busyii");
    app.kernel(1, 0, 7, (0, 10_000), k);
    let id = |m: Metric| tracer.register_counter(m.spec());
    let (sm, power, reasons, temp) = (
        id(Metric::SmClock),
        id(Metric::Power),
        id(Metric::ClockEventReasons),
        id(Metric::Temperature),
    );
    // A metric of a newer tool: shown by its name.
    let mut fan = CounterSpec::new("fan.speed", Unit::Percent, CounterGroup::System);
    fan.description = "Fan speed.".into();
    let fan = tracer.register_counter(fan);
    let (idle, cap, hw) = (1.0, 4.0, 8.0);
    let sample = |gpu: u32, at: u64, values: &[(CounterId, f64)]| {
        let s = CounterSample::new(gpu, app.t0 + at, values.to_vec().into());
        tracer.recorder().counters(s);
    };
    sample(
        0,
        0,
        &[(sm, 1000.0), (power, 100.0), (reasons, idle), (fan, 40.0)],
    );
    sample(0, 1000, &[(sm, 2000.0), (power, 300.0), (reasons, cap)]);
    sample(
        0,
        3000,
        &[(sm, 1200.0), (power, 200.0), (reasons, cap + hw)],
    );
    sample(
        0,
        4000,
        &[(sm, 1600.0), (power, 200.0), (reasons, 0.0), (fan, 60.0)],
    );
    sample(1, 0, &[(temp, 50.0)]);
    sample(1, 500, &[(temp, 70.0)]);
    if windowed {
        let rec = tracer.recorder();
        rec.log(app.t0 + 500, false, "recording window 1 opened (test)");
        rec.log(app.t0 + 3500, false, "recording window 1 closed (test)");
    }
}

/// Two recording windows, [0, 10000) and [100000, 110000). In the first
/// the GPU ran a kernel at [1000, 2000) and one at [9500, 12000), still
/// running when it closed; in the second the thread that launched them
/// waited in `cudaDeviceSynchronize` for [100500, 102500).
fn windowed_busy(tracer: &Tracer) {
    let app = App::new(tracer);
    let k = app.kernel_class("_Z4busyii");
    let rec = tracer.recorder();
    rec.log(app.t0, false, "recording window 1 opened (test)");
    app.api("cudaLaunchKernel", (500, 600), 1, true, &[]);
    app.kernel(1, 0, 7, (1000, 2000), k);
    app.kernel(2, 0, 7, (9500, 12_000), k);
    rec.log(app.t0 + 10_000, false, "recording window 1 closed (test)");
    rec.log(app.t0 + 100_000, false, "recording window 2 opened (test)");
    app.api("cudaDeviceSynchronize", (100_500, 102_500), 3, false, &[]);
    rec.log(app.t0 + 110_000, false, "recording window 2 closed (test)");
}

// --------------------------------------------------------------- parent side

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-stats-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn child_cmd(scenario: &str) -> Command {
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
    cmd.env(gpu_trace_agent::config::vars::TRACE, "all");
    cmd
}

fn checked(out: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("DONE"),
        "{what} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn line<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in {stdout}"))
}

/// A recorded scenario: the trace, the pid and the child's stdout.
struct Recorded {
    path: PathBuf,
    pid: i64,
    stdout: String,
}

fn record(scenario: &str, dir: &Path) -> Recorded {
    let path = dir.join(format!("{scenario}.pftrace"));
    let out = child_cmd(scenario)
        .env(gpu_trace_agent::config::vars::OUTPUT, &path)
        .output()
        .unwrap();
    let stdout = checked(out, scenario);
    assert_eq!(Path::new(line(&stdout, "OUTPUT=")), path);
    Recorded {
        path,
        pid: line(&stdout, "PID=").parse().unwrap(),
        stdout,
    }
}

fn stats(args: &[&str], traces: &[&Path]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .arg("stats")
        .args(args)
        .args(traces)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str], traces: &[&Path]) -> Value {
    let mut a = vec!["--format", "json"];
    a.extend(args);
    let (rc, out, err) = stats(&a, traces);
    assert_eq!(rc, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The rows of `table` as (name, count, total, median, min, max, p99).
fn durations(v: &Value, table: &str) -> Vec<(String, u64, u64, f64, u64, u64, u64)> {
    v[table]
        .as_array()
        .unwrap_or_else(|| panic!("no {table} in {v}"))
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["count"].as_u64().unwrap(),
                r["total_ns"].as_u64().unwrap(),
                r["median_ns"].as_f64().unwrap(),
                r["min_ns"].as_u64().unwrap(),
                r["max_ns"].as_u64().unwrap(),
                r["p99_ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn s(x: &str) -> String {
    x.to_owned()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_numbers_of_a_known_program() {
    let dir = scratch("known");
    let r = record("known", &dir);
    let v = json(&[], &[&r.path]);
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(v["span"]["dur_ns"], 10_000);
    assert_eq!(
        durations(&v, "kernels"),
        [
            (s("other()"), 1, 8000, 8000.0, 8000, 8000, 8000),
            // 1000, 1500, 400, 600: an even count's median is the mean of
            // 600 and 1000.
            (s("busy(int, int)"), 4, 3500, 800.0, 400, 1500, 1500),
            (s("tiny()"), 3, 600, 200.0, 100, 300, 300),
        ]
    );
    assert_eq!(
        durations(&v, "memops"),
        [
            (s("Memcpy HtoD"), 2, 1000, 500.0, 500, 500, 500),
            (s("Memcpy PtoP"), 1, 800, 800.0, 800, 800, 800),
            (s("Memcpy DtoH"), 1, 200, 200.0, 200, 200, 200),
            (s("Memset"), 1, 200, 200.0, 200, 200, 200),
        ]
    );
    let bytes: Vec<u64> = v["memops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(bytes, [8192, 8192, 1024, 100]);
    assert_eq!(
        durations(&v, "api"),
        [
            (
                s("cudaDeviceSynchronize"),
                1,
                1000,
                1000.0,
                1000,
                1000,
                1000
            ),
            (s("cudaEventSynchronize"), 1, 1000, 1000.0, 1000, 1000, 1000),
            (
                s("cudaStreamSynchronize"),
                1,
                1000,
                1000.0,
                1000,
                1000,
                1000
            ),
            (s("cuStreamSynchronize"), 1, 800, 800.0, 800, 800, 800),
            (s("cudaMemcpy"), 1, 600, 600.0, 600, 600, 600),
            (s("cudaStreamQuery"), 1, 500, 500.0, 500, 500, 500),
            (s("cudaLaunchKernel"), 3, 300, 100.0, 100, 100, 100),
            (s("cudaMemcpyAsync"), 1, 100, 100.0, 100, 100, 100),
        ]
    );
    assert_eq!(
        durations(&v, "nvtx"),
        [
            (s("epoch"), 1, 10_000, 10_000.0, 10_000, 10_000, 10_000),
            (s("step 1"), 1, 5000, 5000.0, 5000, 5000, 5000),
            (s("step 2"), 1, 5000, 5000.0, 5000, 5000, 5000),
        ]
    );
    // Busy time per device engine: the union over the 10 µs span. GPU 0's
    // kernels: [0,2000) [3000,3600) [5000,5100) [6000,6300) [7000,7200).
    let devices: Vec<(i64, String, u64, u64, f64)> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["gpu"].as_i64().unwrap(),
                d["engine"].as_str().unwrap().to_owned(),
                d["ops"].as_u64().unwrap(),
                d["busy_ns"].as_u64().unwrap(),
                d["busy_pct"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        devices,
        [
            (0, s("Kernels"), 7, 3200, 32.0),
            (0, s("Memcpy DtoH"), 1, 200, 2.0),
            (0, s("Memcpy HtoD"), 2, 1000, 10.0),
            (0, s("Memcpy PtoP"), 1, 800, 8.0),
            (0, s("Memset"), 1, 200, 2.0),
            (1, s("Kernels"), 1, 8000, 80.0),
        ]
    );
    // Per stream: stream 7's memset overlaps its last tiny() (3,500 ns of
    // work, 3,400 busy); stream 8's busy() and copies do not overlap.
    let streams: Vec<(String, u64, u64, u64, f64)> = v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            assert_eq!(x["pid"].as_i64(), Some(r.pid));
            (
                x["stream"].as_str().unwrap().to_owned(),
                x["kernels"].as_u64().unwrap(),
                x["memops"].as_u64().unwrap(),
                x["busy_ns"].as_u64().unwrap(),
                x["busy_pct"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        streams,
        [
            (s("GPU 1 · stream 9"), 1, 0, 8000, 80.0),
            (s("GPU 0 · stream 7"), 5, 3, 3400, 34.0),
            (s("GPU 0 · stream 8"), 2, 2, 2800, 28.0),
        ]
    );
    // Per thread: the share of its span spent in calls that wait for the
    // GPU (the nested cuStreamSynchronize counts once; cudaStreamQuery
    // waits by its arrow, cudaMemcpyAsync does not wait).
    let tid_a: i64 = line(&r.stdout, "TID_A=").parse().unwrap();
    let tid_b: i64 = line(&r.stdout, "TID_B=").parse().unwrap();
    let threads: Vec<(i64, u64, u64, u64, u64)> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tid"].as_i64().unwrap(),
                t["api_calls"].as_u64().unwrap(),
                t["span_ns"].as_u64().unwrap(),
                t["waiting_calls"].as_u64().unwrap(),
                t["waiting_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        threads,
        [(tid_a, 6, 10_000, 4, 2600), (tid_b, 4, 5500, 2, 1500)]
    );
    assert!(close(
        v["threads"][0]["waiting_pct"].as_f64().unwrap(),
        26.0
    ));
    assert!(close(
        v["threads"][1]["waiting_pct"].as_f64().unwrap(),
        1500.0 / 5500.0 * 100.0
    ));
    assert_eq!(v["threads"][1]["name"], "worker");
    // Counters: over all kernels, and per kernel name.
    let c = &v["counters"][0];
    assert_eq!(
        (&c["name"], &c["kernels"], &c["min"], &c["max"]),
        (
            &Value::from("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            &Value::from(3),
            &Value::from(10.0),
            &Value::from(70.0)
        )
    );
    assert!(close(c["mean"].as_f64().unwrap(), 130.0 / 3.0));
    let by_kernel: Vec<(String, u64, f64, f64, f64)> = v["counters_by_kernel"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kernel"].as_str().unwrap().to_owned(),
                c["kernels"].as_u64().unwrap(),
                c["mean"].as_f64().unwrap(),
                c["min"].as_f64().unwrap(),
                c["max"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by_kernel,
        [
            (s("busy(int, int)"), 2, 60.0, 50.0, 70.0),
            (s("tiny()"), 1, 10.0, 10.0, 10.0)
        ]
    );
    // No telemetry in this trace: no table of it, in any format.
    assert_eq!(v["telemetry"], serde_json::json!([]));
    // The file and its one process.
    let f = &v["files"][0];
    assert_eq!(f["file"], r.path.display().to_string());
    assert_eq!(f["pids"], serde_json::json!([r.pid]));
    assert_eq!(v["processes"].as_array().unwrap().len(), 1);
    assert_eq!(v["processes"][0]["pid"].as_i64(), Some(r.pid));
    assert_eq!(v["processes"][0]["kernels"], v["kernels"]);

    // Perfetto's trace processor sees the same GPU work.
    if let Some(rows) = gpu_trace_testkit::tp_query(
        &r.path,
        "select count(*), sum(s.dur) from gpu_slice s join track k on s.track_id = k.id \
         where k.type = 'gpu_render_stage';",
    ) {
        assert_eq!(rows, [vec![s("13"), s("14300")]]);
    }

    // The tables: the header, thousands separators.
    let (rc, text, err) = stats(&[], &[&r.path]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    for want in [
        "Span: 10.000 µs (from ",
        &format!("Process: {}", r.pid),
        "GPU 0: NVIDIA H200 (sm_90)",
        "GPU 1: NVIDIA H200 (sm_90)",
        "Sources: ",
        "gpu.renderstages.nv",
        "track_event (cuda, nvtx)",
        "Losses: none",
        "   8,000  ",
        "GPU 0 · stream 7",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    assert!(!text.contains("GPU telemetry"), "{text}");
    let (_, asked, _) = stats(&["--report", "telemetry"], &[&r.path]);
    assert!(
        asked.contains("GPU telemetry (each value holds until the next sample; means weighted by that time): none in the trace"),
        "{asked}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn csv_parses_back_into_the_json_numbers() {
    let dir = scratch("csv");
    let r = record("known", &dir);
    let v = json(&[], &[&r.path]);
    let out = dir.join("out.csv");
    let (rc, stdout, err) = stats(
        &["--format", "csv", "-o", out.to_str().unwrap()],
        &[&r.path],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(
        stdout.is_empty(),
        "-o writes the file, not stdout: {stdout}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    // One table per report, each with its header row (whose first field is
    // `report`), separated by empty lines.
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut tables: Vec<(Vec<String>, Vec<Vec<String>>)> = Vec::new();
    for rec in rdr.records() {
        let rec: Vec<String> = rec.unwrap().iter().map(str::to_owned).collect();
        if rec[0] == "report" {
            tables.push((rec, Vec::new()));
        } else {
            let t = tables.last_mut().expect("a header first");
            assert_eq!(rec.len(), t.0.len(), "{rec:?} under {:?}", t.0);
            t.1.push(rec);
        }
    }
    let names: Vec<&str> = tables.iter().map(|t| t.1[0][0].as_str()).collect();
    assert_eq!(
        names,
        [
            "verdict",
            "kernels",
            "memops",
            "api",
            "nvtx",
            "counters",
            "counters_by_kernel",
            "devices",
            "idle",
            "temporal",
            "launches",
            "launch_outliers",
            "streams",
            "threads"
        ]
    );
    // The verdict first, then the tables as before.
    tables.remove(0);
    let (header, kernels) = &tables[0];
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let got: Vec<(String, u64, u64, f64)> = kernels
        .iter()
        .map(|r| {
            (
                r[col("name")].clone(),
                r[col("count")].parse().unwrap(),
                r[col("total_ns")].parse().unwrap(),
                r[col("median_ns")].parse().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64, u64, f64)> = durations(&v, "kernels")
        .into_iter()
        .map(|(n, c, t, m, ..)| (n, c, t, m))
        .collect();
    assert_eq!(got, want);
    // Every row names its scope, file and process.
    for (_, rows) in &tables {
        for row in rows {
            assert_eq!(row[1], "process");
            assert_eq!(row[2], r.path.display().to_string());
            assert_eq!(row[3], r.pid.to_string());
        }
    }
    let (header, devices) = &tables[6];
    let busy = header.iter().position(|h| h == "busy_ns").unwrap();
    assert_eq!(devices[0][busy], "3200");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn report_top_and_name_width_shape_the_output() {
    let dir = scratch("flags");
    let r = record("known", &dir);
    let (rc, text, err) = stats(
        &[
            "--report",
            "kernels,threads",
            "--names",
            "full",
            "--top",
            "1",
            "--name-width",
            "5",
        ],
        &[&r.path],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(text.contains("GPU kernels"), "{text}");
    assert!(text.contains("Threads: "), "{text}");
    for absent in [
        "API calls\n",
        "GPU memory operations",
        "Streams",
        "GPU busy",
    ] {
        assert!(!text.contains(absent), "{absent:?} in\n{text}");
    }
    // other(), cut to 5 characters with the ellipsis; the rest counted.
    assert!(text.contains("  othe…\n"), "{text}");
    assert!(!text.contains("busy("), "{text}");
    assert!(text.contains("... 2 more (--top 1)"), "{text}");
    assert!(text.contains("... 1 more (--top 1)"), "{text}");
    // The threads table comes after the kernels, as asked.
    assert!(text.find("GPU kernels") < text.find("Threads: "));
    let (_, reversed, _) = stats(&["--report", "threads,kernels"], &[&r.path]);
    assert!(reversed.find("GPU kernels") > reversed.find("Threads: "));

    // Whole names without a width, and in CSV whatever the width.
    let (_, text, _) = stats(
        &[
            "--report",
            "kernels",
            "--name-width",
            "0",
            "--names",
            "full",
        ],
        &[&r.path],
    );
    assert!(text.contains("  busy(int, int)\n"), "{text}");
    let (_, csv, _) = stats(
        &[
            "--format",
            "csv",
            "--report",
            "kernels",
            "--name-width",
            "5",
        ],
        &[&r.path],
    );
    assert!(csv.contains(",\"busy(int, int)\","), "{csv}");
    assert_eq!(csv.lines().count(), 4, "a header and three kernels: {csv}");
    // JSON: --top and --report too; --json is --format json.
    let (rc, out, _) = stats(&["--json", "--report", "api", "--top", "2"], &[&r.path]);
    assert_eq!(rc, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["api"].as_array().unwrap().len(), 2);
    assert!(v.get("kernels").is_none(), "{v}");
    // An empty table asked for by name says so.
    let (_, text, _) = stats(&["--report", "counters"], &[&r.path]);
    assert!(text.contains("Per-kernel counters by kernel"), "{text}");

    // Bad values name the flag and what it takes; nothing is read.
    for (args, msg) in [
        (
            vec!["--report", "kernels,kernal"],
            "gpu-trace: --report \"kernal\": expected verdict, ranks, kernels, memops, api, nvtx, counters, devices, idle, temporal, launches, telemetry, streams, threads (comma-separated)",
        ),
        (
            vec!["--top", "ten"],
            "gpu-trace: --top \"ten\": expected a whole number of rows",
        ),
        (
            vec!["--name-width", "wide"],
            "gpu-trace: --name-width \"wide\": expected a whole number of characters",
        ),
        (
            vec!["--format", "xml"],
            "gpu-trace: --format \"xml\": expected table, csv or json",
        ),
        (
            vec!["--json", "--format", "csv"],
            "gpu-trace: --json and --format \"csv\" disagree",
        ),
    ] {
        let (rc, out, err) = stats(&args, &[&r.path]);
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert_eq!(err.trim(), msg, "{args:?}");
        assert!(out.is_empty());
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn two_files_are_summarised_together_and_per_process() {
    let dir = scratch("two");
    let a = record("known", &dir);
    let b = record("second", &dir);
    let v = json(&[], &[&a.path, &b.path]);
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    let (pa, pb) = (a.path.display().to_string(), b.path.display().to_string());
    assert_eq!(files, [pa.as_str(), pb.as_str()]);
    let procs: Vec<(&str, i64)> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["file"].as_str().unwrap(), p["pid"].as_i64().unwrap()))
        .collect();
    assert_eq!(procs, [(pa.as_str(), a.pid), (pb.as_str(), b.pid)]);
    // All together: busy() 400 600 1000 1500 2000 4000, median 1250.
    let busy = durations(&v, "kernels")
        .into_iter()
        .find(|k| k.0 == "busy(int, int)")
        .unwrap();
    assert_eq!(
        busy,
        (s("busy(int, int)"), 6, 9500, 1250.0, 400, 4000, 4000)
    );
    // Per process, each file's own.
    let second = durations(&v["processes"][1], "kernels");
    assert_eq!(
        second,
        [(s("busy(int, int)"), 2, 6000, 3000.0, 2000, 4000, 4000)]
    );
    // The same GPU (by UUID) in both: its kernels' busy time adds up, over
    // the span of both.
    let span = v["span"]["dur_ns"].as_u64().unwrap();
    assert!(span > 10_000, "{span}");
    let gpu0 = &v["devices"][0];
    assert_eq!(
        (&gpu0["gpu"], &gpu0["engine"]),
        (&Value::from(0), &Value::from("Kernels"))
    );
    assert_eq!(gpu0["ops"], 9);
    assert_eq!(gpu0["busy_ns"], 3200 + 6000);
    assert!(close(
        gpu0["busy_pct"].as_f64().unwrap(),
        9200.0 / span as f64 * 100.0
    ));
    // What the second lost, and where.
    assert_eq!(v["files"][1]["complete"], false);
    assert_eq!(v["complete"], false);
    assert_eq!(
        v["dropped"],
        serde_json::json!({"thread_buffer": 5, "vendor_records": 2})
    );
    let (rc, text, _) = stats(&["--report", "kernels"], &[&a.path, &b.path]);
    assert_eq!(rc, 0);
    for want in [
        &format!("== {pa} =="),
        &format!("== {pb} =="),
        "== All 2 processes of 2 files ==",
        &format!("== Process {} ({pa}) ==", a.pid),
        &format!("== Process {} ({pb}) ==", b.pid),
        "Losses: thread_buffer=5 vendor_records=2 (the trace is incomplete)",
        "  in our event batches (a recording thread's buffer was full): thread_buffer=5",
        "  in CUPTI's activity buffers: vendor_records=2",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    // --strict fails on what the second lost.
    let (rc, _, err) = stats(&["--strict"], &[&a.path, &b.path]);
    assert_eq!(rc, 1);
    assert!(
        err.contains(&format!("{pb}: the trace is incomplete (--strict)")),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn garbage_empty_and_truncated_input() {
    let dir = scratch("bad");
    let r = record("known", &dir);
    let text = dir.join("passwd");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n".repeat(20)).unwrap();
    let (rc, out, err) = stats(&[], &[&text]);
    assert_eq!(rc, 1);
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        err.trim(),
        format!(
            "gpu-trace: {}: not a Perfetto trace: it starts with protobuf field 14, not a TracePacket (field 1)",
            text.display()
        )
    );
    let empty = dir.join("empty.pftrace");
    std::fs::write(&empty, "").unwrap();
    let (rc, _, err) = stats(&[], &[&empty]);
    assert_eq!(rc, 1);
    assert_eq!(
        err.trim(),
        format!("gpu-trace: {}: empty trace (0 bytes)", empty.display())
    );
    let missing = dir.join("missing.pftrace");
    let (rc, _, err) = stats(&[], &[&missing]);
    assert_eq!(rc, 1);
    assert!(
        err.contains("cannot read") && err.contains("missing.pftrace"),
        "{err}"
    );
    // A bad file among good ones: the good one is summarised, the exit
    // status says something failed.
    let (rc, out, _) = stats(
        &["--report", "kernels", "--names", "full"],
        &[&empty, &r.path],
    );
    assert_eq!(rc, 1);
    assert!(out.contains("busy(int, int)"), "{out}");

    // Cut to 5 KB: read up to the last whole packet, one warning saying
    // where.
    let bytes = std::fs::read(&r.path).unwrap();
    assert!(bytes.len() > 4000, "{}", bytes.len());
    // Inside the GPU work, mid-packet, whatever the exact size.
    let (n, at) = (bytes.len() / 2..bytes.len() * 3 / 4)
        .rev()
        .find_map(|n| {
            gpu_trace_reader::Trace::from_bytes(&bytes[..n])
                .ok()?
                .truncated_at
                .map(|at| (n, at))
        })
        .expect("a cut mid-packet");
    let cut = dir.join("cut.pftrace");
    std::fs::write(&cut, &bytes[..n]).unwrap();
    let (rc, out, err) = stats(&[], &[&cut]);
    assert_eq!(rc, 0, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one warning: {err}");
    assert!(
        lines[0].starts_with(&format!(
            "gpu-trace: {}: the trace stops at byte {} of {}, in the middle of a packet",
            cut.display(),
            fmt_int(at),
            fmt_int(n as u64)
        )),
        "{err}"
    );
    assert!(
        out.contains(&format!(
            "Losses: unknown: the trace stops at byte {} of {}",
            fmt_int(at),
            fmt_int(n as u64)
        )),
        "{out}"
    );
    assert!(!out.contains("Losses: none"), "{out}");
    let (rc, _, err) = stats(&["--strict"], &[&cut]);
    assert_eq!(rc, 1, "{err}");
    let v = json(&[], &[&cut]);
    assert_eq!(v["files"][0]["truncated_at"], at);
    assert_eq!(v["complete"], false);
    std::fs::remove_dir_all(dir).unwrap();
}

fn fmt_int(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Renderstages, counters and the CUDA and NVTX categories.
const SYSTEM_CONFIG: &str = r#"
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.renderstages.nv" } }
data_sources {
  config {
    name: "track_event"
    track_event_config { enabled_categories: "cuda" enabled_categories: "nvtx" disabled_categories: "*" }
  }
}
"#;

#[test]
fn processes_in_one_system_mode_trace_are_split_by_pid() {
    use perfetto_testd::{PRODUCER_SOCK_VAR, Traced};
    let traced = Traced::start("stats");
    let session = traced.record("two", SYSTEM_CONFIG);
    let start = |scenario: &str| {
        child_cmd(scenario)
            .current_dir(traced.dir())
            .env_remove("PERFETTO_CONSUMER_SOCK_NAME")
            .env(gpu_trace_agent::config::vars::MODE, "system")
            .env(PRODUCER_SOCK_VAR, traced.producer_sock())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (ca, cb) = (start("known"), start("second"));
    let (oa, ob) = (
        checked(ca.wait_with_output().unwrap(), "known"),
        checked(cb.wait_with_output().unwrap(), "second"),
    );
    let (pa, pb): (i64, i64) = (
        line(&oa, "PID=").parse().unwrap(),
        line(&ob, "PID=").parse().unwrap(),
    );
    let path = session.stop();
    let v = json(&[], &[&path]);
    let mut want = vec![pa, pb];
    want.sort_unstable();
    assert_eq!(v["files"][0]["pids"], serde_json::json!(want), "{v}");
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2);
    let of = |pid: i64| {
        procs
            .iter()
            .find(|p| p["pid"].as_i64() == Some(pid))
            .unwrap_or_else(|| panic!("no process {pid} in {v}"))
    };
    let busy = |p: &Value| {
        durations(p, "kernels")
            .into_iter()
            .find(|k| k.0 == "busy(int, int)")
            .map(|k| (k.1, k.2))
    };
    assert_eq!(busy(of(pa)), Some((4, 3500)));
    assert_eq!(busy(of(pb)), Some((2, 6000)));
    assert_eq!(busy(&v), Some((6, 9500)));
    let tid_a: i64 = line(&oa, "TID_A=").parse().unwrap();
    let threads: Vec<(i64, i64)> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["pid"].as_i64().unwrap(), t["tid"].as_i64().unwrap()))
        .collect();
    assert!(threads.contains(&(pa, tid_a)), "{threads:?}");
    assert_eq!(of(pa)["threads"][0]["waiting_ns"], 2600);
    assert_eq!(of(pb)["api"][0]["count"], 2);
    let (rc, text, _) = stats(&["--report", "kernels"], &[&path]);
    assert_eq!(rc, 0);
    assert!(
        text.contains(&format!("Processes: 2 ({}, {})", want[0], want[1])),
        "{text}"
    );
    assert!(text.contains("== All 2 processes =="), "{text}");
}

/// The telemetry table of a device as (metric, unit, samples, sampled ns,
/// mean, min, max).
type MetricRow = (String, String, u64, u64, f64, f64, f64);

fn telemetry_rows(d: &Value) -> Vec<MetricRow> {
    d["metrics"]
        .as_array()
        .unwrap_or_else(|| panic!("no metrics in {d}"))
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_owned(),
                m["unit"].as_str().unwrap().to_owned(),
                m["samples"].as_u64().unwrap(),
                m["sampled_ns"].as_u64().unwrap(),
                m["mean"].as_f64().unwrap(),
                m["min"].as_f64().unwrap(),
                m["max"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// (bit, reason, throttling, ns, %) of a device's clock-event reasons.
fn reasons(d: &Value) -> Vec<(u64, String, bool, u64, f64)> {
    d["throttle"]["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("no reasons in {d}"))
        .iter()
        .map(|r| {
            (
                r["bit"].as_u64().unwrap(),
                r["reason"].as_str().unwrap().to_owned(),
                r["throttling"].as_bool().unwrap(),
                r["time_ns"].as_u64().unwrap(),
                r["time_pct"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn telemetry_means_are_weighted_by_the_time_each_value_held() {
    let dir = scratch("telemetry");
    let r = record("telemetry", &dir);
    let v = json(&[], &[&r.path]);
    let tel = v["telemetry"].as_array().unwrap();
    assert_eq!(tel.len(), 2, "{v}");
    let (g0, g1) = (&tel[0], &tel[1]);
    assert_eq!(
        (&g0["gpu"], &g0["device"]),
        (&Value::from(0), &Value::from("NVIDIA H200"))
    );
    assert_eq!(
        g0["files"],
        serde_json::json!([r.path.display().to_string()])
    );
    // GPU 0's samples at 0, 1000, 3000 and 4000 ns: gaps of 1000, 2000 and
    // 1000, so the last value holds the median, 1000 ns. The SM clock:
    // 1000 MHz for 1000 ns, 2000 for 2000, 1200 and 1600 for 1000 each.
    // The fan (a metric gpu-trace does not know, after the known ones):
    // 40 % at 0, 60 % at 4000, which holds its own period, 4000 ns.
    assert_eq!(
        telemetry_rows(g0),
        [
            (
                s("clocks.sm"),
                s("MHz"),
                4,
                5000,
                7.8e6 / 5000.0,
                1000.0,
                2000.0
            ),
            (
                s("power.draw"),
                s("W"),
                4,
                5000,
                1.1e6 / 5000.0,
                100.0,
                300.0
            ),
            (s("fan.speed"), s("%"), 2, 8000, 50.0, 40.0, 60.0),
        ]
    );
    // Reasons: idle for 1000 ns, the power cap for 3000 (with HW slowdown
    // for the last 1000 of them), none for the last 1000.
    let th = &g0["throttle"];
    assert_eq!(
        (&th["sampled_ns"], &th["throttled_ns"]),
        (&Value::from(5000), &Value::from(3000))
    );
    assert!(close(th["throttled_pct"].as_f64().unwrap(), 60.0));
    assert_eq!(
        reasons(g0),
        [
            (1, s("GPU idle"), false, 1000, 20.0),
            (4, s("SW power cap"), true, 3000, 60.0),
            (8, s("HW slowdown"), true, 1000, 20.0),
        ]
    );
    // GPU 1: a temperature only, 50 then 70 for 500 ns each.
    assert_eq!(
        telemetry_rows(g1),
        [(s("temperature.gpu"), s("°C"), 2, 1000, 60.0, 50.0, 70.0)]
    );
    assert_eq!(g1["throttle"], Value::Null);
    // Telemetry is no kernel's counter value.
    assert_eq!(v["counters"], serde_json::json!([]));

    let (rc, text, err) = stats(&[], &[&r.path]);
    assert_eq!(rc, 0, "{err}");
    for want in [
        "GPU telemetry (each value holds until the next sample; means weighted by that time)",
        "  GPU 0: NVIDIA H200\n",
        "  GPU 1: NVIDIA H200\n",
        "  1,560  1,000  2,000   MHz        4  5.000 µs  clocks.sm\n",
        "  fan.speed\n",
        "Throttled: 3.000 µs of 5.000 µs sampled (60.0%)",
        "  0x1      1,000     20.0  GPU idle (not throttling)\n",
        "  0x4      3,000     60.0  SW power cap\n",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    // Only the telemetry, when asked for.
    let (_, only, _) = stats(&["--report", "telemetry"], &[&r.path]);
    assert!(only.contains("GPU telemetry"), "{only}");
    assert!(!only.contains("GPU kernels"), "{only}");

    // CSV: the same numbers, one row per GPU and metric, and per reason
    // (bit 0: any throttling).
    let (rc, csv, err) = stats(&["--format", "csv", "--report", "telemetry"], &[&r.path]);
    assert_eq!(rc, 0, "{err}");
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv.as_bytes());
    let rows: Vec<Vec<String>> = rdr
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    let file = r.path.display().to_string();
    let telemetry: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "telemetry").collect();
    assert_eq!(telemetry.len(), 4, "{csv}");
    assert_eq!(
        telemetry[0][..],
        [
            "telemetry",
            "device",
            &file,
            "",
            "0",
            "NVIDIA H200",
            "clocks.sm",
            "MHz",
            "4",
            "5000",
            "1560",
            "1000",
            "2000"
        ]
    );
    let throttling: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "throttling").collect();
    assert_eq!(
        throttling[0][4..],
        [
            "0",
            "NVIDIA H200",
            "0",
            "any throttling reason",
            "true",
            "3000",
            "60",
            "5000"
        ]
    );
    assert_eq!(throttling.len(), 4, "{csv}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn telemetry_counts_only_the_time_inside_recording_windows() {
    let dir = scratch("telemetry-windowed");
    let r = record("telemetry-windowed", &dir);
    let v = json(&["--report", "telemetry"], &[&r.path]);
    assert_eq!(v["files"][0]["windows"]["recorded_ns"], 3000, "{v}");
    // The spans are in the trace's clock: the window is [500, 3500) after
    // the trace's first event.
    let start = v["files"][0]["span"]["end_ns"].as_u64().unwrap()
        - v["files"][0]["span"]["dur_ns"].as_u64().unwrap();
    let spans: Vec<(u64, u64)> =
        serde_json::from_value(v["files"][0]["windows"]["spans"].clone()).unwrap();
    assert_eq!(spans, [(start + 500, start + 3500)], "{v}");
    let tel = v["telemetry"].as_array().unwrap();
    // The window is [500, 3500): the SM clock is 1000 MHz for 500 ns of
    // it, 2000 for 2000 and 1200 for 500; the sample at 4000 is outside.
    assert_eq!(
        telemetry_rows(&tel[0]),
        [
            (
                s("clocks.sm"),
                s("MHz"),
                3,
                3000,
                5.1e6 / 3000.0,
                1000.0,
                2000.0
            ),
            (s("power.draw"), s("W"), 3, 3000, 250.0, 100.0, 300.0),
            (s("fan.speed"), s("%"), 1, 3000, 40.0, 40.0, 40.0),
        ]
    );
    let th = &tel[0]["throttle"];
    assert_eq!(
        (&th["sampled_ns"], &th["throttled_ns"]),
        (&Value::from(3000), &Value::from(2500))
    );
    assert!(close(
        th["throttled_pct"].as_f64().unwrap(),
        2500.0 / 3000.0 * 100.0
    ));
    let r0: Vec<(u64, u64)> = reasons(&tel[0]).into_iter().map(|r| (r.0, r.3)).collect();
    assert_eq!(r0, [(1, 500), (4, 2500), (8, 500)]);
    // GPU 1's first sample, at 0, holds only before the window.
    assert_eq!(
        telemetry_rows(&tel[1]),
        [(s("temperature.gpu"), s("°C"), 1, 500, 70.0, 70.0, 70.0)]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Busy shares of a switched run are of the time recorded: its windows,
/// idle stretches included, and the drain of the work still running when
/// one closed (here [0, 12000) and [100000, 110000): 3,500 ns busy of
/// 22,000, 15.9%), not of the span of its events ([500, 102500)) cut to
/// the windows' length (3.4%); a thread's waiting share is of the recorded
/// part of its span (2,000 of 14,000 ns, not of 102,000); over several
/// files, of the time each was recorded.
#[test]
fn busy_shares_are_of_the_windows_and_their_drain() {
    let dir = scratch("windowed-busy");
    let r = record("windowed-busy", &dir);
    let v = json(&[], &[&r.path]);
    assert_eq!(v["files"][0]["windows"]["recorded_ns"], 20_000, "{v}");
    let busy = |table: &str| {
        let row = &v[table][0];
        (
            row["busy_ns"].as_u64().unwrap(),
            row["busy_pct"].as_f64().unwrap(),
        )
    };
    let want = 3500.0 / 22_000.0 * 100.0;
    for table in ["devices", "streams"] {
        let (ns, pct) = busy(table);
        assert_eq!(ns, 3500, "{table}: {v}");
        assert!(close(pct, want), "{table}: {pct}% (want {want}%)");
    }
    let th = &v["threads"][0];
    assert_eq!(
        (&th["waiting_ns"], &th["span_ns"]),
        (&Value::from(2000), &Value::from(14_000)),
        "{v}"
    );
    let waiting = th["waiting_pct"].as_f64().unwrap();
    assert!(close(waiting, 2000.0 / 14_000.0 * 100.0), "{waiting}%");
    // Two such runs, one after the other, together: the same GPU busy for
    // 7,000 ns of their 44,000 recorded, not of the span from the first
    // one's window to the second one's end (milliseconds).
    let again = record("windowed-busy", &scratch("windowed-busy-2"));
    let v = json(&[], &[&r.path, &again.path]);
    assert!(v["span"]["dur_ns"].as_u64().unwrap() > 1_000_000, "{v}");
    let gpu0 = &v["devices"][0];
    assert_eq!(gpu0["busy_ns"], 7000, "{v}");
    let pct = gpu0["busy_pct"].as_f64().unwrap();
    assert!(close(pct, want), "all: {pct}% (want {want}%)");
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(again.path.parent().unwrap()).unwrap();
}

fn gpu_trace(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn diff_of_two_programs_by_name() {
    let dir = scratch("diff");
    let a = record("known", &dir);
    let b = record("second", &dir);
    let (pa, pb) = (a.path.to_str().unwrap(), b.path.to_str().unwrap());
    let (rc, out, err) = gpu_trace(&["diff", "--format", "json", pa, pb]);
    assert_eq!(rc, 0, "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let k: Vec<(&str, &str, i64, i64)> = d["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["short_name"].as_str().unwrap(),
                r["change"].as_str().unwrap(),
                r["count_delta"].as_i64().unwrap(),
                r["total_delta_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    // other() gone (8000 ns), busy(int, int) 3500 → 6000 ns, tiny() gone.
    assert_eq!(
        k,
        [
            ("other", "gone", -1, -8_000),
            ("busy", "both", -2, 2_500),
            ("tiny", "gone", -3, -600),
        ]
    );
    assert_eq!(d["a"]["files"][0], pa);
    // A directory of traces is a side; text names the changes.
    let side = dir.join("b-side");
    std::fs::create_dir_all(&side).unwrap();
    std::fs::copy(&b.path, side.join("rank-0.pftrace")).unwrap();
    let (rc, text, err) = gpu_trace(&["diff", pa, side.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(text.contains("gone"), "{text}");
    assert!(text.contains("GPU idle time"), "{text}");
    let (rc, csv, _) = gpu_trace(&["diff", "--format", "csv", pa, pb]);
    assert_eq!(rc, 0);
    assert!(csv.starts_with("report,side,files,"), "{csv}");
    assert!(
        csv.contains("\nkernels,other(),other,gone,1,0,8000,0,"),
        "{csv}"
    );
    // Bad input names the value and what was expected.
    let missing = dir.join("missing.pftrace");
    let (rc, _, err) = gpu_trace(&["diff", pa, missing.to_str().unwrap()]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("B ") && err.contains("missing.pftrace"),
        "{err}"
    );
    let empty = dir.join("empty-dir");
    std::fs::create_dir_all(&empty).unwrap();
    let (rc, _, err) = gpu_trace(&["diff", empty.to_str().unwrap(), pb]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("expected a trace, or a directory of .pftrace files"),
        "{err}"
    );
    let (rc, _, err) = gpu_trace(&["diff", "--names", "mangled", pa, pb]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("--names \"mangled\": expected short, base or full"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn names_jobs_and_export_options_are_checked() {
    let dir = scratch("options");
    let r = record("known", &dir);
    let p = r.path.to_str().unwrap();
    let (rc, _, err) = stats(&["--names", "pretty"], &[&r.path]);
    assert_eq!(rc, 2);
    assert_eq!(
        err.trim(),
        "gpu-trace: --names \"pretty\": expected short, base, full or mangled"
    );
    let (rc, _, err) = stats(&["--jobs", "many"], &[&r.path]);
    assert_eq!(rc, 2);
    assert_eq!(
        err.trim(),
        "gpu-trace: --jobs \"many\": expected a whole number of traces"
    );
    // Every form of the names; the same summary read on one or two
    // threads.
    for n in ["short", "base", "full", "mangled"] {
        let (rc, text, _) = stats(&["--names", n, "--report", "kernels"], &[&r.path]);
        assert_eq!(rc, 0);
        let want = match n {
            "short" | "base" => "  busy\n",
            "full" => "  busy(int, int)\n",
            _ => "  _Z4busyii\n",
        };
        assert!(text.contains(want), "{n}: {text}");
    }
    let one = json(&["--jobs", "1"], &[&r.path, &r.path]);
    let two = json(&["--jobs", "2"], &[&r.path, &r.path]);
    assert_eq!(one, two);
    let out = dir.join("tables");
    let o = out.to_str().unwrap();
    let (rc, _, err) = gpu_trace(&["export", "--format", "xml", "-o", o, p]);
    assert_eq!(rc, 2);
    assert_eq!(
        err.trim(),
        "gpu-trace: --format \"xml\": expected parquet or csv"
    );
    // CSV: one trace's tables, what the Python package reads.
    let (rc, _, err) = gpu_trace(&["export", "--format", "csv", "-o", o, p, p]);
    assert_eq!(rc, 2);
    assert_eq!(
        err.trim(),
        "gpu-trace: export --format csv: expected one trace, got 2"
    );
    // A trace that cannot be opened is named once, in either format.
    for format in ["csv", "parquet"] {
        let (rc, _, err) = gpu_trace(&["export", "--format", format, "-o", o, "missing.pftrace"]);
        assert_eq!(rc, 1, "{format}: {err}");
        assert_eq!(err.matches("missing.pftrace").count(), 1, "{format}: {err}");
    }
    let csv_dir = dir.join("csv");
    let (rc, _, err) = gpu_trace(&[
        "export",
        "--format",
        "csv",
        "-o",
        csv_dir.to_str().unwrap(),
        p,
    ]);
    assert_eq!(rc, 0, "{err}");
    let kernels = std::fs::read_to_string(csv_dir.join("kernels.csv")).unwrap();
    assert!(
        kernels.starts_with("pid,gpu,queue,start_ns,dur_ns,name,mangled,"),
        "{kernels}"
    );
    assert!(kernels.lines().count() > 1, "{kernels}");
    let (rc, _, err) = gpu_trace(&["export", "-o", o, p, p]);
    assert_eq!(rc, 0, "{err}");
    // Two traces of one name are told apart by their place.
    for t in [
        "kernels",
        "memops",
        "api_calls",
        "ranges",
        "counters",
        "telemetry",
        "windows",
    ] {
        for f in ["known-0", "known-1"] {
            assert!(
                out.join(t).join(format!("{f}.parquet")).is_file(),
                "{t}/{f}"
            );
        }
    }
    assert!(err.contains("8 kernels"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn python_report_gives_each_line_its_kernel_time_in_table_csv_and_json() {
    let dir = scratch("python");
    let r = record("python", &dir);
    let v = json(&["--report", "python", "--python-depth", "2"], &[&r.path]);
    assert_eq!(v["kernels"], 4);
    assert_eq!(v["attributed"], 3);
    assert_eq!(v["kernel_ns"], 5000);
    let rows: Vec<(String, u64, u64, u64)> = v["by_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["site"]["function"].as_str().unwrap().to_owned(),
                r["site"]["line"].as_u64().unwrap(),
                r["count"].as_u64().unwrap(),
                r["total_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("Model.forward".into(), 12, 2, 4000),
            ("loss".into(), 20, 1, 500)
        ]
    );
    // Top-down, two frames deep: <module>, then step's two lines.
    let td: Vec<(u64, String, u64, u64)> = v["top_down"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["depth"].as_u64().unwrap(),
                r["site"]["function"].as_str().unwrap().to_owned(),
                r["site"]["line"].as_u64().unwrap(),
                r["total_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        td,
        [
            (0, "<module>".into(), 30, 4500),
            (1, "step".into(), 5, 4000),
            (1, "step".into(), 6, 500)
        ]
    );
    let (rc, out, err) = stats(&["--report", "python"], &[&r.path]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("3 of 4 kernels (90.0% of 0.005 ms)"), "{out}");
    assert!(
        out.contains(" 80.0%         0.004         2  train.py:12 Model.forward"),
        "{out}"
    );
    let (rc, out, _) = stats(&["--report", "python", "--format", "csv"], &[&r.path]);
    assert_eq!(rc, 0);
    assert!(
        out.lines()
            .any(|l| l == "by_line,0,Model.forward,train.py,12,2,4000,0.800000"),
        "{out}"
    );
    let (rc, _, err) = stats(&["--report", "python", "--python-depth", "0"], &[&r.path]);
    assert_eq!(rc, 2);
    assert!(err.contains("--python-depth \"0\""), "{err}");
    let (rc, _, err) = stats(&["--report", "kernels,python"], &[&r.path]);
    assert_eq!(rc, 2);
    assert!(err.contains("--report python is shown alone"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
