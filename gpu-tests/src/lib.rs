//! The GPU test suite's checker.
//!
//! Each test program in `cuda/` and `python/` prints `EXPECT key=value ...`
//! lines stating exactly what it did; `gpu-check` decodes the program's
//! trace with [`gpu_trace_reader`] and compares. The key grammar is in
//! this crate's README; [`check::CASES`] lists the cases.

pub mod activity;
pub mod check;
pub mod expect;
pub mod names;

pub use check::{CASES, Options, Report, check};
pub use expect::Expect;

/// Checks the trace at `trace` against the program output in `expect_text`.
/// A trace that cannot be read or an output without `EXPECT` lines is a
/// failed report, not an error.
pub fn check_files(
    case: &str,
    label: &str,
    trace: &std::path::Path,
    expect_text: &str,
    o: &Options,
) -> Report {
    let exp = match Expect::parse(expect_text) {
        Ok(e) => e,
        Err(e) => {
            let mut r = Report::new(label);
            r.fail(format!("program output: {e}"));
            return r;
        }
    };
    let mut o = o.clone();
    if exp.main.contains_key("memory_steps") {
        // The reader does not decode the memory curve: read it here.
        match std::fs::read(trace) {
            Ok(raw) => o.memory = activity::memory_totals(&raw),
            Err(e) => {
                let mut r = Report::new(label);
                r.fail(format!("cannot read the trace: {e}"));
                return r;
            }
        }
    }
    match gpu_trace_reader::Trace::open_showing_progress(trace, "gpu-check:") {
        Ok(t) => check(case, label, &t, &exp, &o),
        Err(e) => {
            let mut r = Report::new(label);
            r.fail(format!("cannot decode the trace: {e}"));
            r
        }
    }
}
