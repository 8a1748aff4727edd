//! Diagnoses of where GPU time goes, per process and device, over the
//! recorded time: the idle-time breakdown, the temporal breakdown, the
//! launch statistics, and the verdict that sums them up.
//!
//! The definitions follow Holistic Trace Analysis (HTA), per device
//! rather than per stream:
//!
//! * **Idle time** of a GPU is the recorded time of its process (its
//!   first event to its last, or its recording windows) when none of the
//!   process's kernels, copies or memsets runs on it. Each idle stretch
//!   `[a, b)` ends at the work that starts at `b`; with the API call that
//!   submitted that work (the earliest such call where several works
//!   start at `b`), the stretch is
//!   * **host wait** when the call began after `a`: the GPU had nothing
//!     submitted and waited for the host (HTA: the runtime event starts
//!     after the previous kernel's end); the stretch after the last work
//!     is host wait too;
//!   * else **kernel wait** when the stretch is shorter than
//!     [`KERNEL_WAIT_NS`] (HTA's `consecutive_kernel_delay`, 30 ns): the
//!     overhead between back-to-back kernels;
//!   * else **other wait**: the work was submitted yet did not start, as
//!     when it waits on an event, another stream or a synchronisation
//!     (HTA: "idle time that cannot be attributed", mostly those).
//! * **Temporal breakdown**: of the recorded time, the union of compute
//!   kernels, of communication kernels ([`is_communication`]: NCCL and
//!   RCCL by name), of memory operations, and idle; the first three may
//!   overlap, so their shares may add up past 100%. With it, the share of
//!   communication time that compute overlaps.
//! * **Launch statistics**, per kernel name, of the kernels matched with
//!   their launch calls: the call's duration, the delay from the call's
//!   end to the kernel's start (0 when the kernel starts before the call
//!   returns, as nsys's queue time), and the *short kernels*: those that
//!   ran shorter than their launch call (HTA).

use crate::intervals::Intervals;
use crate::launch::{LaunchAcc, OUTLIERS};
use crate::read::OutlierData;
use crate::render::text::{fixed, human};
use crate::summary::Pid;
use serde::Serialize;

/// An idle stretch shorter than this (ns) whose work was submitted before
/// it began is kernel wait: HTA's default `consecutive_kernel_delay`.
pub const KERNEL_WAIT_NS: u64 = 30;

/// Whether a kernel name is a collective-communication library's (NCCL,
/// RCCL): any name that holds `nccl` or `rccl`, in any case.
pub fn is_communication(name: &str) -> bool {
    let b = name.as_bytes();
    b.windows(4).any(|w| {
        let w = [
            w[0].to_ascii_lowercase(),
            w[1].to_ascii_lowercase(),
            w[2].to_ascii_lowercase(),
            w[3].to_ascii_lowercase(),
        ];
        &w == b"nccl" || &w == b"rccl"
    })
}

/// One device's idle time, by cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdleRow {
    /// The trace it is in.
    pub file: String,
    /// Its process.
    pub pid: Pid,
    /// Its rank in the job, where the process's labels say.
    pub rank: Option<u32>,
    /// The device's `gpu_id`.
    pub gpu: i64,
    /// The device's name, where the trace describes it.
    pub device: String,
    /// The process's recorded time, ns.
    pub recorded_ns: u64,
    /// The union of its work on the device, ns.
    pub busy_ns: u64,
    /// Recorded time with no work on the device, ns.
    pub idle_ns: u64,
    /// Of the recorded time, %.
    pub idle_pct: f64,
    /// Idle with nothing submitted: waiting on the host, ns.
    pub host_wait_ns: u64,
    /// Idle between back-to-back kernels, ns.
    pub kernel_wait_ns: u64,
    /// Idle with work submitted that did not start, ns.
    pub other_wait_ns: u64,
    /// Of the idle time, %.
    pub host_wait_pct: f64,
    /// Of the idle time, %.
    pub kernel_wait_pct: f64,
    /// Of the idle time, %.
    pub other_wait_pct: f64,
}

