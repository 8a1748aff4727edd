//! `gpu-trace record` refuses bad values before running the command: one
//! line naming the flag as typed (or the variable, when it came from the
//! environment) and what was expected, exit status 2, and the command never
//! starts.

use std::path::PathBuf;
use std::process::Command;

fn marker(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("gpu-trace-flags-{}-{tag}", std::process::id()))
}

/// Runs `record ARGS -- touch MARKER` with `env`; returns the status and stderr.
fn refused(args: &[&str], env: &[(&str, &str)], tag: &str) -> (Option<i32>, String) {
    let m = marker(tag);
    let _ = std::fs::remove_file(&m);
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-trace"));
    c.arg("record").args(args).arg("--").arg("touch").arg(&m);
    for v in [
        "INJECTION_QUEUE_SIZE",
        "INJECTION_MODE",
        "GPU_TRACE_LIB_DIR",
    ] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(!m.exists(), "{args:?}: the command must not run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    )
}

#[test]
fn a_bad_kernel_filter_value_names_the_flag_and_runs_nothing() {
    for (flag, value) in [("--kernel-skip", "abc"), ("--kernel-count", "1.5")] {
        let (code, stderr) = refused(&[flag, value], &[], "filter");
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(
            stderr,
            format!("gpu-trace: {flag} \"{value}\": expected a whole number of kernels")
        );
    }
}

#[test]
fn every_bad_value_is_refused_with_the_parsers_message() {
    let trace = "a list of gpu, api, markers (also spelt nvtx or roctx), counters, telemetry, uvm, memory, python, all";
    let cases: &[(&[&str], &str)] = &[
        (
            // The value is quoted once; a word of a longer list is named apart.
            &["-t", "bogus"],
            &format!("-t \"bogus\": expected {trace}"),
        ),
        (
            &["--trace=gpu,bogus"],
            &format!("--trace \"gpu,bogus\": expected {trace}; \"bogus\" is none of these"),
        ),
        (&["-tbogus"], &format!("-t \"bogus\": expected {trace}")),
        (
            &["--mode", "weird"],
            "--mode \"weird\": expected file, system or both",
        ),
        (
            &["--buffer-size", "9X"],
            "--buffer-size \"9X\": expected a size like 65536 (KiB), 64M or 1G",
        ),
        (
            &["--buffer-size", "16"],
            "--buffer-size \"16\": expected a size between 1M and 4G",
        ),
        (
            &["--flush-period-ms", "5"],
            "--flush-period-ms \"5\": expected milliseconds between 100 and 600000",
        ),
        (
            &["--api-layer", "foo"],
            "--api-layer \"foo\": expected driver or runtime",
        ),
        (
            &["--capture-range", "nvtx"],
            "--capture-range \"nvtx\": expected none, cudaProfilerApi or nvtx:NAME",
        ),
        (
            &["-m", "sm__x.sum,bad metric!"],
            "-m \"bad metric!\": expected metric names of letters, digits, '_', '.', ':' or '-'",
        ),
        (
            &["-o", "t-%z"],
            "-o \"t-%z\": expected a path whose % escapes are %p (pid), %n (program), %h (host), %q{VAR} (environment variable VAR) or %%",
        ),
        (
            &["--delay", "soon"],
            "--delay \"soon\": expected a duration up to 7d, such as 30s, 500ms, 2m or 1h",
        ),
        (
            // The other variable a problem names is named as its flag too.
            &["--window", "1s", "--every", "1s"],
            "--window \"1s with --every 1s\": expected a window shorter than --every",
        ),
        (
            &["--capture-range", "cudaProfilerApi", "--capture-count", "0"],
            "--capture-count \"0\": expected a whole number of ranges from 1",
        ),
        (
            &["--lib-dir", "/proc/self"],
            "--lib-dir /proc/self: holds neither libgpu_trace_cuda.so nor libgpu_trace_hip.so",
        ),
    ];
    for (i, (args, msg)) in cases.iter().enumerate() {
        let (code, stderr) = refused(args, &[], &format!("case{i}"));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr, format!("gpu-trace: {msg}"), "{args:?}");
    }
}

#[test]
fn a_bad_value_in_the_environment_names_the_variable() {
    let (code, stderr) = refused(&[], &[("INJECTION_QUEUE_SIZE", "lots")], "env");
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "gpu-trace: INJECTION_QUEUE_SIZE=\"lots\" (from the environment): expected a size between 64K and 1G, like 32M"
    );
    // A flag replaces the variable, and only the flag is checked.
    let (code, stderr) = refused(&["--mode", "bad"], &[("INJECTION_MODE", "file")], "both");
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "gpu-trace: --mode \"bad\": expected file, system or both"
    );
}

#[test]
fn a_capture_count_without_a_capture_range_is_refused() {
    // As a flag, clap says what it needs.
    let (code, stderr) = refused(&["--capture-count", "3"], &[], "count-flag");
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--capture-range <none|cudaProfilerApi|nvtx:NAME>"),
        "{stderr}"
    );
    // From the environment, the variable is named.
    let (code, stderr) = refused(&[], &[("INJECTION_CAPTURE_COUNT", "3")], "count-env");
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "gpu-trace: INJECTION_CAPTURE_COUNT=\"3\" (from the environment): expected a capture range to count (INJECTION_CAPTURE_RANGE=cudaProfilerApi or nvtx:NAME), and none is set"
    );
}

#[test]
fn a_command_that_cannot_run_gets_127_and_a_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args(["record", "--no-stats", "--", "/no/such/program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "gpu-trace: cannot run \"/no/such/program\": No such file or directory (os error 2)"
        ),
        "{stderr}"
    );
}

/// The filter's glob flags too: a value without a glob (or a name-base
/// prefix without one) is refused, naming the flag and the value.
#[test]
fn a_bad_glob_flag_value_names_the_flag_and_runs_nothing() {
    let marker = std::env::temp_dir().join(format!("gpu-trace-globs-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    for (flag, value, expected) in [
        (
            "--nvtx-include",
            ",",
            "comma-separated NVTX/roctx range-name globs",
        ),
        (
            "--nvtx-exclude",
            " ",
            "comma-separated NVTX/roctx range-name globs",
        ),
        (
            "--kernels",
            "gemm*,demangled:",
            "comma-separated kernel-name globs",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
            .args(["record", flag, value, "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let want = format!("gpu-trace: {flag} {value:?}: expected {expected}");
        assert!(stderr.trim().starts_with(&want), "{stderr}\nwanted {want}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!marker.exists(), "the command must not run");
    }
}

/// Good filter flags reach the command as the injection's variables.
#[test]
fn the_filter_flags_become_the_injections_variables() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .args([
            "record",
            "--no-stats",
            "--kernels",
            "function:ns::gemm",
            "--nvtx-include",
            "train*",
            "--nvtx-exclude",
            "*backward*",
            "--kernel-skip",
            "1",
            "--kernel-count",
            "2",
            "--",
            "env",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in [
        "INJECTION_KERNEL_FILTER=function:ns::gemm",
        "INJECTION_KERNEL_NVTX_INCLUDE=train*",
        "INJECTION_KERNEL_NVTX_EXCLUDE=*backward*",
        "INJECTION_KERNEL_SKIP=1",
        "INJECTION_KERNEL_COUNT=2",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "{line} missing:\n{stdout}"
        );
    }
}
