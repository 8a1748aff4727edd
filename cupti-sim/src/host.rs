//! Host side: find the built libraries and run a tool under the fake, in a fresh child process
//! per run (the way `rocprofiler_sim::host` does for HIP).

use std::ffi::{CString, c_char, c_int};
use std::path::{Path, PathBuf};

use gpu_trace_testkit::sim_host::{Simulator, run_child};

use serde::{Deserialize, Serialize};

use crate::{Report, Scenario};

/// Environment variable that turns a test process into a host (see [`child_entry!`]).
pub const CHILD_ENV: &str = "CUPTI_SIM_SPEC";

/// Where the fake writes its report at exit.
pub const REPORT_ENV: &str = "CUPTI_SIM_REPORT";

/// Overrides where the fake library is looked for.
pub const LIBRARY_ENV: &str = "CUPTI_SIM_LIBRARY";
/// Names another profiler that subscribed to CUPTI before the injection loaded (as nsys or
/// torch.profiler would): the injection's subscription then fails with
/// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`, and `cuptiSubscribe_v2` gives this name.
pub const HELD_BY_ENV: &str = "CUPTI_SIM_HELD_BY";

/// Name of the test that [`child_entry!`] defines.
pub const CHILD_TEST: &str = "cupti_sim_child";

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The injection library (`CUDA_INJECTION64_PATH`, and `NVTX_INJECTION64_PATH` with
    /// [`RunSpec::nvtx`]).
    pub tool: PathBuf,
    /// The program.
    pub scenario: Scenario,
    /// Point NVTX at the tool too.
    pub nvtx: bool,
    /// Extra environment for the child.
    pub env: Vec<(String, String)>,
}

impl RunSpec {
    /// A run of `tool` on `scenario`, with NVTX pointed at the tool.
    pub fn new(tool: impl Into<PathBuf>, scenario: Scenario) -> Self {
        Self {
            tool: tool.into(),
            scenario,
            nvtx: true,
            env: Vec::new(),
        }
    }

    /// Sets an environment variable of the child.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// A finished isolated run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The fake's report.
    pub report: Report,
    /// The child's stderr (the tool's and the fake's messages).
    pub stderr: String,
    /// Its exit code.
    pub status: Option<i32>,
}

pub use gpu_trace_testkit::sim_host::artifact;

/// The fake's names for its child runs.
const SIM: Simulator = Simulator {
    name: "cupti-sim",
    macro_path: "cupti_sim::child_entry!()",
    child_test: CHILD_TEST,
    spec_env: CHILD_ENV,
    report_env: REPORT_ENV,
};

/// Where the fake library is.
pub fn fake_library() -> Result<PathBuf, String> {
    match std::env::var_os(LIBRARY_ENV) {
        Some(p) => Ok(PathBuf::from(p)),
        None => artifact("cupti_sim"),
    }
}

/// [`run_isolated`] for tests: on a thread, failing (panicking) if the child does not finish
/// within `limit` (a hang at exit is a bug the suites look for), if the run could not start, or
/// if the tool broke the protocol: `InitializeInjection` did not return 1, a violation was
/// recorded, records were left undelivered, or the program's exit status was not 0.
pub fn run_checked(spec: RunSpec, limit: std::time::Duration) -> Outcome {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run_isolated(&spec));
    });
    let out = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the traced program did not finish within {limit:?}"))
        .expect("fake CUPTI run");
    let r = &out.report;
    assert_eq!(r.initialize_injection, Some(1), "{}", out.stderr);
    assert!(
        r.violations.is_empty(),
        "{:#?}\n{}",
        r.violations,
        out.stderr
    );
    assert_eq!(r.records_undelivered, 0, "records never flushed: {r:#?}");
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    out
}

/// Runs `spec` in a child process: the current test executable re-run with only the
/// [`child_entry!`] test selected (`--ignored --exact`: it is ignored in a normal run). The
/// child's environment names the fake as CUPTI
/// (`GPU_TRACE_CUPTI_PATH`) and the tool as the CUDA and NVTX injections.
pub fn run_isolated(spec: &RunSpec) -> Result<Outcome, String> {
    let fake = fake_library()?;
    let run = run_child(&SIM, spec, |cmd| {
        cmd.env("GPU_TRACE_CUPTI_PATH", &fake)
            .env("CUDA_INJECTION64_PATH", &spec.tool)
            .env_remove("NVTX_INJECTION64_PATH");
        if spec.nvtx {
            cmd.env("NVTX_INJECTION64_PATH", &spec.tool);
        }
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
    })?;
    Ok(Outcome {
        report: run.report,
        stderr: run.stderr,
        status: run.status,
    })
}

/// The body of the [`child_entry!`] test, run only in the child that [`run_isolated`] starts:
/// panics unless [`CHILD_ENV`] is set (a hand-run `--ignored` would otherwise pass without
/// doing anything). It loads the fake RTLD_NOW|RTLD_GLOBAL (as an application linked against libcuda has
/// it) and runs the spec's program. The report is written by the fake's exit handler.
pub fn serve_child() {
    let spec_path = std::env::var_os(CHILD_ENV)
        .expect("run by cupti_sim::host::run_isolated, which sets CUPTI_SIM_SPEC");
    let result = (|| -> Result<(), String> {
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        type Entry = unsafe extern "C" fn(*const c_char) -> c_int;
        let json = std::fs::read(Path::new(&spec_path)).map_err(|e| e.to_string())?;
        let json = CString::new(json).map_err(|e| e.to_string())?;
        let lib_path = fake_library()?;
        // SAFETY: loading our own fake driver; its initialisers are Rust's and do nothing.
        let lib = unsafe { Library::open(Some(&lib_path), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| format!("loading {}: {e}", lib_path.display()))?;
        // SAFETY: the fake exports this entry point with this prototype.
        let entry = unsafe { lib.get::<Entry>(b"cupti_sim_run\0") }.map_err(|e| e.to_string())?;
        // SAFETY: a valid NUL-terminated string for the duration of the call.
        let rc = unsafe { entry(json.as_ptr()) };
        // The driver stays loaded until exit, as the real one does.
        std::mem::forget(lib);
        if rc != 0 {
            return Err(format!("the fake could not run the program ({rc})"));
        }
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("cupti-sim child: {e}");
        std::process::exit(3);
    }
}

/// Defines the test that [`host::run_isolated`](crate::host::run_isolated) re-runs in a child
/// process. Invoke once, at the root of an integration-test file. The test is `#[ignore]`d, so a
/// normal run does not count it as a pass; the child selects it with `--ignored --exact`.
#[macro_export]
macro_rules! child_entry {
    () => {
        #[test]
        #[ignore = "the traced program of this file's cupti-sim tests; runs only in their child processes"]
        fn cupti_sim_child() {
            $crate::host::serve_child();
        }
    };
}
