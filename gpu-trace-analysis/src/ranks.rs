//! The processes of a job side by side, one row per rank, and which rank
//! holds the others up.
//!
//! Every number is one the per-process tables already have: counts from
//! the kernel, memory and API tables, GPU busy time from the devices
//! table's intervals, steps from the NVTX table (ranges named `step N`),
//! and the wait share from the threads table.

use crate::render::text::human;
use crate::summary::{Pid, Process, Tables};
use serde::{Serialize, Serializer};

/// How far above the median of the other ranks a rank's GPU time must be
/// to hold them up.
pub const SLOWER_BY: f64 = 0.10;
/// How many points of its traced thread time more than the median of the
/// other ranks a rank must wait on its GPU to stand out.
pub const WAITS_MORE_BY: f64 = 10.0;

/// One rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankRow {
    /// From the process's `rank=` label.
    pub rank: Option<u32>,
    /// From its `world_size=` label.
    pub world_size: Option<u32>,
    /// Its place among the processes (what names it without a rank).
    pub order: usize,
    /// The trace it is in.
    pub file: String,
    /// Its pid.
    pub pid: Pid,
    /// The `gpu_id`s of its GPU work.
    #[serde(rename = "gpus")]
    pub devices: Vec<i64>,
    /// Kernels run.
    pub kernels: u64,
    /// Copies (memsets are not).
    pub copies: u64,
    /// API calls made.
    pub api_calls: u64,
    /// The union of its GPU work on each device, summed, ns.
    #[serde(rename = "gpu_busy_ns")]
    pub gpu_busy: u64,
    /// NVTX ranges named `step N`.
    pub steps: u64,
    /// Their mean duration, ns.
    #[serde(rename = "step_ns")]
    pub step_time: Option<f64>,
    /// GPU busy time per step, ns.
    #[serde(rename = "gpu_per_step_ns")]
    pub gpu_per_step: Option<f64>,
    /// Of its threads' traced time, the share in API calls that wait for
    /// the GPU, %.
    #[serde(rename = "waiting_pct")]
    pub wait_pct: f64,
}

impl RankRow {
    /// How the rank is named: its rank, or `#i` in process order.
    pub fn label(&self) -> String {
        match self.rank {
            Some(r) => r.to_string(),
            None => format!("#{}", self.order),
        }
    }
}

/// What the verdict compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// GPU busy time per step (`gpu_time_per_step`).
    GpuPerStep,
    /// GPU busy time in all (`gpu_busy_time`).
    GpuBusy,
    /// The share of the threads' time waiting for the GPU (`wait_share`).
    WaitShare,
}

impl Serialize for Measure {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

impl Measure {
    /// Its name in the JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            Measure::GpuPerStep => "gpu_time_per_step",
            Measure::GpuBusy => "gpu_busy_time",
            Measure::WaitShare => "wait_share",
        }
    }
}

/// The rank that holds the others up, with the numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Straggler {
    /// Index into [`Ranks::rows`].
    pub row: usize,
    /// What it stands out by.
    pub measure: Measure,
    /// Its value (ns, or % for the wait share).
    pub value: f64,
    /// The median of the other ranks' values.
    pub others: f64,
    /// GPU time: how far above, as a fraction; wait share: points above.
    pub excess: f64,
}

/// The ranks of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranks {
    /// By rank; processes without one after them, in process order.
    pub rows: Vec<RankRow>,
    /// Whether every process has a rank label.
    pub known: bool,
    /// What the GPU-time comparison used: time per step when every rank
    /// has steps, else total GPU busy time.
    pub measure: Measure,
    /// The rank that holds the others up, if one does.
    pub straggler: Option<Straggler>,
}

impl Serialize for Ranks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Total {
            kernels: u64,
            copies: u64,
            api_calls: u64,
            gpu_busy_ns: u64,
        }
        #[derive(Serialize)]
        struct StragglerView {
            rank: Option<u32>,
            order: usize,
            pid: Pid,
            measure: Measure,
            value: f64,
            median_of_others: f64,
            excess: f64,
        }
        #[derive(Serialize)]
        struct View<'a> {
            known: bool,
            note: Option<String>,
            compared: Measure,
            rows: &'a [RankRow],
            total: Total,
            straggler: Option<StragglerView>,
            verdict: String,
        }
        let sum = |f: fn(&RankRow) -> u64| self.rows.iter().map(f).sum::<u64>();
        View {
            known: self.known,
            note: self.note(),
            compared: self.measure,
            rows: &self.rows,
            total: Total {
                kernels: sum(|x| x.kernels),
                copies: sum(|x| x.copies),
                api_calls: sum(|x| x.api_calls),
                gpu_busy_ns: sum(|x| x.gpu_busy),
            },
            straggler: self.straggler.as_ref().map(|s| {
                let x = &self.rows[s.row];
                StragglerView {
                    rank: x.rank,
                    order: x.order,
                    pid: x.pid,
                    measure: s.measure,
                    value: s.value,
                    median_of_others: s.others,
                    excess: s.excess,
                }
            }),
            verdict: self.verdict(),
        }
        .serialize(s)
    }
}