/// One device's recorded time by kind of work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TemporalRow {
    /// The trace it is in.
    pub file: String,
    /// Its process.
    pub pid: Pid,
    /// Its rank in the job, where the process's labels say.
    pub rank: Option<u32>,
    /// The device's `gpu_id`.
    pub gpu: i64,
    /// The device's name, where the trace describes it.
    pub device: String,
    /// The process's recorded time, ns.
    pub recorded_ns: u64,
    /// The union of compute kernels (all but communication), ns.
    pub compute_ns: u64,
    /// The union of communication kernels, ns.
    pub communication_ns: u64,
    /// The union of copies and memsets, ns.
    pub memory_ns: u64,
    /// No work at all, ns.
    pub idle_ns: u64,
    /// Of the recorded time, %.
    pub compute_pct: f64,
    /// Of the recorded time, %.
    pub communication_pct: f64,
    /// Of the recorded time, %.
    pub memory_pct: f64,
    /// Of the recorded time, %.
    pub idle_pct: f64,
    /// Of the communication time, the share that compute overlaps, %.
    pub overlap_pct: f64,
}

/// One kernel name's launches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchRow {
    /// The kernel's full (demangled) name.
    pub name: String,
    /// Its unique short name (see [`crate::names`]).
    pub short_name: String,
    /// Kernels matched with their launch calls.
    pub launches: u64,
    /// The launch call's duration: median, ns.
    pub api_median_ns: f64,
    /// The launch call's duration: 99th percentile, ns.
    pub api_p99_ns: u64,
    /// From the call's end to the kernel's start: median, ns.
    pub delay_median_ns: f64,
    /// From the call's end to the kernel's start: 99th percentile, ns.
    pub delay_p99_ns: u64,
    /// From the call's end to the kernel's start: the longest, ns.
    pub delay_max_ns: u64,
    /// Kernels that ran shorter than their launch call.
    pub short_kernels: u64,
    /// Of the launches, %.
    pub short_pct: f64,
}

/// A kernel that started long after its launch call returned, with the
/// call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlierRow {
    /// The trace it is in.
    pub file: String,
    /// Its process.
    pub pid: Pid,
    /// The device's `gpu_id`.
    pub gpu: i64,
    /// Its stream, as the trace names it.
    pub stream: String,
    /// The kernel's full name.
    pub kernel: String,
    /// Its short name.
    pub short_name: String,
    /// The kernel's start, ns (trace clock).
    pub start_ns: u64,
    /// The kernel's duration, ns.
    pub kernel_ns: u64,
    /// From the call's end to the kernel's start, ns.
    pub delay_ns: u64,
    /// The launch call's name.
    pub api: String,
    /// The call's start, ns.
    pub api_start_ns: u64,
    /// The call's duration, ns.
    pub api_ns: u64,
    /// The calling thread, where the trace says.
    pub tid: Option<i64>,
}

/// One finding of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// `launch-bound`, `host-bound`, `sync-bound`, `gpu-bound`,
    /// `communication`, `memory`, `straggler` or `balanced`.
    pub kind: String,
    /// The finding with its numbers.
    pub text: String,
    /// Its main number, % (the straggler's excess for a straggler).
    pub pct: f64,
}

/// The verdict over every process: findings, each with its numbers, in
/// one paragraph.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verdict {
    /// The findings joined into one paragraph.
    pub text: String,
    /// Each finding.
    pub findings: Vec<Finding>,
}

/// Host, kernel and other wait of the idle stretches of a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) host: u64,
    pub(crate) kernel: u64,
    pub(crate) other: u64,
}

impl Split {
    pub(crate) fn total(&self) -> u64 {
        self.host + self.kernel + self.other
    }
}

/// The idle stretches of `busy` (disjoint, sorted) within `[start, end)`,
/// by cause (see the module's definitions); `pairs` are (work start, call
/// start) sorted; `recorded`, for a run switched on and off, the time
/// recorded (only its part of a stretch counts).
pub(crate) fn idle_split(
    busy: &[(u64, u64)],
    (start, end): (u64, u64),
    pairs: impl IntoIterator<Item = (u64, u64)>,
    mut recorded: Option<&mut Intervals>,
) -> Split {
    let mut pairs = pairs.into_iter().peekable();
    let mut split = Split::default();
    let mut amount = |a: u64, b: u64| -> u64 {
        match recorded.as_deref_mut() {
            Some(r) => r.within(a, b),
            None => b - a,
        }
    };
    let mut prev = start;
    // Stretches and pairs are both in time order: one walk over each.
    for &(s, e) in busy {
        let (s, e) = (s.max(start), e.min(end));
        if s > prev {
            let (a, b) = (prev, s);
            // The earliest call of the work that starts at `b` (pairs are
            // sorted by work start, then call start).
            while pairs.next_if(|p| p.0 < b).is_some() {}
            let call = pairs.peek().filter(|p| p.0 == b).map(|p| p.1);
            let n = amount(a, b);
            match call {
                Some(c) if c > a => split.host += n,
                _ if b - a < KERNEL_WAIT_NS => split.kernel += n,
                _ => split.other += n,
            }
        }
        prev = prev.max(e);
    }
    if end > prev {
        split.host += amount(prev, end);
    }
    split
}

