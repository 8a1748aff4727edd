//! Checks of what gpu-trace derives beyond the GPU work itself: the busy %
//! counters, unified-memory events and the device memory curve.

use crate::check::Report;
use gpu_trace_analysis::Intervals;
use gpu_trace_reader::pb::Fields;
use gpu_trace_reader::{GpuEvent, Stage, Trace, wire};
use std::collections::BTreeMap;

/// One `GpuMemTotalEvent`: device memory a process holds on a GPU from
/// `ts` on. The reader does not decode them; [`memory_totals`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemoryTotal {
    /// When, ns (BOOTTIME).
    pub ts: u64,
    /// `gpu_id`.
    pub gpu: u64,
    /// Process.
    pub pid: u64,
    /// Bytes in use.
    pub bytes: u64,
}

/// Every `GpuMemTotalEvent` of the trace file's bytes, in time order.
pub fn memory_totals(raw: &[u8]) -> Vec<MemoryTotal> {
    let mut out = Vec::new();
    for (f, v) in Fields::new(raw).map_while(Result::ok) {
        if f != wire::TRACE_PACKET {
            continue;
        }
        let Some(p) = v.as_bytes() else { continue };
        let (mut ts, mut ev) = (0, None);
        for (f, v) in Fields::new(p).map_while(Result::ok) {
            match f {
                wire::packet::TIMESTAMP => ts = v.as_u64().unwrap_or(0),
                wire::packet::GPU_MEM_TOTAL_EVENT => ev = v.as_bytes(),
                _ => {}
            }
        }
        let Some(ev) = ev else { continue };
        let mut m = MemoryTotal {
            ts,
            gpu: 0,
            pid: 0,
            bytes: 0,
        };
        for (f, v) in Fields::new(ev).map_while(Result::ok) {
            let x = v.as_u64().unwrap_or(0);
            match f {
                wire::gpu_mem_total::GPU_ID => m.gpu = x,
                wire::gpu_mem_total::PID => m.pid = x,
                wire::gpu_mem_total::SIZE => m.bytes = x,
                _ => {}
            }
        }
        out.push(m);
    }
    out.sort();
    out
}

/// `memory_steps=a,b,...`: the memory curve of the GPU the process used
/// (one GPU) takes exactly these values, in this order.
pub fn memory_steps(totals: &[MemoryTotal], v: &str, r: &mut Report) {
    let want: Result<Vec<u64>, _> = v.split(',').map(|x| x.trim().parse::<u64>()).collect();
    let Ok(want) = want else {
        r.fail(format!("EXPECT memory_steps={v}: not a list of numbers"));
        return;
    };
    let gpus: std::collections::BTreeSet<(u64, u64)> =
        totals.iter().map(|m| (m.gpu, m.pid)).collect();
    if gpus.len() != 1 {
        r.fail(format!(
            "device memory curves for (gpu, pid) {gpus:?}, expected one"
        ));
        return;
    }
    let got: Vec<u64> = totals.iter().map(|m| m.bytes).collect();
    r.number("memory_steps", got.len());
    if got != want {
        r.fail(format!(
            "device memory in use after each call: trace has {got:?}, program says {want:?}"
        ));
    }
}

/// Whether `e` is a unified-memory migration or fault (stage "Unified
/// memory"): the driver's doing, submitted by no API call.
pub fn is_uvm(e: &GpuEvent) -> bool {
    matches!(&e.stage, Stage::Other(s) if s.as_str() == "Unified memory")
}

/// The unified-memory events.
fn uvm_events(t: &Trace) -> impl Iterator<Item = &GpuEvent> {
    t.gpu_events.iter().filter(|e| is_uvm(e))
}

/// How many unified-memory events the trace holds.
pub fn uvm_event_count(t: &Trace) -> usize {
    uvm_events(t).count()
}

/// The slice name of an EXPECT unified-memory kind.
fn uvm_name(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "HtoD" => "UM migration HtoD",
        "DtoH" => "UM migration DtoH",
        "DtoD" => "UM migration DtoD",
        "gpu_page_fault" => "UM GPU page fault",
        "cpu_page_fault" => "UM CPU page fault",
        "thrashing" => "UM thrashing",
        "throttling" => "UM throttling",
        "remote_map" => "UM remote map",
        _ => return None,
    })
}

