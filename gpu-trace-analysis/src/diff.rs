//! Two summaries side by side: `gpu-trace diff A B`.
//!
//! Kernels, memory operations, API calls and NVTX ranges are matched by
//! name over all processes of each side (kernels by their full demangled
//! name; their short names are made over both sides' names, so that a
//! name reads the same on both). Each row has both sides' count, total and
//! mean time and the changes; rows come by the size of the change in
//! total time, largest first. A name on one side only is `new` (only in
//! B) or `gone` (only in A). Each side's idle-time breakdown comes with
//! them.

use crate::{IdleRow, Row, Summary};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// How a name fared from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// On both sides.
    Both,
    /// Only in B.
    New,
    /// Only in A.
    Gone,
}

/// One name on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffRow {
    /// The name, whole.
    pub name: String,
    /// A kernel's unique short name (the name itself in the other tables).
    pub short_name: String,
    /// Whether it is on both sides, new or gone.
    pub change: Change,
    /// Instances in A.
    pub count_a: u64,
    /// Instances in B.
    pub count_b: u64,
    /// Total time in A, ns.
    pub total_a_ns: u64,
    /// Total time in B, ns.
    pub total_b_ns: u64,
    /// Mean in A, ns (0 when none).
    pub mean_a_ns: f64,
    /// Mean in B, ns (0 when none).
    pub mean_b_ns: f64,
    /// B − A.
    pub count_delta: i64,
    /// B − A, ns.
    pub total_delta_ns: i64,
    /// B − A, ns.
    pub mean_delta_ns: f64,
    /// Of A's total, %; `None` where A has none.
    pub total_delta_pct: Option<f64>,
}

/// A side's idle time by cause, over every device of every process.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IdleTotals {
    /// The traces of the side.
    pub files: Vec<String>,
    /// Recorded time of every device, ns.
    pub recorded_ns: u64,
    /// Busy time, ns.
    pub busy_ns: u64,
    /// Idle time, ns.
    pub idle_ns: u64,
    /// Of the idle time: waiting on the host, ns.
    pub host_wait_ns: u64,
    /// Between back-to-back kernels, ns.
    pub kernel_wait_ns: u64,
    /// With work submitted that did not start, ns.
    pub other_wait_ns: u64,
    /// Of the recorded time, %.
    pub idle_pct: f64,
    /// Of the recorded time, %.
    pub host_wait_pct: f64,
    /// Of the recorded time, %.
    pub kernel_wait_pct: f64,
    /// Of the recorded time, %.
    pub other_wait_pct: f64,
}

/// Two sides compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Diff {
    /// A's idle breakdown (with its files).
    pub a: IdleTotals,
    /// B's idle breakdown (with its files).
    pub b: IdleTotals,
    /// Per kernel name.
    pub kernels: Vec<DiffRow>,
    /// Per memory operation.
    pub memops: Vec<DiffRow>,
    /// Per API function.
    pub api: Vec<DiffRow>,
    /// Per NVTX / roctx range name.
    pub nvtx: Vec<DiffRow>,
}

fn pct(part: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * part as f64 / of as f64
    }
}

fn totals(s: &Summary) -> IdleTotals {
    let rows: &[IdleRow] = &s.all.idle;
    let sum = |f: fn(&IdleRow) -> u64| rows.iter().map(f).sum::<u64>();
    let recorded = sum(|r| r.recorded_ns);
    let (host, kernel, other) = (
        sum(|r| r.host_wait_ns),
        sum(|r| r.kernel_wait_ns),
        sum(|r| r.other_wait_ns),
    );
    let idle = sum(|r| r.idle_ns);
    IdleTotals {
        files: s.files.iter().map(|f| f.path.clone()).collect(),
        recorded_ns: recorded,
        busy_ns: sum(|r| r.busy_ns),
        idle_ns: idle,
        host_wait_ns: host,
        kernel_wait_ns: kernel,
        other_wait_ns: other,
        idle_pct: pct(idle, recorded),
        host_wait_pct: pct(host, recorded),
        kernel_wait_pct: pct(kernel, recorded),
        other_wait_pct: pct(other, recorded),
    }
}

/// The rows of one table, matched by name.
fn rows(a: &[Row], b: &[Row], short: &FxHashMap<&str, String>) -> Vec<DiffRow> {
    let mut by_name: FxHashMap<&str, (Option<&Row>, Option<&Row>)> = FxHashMap::default();
    for r in a {
        by_name.entry(&r.name).or_default().0 = Some(r);
    }
    for r in b {
        by_name.entry(&r.name).or_default().1 = Some(r);
    }
    let mut out: Vec<DiffRow> = by_name
        .into_iter()
        .map(|(name, (x, y))| {
            let side = |r: Option<&Row>| r.map_or((0, 0, 0.0), |r| (r.count, r.total, r.avg));
            let ((ca, ta, ma), (cb, tb, mb)) = (side(x), side(y));
            DiffRow {
                name: name.to_owned(),
                short_name: short.get(name).cloned().unwrap_or_else(|| name.to_owned()),
                change: match (x, y) {
                    (Some(_), Some(_)) => Change::Both,
                    (None, _) => Change::New,
                    (_, None) => Change::Gone,
                },
                count_a: ca,
                count_b: cb,
                total_a_ns: ta,
                total_b_ns: tb,
                mean_a_ns: ma,
                mean_b_ns: mb,
                count_delta: cb as i64 - ca as i64,
                total_delta_ns: tb as i64 - ta as i64,
                mean_delta_ns: mb - ma,
                total_delta_pct: (ta > 0).then(|| 100.0 * (tb as f64 - ta as f64) / ta as f64),
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.total_delta_ns
            .unsigned_abs()
            .cmp(&x.total_delta_ns.unsigned_abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

/// A compared with B.
pub fn diff(a: &Summary, b: &Summary) -> Diff {
    let mut names: Vec<&str> = a
        .all
        .kernels
        .iter()
        .chain(&b.all.kernels)
        .map(|r| r.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let short: FxHashMap<&str, String> = names
        .iter()
        .copied()
        .zip(crate::names::short_names(&names))
        .collect();
    let none = FxHashMap::default();
    Diff {
        a: totals(a),
        b: totals(b),
        kernels: rows(&a.all.kernels, &b.all.kernels, &short),
        memops: rows(&a.all.memory, &b.all.memory, &none),
        api: rows(&a.all.api, &b.all.api, &none),
        nvtx: rows(&a.all.ranges, &b.all.ranges, &none),
    }
}
