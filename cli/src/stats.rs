//! `gpu-trace stats`: nsys-stats-like summaries of a trace.

use gpu_trace_reader::{Stage, Trace};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Duration statistics of one group (a kernel name, an API function ...).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// Group name.
    pub(crate) name: String,
    /// Number of instances.
    pub(crate) count: u64,
    /// Sum of durations, ns.
    pub(crate) total: u64,
    /// Mean, ns.
    pub(crate) avg: f64,
    /// Median, ns.
    pub(crate) median: u64,
    /// Minimum, ns.
    pub(crate) min: u64,
    /// Maximum, ns.
    pub(crate) max: u64,
    /// Standard deviation, ns.
    pub(crate) stddev: f64,
    /// Bytes (memory operations), summed.
    pub(crate) bytes: Option<u64>,
}

fn rows<'a>(items: impl Iterator<Item = (&'a str, u64, Option<u64>)>) -> Vec<Row> {
    let mut groups: BTreeMap<&str, (Vec<u64>, Option<u64>)> = BTreeMap::new();
    for (name, dur, bytes) in items {
        let g = groups.entry(name).or_default();
        g.0.push(dur);
        if let Some(b) = bytes {
            *g.1.get_or_insert(0) += b;
        }
    }
    let mut out: Vec<Row> = groups
        .into_iter()
        .map(|(name, (mut d, bytes))| {
            d.sort_unstable();
            let n = d.len() as f64;
            let total: u64 = d.iter().sum();
            let avg = total as f64 / n;
            let var = d.iter().map(|&x| (x as f64 - avg).powi(2)).sum::<f64>() / n;
            Row {
                name: name.to_owned(),
                count: d.len() as u64,
                total,
                avg,
                median: d[d.len() / 2],
                min: d[0],
                max: d[d.len() - 1],
                stddev: var.sqrt(),
                bytes,
            }
        })
        .collect();
    out.sort_by(|a, b| b.total.cmp(&a.total).then(a.name.cmp(&b.name)));
    out
}

/// All summaries of one trace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// Kernels by name.
    pub(crate) kernels: Vec<Row>,
    /// Copies and memsets by name ("Memcpy HtoD", "Memset").
    pub(crate) memory: Vec<Row>,
    /// API calls by function.
    pub(crate) api: Vec<Row>,
    /// NVTX / roctx ranges by text (slices without a GPU API).
    pub(crate) ranges: Vec<Row>,
    /// Per-kernel counters: name → (samples, mean, min, max).
    pub(crate) counters: Vec<(String, u64, f64, f64, f64)>,
    /// Everything lost, by kind: the tool's own counts (from its summary
    /// line) and the tracing service's (`perfetto_*`, from its statistics).
    /// `None` when the trace has no summary line: it was not finalised, so
    /// what was lost is unknown.
    pub(crate) losses: Option<Vec<(String, u64)>>,
    /// Devices.
    pub(crate) devices: Vec<String>,
    /// API slices whose submission arrow points at GPU work that is not in
    /// the trace: (name, start ns), in trace order.
    pub(crate) dangling: Vec<(String, u64)>,
}

/// Summarises `t`.
pub(crate) fn summarize(t: &Trace) -> Summary {
    let kernels = rows(
        t.gpu_events
            .iter()
            .filter(|e| e.stage == Stage::Kernel)
            .map(|e| {
                let name = e
                    .kernel
                    .as_ref()
                    .map(|k| k.demangled.as_str())
                    .filter(|n| !n.is_empty())
                    .unwrap_or(&e.name);
                (name, e.dur, None)
            }),
    );
    let memory = rows(
        t.memory_ops()
            .map(|e| (e.name.as_str(), e.dur, Some(e.bytes().unwrap_or(0)))),
    );
    let api = rows(
        t.slices
            .iter()
            .filter(|s| s.gpu_api.is_some())
            .map(|s| (s.name.as_str(), s.dur, None)),
    );
    let ranges = rows(
        t.slices
            .iter()
            .filter(|s| s.gpu_api.is_none())
            .map(|s| (s.name.as_str(), s.dur, None)),
    );
    let mut counters: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    // Per-kernel counters return to zero at the kernel's end; summarise the
    // values, not the zeros in between.
    for c in t.counters.iter().filter(|c| c.value != 0.0) {
        counters.entry(&c.name).or_default().push(c.value);
    }
    Summary {
        kernels,
        memory,
        api,
        ranges,
        counters: counters
            .into_iter()
            .map(|(n, v)| {
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
                let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                (n.to_owned(), v.len() as u64, mean, min, max)
            })
            .collect(),
        losses: t.drop_counts().map(|ours| {
            // The service's last statistics are final; the tool's copy of
            // them in its summary may be a moment older.
            let mut all: Vec<(String, u64)> = ours
                .into_iter()
                .filter(|(k, n)| *n > 0 && (t.losses.is_none() || !k.starts_with("perfetto_")))
                .collect();
            if let Some(l) = t.losses {
                all.extend(
                    l.counts()
                        .into_iter()
                        .map(|(k, n)| (format!("perfetto_{k}"), n)),
                );
            }
            all
        }),
        dangling: {
            let ids = t.gpu_events_by_id();
            t.slices
                .iter()
                .filter(|s| s.submissions.iter().any(|id| !ids.contains_key(id)))
                .map(|s| (s.name.to_string(), s.ts))
                .collect()
        },
        devices: t
            .devices
            .iter()
            .map(|d| format!("GPU {}: {} ({})", d.gpu_id, d.name, d.model))
            .collect(),
    }
}