/// `min_uvm.KIND=N`: at least N unified-memory events of KIND.
pub fn min_uvm(t: &Trace, kind: &str, n: u64, r: &mut Report) {
    let Some(name) = uvm_name(kind) else {
        r.fail(format!(
            "EXPECT min_uvm.{kind}: unknown unified-memory kind"
        ));
        return;
    };
    let got = uvm_events(t).filter(|e| e.name.as_str() == name).count();
    r.number(&format!("uvm.{kind}"), got);
    if (got as u64) < n {
        r.fail(format!(
            "unified-memory {kind}: trace has {got} events, program made at least {n}"
        ));
    }
}

/// `uvm_bytes.CAUSE.DIR=B`: the migrations DIR (HtoD, DtoH, DtoD) with
/// that cause (`any` for all) move exactly B bytes.
pub fn uvm_bytes(t: &Trace, what: &str, b: u64, r: &mut Report) {
    let Some((cause, dir)) = what.split_once('.') else {
        r.fail(format!(
            "EXPECT uvm_bytes.{what}: expected uvm_bytes.CAUSE.DIR"
        ));
        return;
    };
    let Some(name) = uvm_name(dir).filter(|_| dir.ends_with("toD") || dir.ends_with("toH")) else {
        r.fail(format!(
            "EXPECT uvm_bytes.{what}: {dir} is no migration direction"
        ));
        return;
    };
    let got: u64 = uvm_events(t)
        .filter(|e| e.name.as_str() == name)
        .filter(|e| cause == "any" || e.arg("cause").and_then(|a| a.as_str()) == Some(cause))
        .filter_map(GpuEvent::bytes)
        .sum();
    r.number(&format!("uvm_bytes.{what}"), got);
    if got != b {
        r.fail(format!(
            "unified memory migrated {dir} ({cause}): trace has {got} bytes, program says {b}"
        ));
    }
}

/// Which busy counter a GPU event's time counts in, as gpu-trace names it.
fn engine(e: &GpuEvent) -> Option<&'static str> {
    Some(match (&e.stage, e.name.as_str()) {
        (Stage::Kernel, _) => "Compute busy",
        (Stage::Memset, _) => "Memset busy",
        (Stage::Memcpy, n) if n.ends_with("HtoD") || n.ends_with("HtoA") => "Copy HtoD busy",
        (Stage::Memcpy, n) if n.ends_with("DtoH") || n.ends_with("AtoH") => "Copy DtoH busy",
        (Stage::Memcpy, n) if n.ends_with("PtoP") => "Copy peer busy",
        (Stage::Memcpy, "Memcpy HtoH" | "Memcpy Unknown") => return None,
        (Stage::Memcpy, _) => "Copy DtoD busy",
        (Stage::Other(_), "UM migration HtoD") => "Copy HtoD busy",
        (Stage::Other(_), "UM migration DtoH") => "Copy DtoH busy",
        (Stage::Other(_), "UM migration DtoD") => "Copy peer busy",
        _ => return None,
    })
}

/// Whether a counter is one of the busy % gpu-trace derives from the GPU
/// activity (`Compute busy`, `Copy HtoD busy` ...), not a hardware counter
/// or telemetry, whose SYSTEM and MEMORY groups they share.
pub fn is_busy(name: &str) -> bool {
    name.ends_with(" busy")
}

/// Width of gpu-trace's busy intervals (`gpu_trace_model::schema::busy::INTERVAL`).
const INTERVAL: u64 = 10_000_000;

/// The busy points gpu-trace should have written: per (counter, GPU), each
/// 10 ms interval's share covered by the union of that engine's work
/// (`gpu-trace stats`'s union, [`Intervals`]), written where the value
/// changes.
fn expected_busy(t: &Trace) -> BTreeMap<(String, i64), Vec<(u64, f64)>> {
    let mut work: BTreeMap<(String, i64), Intervals> = BTreeMap::new();
    for e in &t.gpu_events {
        if let (Some(name), Some(gpu)) = (engine(e), e.gpu_id) {
            work.entry((name.to_owned(), gpu))
                .or_default()
                .add(e.ts, e.ts.saturating_add(e.dur));
        }
    }
    let mut out = BTreeMap::new();
    for (key, mut union) in work {
        // Each stretch of the union, split at the interval boundaries.
        let mut busy: BTreeMap<u64, u64> = BTreeMap::new();
        for &(s, e) in union.stretches() {
            let mut a = s;
            while a < e {
                let b = (a / INTERVAL + 1) * INTERVAL;
                *busy.entry(a / INTERVAL).or_default() += e.min(b) - a;
                a = b;
            }
        }
        let (Some(&first), Some(&last)) = (busy.keys().next(), busy.keys().next_back()) else {
            continue;
        };
        let mut points = Vec::new();
        let mut prev = 0.0;
        for i in first..=last + 1 {
            let v = busy
                .get(&i)
                .map_or(0.0, |&ns| ns as f64 * 100.0 / INTERVAL as f64);
            if v != prev {
                points.push((i * INTERVAL, v));
                prev = v;
            }
        }
        out.insert(key, points);
    }
    out
}