/// Whether a range name is a step: `step 12`, `Step_3`, `step-7`, `step:1`.
pub fn is_step(name: &str) -> bool {
    let n = name.trim();
    let Some(rest) = n.get(..4).filter(|p| p.eq_ignore_ascii_case("step")) else {
        return false;
    };
    let rest = n[rest.len()..].trim_start_matches([' ', '_', '-', ':', '#']);
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
}

fn row(order: usize, s: &Process) -> RankRow {
    let t: &Tables = &s.tables;
    let mut devices: Vec<i64> = t.devices.iter().map(|e| e.gpu).collect();
    devices.dedup();
    let (mut steps, mut step_total) = (0u64, 0u64);
    for r in t.ranges.iter().filter(|r| is_step(&r.name)) {
        steps += r.count;
        step_total += r.total;
    }
    let (waiting, span) = t
        .threads
        .iter()
        .fold((0u64, 0u64), |(w, s), th| (w + th.waiting, s + th.span));
    RankRow {
        rank: s.rank.map(|r| r.rank),
        world_size: s.rank.and_then(|r| r.world_size),
        order,
        file: s.file.clone(),
        pid: s.pid,
        devices,
        kernels: t.kernel_count(),
        copies: t.copy_count(),
        api_calls: t.api_count(),
        gpu_busy: t.gpu_busy,
        steps,
        step_time: (steps > 0).then(|| step_total as f64 / steps as f64),
        gpu_per_step: (steps > 0).then(|| t.gpu_busy as f64 / steps as f64),
        wait_pct: if span == 0 {
            0.0
        } else {
            100.0 * waiting as f64 / span as f64
        },
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The rank furthest above the median of the others by `excess`, if it is
/// above `by`.
fn furthest(
    values: &[f64],
    excess: impl Fn(f64, f64) -> Option<f64>,
    by: f64,
) -> Option<(usize, f64, f64, f64)> {
    let mut best: Option<(usize, f64, f64, f64)> = None;
    for (i, &v) in values.iter().enumerate() {
        let others = median(
            values
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &x)| x)
                .collect(),
        );
        if let Some(x) = excess(v, others)
            && x > by
            && best.is_none_or(|b| x > b.3)
        {
            best = Some((i, v, others, x));
        }
    }
    best
}

/// The ranks of `processes`, when there are several.
pub(crate) fn of(processes: &[Process]) -> Option<Ranks> {
    if processes.len() < 2 {
        return None;
    }
    let mut rows: Vec<RankRow> = processes
        .iter()
        .enumerate()
        .map(|(i, s)| row(i, s))
        .collect();
    rows.sort_by_key(|r| (r.rank.is_none(), r.rank, r.order));
    let known = rows.iter().all(|r| r.rank.is_some());
    let per_step = rows.iter().all(|r| r.steps > 0);
    let (measure, gpu): (Measure, Vec<f64>) = if per_step {
        (
            Measure::GpuPerStep,
            rows.iter().map(|r| r.gpu_per_step.unwrap_or(0.0)).collect(),
        )
    } else {
        (
            Measure::GpuBusy,
            rows.iter().map(|r| r.gpu_busy as f64).collect(),
        )
    };
    let ratio = |v: f64, others: f64| (others > 0.0).then(|| v / others - 1.0);
    let mut straggler =
        furthest(&gpu, ratio, SLOWER_BY).map(|(row, value, others, excess)| Straggler {
            row,
            measure,
            value,
            others,
            excess,
        });
    if straggler.is_none() {
        let waits: Vec<f64> = rows.iter().map(|r| r.wait_pct).collect();
        straggler = furthest(&waits, |v, o| Some(v - o), WAITS_MORE_BY).map(
            |(row, value, others, excess)| Straggler {
                row,
                measure: Measure::WaitShare,
                value,
                others,
                excess,
            },
        );
    }
    Some(Ranks {
        rows,
        known,
        measure,
        straggler,
    })
}

