//! GPU telemetry on AMD without hardware: the simulated rocprofiler-sdk runs a
//! scripted program under the built `libgpu_trace_hip.so`, which reads a fake
//! amdgpu sysfs tree (`GPU_TRACE_SYSFS_ROOT`) for the simulated GPUs, matched
//! by PCI bus id.

use gpu_trace_reader::Trace;
use gpu_trace_testkit::{tp_tables, validate};
use rocprofiler_sim::scenario::Op;
use rocprofiler_sim::{Outcome, RunSpec, Scenario};
use std::path::{Path, PathBuf};
use std::time::Duration;

rocprofiler_sim::child_entry!();

fn tool() -> PathBuf {
    rocprofiler_sim::host::artifact("gpu_trace_hip").expect("libgpu_trace_hip.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-hip-tel-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The two-GPU program (MI210, MI300X), after 400 ms of host work.
fn scenario() -> Scenario {
    let mut sc = Scenario::from_json(include_str!("scenarios/two_archs.json")).expect("valid");
    for t in &mut sc.threads {
        t.ops.insert(0, Op::SleepUs { us: 400_000 });
    }
    sc
}

fn run(dir: &Path, sysfs: &Path) -> (Outcome, Trace, PathBuf) {
    let path = dir.join("trace.pftrace");
    let spec = RunSpec::new(tool(), scenario())
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", "gpu,telemetry")
        .env("INJECTION_TELEMETRY_PERIOD", "5ms")
        .env(
            "INJECTION_TELEMETRY_LOCK_DIR",
            dir.join("locks").display().to_string(),
        )
        .env(
            gpu_trace_testkit::amdgpu::SYSFS_ROOT_VAR,
            sysfs.display().to_string(),
        )
        .env("RUST_BACKTRACE", "0");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(rocprofiler_sim::host::run_isolated(&spec));
    });
    let out = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the traced program did not finish within 120 s")
        .expect("simulator run");
    assert!(out.report.configure_called, "{}", out.stderr);
    assert!(
        out.report.violations.is_empty(),
        "{:#?}",
        out.report.violations
    );
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("trace: {e:?}\n{}", out.stderr));
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert!(t.kernels().count() > 0, "GPU work is traced as usual");
    (out, t, path)
}

fn our_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace"))
        .collect()
}

#[test]
fn amdgpu_sysfs_telemetry_for_each_gpu_matched_by_bus_id() {
    let dir = tmpdir("sysfs");
    let sysfs = dir.join("sys");
    // The simulator puts GPU n at 0000:0(n+1):00.0; a third card it does not use.
    gpu_trace_testkit::amdgpu::write_fake_tree(
        &sysfs,
        &[
            ("0000:01:00.0", 1700, 64, 210_000_000, 48_000, 4 << 30),
            ("0000:02:00.0", 2100, 91, 650_500_000, 61_250, 96 << 30),
            ("0000:03:00.0", 999, 1, 1, 1, 1),
        ],
    )
    .unwrap();
    let (out, t, path) = run(&dir, &sysfs);
    assert!(our_lines(&out.stderr).is_empty(), "{}", out.stderr);
    let on = |gpu: i64, name: &str| -> Vec<f64> {
        t.counters
            .iter()
            .filter(|c| c.gpu_id == gpu && &*c.name == name)
            .map(|c| c.value)
            .collect()
    };
    for (gpu, sclk, busy, watts, celsius, vram) in [
        (0, 1700.0, 64.0, 210.0, 48.0, (4u64 << 30) as f64),
        (1, 2100.0, 91.0, 650.5, 61.25, (96u64 << 30) as f64),
    ] {
        let clocks = on(gpu, "clocks.sm");
        assert!(clocks.len() >= 20, "GPU {gpu}: {} samples", clocks.len());
        assert!(clocks.iter().all(|&v| v == sclk), "GPU {gpu}: {clocks:?}");
        assert_eq!(on(gpu, "clocks.mem")[0], 1300.0);
        assert_eq!(on(gpu, "utilization.gpu")[0], busy);
        assert_eq!(on(gpu, "power.draw")[0], watts);
        assert_eq!(on(gpu, "temperature.gpu")[0], celsius);
        assert_eq!(on(gpu, "memory.used")[0], vram);
    }
    assert!(
        t.counters.iter().all(|c| c.gpu_id < 2),
        "the unused card is not read"
    );
    validate(&path);
    if let Some(tables) = tp_tables(
        &path,
        "select t.gpu_id, max(c.value) from gpu_counter_track t join counter c on c.track_id = t.id \
           where t.name = 'gpufreq' group by t.gpu_id order by t.gpu_id;",
    ) {
        assert_eq!(
            tables[0],
            [["0", "1700000.000000"], ["1", "2100000.000000"]],
            "a frequency track per GPU, kHz"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_amdgpu_sysfs_one_line_and_the_program_runs_normally() {
    let dir = tmpdir("nosysfs");
    let empty = dir.join("sys");
    std::fs::create_dir_all(&empty).unwrap();
    let (out, t, _) = run(&dir, &empty);
    let want = format!(
        "gpu-trace: no amdgpu card under {}; no GPU telemetry (clocks, power, utilisation)",
        empty.join("class/drm").display()
    );
    assert_eq!(our_lines(&out.stderr), [want.as_str()], "{}", out.stderr);
    // No telemetry: only the busy % every trace with GPU work carries, derived from the
    // activity (core's tests check it).
    assert!(
        t.counters.iter().all(|c| c.name.ends_with(" busy")),
        "{:?}",
        t.counters.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
