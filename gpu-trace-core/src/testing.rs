//! Helpers for this workspace's tests. Not an API.

use std::path::Path;
use std::process::Command;

/// Runs the official-schema validator (`tools/validate_pftrace.py`) on
/// `path` when `GPU_TRACE_PYTHON` names a Python with `perfetto==0.59.1`
/// (CI sets it), and panics with its output if it rejects the trace.
/// Without the variable it says that it skipped.
pub fn validate(path: &Path) {
    let Ok(py) = std::env::var("GPU_TRACE_PYTHON") else {
        eprintln!(
            "schema validation skipped: set GPU_TRACE_PYTHON to a python with perfetto==0.59.1"
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/validate_pftrace.py");
    let out = Command::new(py)
        .arg(script)
        .arg(path)
        .output()
        .expect("the validator runs");
    assert!(
        out.status.success(),
        "validator rejected {}:\n{}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
