//! Host side: find the built libraries, load the simulator RTLD_GLOBAL and run a tool, in this
//! process or (preferably) in a fresh child process per run.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use gpu_trace_testkit::sim_host::{Simulator, run_child};

use serde::{Deserialize, Serialize};

use crate::{Report, Scenario};

/// Encoded version of the SDK the simulator pretends to be by default (1.0.0, ROCm 7.0).
pub const DEFAULT_SDK_VERSION: u32 = 10000;

/// Environment variable that turns a test process into a simulator host (see [`child_entry!`]).
pub const CHILD_ENV: &str = "ROCPROFILER_SIM_SPEC";

/// Where the child writes its report.
pub const REPORT_ENV: &str = "ROCPROFILER_SIM_REPORT";

/// Overrides where the simulator library is looked for.
pub const LIBRARY_ENV: &str = "ROCPROFILER_SIM_LIBRARY";

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The tool library (`.so` exporting `rocprofiler_configure`).
    pub tool: PathBuf,
    /// The program.
    pub scenario: Scenario,
    /// Encoded SDK version passed to `rocprofiler_configure` (`10000*major + 100*minor + patch`).
    /// A 0.x value makes the simulator pass a 0.x-layout `client_id` as the old SDK would.
    pub sdk_version: u32,
    /// Extra environment for the child process (e.g. where the tool writes its results).
    pub env: Vec<(String, String)>,
    /// Finalise from an exit handler registered before the tool is loaded, as the real SDK
    /// may, instead of right after the program: handlers the tool registers later (its own,
    /// and its libraries' static destructors) then run first. The report is written before
    /// exit, so problems at exit only show on stderr (`protocol violation: ...`).
    #[serde(default)]
    pub finalize_at_exit: bool,
    /// Run the scenario's first thread on the thread that called `rocprofiler_sim_run`
    /// instead of a thread of its own: a program (a Python one, through ctypes) drives HIP
    /// from its own thread, under its own frames.
    #[serde(default)]
    pub caller_thread: bool,
}

impl RunSpec {
    /// A 1.0.0 run of `tool` on `scenario`.
    pub fn new(tool: impl Into<PathBuf>, scenario: Scenario) -> Self {
        Self {
            tool: tool.into(),
            scenario,
            sdk_version: DEFAULT_SDK_VERSION,
            env: Vec::new(),
            finalize_at_exit: false,
            caller_thread: false,
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
    /// The simulator's report.
    pub report: Report,
    /// The child's stderr (the tool's and the simulator's messages).
    pub stderr: String,
}

pub use gpu_trace_testkit::sim_host::artifact;

/// The simulator's names for its child runs.
const SIM: Simulator = Simulator {
    name: "rocprofiler-sim",
    macro_path: "rocprofiler_sim::child_entry!()",
    child_test: CHILD_TEST,
    spec_env: CHILD_ENV,
    report_env: REPORT_ENV,
};

/// Where the simulator library is.
pub fn simulator_library() -> Result<PathBuf, String> {
    match std::env::var_os(LIBRARY_ENV) {
        Some(p) => Ok(PathBuf::from(p)),
        None => artifact("rocprofiler_sim"),
    }
}

/// Runs `spec` in this process: loads the simulator RTLD_NOW|RTLD_GLOBAL, which loads the
/// tool. A process can host one run only (the tool's statics, like the real SDK's
/// configuration, are per process): prefer [`run_isolated`].
pub fn run_in_process(spec: &RunSpec) -> Result<Report, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    type Entry = unsafe extern "C" fn(
        *const c_char,
        unsafe extern "C" fn(*const c_char, *mut c_void),
        *mut c_void,
    ) -> c_int;
    unsafe extern "C" fn receive(json: *const c_char, data: *mut c_void) {
        // SAFETY: `data` is the String below.
        let out = unsafe { &mut *data.cast::<String>() };
        // SAFETY: `json` is a NUL-terminated string from the simulator.
        *out = unsafe { CStr::from_ptr(json) }
            .to_string_lossy()
            .into_owned();
    }
    let lib_path = simulator_library()?;
    // SAFETY: loading our own simulator library; its initialisers do nothing.
    let lib = unsafe { Library::open(Some(&lib_path), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| format!("loading {}: {e}", lib_path.display()))?;
    // SAFETY: the simulator exports this entry point with this prototype.
    let entry = unsafe { lib.get::<Entry>(b"rocprofiler_sim_run\0") }.map_err(|e| e.to_string())?;
    let json = CString::new(serde_json::to_string(spec).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    // SAFETY: valid string, callback and data pointer for the duration of the call.
    let rc = unsafe { entry(json.as_ptr(), receive, (&mut out as *mut String).cast()) };
    // The SDK stays loaded until exit, as the real one does.
    std::mem::forget(lib);
    if rc != 0 {
        return Err(format!("simulator failed ({rc}): {out}"));
    }
    serde_json::from_str(&out).map_err(|e| format!("bad report: {e}: {out}"))
}

/// Name of the test that [`child_entry!`] defines.
pub const CHILD_TEST: &str = "rocprofiler_sim_child";

/// Runs `spec` in a child process: the current test executable re-run with only the
/// [`child_entry!`] test selected and [`CHILD_ENV`] set. Each run gets a fresh process, like a
/// real application, so the tool's `static` state starts empty; a crash in the tool fails this
/// call instead of the test runner.
pub fn run_isolated(spec: &RunSpec) -> Result<Outcome, String> {
    let run = run_child(&SIM, spec, |cmd| {
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
    })?;
    Ok(Outcome {
        report: run.report,
        stderr: run.stderr,
    })
}

/// The body of the [`child_entry!`] test, run only in the child that [`run_isolated`] starts:
/// runs the spec in this process and writes the report; panics unless [`CHILD_ENV`] is set
/// (a hand-run `--ignored` would otherwise pass without doing anything).
pub fn serve_child() {
    let spec_path = std::env::var_os(CHILD_ENV)
        .expect("run by rocprofiler_sim::host::run_isolated, which sets its spec variable");
    let result = (|| -> Result<(), String> {
        let spec: RunSpec = serde_json::from_slice(
            &std::fs::read(Path::new(&spec_path)).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let report = run_in_process(&spec)?;
        let path = std::env::var_os(REPORT_ENV).ok_or("ROCPROFILER_SIM_REPORT unset")?;
        std::fs::write(
            path,
            serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())
    })();
    if let Err(e) = result {
        eprintln!("rocprofiler-sim child: {e}");
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
        #[ignore = "the traced program of this file's simulator tests; runs only in their child processes"]
        fn rocprofiler_sim_child() {
            $crate::host::serve_child();
        }
    };
}
