//! What the tool says about the values it is given, end to end: the real
//! `libgpu_trace_cuda.so` under the fake CUPTI (`cupti-sim`), with hostile
//! environment values. Each of our lines stays one line starting with
//! `gpu-trace:`, with no control character reaching the terminal, and a long
//! value is cut and quoted once; the program runs on with its exit code.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{Outcome, RunSpec, Scenario};
use std::path::PathBuf;
use std::time::Duration;

cupti_sim::child_entry!();

/// The longest line these tests accept: a line of several paths tried may
/// be long, but not past the log's limit.
const LONGEST: usize = gpu_trace_model::log::LINE_LIMIT + 40;

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-echo-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scenario() -> Scenario {
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "k".into(),
            symbol: "_Z1kv".into(),
            registers: 32,
            static_smem: 0,
            duration_us: 10,
        }],
        threads: vec![ThreadSpec {
            ops: vec![
                Op::Launch {
                    kernel: "k".into(),
                    grid: [4, 1, 1],
                    block: [64, 1, 1],
                    stream: 0,
                    layer: Layer::Runtime,
                },
                Op::DeviceSync,
                // Time for telemetry's first sample.
                Op::SleepUs { us: 200_000 },
            ],
        }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

/// The program traced with `env` (after a trace path and a control-socket
/// directory of its own).
fn run(tag: &str, env: &[(&str, String)]) -> Outcome {
    let dir = tmpdir(tag);
    let mut spec = RunSpec::new(tool(), scenario())
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, v.clone());
    }
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// Every line is ours, whole and printable: returns them.
fn our_lines(stderr: &str) -> Vec<&str> {
    let lines: Vec<&str> = stderr.lines().collect();
    for l in &lines {
        let head: String = l.chars().take(300).collect();
        assert!(l.starts_with("gpu-trace: "), "not one of ours: {head:?}");
        assert!(l.len() <= LONGEST, "a line of {} bytes: {head:?}…", l.len());
        assert!(
            !l.chars().any(char::is_control),
            "a control character reaches the terminal: {head:?}"
        );
    }
    lines
}

#[test]
fn bad_settings_are_said_in_one_short_line_each_and_verbose_stays_off() {
    // Each under the kernel's limit of one variable (128 KiB).
    // A word no list knows, whose start is found once in a line only if
    // quoted once.
    let trace: String = (0..12_000).map(|i| format!("w{i:06}x")).collect();
    let out = run(
        "settings",
        &[
            ("INJECTION_VERBOSE", "garbage".into()),
            // No line about this host's NVML.
            ("INJECTION_TELEMETRY_PERIOD", "off".into()),
            ("INJECTION_TRACE", trace.clone()),
            ("INJECTION_MODE", "file\n\u{1b}[31mgpu-trace: forged".into()),
            ("INJECTION_BUFFER_SIZE", "9".repeat(120_000)),
            (
                "INJECTION_DELAY",
                format!("1s\u{1b}]0;title\u{7}{}", "s".repeat(100_000)),
            ),
        ],
    );
    let lines = our_lines(&out.stderr);
    assert_eq!(
        lines.len(),
        5,
        "one line per bad setting, and no verbose lines:\n{}",
        lines.join("\n")
    );
    assert!(lines.contains(
        &"gpu-trace: INJECTION_VERBOSE=\"garbage\": expected 1/0, true/false, yes/no or on/off; using off (no verbose logging)"
    ));
    assert!(lines.contains(
        &"gpu-trace: INJECTION_MODE=\"file\\n\\u{1b}[31mgpu-trace: forged\": expected file, system or both; using file"
    ));
    let t = lines
        .iter()
        .find(|l| l.starts_with("gpu-trace: INJECTION_TRACE="))
        .expect("INJECTION_TRACE's line");
    assert_eq!(
        t.matches(&trace[..64]).count(),
        1,
        "INJECTION_TRACE's value is quoted once: {t}"
    );
    assert!(t.contains("…(96000 bytes)"), "{t}");
    for l in &lines {
        assert!(l.len() < 800, "a long value is cut: {} bytes", l.len());
    }
}

#[test]
fn a_cupti_path_with_control_characters_is_said_escaped_and_cut() {
    let path = format!("/nonexistent/\u{1b}[2J\nlibcupti{}.so", "q".repeat(100_000));
    let out = run("cupti", &[("GPU_TRACE_CUPTI_PATH", path.clone())]);
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", lines.join("\n"));
    assert!(
        lines[0].starts_with(
            "gpu-trace: CUPTI is not usable (libcupti not found; tried: /nonexistent/\\u{1b}[2J\\nlibcupti"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(&format!("…({} bytes)", path.len())),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with("; the application runs untraced"));
}

#[test]
fn an_nvml_path_with_control_characters_is_said_escaped_and_cut() {
    let path = format!(
        "/nonexistent/\u{1b}]0;owned\u{7}\r\nlibnvidia-ml{}",
        "z".repeat(50_000)
    );
    let out = run(
        "nvml",
        &[
            ("GPU_TRACE_NVML_PATH", path.clone()),
            ("INJECTION_TRACE", "gpu,api,telemetry".into()),
            ("INJECTION_TELEMETRY_PERIOD", "5ms".into()),
        ],
    );
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", lines.join("\n"));
    assert!(
        lines[0].starts_with(
            "gpu-trace: NVML is not usable (libnvidia-ml not found; tried: /nonexistent/\\u{1b}]0;owned\\u{7}\\r\\nlibnvidia-ml"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(&format!("…({} bytes)", path.len())),
        "{}",
        lines[0]
    );
}
