//! `gpu-trace record` refuses bad counter-filter values before running the
//! command: one line naming the flag, exit status 2, and the command never
//! starts.

use std::process::Command;

#[test]
fn a_bad_kernel_filter_value_names_the_flag_and_runs_nothing() {
    let marker = std::env::temp_dir().join(format!("gpu-trace-flags-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    for (flag, value) in [("--kernel-skip", "abc"), ("--kernel-count", "1.5")] {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
            .args(["record", flag, value, "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(
            stderr.trim(),
            format!("gpu-trace: {flag} \"{value}\": expected a whole number of kernels")
        );
        assert!(!marker.exists(), "the command must not run");
    }
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
