//! `gpu-trace export --format csv -o DIR TRACE`: one trace's events as CSV
//! tables, one row per event, read by the Python package's
//! `gpu_trace.load()`. The trace is read by the same reader as `stats`
//! (`gpu_trace_reader`), so Python parses no protobuf of its own.
//!
//! Tables (`DIR/<table>.csv`, a header line first; times in ns of the
//! trace's clock; an empty field is a value the trace does not have):
//!
//! - `kernels`: pid, gpu, queue, start_ns, dur_ns, name (demangled),
//!   mangled, grid_x/y/z, block_x/y/z, event_id;
//! - `memory`: pid, gpu, queue, start_ns, dur_ns, kind (`memcpy`,
//!   `memset`), name, bytes, event_id;
//! - `api`: pid, tid, start_ns, dur_ns, name, depth, event_ids (the GPU
//!   work the call submitted, space-separated);
//! - `ranges`: pid, tid, start_ns, dur_ns, name, depth (NVTX and roctx);
//! - `counters`: gpu, ts_ns, name, value, kind (`kernel`: a per-kernel
//!   counter's value at its kernel's start; `device`: a telemetry sample).
//!
//! The columns are the contract with `python/gpu_trace/_load.py`; a change
//! here changes that file's schema too.

use gpu_trace_reader::{CounterValue, GpuEvent, Stage, Trace};
use rustc_hash::FxHashMap;
use std::path::Path;

/// The tables' names and columns.
pub(crate) const TABLES: [(&str, &[&str]); 5] = [
    (
        "kernels",
        &[
            "pid", "gpu", "queue", "start_ns", "dur_ns", "name", "mangled", "grid_x", "grid_y",
            "grid_z", "block_x", "block_y", "block_z", "event_id",
        ],
    ),
    (
        "memory",
        &[
            "pid", "gpu", "queue", "start_ns", "dur_ns", "kind", "name", "bytes", "event_id",
        ],
    ),
    (
        "api",
        &[
            "pid",
            "tid",
            "start_ns",
            "dur_ns",
            "name",
            "depth",
            "event_ids",
        ],
    ),
    (
        "ranges",
        &["pid", "tid", "start_ns", "dur_ns", "name", "depth"],
    ),
    ("counters", &["gpu", "ts_ns", "name", "value", "kind"]),
];

/// Writes `trace`'s tables into `dir` (made if missing): `DIR/<table>.csv`.
pub(crate) fn export(trace: &Path, dir: &Path) -> Result<(), String> {
    let t = Trace::open(trace).map_err(|e| match e {
        // The error names the path.
        gpu_trace_reader::ReadError::Io { .. } => e.to_string(),
        e => format!("{}: {e}", trace.display()),
    })?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (table, columns) in TABLES {
        let path = dir.join(format!("{table}.csv"));
        write_table(&t, table, columns, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

type Row = Vec<String>;

fn write_table(t: &Trace, table: &str, columns: &[&str], path: &Path) -> Result<(), String> {
    let mut w = csv::Writer::from_path(path).map_err(|e| e.to_string())?;
    w.write_record(columns).map_err(|e| e.to_string())?;
    let mut put = |row: Row| {
        debug_assert_eq!(row.len(), columns.len(), "{table}");
        w.write_record(&row).map_err(|e| e.to_string())
    };
    match table {
        "kernels" => t.kernels().try_for_each(|k| put(kernel(k)))?,
        "memory" => t.memory_ops().try_for_each(|m| put(memory(m)))?,
        "api" | "ranges" => {
            let api = table == "api";
            t.slices
                .iter()
                .filter(|s| s.gpu_api.is_some() == api)
                .try_for_each(|s| {
                    let th = t.thread_of(s.track);
                    let mut row = vec![
                        opt(th.map(|th| th.pid)),
                        opt(th.map(|th| th.tid)),
                        s.ts.to_string(),
                        s.dur.to_string(),
                        s.name.as_str().to_owned(),
                        s.depth.to_string(),
                    ];
                    if api {
                        row.push(
                            s.submissions
                                .iter()
                                .map(u64::to_string)
                                .collect::<Vec<_>>()
                                .join(" "),
                        );
                    }
                    put(row)
                })?
        }
        "counters" => counters(&t.counters).into_iter().try_for_each(&mut put)?,
        _ => unreachable!("a table of TABLES"),
    }
    w.flush().map_err(|e| e.to_string())
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn kernel(k: &GpuEvent) -> Row {
    let (name, mangled) = match &k.kernel {
        Some(info) if !info.demangled.is_empty() => (info.demangled.clone(), info.name.clone()),
        Some(info) => (k.name.as_str().to_owned(), info.name.clone()),
        None => (k.name.as_str().to_owned(), String::new()),
    };
    let dims = |d: Option<[u32; 3]>| -> [String; 3] {
        match d {
            Some(d) => d.map(|v| v.to_string()),
            None => Default::default(),
        }
    };
    let mut row = vec![
        opt(k.context.map(|c| c.pid)),
        opt(k.gpu_id),
        k.queue.as_str().to_owned(),
        k.ts.to_string(),
        k.dur.to_string(),
        name,
        mangled,
    ];
    row.extend(dims(k.grid));
    row.extend(dims(k.block));
    row.push(k.event_id.to_string());
    row
}

fn memory(m: &GpuEvent) -> Row {
    vec![
        opt(m.context.map(|c| c.pid)),
        opt(m.gpu_id),
        m.queue.as_str().to_owned(),
        m.ts.to_string(),
        m.dur.to_string(),
        match m.stage {
            Stage::Memset => "memset",
            _ => "memcpy",
        }
        .to_owned(),
        m.name.as_str().to_owned(),
        opt(m.bytes()),
        m.event_id.to_string(),
    ]
}

/// Counter rows: each sample of the device's telemetry, and each value of
/// a per-kernel counter (which returns to zero at its kernel's end: every
/// other sample of a device's counter is that reset, as `stats` reads it).
fn counters(values: &[CounterValue]) -> Vec<Row> {
    use gpu_trace_reader::wire::counters::GROUP_COMPUTE;
    let mut next_is_value: FxHashMap<(i64, &str), bool> = FxHashMap::default();
    values
        .iter()
        .filter_map(|c| {
            let per_kernel = c.groups.is_empty() || c.groups.contains(&GROUP_COMPUTE);
            if per_kernel {
                let v = next_is_value
                    .entry((c.gpu_id, c.name.as_str()))
                    .or_insert(true);
                let is_value = *v;
                *v = !is_value;
                if !is_value {
                    return None;
                }
            }
            Some(vec![
                c.gpu_id.to_string(),
                c.ts.to_string(),
                c.name.as_str().to_owned(),
                c.value.to_string(),
                if per_kernel { "kernel" } else { "device" }.to_owned(),
            ])
        })
        .collect()
}