fn pct(part: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * part as f64 / of as f64
    }
}

/// What one device of one process did.
pub(crate) struct DeviceWork<'a> {
    pub(crate) file: &'a str,
    pub(crate) pid: Pid,
    pub(crate) gpu: i64,
    pub(crate) device: String,
    /// Every engine's union.
    pub(crate) busy: Intervals,
    /// Compute kernels' union; `None`: every kernel was compute, and their
    /// union is `kernels_ns` long.
    pub(crate) compute: Option<Intervals>,
    pub(crate) kernels_ns: u64,
    pub(crate) comm: Intervals,
    pub(crate) memory: Intervals,
    pub(crate) pairs: Pairs,
}

/// A device's (work start, call start) pairs, sorted.
pub(crate) enum Pairs {
    /// A log written in order.
    Log(crate::launch::PairLog),
    Sorted(Vec<(u64, u64)>),
}

impl Pairs {
    pub(crate) fn into_sorted(self) -> Vec<(u64, u64)> {
        match self {
            Pairs::Log(l) => l.sorted(),
            Pairs::Sorted(v) => v,
        }
    }
}

/// The idle and temporal rows of one device, over the process's span
/// (`recorded`: its windows, for a run switched on and off) of
/// `recorded_ns`.
pub(crate) fn device_rows(
    mut d: DeviceWork<'_>,
    span: (u64, u64),
    recorded: Option<&mut Intervals>,
    recorded_ns: u64,
) -> (IdleRow, TemporalRow) {
    let busy_ns = d.busy.total();
    let split = match &d.pairs {
        Pairs::Log(l) => idle_split(d.busy.stretches(), span, l.iter(), recorded),
        Pairs::Sorted(v) => idle_split(d.busy.stretches(), span, v.iter().copied(), recorded),
    };
    let idle_ns = split.total();
    let communication_ns = d.comm.total();
    let (compute_ns, both) = match d.compute.take() {
        Some(mut c) => {
            let compute_ns = c.total();
            c.union(std::mem::take(&mut d.comm));
            (compute_ns, compute_ns + communication_ns - c.total())
        }
        None => (d.kernels_ns, 0),
    };
    let memory_ns = d.memory.total();
    let idle = IdleRow {
        file: d.file.to_owned(),
        pid: d.pid,
        rank: None,
        gpu: d.gpu,
        device: d.device.clone(),
        recorded_ns,
        busy_ns,
        idle_ns,
        idle_pct: pct(idle_ns, recorded_ns),
        host_wait_ns: split.host,
        kernel_wait_ns: split.kernel,
        other_wait_ns: split.other,
        host_wait_pct: pct(split.host, idle_ns),
        kernel_wait_pct: pct(split.kernel, idle_ns),
        other_wait_pct: pct(split.other, idle_ns),
    };
    let temporal = TemporalRow {
        file: d.file.to_owned(),
        pid: d.pid,
        rank: None,
        gpu: d.gpu,
        device: d.device,
        recorded_ns,
        compute_ns,
        communication_ns,
        memory_ns,
        idle_ns,
        compute_pct: pct(compute_ns, recorded_ns),
        communication_pct: pct(communication_ns, recorded_ns),
        memory_pct: pct(memory_ns, recorded_ns),
        idle_pct: pct(idle_ns, recorded_ns),
        overlap_pct: pct(both, communication_ns),
    };
    (idle, temporal)
}