impl Ranks {
    /// The one-line verdict.
    pub fn verdict(&self) -> String {
        let Some(s) = &self.straggler else {
            return format!("no straggler (ranks within {:.0}%)", SLOWER_BY * 100.0);
        };
        let r = &self.rows[s.row];
        let who = format!("rank {} (pid {})", r.label(), r.pid);
        match s.measure {
            Measure::GpuPerStep | Measure::GpuBusy => format!(
                "slowest rank: {who}: GPU time {} {}, {:.1}% above the median of the other ranks ({})",
                if s.measure == Measure::GpuPerStep {
                    "per step"
                } else {
                    "in all"
                },
                human(s.value.round() as u64),
                s.excess * 100.0,
                human(s.others.round() as u64),
            ),
            Measure::WaitShare => format!(
                "slowest rank: {who}: waits on the GPU for {:.1}% of its traced thread time, {:.1} points above the median of the other ranks ({:.1}%)",
                s.value, s.excess, s.others
            ),
        }
    }

    /// What the table says of ranks it does not know.
    pub fn note(&self) -> Option<String> {
        let unknown = self.rows.iter().filter(|r| r.rank.is_none()).count();
        match unknown {
            0 => None,
            n if n == self.rows.len() => Some(
                "ranks unknown (the traces have no rank labels): #N is the process's place in the order given".to_owned(),
            ),
            n => Some(format!(
                "{n} of {} processes have no rank label: #N is the process's place in the order given",
                self.rows.len()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ranges_are_named_step_and_a_number() {
        for n in [
            "step 1", "Step_12", "step-3", "STEP:0", " step 7 ", "step#2",
        ] {
            assert!(is_step(n), "{n}");
        }
        for n in [
            "step",
            "steps 1",
            "step one",
            "forward",
            "step 1 fwd",
            "1 step",
            "stepx1",
        ] {
            assert!(!is_step(n), "{n}");
        }
    }

    fn scope(pid: Pid, rank: Option<u32>, gpu_busy: u64) -> Process {
        Process {
            file: format!("{pid}.pftrace"),
            pid,
            rank: rank.map(|rank| gpu_trace_model::rank::Rank {
                rank,
                local_rank: None,
                world_size: None,
            }),
            tables: Tables {
                gpu_busy,
                ..Tables::default()
            },
        }
    }

    #[test]
    fn ranks_within_ten_percent_have_no_straggler_and_unlabelled_ones_go_by_order() {
        let r = of(&[scope(7, None, 1_000), scope(8, None, 1_090)]).unwrap();
        assert!(!r.known);
        assert_eq!(r.measure, Measure::GpuBusy, "no steps: total GPU time");
        assert_eq!(r.straggler, None);
        assert_eq!(r.verdict(), "no straggler (ranks within 10%)");
        let labels: Vec<String> = r.rows.iter().map(RankRow::label).collect();
        assert_eq!(labels, ["#0", "#1"]);
        assert!(
            r.note().unwrap().starts_with("ranks unknown"),
            "{:?}",
            r.note()
        );

        let r = of(&[
            scope(7, Some(1), 1_000),
            scope(8, Some(0), 1_000),
            scope(9, None, 2_000),
        ])
        .unwrap();
        let labels: Vec<String> = r.rows.iter().map(RankRow::label).collect();
        assert_eq!(labels, ["0", "1", "#2"], "by rank, the unlabelled after");
        assert_eq!(
            r.note().unwrap(),
            "1 of 3 processes have no rank label: #N is the process's place in the order given"
        );
        assert_eq!(
            r.verdict(),
            "slowest rank: rank #2 (pid 9): GPU time in all 2.000 µs, 100.0% above the median of the other ranks (1.000 µs)"
        );
        assert!(
            of(&[scope(7, Some(0), 1)]).is_none(),
            "one process is no job"
        );
    }

    #[test]
    fn the_median_of_the_others_decides() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
        let ratio = |v: f64, o: f64| (o > 0.0).then(|| v / o - 1.0);
        assert_eq!(
            furthest(&[100.0, 105.0, 130.0, 98.0], ratio, 0.1).map(|b| b.0),
            Some(2)
        );
        assert_eq!(furthest(&[100.0, 105.0, 95.0], ratio, 0.1), None);
    }
}
