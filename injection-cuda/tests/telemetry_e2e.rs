//! GPU telemetry end to end without a GPU: the fake CUPTI and driver
//! (`cupti-sim`) run a scripted program under the built
//! `libgpu_trace_cuda.so`, which reads the fake NVML (`nvml-sim`, named by
//! `GPU_TRACE_NVML_PATH`). The trace is decoded with our reader, the trace
//! processor and the schema validator.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{Outcome, RunSpec, Scenario};
use gpu_trace_reader::Trace;
use gpu_trace_testkit::{tp_tables, validate};
use nvml_sim::{DeviceSpec, Spec};
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

/// cupti-sim's device: `cuDeviceGetUuid` of `cupti_sim`'s exports, as NVML writes it.
const SIM_UUID: &str = "GPU-5a1b2c3d-0000-4000-8000-00000000c0de";

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn fake_nvml() -> PathBuf {
    cupti_sim::host::artifact("nvml_sim").expect("libnvml_sim.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-cuda-tel-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // As XDG_RUNTIME_DIR: used only when it is ours and 0700, as a login makes it.
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    d
}

/// A kernel, then 600 ms of host work (the records are flushed every 100
/// ms, describing the GPU, whose telemetry then runs), then another.
fn scenario() -> Scenario {
    launches_between(&[600_000])
}

/// A kernel, then for each of `sleeps_us` that long of host work and another
/// kernel.
fn launches_between(sleeps_us: &[u64]) -> Scenario {
    let launch = Op::Launch {
        kernel: "vadd".into(),
        grid: [64, 1, 1],
        block: [128, 1, 1],
        stream: 1,
        layer: Layer::Runtime,
    };
    let mut ops = vec![launch.clone(), Op::StreamSync { stream: 1 }];
    for &us in sleeps_us {
        ops.extend([
            Op::SleepUs { us },
            launch.clone(),
            Op::StreamSync { stream: 1 },
        ]);
    }
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "vadd".into(),
            symbol: "_Z4vaddPfS_S_i".into(),
            registers: 32,
            static_smem: 0,
            duration_us: 20,
        }],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn run(dir: &Path, nvml: Option<&Spec>, env: &[(&str, &str)]) -> (Outcome, Trace, PathBuf) {
    let (out, t, path) = run_program(dir, scenario(), nvml, env);
    assert_eq!(t.kernels().count(), 2, "GPU work is traced as usual");
    (out, t, path)
}

fn run_program(
    dir: &Path,
    program: Scenario,
    nvml: Option<&Spec>,
    env: &[(&str, &str)],
) -> (Outcome, Trace, PathBuf) {
    let path = dir.join("trace.pftrace");
    let mut spec = RunSpec::new(tool(), program)
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", "gpu,api,telemetry")
        .env("INJECTION_FLUSH_PERIOD_MS", "100")
        .env("INJECTION_TELEMETRY_PERIOD", "5ms")
        .env(
            "INJECTION_TELEMETRY_LOCK_DIR",
            dir.join("locks").display().to_string(),
        )
        .env("RUST_BACKTRACE", "0");
    spec = match nvml {
        Some(s) => spec
            .env("GPU_TRACE_NVML_PATH", fake_nvml().display().to_string())
            .env(nvml_sim::SPEC_ENV, serde_json::to_string(s).unwrap()),
        None => spec.env("GPU_TRACE_NVML_PATH", "/nonexistent/libnvidia-ml.so.1"),
    };
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("trace file: {e:?}\n{}", out.stderr));
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    (out, t, path)
}

fn our_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace:"))
        .collect()
}

/// The telemetry values: not the engines' busy % every trace with GPU work carries,
/// derived from the activity (core's tests check those).
fn telemetry(t: &Trace) -> impl Iterator<Item = &gpu_trace_reader::CounterValue> {
    t.counters.iter().filter(|c| !c.name.ends_with(" busy"))
}

fn values(t: &Trace, name: &str) -> Vec<f64> {
    t.counters
        .iter()
        .filter(|c| &*c.name == name)
        .map(|c| c.value)
        .collect()
}

