//! Telemetry end to end: a tracer's sampler reads a scripted probe into the
//! in-process session's file, which is decoded with our reader, the trace
//! processor and the schema validator. Each scenario is a child process
//! (a tracer owns process-global Perfetto state).

use gpu_trace_agent::Config;
use gpu_trace_agent::telemetry::Telemetry;
use gpu_trace_agent::telemetry::{DeviceProbes, Metric, Probe, Reading};
use gpu_trace_model::model::Device;
use gpu_trace_perfetto::{Tracer, TracerOptions};
use gpu_trace_reader::Trace;
use gpu_trace_testkit::{tp_problems, tp_tables, validate};
use perfetto_testd::{PRODUCER_SOCK_VAR, Traced};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const CHILD: &str = "GPU_TRACE_TELEMETRY_CHILD";

/// A GPU at 1980 MHz drawing 350.5 W with 2 GiB in use, 87 % busy, and GPM
/// SM activity 96.7 % over each period.
struct Scripted {
    last: Option<u64>,
}

impl Probe for Scripted {
    fn read(&mut self, r: &mut Reading) {
        r.set(Metric::SmClock, 1980.0);
        r.set(Metric::Power, 350.5);
        r.set(Metric::MemoryUsed, 2_147_483_648.0);
        r.set(Metric::GpuUtilization, 87.0);
        if let Some(since) = self.last {
            r.set_since(since, Metric::SmActive, 96.7);
        }
        self.last = Some(r.now());
    }
}

#[test]
#[ignore = "the traced application of the other tests; runs only in their child processes"]
fn child() {
    let scenario = std::env::var(CHILD).expect("run by a test");
    let (config, problems) = Config::from_env();
    for p in &problems {
        eprintln!("gpu-trace: {p}");
    }
    let settings = config.trace_settings().expect("the settings");
    let tracer =
        Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings)).expect("tracer");
    // The agent's sampler, which the writer switches with the sessions.
    let telemetry = Telemetry::new(
        tracer.recorder().clone(),
        tracer.counters().clone(),
        config.sampler_config(),
    );
    tracer.set_listener(Box::new(telemetry.clone()));
    if let Some(p) = tracer.output_path() {
        println!("OUTPUT={}", p.display());
    }
    let opened = Arc::new(AtomicU32::new(0));
    let mut gpu = Device::new(0, "Scripted GPU");
    gpu.vendor = Some("Test".into());
    tracer.add_device(gpu);
    let o = opened.clone();
    telemetry.watch(
        0,
        "GPU-e2e-scripted",
        Box::new(move || {
            o.fetch_add(1, Ordering::Relaxed);
            Ok(DeviceProbes {
                fast: Box::new(Scripted { last: None }),
                slow: None,
                detail: "scripted".into(),
            })
        }),
    );
    if scenario == "missing" {
        telemetry.watch(
            1,
            "GPU-e2e-missing",
            Box::new(|| Err("NVML is not usable (libnvidia-ml not found); no telemetry".into())),
        );
    }
    if scenario == "system" {
        // Sampling follows the session: wait for it to enable telemetry.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !tracer.sources().telemetry {
            assert!(std::time::Instant::now() < deadline, "never enabled");
            std::thread::sleep(Duration::from_millis(5));
        }
        println!("ENABLED");
    }
    std::thread::sleep(Duration::from_millis(300));
    tracer.shutdown(Duration::from_secs(20));
    println!("OPENED={}", opened.load(Ordering::Relaxed));
}

fn run_child(scenario: &str, dir: &Path, envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "child", "--nocapture"])
        .current_dir(dir)
        .env(CHILD, scenario);
    for v in gpu_trace_agent::config::vars::ALL {
        cmd.env_remove(v);
    }
    cmd.env(
        gpu_trace_agent::config::vars::TELEMETRY_LOCK_DIR,
        dir.join("locks"),
    );
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run child");
    assert!(
        out.status.success(),
        "child {scenario} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-tel-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn field(out: &Output, key: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.split(&format!("{key}=")).nth(1))
        .unwrap_or_else(|| panic!("no {key}= in {stdout}"))
        .to_owned()
}