/// Compares gpu-trace's busy counters with what the trace's own GPU work
/// implies; a failure with `exact`, a note otherwise.
pub fn busy(t: &Trace, exact: bool, r: &mut Report) {
    let want = expected_busy(t);
    let mut got: BTreeMap<(String, i64), Vec<(u64, f64)>> = BTreeMap::new();
    for c in t.counters.iter().filter(|c| is_busy(c.name.as_str())) {
        got.entry((c.name.to_string(), c.gpu_id))
            .or_default()
            .push((c.ts, c.value));
    }
    for v in got.values_mut() {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    }
    let points: usize = got.values().map(Vec::len).sum();
    r.number("busy_points", points);
    let mut differ = Vec::new();
    for key in want
        .keys()
        .chain(got.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (w, g) = (want.get(key), got.get(key));
        let same = match (w, g) {
            (Some(w), Some(g)) => {
                w.len() == g.len()
                    && w.iter()
                        .zip(g)
                        .all(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() < 1e-9)
            }
            _ => false,
        };
        if !same {
            let first = |v: Option<&Vec<(u64, f64)>>| {
                v.map_or("none".to_owned(), |v| {
                    format!("{} points, first {:?}", v.len(), v.first())
                })
            };
            differ.push(format!(
                "{} on GPU {}: trace {}, work implies {}",
                key.0,
                key.1,
                first(g),
                first(w)
            ));
        }
    }
    if differ.is_empty() {
        return;
    }
    let msg = format!(
        "busy counters differ from the union of the trace's GPU work: {}",
        differ.join("; ")
    );
    if exact {
        r.fail(msg);
    } else {
        r.note(format!("  {msg}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_reader::{CounterUnits, CounterValue};

    fn kernel(ts: u64, dur: u64) -> GpuEvent {
        GpuEvent {
            event_id: ts + 1,
            ts,
            dur,
            gpu_id: Some(0),
            stage: Stage::Kernel,
            name: "k".into(),
            queue: "GPU 0 · stream 7".into(),
            queue_description: "".into(),
            context: None,
            kernel: None,
            grid: None,
            block: None,
            args: Vec::new(),
            sequence: 1,
        }
    }

    fn busy_value(ts: u64, value: f64) -> CounterValue {
        CounterValue {
            gpu_id: 0,
            name: "Compute busy".into(),
            ts,
            value,
            groups: vec![1],
            units: CounterUnits::default(),
            description: "".into(),
        }
    }

    /// A trace of `gpu_events` and `counters` alone.
    fn trace(gpu_events: Vec<GpuEvent>, counters: Vec<CounterValue>) -> Trace {
        Trace {
            gpu_events,
            counters,
            ..Default::default()
        }
    }

    #[test]
    fn busy_counters_must_equal_the_union_of_the_work() {
        const MS: u64 = 1_000_000;
        // Two overlapping kernels: [2, 6) ms and [4, 7) ms, 5 ms of the
        // first interval; a third one [25, 27) ms.
        let work = vec![
            kernel(2 * MS, 4 * MS),
            kernel(4 * MS, 3 * MS),
            kernel(25 * MS, 2 * MS),
        ];
        let values = vec![
            busy_value(0, 50.0),
            busy_value(10 * MS, 0.0),
            busy_value(20 * MS, 20.0),
            busy_value(30 * MS, 0.0),
        ];
        let mut r = Report::new("x");
        busy(&trace(work.clone(), values.clone()), true, &mut r);
        assert!(r.passed(), "{:?}", r.failures);
        // Overlaps counted twice, a value off: each fails.
        for (i, v) in [(0, 70.0), (2, 20.5)] {
            let mut bad = values.clone();
            bad[i].value = v;
            let mut r = Report::new("x");
            busy(&trace(work.clone(), bad), true, &mut r);
            assert!(!r.passed(), "{i} -> {v}");
            assert!(
                r.failures[0].contains("Compute busy on GPU 0"),
                "{:?}",
                r.failures
            );
        }
        // A missing return to 0 fails too.
        let bad = trace(work, values[..3].to_vec());
        let mut r = Report::new("x");
        busy(&bad, true, &mut r);
        assert!(!r.passed());
        // Without `exact` a difference is a note.
        let mut r = Report::new("x");
        busy(&bad, false, &mut r);
        assert!(r.passed() && !r.notes.is_empty());
    }
}
