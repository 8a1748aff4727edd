//! A setuid program that loads `libgpu_trace_hip.so`, run by another
//! user under the simulated rocprofiler-sdk: gpu-trace does not start.
//! The test process (root, as CI runs) makes a copy of this test
//! executable setuid root and runs it as `nobody`; without root, or where
//! setuid programs do not run setuid, it says on stderr that it is
//! skipped.

use gpu_trace_testkit::users::{SharedTmp, as_other, can_switch, exe_copy, setuid_works};
use rocprofiler_sim::{RunSpec, Scenario};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

rocprofiler_sim::child_entry!();

/// The caller's environment asks root to write a trace and append to a
/// record log where the caller cannot, and names a sysfs tree: gpu-trace
/// declines the tool (rocprofiler-sdk gets no configuration from it), says
/// why in one line, and the program runs as it would without it.
#[test]
fn in_a_setuid_program_gpu_trace_stays_off() {
    if !can_switch("in_a_setuid_program_gpu_trace_stays_off") {
        return;
    }
    let tmp = SharedTmp::new("hip-setuid");
    if !setuid_works(&tmp) {
        eprintln!(
            "in_a_setuid_program_gpu_trace_stays_off: skipped: setuid programs do not run setuid in {} (a nosuid mount, or no_new_privs)",
            tmp.path().display()
        );
        return;
    }
    let exe = exe_copy(&tmp, true);
    let roots = tmp.join("root-only");
    std::fs::create_dir(&roots).unwrap();
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o700)).unwrap();
    let log = roots.join("record.log");
    std::fs::write(&log, "root's\n").unwrap();
    let run = tmp.join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tool = rocprofiler_sim::host::artifact("gpu_trace_hip").expect("libgpu_trace_hip.so built");
    let spec = run.join("spec.json");
    let report = run.join("report.json");
    let s = RunSpec::new(&tool, Scenario::default_scenario());
    std::fs::write(&spec, serde_json::to_vec(&s).unwrap()).unwrap();
    let out = as_other(Command::new(&exe).args([
        "--ignored",
        "--exact",
        "rocprofiler_sim_child",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]))
    .current_dir(&run)
    .env(rocprofiler_sim::host::CHILD_ENV, &spec)
    .env("ROCPROFILER_SIM_REPORT", &report)
    .env(
        rocprofiler_sim::host::LIBRARY_ENV,
        rocprofiler_sim::host::simulator_library().unwrap(),
    )
    .env("INJECTION_OUTPUT", roots.join("trace.pftrace"))
    .env("GPU_TRACE_RECORD_LOG", &log)
    .env("GPU_TRACE_SYSFS_ROOT", &roots)
    .env("RUST_BACKTRACE", "0")
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !roots.join("trace.pftrace").exists(),
        "root wrote a trace where the other user asked\n{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "root's\n",
        "root appended to its own file for the other user\n{stderr}"
    );
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace"))
        .collect();
    assert_eq!(
        ours,
        [
            "gpu-trace: this program runs setuid, setgid or with file capabilities (AT_SECURE); gpu-trace stays off in this process and reads none of its settings, which come from the environment of whoever started it"
        ],
        "{stderr}"
    );
    let r: rocprofiler_sim::Report =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert!(r.configure_called, "{stderr}");
    assert!(!r.configure_accepted, "the tool declined");
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