fn our_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("gpu-trace:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn telemetry_tracks_have_their_values_units_and_a_frequency_track() {
    let dir = tmpdir("tracks");
    let out = run_child("basic", &dir, &[("INJECTION_TELEMETRY_PERIOD", "5ms")]);
    assert_eq!(field(&out, "OPENED"), "1");
    assert!(our_lines(&out).is_empty(), "{:?}", our_lines(&out));
    let path = PathBuf::from(field(&out, "OUTPUT"));
    let t = Trace::open(&path).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let of = |name: &str| -> Vec<_> { t.counters.iter().filter(|c| &*c.name == name).collect() };
    let clocks = of("clocks.sm");
    // 300 ms at 5 ms: dozens of samples, never one per kernel.
    assert!(clocks.len() >= 20, "{} samples", clocks.len());
    assert!(clocks.iter().all(|c| c.value == 1980.0 && c.gpu_id == 0));
    assert!(clocks.windows(2).all(|w| w[0].ts < w[1].ts));
    let power = of("power.draw");
    assert_eq!(power[0].value, 350.5);
    assert_eq!(power[0].units.numerator, [29], "W");
    assert_eq!(power[0].groups, [1], "SYSTEM");
    let mem = of("memory.used");
    assert_eq!(mem[0].groups, [5], "MEMORY");
    let gpm = of("gpm.sm_active");
    assert_eq!(gpm.len(), clocks.len() - 1, "one per pair of rounds");
    // Written where its interval starts: at the previous round's clock sample.
    assert_eq!(gpm[0].ts, clocks[0].ts);
    let summary = t.log("gpu-trace summary:").expect("summary");
    assert!(
        summary.message.contains("telemetry_samples="),
        "{}",
        summary.message
    );
    let cost = t
        .log("gpu-trace telemetry:")
        .expect("the sampler's cost in the log");
    assert!(
        cost.message.contains("1 GPU(s) every 5ms") && cost.message.contains("of one core"),
        "{}",
        cost.message
    );

    validate(&path);
    let Some(tables) = tp_tables(
        &path,
        "select t.name, t.unit, t.gpu_id, count(*), min(c.value), max(c.value) \
           from gpu_counter_track t join counter c on c.track_id = t.id \
           group by t.id order by t.name;\n\
         select distinct g.group_id from gpu_counter_group g join gpu_counter_track t on g.track_id = t.id \
           where t.name = 'utilization.gpu';",
    ) else {
        return;
    };
    let rows = &tables[0];
    let row = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("no {name} track in {rows:?}"))
    };
    assert_eq!(&row("clocks.sm")[1..3], ["MHz", "0"]);
    assert_eq!(row("power.draw")[1], "W");
    assert_eq!(row("memory.used")[1], "B");
    assert_eq!(row("utilization.gpu")[1], "%");
    assert_eq!(row("gpm.sm_active")[4], "96.700000");
    // The shader clock as Perfetto's GPU frequency track, in kHz.
    let freq = row("gpufreq");
    assert_eq!(freq[1], "kHz");
    assert_eq!(
        (freq[4].as_str(), freq[5].as_str()),
        ("1980000.000000", "1980000.000000")
    );
    assert_eq!(
        freq[3],
        row("clocks.sm")[3],
        "one frequency sample per clock sample"
    );
    assert_eq!(tables[1], [["1"]], "SYSTEM group");
    assert_eq!(tp_problems(&path), Some(vec![]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn switched_off_nothing_is_opened_or_written() {
    let dir = tmpdir("off");
    let out = run_child("basic", &dir, &[("INJECTION_TELEMETRY_PERIOD", "off")]);
    assert_eq!(field(&out, "OPENED"), "0", "no vendor library touched");
    let t = Trace::open(PathBuf::from(field(&out, "OUTPUT"))).unwrap();
    assert!(t.counters.is_empty());
    assert!(t.log("gpu-trace telemetry:").is_none());
    // Also when the trace list leaves it out.
    let out = run_child("basic", &dir, &[("INJECTION_TRACE", "gpu,api")]);
    assert_eq!(field(&out, "OPENED"), "0");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_source_is_quiet_by_default_and_one_line_when_asked_for() {
    let dir = tmpdir("missing");
    let out = run_child("missing", &dir, &[]);
    assert!(our_lines(&out).is_empty(), "{:?}", our_lines(&out));
    let t = Trace::open(PathBuf::from(field(&out, "OUTPUT"))).unwrap();
    let note = t
        .log("NVML is not usable")
        .expect("the reason is in the trace");
    assert_eq!(note.severity, 4, "a warning");
    assert!(
        t.counters.iter().any(|c| c.gpu_id == 0),
        "the other GPU is sampled"
    );
    assert!(t.counters.iter().all(|c| c.gpu_id == 0));

    let out = run_child("missing", &dir, &[("INJECTION_TRACE", "gpu,telemetry")]);
    assert_eq!(
        our_lines(&out),
        ["gpu-trace: NVML is not usable (libnvidia-ml not found); no telemetry"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_system_session_that_enables_telemetry_gets_it_alone() {
    let traced = Traced::start("telemetry");
    let rec = traced.record(
        "telemetry",
        r#"
buffers { size_kb: 8192 fill_policy: RING_BUFFER }
duration_ms: 60000
data_sources { config { name: "gpu.telemetry.nv" } }
"#,
    );
    let out = run_child(
        "system",
        traced.dir(),
        &[
            ("INJECTION_MODE", "system"),
            (PRODUCER_SOCK_VAR, traced.producer_sock().to_str().unwrap()),
            ("INJECTION_TELEMETRY_PERIOD", "10ms"),
        ],
    );
    assert_eq!(field(&out, "OPENED"), "1");
    let path = rec.stop();
    let t = Trace::open(&path).unwrap();
    assert_eq!(t.data_sources, ["gpu.telemetry.nv"]);
    assert!(t.gpu_events.is_empty() && t.slices.is_empty());
    let clocks = t
        .counters
        .iter()
        .filter(|c| &*c.name == "clocks.sm")
        .count();
    assert!(clocks >= 10, "{clocks} clock samples in 300 ms at 10 ms");
    validate(&path);
}
