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
