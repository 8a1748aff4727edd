//! The summary as one JSON document.
//!
//! Its top level holds the tables over all processes (those of the one
//! process when there is one), `dropped` and `complete`, as single-file
//! readers of earlier versions expect; `files` says what each trace says of
//! itself and `processes` has each process's tables, each object naming its
//! file.

use super::dist::Row;
use super::ranks::Ranks;
use super::read::Span;
use super::report::{CounterRow, FileHeader, Summary, Tables};
use super::telemetry::DeviceTelemetry;
use super::text::losses;
use super::{Options, Report};
use serde_json::{Map, Value, json};

fn take<'a, T>(rows: &'a [T], o: &Options) -> &'a [T] {
    &rows[..o.top.map_or(rows.len(), |n| n.min(rows.len()))]
}

fn row(r: &Row) -> Value {
    json!({
        "name": r.name, "count": r.count, "total_ns": r.total, "time_pct": r.pct,
        "avg_ns": r.avg, "median_ns": r.median, "p99_ns": r.p99, "min_ns": r.min,
        "max_ns": r.max, "stddev_ns": r.stddev, "bytes": r.bytes,
    })
}

fn counter(c: &CounterRow) -> Value {
    let mut v = json!({
        "name": c.metric, "kernels": c.kernels, "mean": c.mean, "min": c.min, "max": c.max,
    });
    if let Some(k) = &c.kernel {
        v["kernel"] = json!(k);
    }
    v
}

fn span(s: Option<Span>) -> Value {
    match s {
        Some(s) => json!({"start_ns": s.start, "end_ns": s.end, "dur_ns": s.dur()}),
        None => Value::Null,
    }
}

/// One GPU's telemetry.
fn device_telemetry(d: &DeviceTelemetry) -> Value {
    json!({
        "gpu": d.gpu,
        "device": d.device,
        "files": d.files,
        "metrics": d.metrics.iter().map(|m| json!({
            "name": m.metric, "unit": m.unit, "samples": m.samples, "sampled_ns": m.sampled,
            "mean": m.mean, "min": m.min, "max": m.max,
        })).collect::<Vec<_>>(),
        "throttle": d.throttle.as_ref().map(|t| json!({
            "sampled_ns": t.sampled, "throttled_ns": t.throttled, "throttled_pct": t.pct,
            "reasons": t.reasons.iter().map(|r| json!({
                "bit": r.bit, "reason": r.reason, "throttling": r.throttling,
                "time_ns": r.time, "time_pct": r.pct,
            })).collect::<Vec<_>>(),
        })),
    })
}