fn table(out: &mut String, title: &str, rows: &[Row], with_bytes: bool) {
    if rows.is_empty() {
        return;
    }
    let grand: u64 = rows.iter().map(|r| r.total).sum::<u64>().max(1);
    let _ = writeln!(out, "\n{title}\n");
    let _ = write!(
        out,
        " Time(%)  Total Time (ns)  Instances    Avg (ns)    Med (ns)    Min (ns)    Max (ns)  StdDev (ns)"
    );
    if with_bytes {
        let _ = write!(out, "   Total (MB)");
    }
    let _ = writeln!(out, "  Name");
    for r in rows {
        let _ = write!(
            out,
            " {:>7.1}  {:>15}  {:>9}  {:>10.1}  {:>10}  {:>10}  {:>10}  {:>11.1}",
            100.0 * r.total as f64 / grand as f64,
            r.total,
            r.count,
            r.avg,
            r.median,
            r.min,
            r.max,
            r.stddev
        );
        if with_bytes {
            let _ = write!(out, "  {:>11.3}", r.bytes.unwrap_or(0) as f64 / 1e6);
        }
        let _ = writeln!(out, "  {}", r.name);
    }
}

/// Renders the summary as text tables.
pub(crate) fn render(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Losses: {}", loss_line(s));
    for d in &s.devices {
        let _ = writeln!(out, "{d}");
    }
    table(&mut out, "GPU kernels", &s.kernels, false);
    table(&mut out, "GPU memory operations", &s.memory, true);
    table(&mut out, "API calls", &s.api, false);
    table(&mut out, "NVTX / roctx ranges", &s.ranges, false);
    if !s.counters.is_empty() {
        let _ = writeln!(out, "\nPer-kernel counters\n");
        let _ = writeln!(
            out,
            " Kernels          Mean           Min           Max  Name"
        );
        for (n, k, mean, min, max) in &s.counters {
            let _ = writeln!(out, " {k:>7}  {mean:>12.4}  {min:>12.4}  {max:>12.4}  {n}");
        }
    }
    out
}

/// Whether the trace says it holds everything that happened.
pub(crate) fn complete(s: &Summary) -> bool {
    s.losses.as_ref().is_some_and(|l| l.is_empty())
}

fn loss_line(s: &Summary) -> String {
    match &s.losses {
        None => "unknown: the trace has no summary (the process did not finish tracing; data after the last write is missing)".to_owned(),
        Some(l) if l.is_empty() => "none".to_owned(),
        Some(l) => format!(
            "{} (the trace is incomplete)",
            l.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "name": r.name, "count": r.count, "total_ns": r.total, "avg_ns": r.avg,
        "median_ns": r.median, "min_ns": r.min, "max_ns": r.max, "stddev_ns": r.stddev,
        "bytes": r.bytes,
    })
}

/// Renders the summary as JSON.
pub(crate) fn to_json(s: &Summary) -> serde_json::Value {
    serde_json::json!({
        "devices": s.devices,
        "kernels": s.kernels.iter().map(row_json).collect::<Vec<_>>(),
        "memory": s.memory.iter().map(row_json).collect::<Vec<_>>(),
        "api": s.api.iter().map(row_json).collect::<Vec<_>>(),
        "ranges": s.ranges.iter().map(row_json).collect::<Vec<_>>(),
        "counters": s.counters.iter().map(|(n, k, mean, min, max)| serde_json::json!({
            "name": n, "kernels": k, "mean": mean, "min": min, "max": max})).collect::<Vec<_>>(),
        "dropped": s.losses.iter().flatten().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        "complete": complete(s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_sorted_by_total_and_have_exact_statistics() {
        let r = rows(
            [
                ("a", 10, None),
                ("b", 100, None),
                ("a", 30, None),
                ("a", 20, None),
            ]
            .into_iter(),
        );
        assert_eq!(r[0].name, "b");
        let a = &r[1];
        assert_eq!(
            (a.count, a.total, a.min, a.max, a.median),
            (3, 60, 10, 30, 20)
        );
        assert!((a.avg - 20.0).abs() < 1e-9);
        assert!((a.stddev - (200.0f64 / 3.0).sqrt()).abs() < 1e-9);
    }
}
