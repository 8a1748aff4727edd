//! `gpu-trace diff`'s output: text tables, CSV and JSON of a [`Diff`].

use super::Options;
use super::text::{clip, fixed, int};
use crate::NameStyle;
use crate::diff::{Change, Diff, DiffRow, IdleTotals};
use std::fmt::Write as _;

/// The tables of a diff: (report name, title, rows).
fn tables(d: &Diff) -> [(&'static str, &'static str, &[DiffRow]); 4] {
    [
        ("kernels", "GPU kernels", &d.kernels),
        ("memops", "GPU memory operations", &d.memops),
        ("api", "API calls", &d.api),
        ("nvtx", "NVTX / roctx ranges", &d.nvtx),
    ]
}

fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{}", int(n as u64))
    } else if n < 0 {
        format!("-{}", int(n.unsigned_abs()))
    } else {
        "0".to_owned()
    }
}

fn change(c: Change) -> &'static str {
    match c {
        Change::Both => "",
        Change::New => "new",
        Change::Gone => "gone",
    }
}

fn side(out: &mut String, label: &str, t: &IdleTotals) {
    let files: Vec<String> = t
        .files
        .iter()
        .map(|f| gpu_trace_reader::text::printable(f, 200).into_owned())
        .collect();
    let _ = writeln!(out, "{label}: {}", files.join(", "));
}

fn idle_line(label: &str, t: &IdleTotals) -> String {
    format!(
        "  {label}: idle {:.1}% of {} ns of GPU time: host wait {:.1}%, kernel wait {:.1}%, other {:.1}%",
        t.idle_pct,
        int(t.recorded_ns),
        t.host_wait_pct,
        t.kernel_wait_pct,
        t.other_wait_pct
    )
}

/// The diff as text tables, every string from a trace escaped.
pub(crate) fn text(d: &Diff, o: &Options) -> String {
    let mut out = String::new();
    side(&mut out, "A", &d.a);
    side(&mut out, "B", &d.b);
    let _ = writeln!(
        out,
        "\nGPU idle time (of each side's recorded time on each GPU)"
    );
    let _ = writeln!(out, "{}", idle_line("A", &d.a));
    let _ = writeln!(out, "{}", idle_line("B", &d.b));
    for (_, title, rows) in tables(d) {
        if rows.is_empty() {
            continue;
        }
        let n = o.top.map_or(rows.len(), |t| t.min(rows.len()));
        let header = [
            "Change",
            "Δ Total (ns)",
            "Δ(%)",
            "Total A (ns)",
            "Total B (ns)",
            "Count A",
            "Count B",
            "Mean A (ns)",
            "Mean B (ns)",
            "Δ Mean (ns)",
            "Name",
        ];
        let cells: Vec<Vec<String>> = rows[..n]
            .iter()
            .map(|r| {
                let name = match o.names {
                    NameStyle::Short => r.short_name.as_str(),
                    NameStyle::Base => crate::names::base_name(&r.name),
                    NameStyle::Full | NameStyle::Mangled => r.name.as_str(),
                };
                vec![
                    change(r.change).to_owned(),
                    signed(r.total_delta_ns),
                    r.total_delta_pct
                        .map_or("-".to_owned(), |p| format!("{p:+.1}")),
                    int(r.total_a_ns),
                    int(r.total_b_ns),
                    int(r.count_a),
                    int(r.count_b),
                    fixed(r.mean_a_ns, 1),
                    fixed(r.mean_b_ns, 1),
                    fixed(r.mean_delta_ns, 1),
                    clip(name, o.name_width).into_owned(),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "\n{title} (B − A, the largest change in total time first)\n"
        );
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for r in &cells {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        for r in std::iter::once(header.map(str::to_owned).to_vec()).chain(cells) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                line.push_str("  ");
                let pad = widths[i].saturating_sub(c.chars().count());
                if i == 0 {
                    line.push_str(c);
                    line.extend(std::iter::repeat_n(' ', pad));
                } else if i + 1 == r.len() {
                    line.push_str(c);
                } else {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(c);
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        if rows.len() > n {
            let _ = writeln!(
                out,
                "  ... {} more (--top {n})",
                int((rows.len() - n) as u64)
            );
        }
    }
    match gpu_trace_reader::text::escape_but_newlines(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(safe) => safe,
    }
}

/// The diff as CSV: the idle breakdown of each side (report `idle`,
/// side `a` or `b`), then one table per kind; every row starts with
/// `report,side`.
pub(crate) fn csv(d: &Diff, o: &Options) -> String {
    let mut parts = Vec::new();
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "report",
        "side",
        "files",
        "recorded_ns",
        "busy_ns",
        "idle_ns",
        "host_wait_ns",
        "kernel_wait_ns",
        "other_wait_ns",
        "idle_pct",
        "host_wait_pct",
        "kernel_wait_pct",
        "other_wait_pct",
    ]);
    for (label, t) in [("a", &d.a), ("b", &d.b)] {
        let _ = w.write_record([
            "idle".to_owned(),
            label.to_owned(),
            t.files.join(";"),
            t.recorded_ns.to_string(),
            t.busy_ns.to_string(),
            t.idle_ns.to_string(),
            t.host_wait_ns.to_string(),
            t.kernel_wait_ns.to_string(),
            t.other_wait_ns.to_string(),
            t.idle_pct.to_string(),
            t.host_wait_pct.to_string(),
            t.kernel_wait_pct.to_string(),
            t.other_wait_pct.to_string(),
        ]);
    }
    parts.push(w.into_inner().unwrap_or_default());
    for (report, _, rows) in tables(d) {
        let n = o.top.map_or(rows.len(), |t| t.min(rows.len()));
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record([
            "report",
            "name",
            "short_name",
            "change",
            "count_a",
            "count_b",
            "total_a_ns",
            "total_b_ns",
            "mean_a_ns",
            "mean_b_ns",
            "count_delta",
            "total_delta_ns",
            "mean_delta_ns",
            "total_delta_pct",
        ]);
        for r in &rows[..n] {
            let _ = w.write_record([
                report.to_owned(),
                r.name.clone(),
                r.short_name.clone(),
                change(r.change).to_owned(),
                r.count_a.to_string(),
                r.count_b.to_string(),
                r.total_a_ns.to_string(),
                r.total_b_ns.to_string(),
                r.mean_a_ns.to_string(),
                r.mean_b_ns.to_string(),
                r.count_delta.to_string(),
                r.total_delta_ns.to_string(),
                r.mean_delta_ns.to_string(),
                r.total_delta_pct.map(|p| p.to_string()).unwrap_or_default(),
            ]);
        }
        parts.push(w.into_inner().unwrap_or_default());
    }
    parts
        .into_iter()
        .map(|p| String::from_utf8_lossy(&p).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The diff as JSON ([`Diff`]'s serialisation), each table cut to
/// `o.top` rows.
pub(crate) fn json(d: &Diff, o: &Options) -> serde_json::Value {
    let mut v = serde_json::to_value(d).unwrap_or_default();
    if let (Some(n), serde_json::Value::Object(m)) = (o.top, &mut v) {
        for (k, _, _) in tables(d) {
            if let Some(serde_json::Value::Array(rows)) = m.get_mut(k) {
                rows.truncate(n);
            }
        }
    }
    v
}