/// Launch rows, the most launches first (then by name).
pub(crate) fn launch_rows(list: &mut [(String, LaunchAcc)]) -> Vec<LaunchRow> {
    let mut rows: Vec<LaunchRow> = list
        .iter_mut()
        .map(|(name, l)| {
            let (launches, api_median, api_p99, _) = l.calls.quantiles();
            let (_, delay_median, delay_p99, delay_max) = l.delays.quantiles();
            LaunchRow {
                name: name.clone(),
                short_name: String::new(),
                launches,
                api_median_ns: api_median,
                api_p99_ns: api_p99,
                delay_median_ns: delay_median,
                delay_p99_ns: delay_p99,
                delay_max_ns: delay_max,
                short_kernels: l.short,
                short_pct: pct(l.short, launches),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.launches
            .cmp(&a.launches)
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

/// Outlier rows of a process.
pub(crate) fn outlier_rows(file: &str, pid: Pid, list: &[OutlierData]) -> Vec<OutlierRow> {
    let mut rows: Vec<OutlierRow> = list
        .iter()
        .map(|o| OutlierRow {
            file: file.to_owned(),
            pid,
            gpu: o.gpu,
            stream: o.stream.clone(),
            kernel: o.kernel.clone(),
            short_name: String::new(),
            start_ns: o.start,
            kernel_ns: o.dur,
            delay_ns: o.delay,
            api: o.api.clone(),
            api_start_ns: o.api_start,
            api_ns: o.api_dur,
            tid: o.tid,
        })
        .collect();
    worst_first(&mut rows);
    rows
}

/// The longest delays first, at most [`OUTLIERS`].
pub(crate) fn worst_first(rows: &mut Vec<OutlierRow>) {
    rows.sort_by(|a, b| {
        b.delay_ns
            .cmp(&a.delay_ns)
            .then_with(|| (&a.file, a.pid, a.start_ns).cmp(&(&b.file, b.pid, b.start_ns)))
    });
    rows.truncate(OUTLIERS);
}

/// A share for the verdict: one decimal.
fn p(x: f64) -> String {
    format!("{}%", fixed(x, 1))
}

/// Verdict thresholds, % of GPU time (the recorded time of every device).
pub const HOST_BOUND_PCT: f64 = 25.0;
/// Short-kernel share above which host-bound time is launch-bound, %.
pub const LAUNCH_BOUND_SHORT_PCT: f64 = 50.0;
/// Other wait that makes a run synchronisation-bound, % of GPU time.
pub const SYNC_BOUND_PCT: f64 = 25.0;
/// Busy time that makes a run GPU-bound, % of GPU time.
pub const GPU_BOUND_PCT: f64 = 80.0;
/// Communication or memory time worth a finding, % of GPU time.
pub const SHARE_PCT: f64 = 20.0;

/// The verdict over the rows of every process: see the guide for the
/// rules. `top_kernel` is the kernel with the most time (short name, % of
/// kernel time); `straggler` the ranks table's verdict when it names one.
pub(crate) fn verdict(
    idle: &[IdleRow],
    temporal: &[TemporalRow],
    launches: &[LaunchRow],
    top_kernel: Option<(&str, f64)>,
    straggler: Option<(String, f64)>,
) -> Verdict {
    let sum = |f: fn(&IdleRow) -> u64| idle.iter().map(f).sum::<u64>();
    let recorded = sum(|r| r.recorded_ns);
    let mut findings = Vec::new();
    let add = |findings: &mut Vec<Finding>, kind: &str, text: String, pct: f64| {
        findings.push(Finding {
            kind: kind.to_owned(),
            text,
            pct,
        })
    };
    if recorded == 0 {
        return Verdict {
            text: "no GPU work in the recorded time".to_owned(),
            findings: Vec::new(),
        };
    }
    let host = pct(sum(|r| r.host_wait_ns), recorded);
    let kernel = pct(sum(|r| r.kernel_wait_ns), recorded);
    let other = pct(sum(|r| r.other_wait_ns), recorded);
    let busy = pct(sum(|r| r.busy_ns), recorded);
    let idle_pct = pct(sum(|r| r.idle_ns), recorded);
    let n: u64 = launches.iter().map(|l| l.launches).sum();
    let short = pct(launches.iter().map(|l| l.short_kernels).sum(), n);
    let short_clause = if n > 0 {
        format!("; {} of kernels shorter than their launch", p(short))
    } else {
        String::new()
    };
    if host >= HOST_BOUND_PCT {
        if n > 0 && short >= LAUNCH_BOUND_SHORT_PCT {
            add(
                &mut findings,
                "launch-bound",
                format!(
                    "launch-bound: {} of GPU time idle waiting on the host{short_clause}",
                    p(host)
                ),
                host,
            );
        } else {
            add(
                &mut findings,
                "host-bound",
                format!(
                    "host-bound: {} of GPU time idle waiting on the host{short_clause}",
                    p(host)
                ),
                host,
            );
        }
    }
    if other >= SYNC_BOUND_PCT {
        add(
            &mut findings,
            "sync-bound",
            format!(
                "waiting on dependencies: {} of GPU time idle with work submitted that did not start (an event, another stream or a synchronisation)",
                p(other)
            ),
            other,
        );
    }
    if busy >= GPU_BOUND_PCT {
        let top = top_kernel.map_or(String::new(), |(k, share)| {
            format!("; the top kernel, {k}, takes {} of kernel time", p(share))
        });
        add(
            &mut findings,
            "gpu-bound",
            format!("GPU-bound: GPUs busy {} of the recorded time{top}", p(busy)),
            busy,
        );
    }
    let comm: u64 = temporal.iter().map(|t| t.communication_ns).sum();
    let comm_pct = pct(comm, recorded);
    if comm_pct >= SHARE_PCT {
        let overlapped: f64 = temporal
            .iter()
            .map(|t| t.overlap_pct / 100.0 * t.communication_ns as f64)
            .sum();
        add(
            &mut findings,
            "communication",
            format!(
                "communication: {} of GPU time in communication kernels, {} of it overlapped by compute",
                p(comm_pct),
                p(100.0 * overlapped / comm as f64)
            ),
            comm_pct,
        );
    }
    let memory = pct(temporal.iter().map(|t| t.memory_ns).sum(), recorded);
    if memory >= SHARE_PCT {
        add(
            &mut findings,
            "memory",
            format!("copies: {} of GPU time in memory operations", p(memory)),
            memory,
        );
    }
    if let Some((s, excess)) = straggler {
        add(&mut findings, "straggler", s, excess);
    }
    if findings.is_empty() {
        add(
            &mut findings,
            "balanced",
            format!(
                "no single bottleneck: GPUs busy {} of the recorded time{short_clause}",
                p(busy)
            ),
            busy,
        );
    }
    let mut text = findings
        .iter()
        .map(|f| f.text.clone())
        .collect::<Vec<_>>()
        .join("; ");
    text.push_str(&format!(
        ". Idle {} of GPU time ({} recorded): {} waiting on the host, {} between back-to-back kernels, {} on submitted work.",
        p(idle_pct),
        human(recorded),
        p(host),
        p(kernel),
        p(other)
    ));
    Verdict { text, findings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_stretches_split_into_host_kernel_and_other_wait() {
        // Busy [100, 200), [220, 300) (20 ns after, already submitted:
        // kernel wait), [1000, 1100) (submitted at 250: other), and host
        // wait before the first (submitted at 50), and after the last.
        let busy = [(100, 200), (220, 300), (1000, 1100)];
        let pairs = [(100, 50), (220, 150), (1000, 250)];
        let s = idle_split(&busy, (0, 1500), pairs, None);
        assert_eq!(
            s,
            Split {
                host: 100 + 400,
                kernel: 20,
                other: 700
            }
        );
        // Submitted after the GPU went idle: host wait, however short.
        let s = idle_split(&busy, (0, 1500), [(100, 50), (220, 210), (1000, 250)], None);
        assert_eq!((s.host, s.kernel), (520, 0));
        // Unknown calls: other, or kernel wait when short.
        let s = idle_split(&busy, (100, 1100), [], None);
        assert_eq!(
            s,
            Split {
                host: 0,
                kernel: 20,
                other: 700
            }
        );
    }

    #[test]
    fn communication_kernels_are_found_by_name() {
        assert!(is_communication(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)"
        ));
        assert!(is_communication("void RCCL_kernel<1>()"));
        assert!(!is_communication("ampere_sgemm_128x64_nn"));
    }
}
