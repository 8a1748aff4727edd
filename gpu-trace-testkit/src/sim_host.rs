//! What the simulators' hosts share (`cupti_sim::host`,
//! `rocprofiler_sim::host`): finding a library cargo built beside the test,
//! and running one traced program in a child process, the current test
//! executable re-run with only its `child_entry!` test selected.
//!
//! Each run gets a fresh process, like a real application, so a tool's
//! `static` state starts empty and a crash in it fails the run instead of
//! the test runner.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// A simulator's names for its child runs.
#[derive(Debug, Clone, Copy)]
pub struct Simulator {
    /// The crate, for messages and temporary folders (`cupti-sim`).
    pub name: &'static str,
    /// Its `child_entry!` macro's path, for the message of a child that
    /// wrote no report (`cupti_sim::child_entry!()`).
    pub macro_path: &'static str,
    /// The test `child_entry!` defines.
    pub child_test: &'static str,
    /// The variable that hands the child its spec's path (and turns the
    /// test process into a host).
    pub spec_env: &'static str,
    /// The variable that tells the child where to write its report.
    pub report_env: &'static str,
}

/// A finished child run.
#[derive(Debug, Clone)]
pub struct ChildRun<R> {
    /// The simulator's report.
    pub report: R,
    /// The child's stderr (the tool's and the simulator's messages).
    pub stderr: String,
    /// Its exit code.
    pub status: Option<i32>,
}

/// Finds `lib{name}.so` built by cargo next to the running test executable
/// (`target/*/deps`) or one level up.
pub fn artifact(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let file = format!("lib{name}.so");
    let mut tried = Vec::new();
    let mut dir = exe.parent();
    for _ in 0..2 {
        let Some(d) = dir else { break };
        let p = d.join(&file);
        if p.exists() {
            return Ok(p);
        }
        tried.push(p.display().to_string());
        dir = d.parent();
    }
    Err(format!(
        "{file} not built (looked at {}); add its crate as a dev-dependency",
        tried.join(", ")
    ))
}

/// Runs `spec` in a child process of `sim`: writes it as JSON into a
/// fresh folder, re-runs this test executable with only `sim.child_test`
/// selected (`--ignored --exact`: it is ignored in a normal run) and the
/// spec and report variables set, after `setup` has added the simulator's
/// own environment, and reads the report the child wrote.
pub fn run_child<S: Serialize, R: DeserializeOwned>(
    sim: &Simulator,
    spec: &S,
    setup: impl FnOnce(&mut Command),
) -> Result<ChildRun<R>, String> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "{}-{}-{}",
        sim.name,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let spec_path = dir.join("spec.json");
    let report_path = dir.join("report.json");
    std::fs::write(
        &spec_path,
        serde_json::to_vec(spec).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "--ignored",
        "--exact",
        sim.child_test,
        "--nocapture",
        "--test-threads=1",
        "-q",
    ])
    .env(sim.spec_env, &spec_path)
    .env(sim.report_env, &report_path);
    setup(&mut cmd);
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = std::fs::read_to_string(&report_path).map_err(|e| {
        format!(
            "child produced no report ({e}); status {} (does the test file invoke \
             {} at its root?); stdout:\n{}\nstderr:\n{stderr}",
            out.status,
            sim.macro_path,
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    let _ = std::fs::remove_dir_all(&dir);
    let report = serde_json::from_str(&report).map_err(|e| e.to_string())?;
    Ok(ChildRun {
        report,
        stderr,
        status: out.status.code(),
    })
}
