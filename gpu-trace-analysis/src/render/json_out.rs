//! The summary as one JSON document: [`Summary`]'s serialisation, trimmed
//! to what the options select.
//!
//! Its top level holds the tables over all processes (those of the one
//! process when there is one), `dropped` and `complete`, as single-file
//! readers of earlier versions expect; `files` says what each trace says of
//! itself and `processes` has each process's tables, each object naming its
//! file.

use super::{Options, Report};
use crate::Summary;
use serde_json::{Map, Value};

/// The keys of a scope's tables that each report holds.
fn keys(r: Report) -> &'static [&'static str] {
    match r {
        Report::Kernels => &["kernels"],
        Report::Memops => &["memops"],
        Report::Api => &["api"],
        Report::Nvtx => &["nvtx"],
        Report::Counters => &["counters", "counters_by_kernel"],
        Report::Devices => &["devices"],
        Report::Streams => &["streams"],
        Report::Threads => &["threads"],
        Report::Idle => &["idle"],
        Report::Temporal => &["temporal"],
        Report::Launches => &["launches", "launch_outliers"],
        // At the top level only (see `render`).
        Report::Telemetry => &["telemetry"],
        Report::Ranks => &["ranks"],
        Report::Verdict => &["verdict"],
    }
}

/// The first `n` rows of a table.
fn truncate(v: &mut Value, n: usize) {
    if let Value::Array(rows) = v {
        rows.truncate(n);
    }
}

/// The rows of the first `n` kernels of the counters by kernel (a kernel's
/// rows are together).
fn first_kernels(v: &mut Value, n: usize) {
    if let Value::Array(rows) = v {
        let mut kernels: Vec<Value> = Vec::new();
        rows.retain(|r| {
            let k = r.get("kernel").cloned().unwrap_or(Value::Null);
            if !kernels.contains(&k) {
                kernels.push(k);
            }
            kernels.len() <= n
        });
    }
}

/// Keeps the tables of a scope that `o` selects, each cut to `o.top` rows.
fn select(m: &mut Map<String, Value>, o: &Options) {
    for r in Report::ALL {
        if matches!(r, Report::Telemetry | Report::Ranks | Report::Verdict) {
            continue;
        }
        for &k in keys(r) {
            if !o.reports.contains(&r) {
                m.remove(k);
                continue;
            }
            let (Some(n), Some(v)) = (o.top, m.get_mut(k)) else {
                continue;
            };
            if k == "counters_by_kernel" {
                first_kernels(v, n);
            } else {
                truncate(v, n);
            }
        }
    }
}

/// Renders the summary as JSON.
pub(crate) fn render(s: &Summary, o: &Options) -> Value {
    // Serialising plain data into a `Value` does not fail (keys are
    // strings, numbers finite or null).
    let mut v = serde_json::to_value(s).unwrap_or_default();
    let Value::Object(top) = &mut v else {
        return v;
    };
    select(top, o);
    for r in [Report::Telemetry, Report::Ranks, Report::Verdict] {
        if !o.reports.contains(&r) {
            top.remove(keys(r)[0]);
        }
    }
    if let Some(Value::Array(procs)) = top.get_mut("processes") {
        for p in procs {
            if let Value::Object(m) = p {
                select(m, o);
            }
        }
    }
    v
}
