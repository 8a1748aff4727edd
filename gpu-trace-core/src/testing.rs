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

/// Perfetto's own trace processor (`../shared/tools/perfetto/`, or the
/// binary `GPU_TRACE_TP` names), the engine of the UI. `None`, after saying
/// "skipped" on stderr, where there is none.
pub fn trace_processor() -> Option<std::path::PathBuf> {
    let p = match std::env::var_os("GPU_TRACE_TP") {
        Some(p) => std::path::PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/tools/perfetto/trace_processor_shell"),
    };
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "trace processor checks skipped: no {} (set GPU_TRACE_TP)",
            p.display()
        );
        None
    }
}

/// Runs `sql` on `trace` in the trace processor and returns the rows of
/// the last statement, each as its CSV fields (quotes removed). `None` when
/// skipped; panics when the trace processor fails.
pub fn tp_query(trace: &Path, sql: &str) -> Option<Vec<Vec<String>>> {
    let tp = trace_processor()?;
    let dir = std::env::temp_dir().join(format!("gpu-trace-tp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let q = dir.join(format!(
        "q-{}.sql",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::write(&q, sql).expect("query file");
    let out = Command::new(tp)
        .arg("-q")
        .arg(&q)
        .arg(trace)
        .output()
        .expect("the trace processor runs");
    let _ = std::fs::remove_file(&q);
    assert!(
        out.status.success(),
        "trace processor failed on {}:\n{}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // The output holds one CSV table per statement, separated by blank
    // lines; the last one is the answer.
    let last = text.trim_end().rsplit("\n\n").next().unwrap_or_default();
    let mut lines = last.lines();
    lines.next(); // header
    Some(
        lines
            .map(|l| {
                l.split(',')
                    .map(|f| f.trim_matches('"').to_owned())
                    .collect()
            })
            .collect(),
    )
}

/// The trace processor's `stats` rows that are errors or data losses, as
/// `name[idx]=value`. `None` when skipped.
pub fn tp_problems(trace: &Path) -> Option<Vec<String>> {
    let rows = tp_query(
        trace,
        "select name, idx, severity, value from stats \
         where value > 0 and severity in ('error', 'data_loss');",
    )?;
    Some(
        rows.into_iter()
            .map(|r| format!("{}[{}]={} ({})", r[0], r[1], r[3], r[2]))
            .collect(),
    )
}