#[test]
fn nvml_telemetry_and_gpm_are_counter_tracks_with_units() {
    let dir = tmpdir("nvml");
    let spec = Spec {
        devices: vec![DeviceSpec {
            uuid: SIM_UUID.into(),
            ..DeviceSpec::default()
        }],
        pcie_delay_us: 21_000,
        energy_delay_us: 4_000,
        ..Spec::default()
    };
    let (out, t, path) = run(
        &dir,
        Some(&spec),
        &[("INJECTION_TELEMETRY_SLOW_PERIOD", "100ms")],
    );
    assert!(our_lines(&out.stderr).is_empty(), "{}", out.stderr);
    let clocks = values(&t, "clocks.sm");
    // ~500 ms of sampling at 5 ms; the slow readings block 25 ms every
    // 100 ms on their own thread without thinning these out.
    assert!(
        clocks.len() >= 40,
        "{} clock samples\n{}",
        clocks.len(),
        out.stderr
    );
    assert!(clocks.iter().all(|&v| v == 1980.0));
    assert!(values(&t, "clocks.mem").iter().all(|&v| v == 3201.0));
    // The SM clock, power and reasons every period; the memory clock,
    // utilisation, temperature and memory used (dear, and updated slowly by
    // the driver) every 100 ms, with GPM.
    for m in ["power.draw", "clocks_event_reasons.active"] {
        assert_eq!(values(&t, m).len(), clocks.len(), "{m} every period");
    }
    for m in [
        "clocks.mem",
        "utilization.gpu",
        "temperature.gpu",
        "memory.used",
    ] {
        let n = values(&t, m).len();
        assert!(
            n >= 2 && n * 5 <= clocks.len(),
            "{m} every 100 ms: {n} samples against {} clock samples",
            clocks.len()
        );
    }
    assert_eq!(values(&t, "power.draw")[0], 352.5, "mW as W");
    assert_eq!(values(&t, "temperature.gpu")[0], 54.0);
    assert_eq!(values(&t, "utilization.gpu")[0], 87.0);
    assert_eq!(values(&t, "memory.used")[0], 12_884_901_888.0);
    assert_eq!(values(&t, "clocks_event_reasons.active")[0], 4.0);
    assert_eq!(values(&t, "gpm.sm_active")[0], 96.7);
    assert_eq!(values(&t, "gpm.tensor_active")[0], 93.9);
    assert_eq!(values(&t, "gpm.sm_occupancy")[0], 14.3);
    assert_eq!(values(&t, "gpm.dram_bandwidth")[0], 16.5);
    assert_eq!(
        values(&t, "gpm.pcie_rx")[0],
        480.0 * 1_048_576.0,
        "MiB/s as B/s"
    );
    assert_eq!(values(&t, "pcie.tx")[0], 1_234.0 * 1024.0, "KB/s as B/s");
    let energy = values(&t, "energy.total");
    assert!(
        energy.len() >= 2 && energy[1] - energy[0] == 0.25,
        "{energy:?}"
    );
    let cost = t.log("gpu-trace telemetry:").expect("the sampler's cost");
    assert!(
        cost.message.contains("slow readings every 100ms"),
        "{}",
        cost.message
    );

    validate(&path);
    if let Some(tables) = tp_tables(
        &path,
        "select t.name, t.unit from gpu_counter_track t order by t.name;",
    ) {
        let units: Vec<(String, String)> = tables[0]
            .iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        let unit = |n: &str| {
            units
                .iter()
                .find(|(name, _)| name == n)
                .map(|u| u.1.as_str())
                .unwrap_or_else(|| panic!("no {n} in {units:?}"))
        };
        assert_eq!(unit("clocks.sm"), "MHz");
        assert_eq!(unit("power.draw"), "W");
        assert_eq!(unit("temperature.gpu"), "C");
        assert_eq!(unit("gpm.pcie_tx"), "B/s");
        assert_eq!(unit("energy.total"), "J");
        assert_eq!(unit("gpufreq"), "kHz");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gpu_without_gpm_has_every_other_track() {
    let dir = tmpdir("nogpm");
    let spec = Spec {
        devices: vec![DeviceSpec {
            uuid: SIM_UUID.into(),
            gpm: false,
            unsupported: vec!["reasons".into()],
            ..DeviceSpec::default()
        }],
        ..Spec::default()
    };
    let (out, t, _) = run(&dir, Some(&spec), &[("INJECTION_VERBOSE", "1")]);
    assert!(!values(&t, "clocks.sm").is_empty() && !values(&t, "power.draw").is_empty());
    assert!(
        !t.counters.iter().any(|c| c.name.starts_with("gpm.")),
        "no GPM tracks"
    );
    assert!(values(&t, "clocks_event_reasons.active").is_empty());
    assert!(
        out.stderr.contains("GPM not supported")
            && out
                .stderr
                .contains("no clock-event reasons reading (Not Supported"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_nvml_one_line_and_the_program_runs_normally() {
    let dir = tmpdir("missing");
    let (out, t, path) = run(&dir, None, &[]);
    assert_eq!(
        our_lines(&out.stderr),
        [
            "gpu-trace: NVML is not usable (libnvidia-ml not found; tried: /nonexistent/libnvidia-ml.so.1); no GPU telemetry (clocks, power, utilisation)"
        ],
        "{}",
        out.stderr
    );
    assert_eq!(telemetry(&t).count(), 0, "no telemetry");
    assert!(
        t.log("NVML is not usable").is_some(),
        "said in the trace too"
    );
    validate(&path);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gpu_nvml_does_not_know_is_said_and_not_sampled() {
    let dir = tmpdir("unknown");
    let spec = Spec {
        devices: vec![DeviceSpec {
            uuid: "GPU-00000000-1111-2222-3333-444444444444".into(),
            ..DeviceSpec::default()
        }],
        ..Spec::default()
    };
    let (out, t, _) = run(&dir, Some(&spec), &[]);
    assert_eq!(
        our_lines(&out.stderr),
        [format!(
            "gpu-trace: NVML has no GPU with UUID {SIM_UUID} (Not Found (NVML_ERROR_NOT_FOUND)); no telemetry for GPU 0"
        )]
    );
    assert_eq!(telemetry(&t).count(), 0, "no telemetry");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A window (opened 300 ms in, closed 1 s later) is the only time NVML is
/// read: a paused process, before and after it, samples nothing, so the
/// telemetry costs nothing there either. Kernels at 0, 0.6 s (inside) and
/// 1.9 s.
#[test]
fn telemetry_is_sampled_only_inside_recording_windows() {
    let dir = tmpdir("windows");
    let (out, t, path) = run_program(
        &dir,
        launches_between(&[600_000, 1_300_000]),
        Some(&Spec::default()),
        &[
            ("INJECTION_DELAY", "300ms"),
            ("INJECTION_DURATION", "1s"),
            ("XDG_RUNTIME_DIR", &dir.display().to_string()),
        ],
    );
    assert!(our_lines(&out.stderr).is_empty(), "{}", out.stderr);
    assert_eq!(t.kernels().count(), 1, "the window's kernel only");
    let w = gpu_trace_testkit::recording_windows(&t);
    assert_eq!(w.len(), 1, "{w:?}");
    let (open, close) = (w[0].1, w[0].1 + w[0].2);
    assert!(close > open, "{w:?}");
    let clocks: Vec<u64> = t
        .counters
        .iter()
        .filter(|c| &*c.name == "clocks.sm")
        .map(|c| c.ts)
        .collect();
    // The GPU is known once the window's kernel is in (~0.6 s); sampled
    // every 5 ms until the window closes at ~1.3 s.
    assert!(clocks.len() >= 40, "{} clock samples", clocks.len());
    let outside: Vec<u64> = telemetry(&t)
        .map(|c| c.ts)
        .filter(|&ts| ts < open || ts > close + 20_000_000)
        .collect();
    assert!(
        outside.is_empty(),
        "samples outside the window [{open}, {close}]: {outside:?}"
    );
    validate(&path);
    let _ = std::fs::remove_dir_all(&dir);
}