/// The selected tables of `t` into `m`; `telemetry` the devices' (for the
/// scope over everything: it is no process's).
fn tables(
    m: &mut Map<String, Value>,
    t: &Tables,
    telemetry: Option<&[DeviceTelemetry]>,
    o: &Options,
) {
    m.insert("span".into(), span(t.span));
    let rows = |r: &[Row]| Value::from(take(r, o).iter().map(row).collect::<Vec<_>>());
    for r in &o.reports {
        let (key, v) = match r {
            // Over the processes, at the top level (see `render`).
            Report::Ranks => continue,
            Report::Kernels => ("kernels", rows(&t.kernels)),
            Report::Memops => ("memops", rows(&t.memory)),
            Report::Api => ("api", rows(&t.api)),
            Report::Nvtx => ("nvtx", rows(&t.ranges)),
            Report::Counters => {
                let mut kernels: Vec<&str> = Vec::new();
                let by_kernel: Vec<Value> = t
                    .counters_by_kernel
                    .iter()
                    .filter(|c| {
                        let k = c.kernel.as_deref().unwrap_or("");
                        if !kernels.contains(&k) {
                            kernels.push(k);
                        }
                        o.top.is_none_or(|n| kernels.len() <= n)
                    })
                    .map(counter)
                    .collect();
                m.insert("counters_by_kernel".into(), by_kernel.into());
                (
                    "counters",
                    take(&t.counters, o)
                        .iter()
                        .map(counter)
                        .collect::<Vec<_>>()
                        .into(),
                )
            }
            Report::Telemetry => match telemetry {
                Some(d) => (
                    "telemetry",
                    d.iter().map(device_telemetry).collect::<Vec<_>>().into(),
                ),
                None => continue,
            },
            Report::Devices => (
                "devices",
                take(&t.devices, o)
                    .iter()
                    .map(|e| {
                        json!({"gpu": e.gpu, "device": e.device, "engine": e.engine,
                            "ops": e.ops, "busy_ns": e.busy, "busy_pct": e.pct})
                    })
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Report::Streams => (
                "streams",
                take(&t.streams, o)
                    .iter()
                    .map(|s| {
                        json!({"file": s.file, "pid": s.pid, "gpu": s.gpu, "stream": s.name,
                            "kernels": s.kernels, "memops": s.memory, "busy_ns": s.busy,
                            "busy_pct": s.pct})
                    })
                    .collect::<Vec<_>>()
                    .into(),
            ),
            Report::Threads => (
                "threads",
                take(&t.threads, o)
                    .iter()
                    .map(|th| {
                        json!({"file": th.file, "pid": th.pid, "tid": th.tid, "name": th.name,
                            "api_calls": th.calls, "span_ns": th.span,
                            "waiting_calls": th.waiting_calls, "waiting_ns": th.waiting,
                            "waiting_pct": th.pct})
                    })
                    .collect::<Vec<_>>()
                    .into(),
            ),
        };
        m.insert(key.into(), v);
    }
}

fn dropped(l: &[(String, u64)]) -> Value {
    l.iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect::<Map<_, _>>()
        .into()
}

fn file(h: &FileHeader) -> Value {
    json!({
        "file": h.path,
        "bytes": h.size,
        "span": span(h.span),
        "pids": h.pids,
        "devices": h.devices.iter().map(|d| json!({
            "gpu": d.gpu_id, "name": d.name, "vendor": d.vendor, "model": d.model,
            "architecture": d.architecture, "pci_bdf": d.pci_bdf,
        })).collect::<Vec<_>>(),
        "sources": h.sources,
        "track_event_categories": h.categories,
        "dropped": h.losses.as_deref().map(dropped),
        "losses": losses(h).join("\n"),
        "truncated_at": h.truncated_at,
        "damaged_at": h.damaged_at,
        "damaged_packets": h.damaged_packets,
        "windows": h.windows.map(|(n, t)| json!({"count": n, "recorded_ns": t, "spans": h.window_spans})),
        "problems": h.problems,
        "dangling_submissions": h.dangling.len(),
        "complete": h.complete(),
    })
}

/// The ranks of a job, with the verdict.
pub(crate) fn ranks(r: &Ranks) -> Value {
    json!({
        "known": r.known,
        "note": r.note(),
        "compared": r.measure.key(),
        "rows": r.rows.iter().map(|x| json!({
            "rank": x.rank, "order": x.order, "world_size": x.world_size, "file": x.file,
            "pid": x.pid, "gpus": x.devices, "kernels": x.kernels, "copies": x.copies,
            "api_calls": x.api_calls, "gpu_busy_ns": x.gpu_busy, "steps": x.steps,
            "step_ns": x.step_time, "gpu_per_step_ns": x.gpu_per_step,
            "waiting_pct": x.wait_pct,
        })).collect::<Vec<_>>(),
        "total": {
            "kernels": r.rows.iter().map(|x| x.kernels).sum::<u64>(),
            "copies": r.rows.iter().map(|x| x.copies).sum::<u64>(),
            "api_calls": r.rows.iter().map(|x| x.api_calls).sum::<u64>(),
            "gpu_busy_ns": r.rows.iter().map(|x| x.gpu_busy).sum::<u64>(),
        },
        "straggler": r.straggler.as_ref().map(|s| {
            let x = &r.rows[s.row];
            json!({
                "rank": x.rank, "order": x.order, "pid": x.pid, "measure": s.measure.key(),
                "value": s.value, "median_of_others": s.others, "excess": s.excess,
            })
        }),
        "verdict": r.verdict(),
    })
}

/// Renders the summary as JSON.
pub(crate) fn render(s: &Summary, o: &Options) -> Value {
    let mut top = Map::new();
    top.insert(
        "files".into(),
        s.files.iter().map(file).collect::<Vec<_>>().into(),
    );
    tables(&mut top, &s.all, Some(&s.telemetry), o);
    let mut all_dropped: Vec<(String, u64)> = Vec::new();
    for (k, v) in s.files.iter().flat_map(|f| f.losses.iter().flatten()) {
        match all_dropped.iter_mut().find(|(x, _)| x == k) {
            Some(e) => e.1 += v,
            None => all_dropped.push((k.clone(), *v)),
        }
    }
    top.insert("dropped".into(), dropped(&all_dropped));
    top.insert("complete".into(), s.complete().into());
    let procs: Vec<Value> = s
        .processes
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("file".into(), json!(p.file));
            m.insert("pid".into(), json!(p.pid));
            m.insert("rank".into(), json!(p.rank.map(|r| r.rank)));
            tables(&mut m, &p.tables, None, o);
            Value::Object(m)
        })
        .collect();
    top.insert("processes".into(), procs.into());
    if o.reports.contains(&Report::Ranks)
        && let Some(r) = &s.ranks
    {
        top.insert("ranks".into(), ranks(r));
    }
    Value::Object(top)
}
