//! The summary as text tables: numbers with thousands separators, names cut
//! to a width. Every string from a trace is escaped
//! ([`gpu_trace_reader::text`]): control characters in a kernel name reach
//! the terminal as `\x1b`, not as an escape sequence, and a newline in one
//! cannot forge a line.

use super::{Options, Report};
use crate::{
    CounterRow, DeviceTelemetry, FileSummary, RankRow, Ranks, Row, Span, Summary, Tables, pid_text,
};
use std::borrow::Cow;
use std::fmt::Write as _;

/// `1234567` → `1,234,567`.
pub fn int(n: u64) -> String {
    group(&n.to_string())
}

/// `x` with `decimals` decimals and thousands separators.
pub fn fixed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    let (sign, s) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s.as_str()),
    };
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (s, None),
    };
    match frac {
        Some(f) => format!("{sign}{}.{f}", group(whole)),
        None => format!("{sign}{}", group(whole)),
    }
}

fn group(digits: &str) -> String {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits.to_owned(); // inf, NaN
    }
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration for people: `850 ns`, `12.345 µs`, `1.234 ms`, `3.210 s`.
pub fn human(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.3} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{} s", fixed(ns as f64 / 1e9, 3)),
    }
}

/// `name`, escaped, cut to `width` characters, the last an ellipsis (0:
/// whole).
pub fn clip(name: &str, width: usize) -> Cow<'_, str> {
    gpu_trace_reader::text::clip(name, width)
}

/// Text from a trace that is not a name in a column (a device's model, a
/// data source), escaped and cut at [`TEXT_WIDTH`] characters.
fn shown(s: &str) -> Cow<'_, str> {
    gpu_trace_reader::text::printable(s, TEXT_WIDTH)
}

/// Characters of a value from a trace shown at most outside the columns.
const TEXT_WIDTH: usize = 200;

/// A table: right-aligned columns but the last (a name), widths from the
/// cells.
fn grid(out: &mut String, title: &str, header: &[&str], rows: &[Vec<String>]) {
    grid_left(out, title, header, rows, 0);
}

/// [`grid`], with the first `left` columns (text) left-aligned too.
fn grid_left(out: &mut String, title: &str, header: &[&str], rows: &[Vec<String>], left: usize) {
    let _ = writeln!(out, "\n{title}\n");
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, c) in cells.enumerate() {
            s.push_str("  ");
            let pad = widths[i].saturating_sub(c.chars().count());
            if i + 1 == n {
                s.push_str(c);
            } else if i < left {
                s.push_str(c);
                s.extend(std::iter::repeat_n(' ', pad));
            } else {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(c);
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    };
    line(out, &mut header.iter().copied());
    for r in rows {
        line(out, &mut r.iter().map(String::as_str));
    }
}

fn none(out: &mut String, title: &str, what: &str) {
    let _ = writeln!(out, "\n{title}: {what}");
}

fn top<T>(rows: &[T], o: &Options) -> usize {
    o.top.map_or(rows.len(), |n| n.min(rows.len()))
}

fn durations(out: &mut String, title: &str, rows: &[Row], bytes: bool, o: &Options, what: &str) {
    durations_named(out, title, rows, bytes, o, what, |r| &r.name);
}

fn durations_named(
    out: &mut String,
    title: &str,
    rows: &[Row],
    bytes: bool,
    o: &Options,
    what: &str,
    name: impl Fn(&Row) -> &str,
) {
    if rows.is_empty() {
        if o.explicit {
            none(out, title, what);
        }
        return;
    }
    let mut header = vec![
        "Time(%)",
        "Total Time (ns)",
        "Instances",
        "Avg (ns)",
        "Med (ns)",
        "P99 (ns)",
        "Min (ns)",
        "Max (ns)",
        "StdDev (ns)",
    ];
    if bytes {
        header.push("Total (MB)");
    }
    header.push("Name");
    let cells: Vec<Vec<String>> = rows[..top(rows, o)]
        .iter()
        .map(|r| {
            let mut c = vec![
                format!("{:.1}", r.pct),
                int(r.total),
                int(r.count),
                fixed(r.avg, 1),
                fixed(r.median, 1),
                int(r.p99),
                int(r.min),
                int(r.max),
                fixed(r.stddev, 1),
            ];
            if bytes {
                c.push(fixed(r.bytes.unwrap_or(0) as f64 / 1e6, 3));
            }
            c.push(clip(name(r), o.name_width).into_owned());
            c
        })
        .collect();
    grid(out, title, &header, &cells);
    more(out, rows.len(), o);
}

fn more(out: &mut String, n: usize, o: &Options) {
    if let Some(t) = o.top
        && n > t
    {
        let _ = writeln!(out, "  ... {} more (--top {t})", int((n - t) as u64));
    }
}

/// A counter value: integers as such, else four decimals.
fn value(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        fixed(x, 0)
    } else {
        fixed(x, 4)
    }
}

/// A telemetry reading: samples are a few digits deep (clocks in MHz,
/// bytes, watts), so large values get no decimals and small ones two.
fn reading(x: f64) -> String {
    if x.abs() >= 1000.0 || x.fract() == 0.0 {
        fixed(x.round(), 0)
    } else {
        fixed(x, 2)
    }
}

fn counters(out: &mut String, all: &[CounterRow], by_kernel: &[CounterRow], o: &Options) {
    if all.is_empty() {
        if o.explicit {
            none(out, "Per-kernel counters", "none in the trace");
        }
        return;
    }
    let cells: Vec<Vec<String>> = all[..top(all, o)]
        .iter()
        .map(|c| {
            vec![
                int(c.kernels),
                value(c.mean),
                value(c.min),
                value(c.max),
                clip(&c.metric, o.name_width).into_owned(),
            ]
        })
        .collect();
    grid(
        out,
        "Per-kernel counters",
        &["Kernels", "Mean", "Min", "Max", "Counter"],
        &cells,
    );
    more(out, all.len(), o);
    let _ = writeln!(out, "\nPer-kernel counters by kernel");
    let mut kernels = 0;
    let mut i = 0;
    while i < by_kernel.len() {
        let k = by_kernel[i].kernel.as_deref().unwrap_or("");
        let j = i + by_kernel[i..]
            .iter()
            .take_while(|c| c.kernel.as_deref() == Some(k))
            .count();
        kernels += 1;
        if o.top.is_none_or(|t| kernels <= t) {
            let cells: Vec<Vec<String>> = by_kernel[i..j]
                .iter()
                .map(|c| {
                    vec![
                        int(c.kernels),
                        value(c.mean),
                        value(c.min),
                        value(c.max),
                        clip(&c.metric, o.name_width).into_owned(),
                    ]
                })
                .collect();
            grid(
                out,
                &format!("  {}", clip(k, o.name_width)),
                &["Kernels", "Mean", "Min", "Max", "Counter"],
                &cells,
            );
        }
        i = j;
    }
    more(out, kernels, o);
}

/// The tables of a scope; `telemetry` is the devices' (for the scope over
/// everything: it is no process's).
fn tables(
    out: &mut String,
    t: &Tables,
    telemetry: Option<&[DeviceTelemetry]>,
    o: &Options,
    several: bool,
) {
    for r in &o.reports {
        match r {
            // Once, over the processes (see `render`).
            Report::Ranks => {}
            Report::Kernels => {
                durations_named(out, "GPU kernels", &t.kernels, false, o, "none", |r| {
                    super::kernel_name(r, o.names)
                })
            }
            // At the top (see `render`).
            Report::Verdict => {}
            Report::Idle => idle(out, t, o, several),
            Report::Temporal => temporal(out, t, o, several),
            Report::Launches => launches(out, t, o, several),
            Report::Memops => durations(out, "GPU memory operations", &t.memory, true, o, "none"),
            Report::Api => durations(out, "API calls", &t.api, false, o, "none in the trace"),
            Report::Nvtx => durations(
                out,
                "NVTX / roctx ranges",
                &t.ranges,
                false,
                o,
                "none in the trace",
            ),
            Report::Counters => counters(out, &t.counters, &t.counters_by_kernel, o),
            Report::Devices => devices(out, t, o),
            Report::Telemetry => {
                if let Some(d) = telemetry {
                    telemetry_tables(out, d, o);
                }
            }
            Report::Streams => streams(out, t, o, several),
            Report::Threads => threads(out, t, o, several),
        }
    }
}

const RANKS: &str = "Ranks (GPU busy: union of each device's work; waiting: share of the threads' traced time in API calls that wait for the GPU)";

fn ranks(out: &mut String, r: &Ranks, o: &Options) {
    let cells: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|x| {
            let opt = |v: Option<f64>| v.map_or("-".to_owned(), |v| int(v.round() as u64));
            vec![
                x.label(),
                pid_text(x.pid),
                x.devices
                    .iter()
                    .map(|g| g.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                int(x.kernels),
                int(x.copies),
                int(x.api_calls),
                int(x.gpu_busy),
                int(x.steps),
                opt(x.step_time),
                opt(x.gpu_per_step),
                format!("{:.1}", x.wait_pct),
                clip(&x.file, o.name_width).into_owned(),
            ]
        })
        .collect();
    grid(
        out,
        RANKS,
        &[
            "Rank",
            "PID",
            "GPUs",
            "Kernels",
            "Copies",
            "API calls",
            "GPU busy (ns)",
            "Steps",
            "Step (ns)",
            "GPU/step (ns)",
            "Waiting(%)",
            "File",
        ],
        &cells,
    );
    let total = |f: fn(&RankRow) -> u64| int(r.rows.iter().map(f).sum());
    let _ = writeln!(
        out,
        "  All ranks: {} kernels, {} copies, {} API calls, {} ns GPU busy",
        total(|x| x.kernels),
        total(|x| x.copies),
        total(|x| x.api_calls),
        total(|x| x.gpu_busy),
    );
    if let Some(n) = r.note() {
        let _ = writeln!(out, "  Note: {n}");
    }
    let _ = writeln!(
        out,
        "
Verdict: {}",
        r.verdict()
    );
}

const DEVICES: &str = "GPU busy time (union of each engine's work over the recorded time: the span, or the windows and their drain)";
const TELEMETRY: &str =
    "GPU telemetry (each value holds until the next sample; means weighted by that time)";
const STREAMS: &str = "Streams (busy: union of their work over their process's recorded time)";
const THREADS: &str = "Threads: time in API calls that wait for the GPU (over each thread's span, the recorded part of it)";

fn devices(out: &mut String, t: &Tables, o: &Options) {
    if t.devices.is_empty() {
        if o.explicit {
            none(out, DEVICES, "no GPU work");
        }
        return;
    }
    let rows = &t.devices[..top(&t.devices, o)];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|e| {
            vec![
                format!("GPU {}", e.gpu),
                shown(&e.engine).into_owned(),
                int(e.ops),
                int(e.busy),
                format!("{:.1}", e.pct),
                clip(&e.device, o.name_width).into_owned(),
            ]
        })
        .collect();
    grid_left(
        out,
        DEVICES,
        &[
            "GPU",
            "Engine",
            "Operations",
            "Busy (ns)",
            "Busy(%)",
            "Device",
        ],
        &cells,
        2,
    );
    more(out, t.devices.len(), o);
}

fn telemetry_tables(out: &mut String, devices: &[DeviceTelemetry], o: &Options) {
    if devices.is_empty() {
        if o.explicit {
            none(out, TELEMETRY, "none in the trace");
        }
        return;
    }
    let _ = writeln!(out, "\n{TELEMETRY}");
    for d in devices {
        let name = if d.device.is_empty() {
            format!("GPU {}", d.gpu)
        } else {
            format!("GPU {}: {}", d.gpu, clip(&d.device, o.name_width))
        };
        if !d.metrics.is_empty() {
            let cells: Vec<Vec<String>> = d
                .metrics
                .iter()
                .map(|m| {
                    vec![
                        reading(m.mean),
                        reading(m.min),
                        reading(m.max),
                        shown(&m.unit).into_owned(),
                        int(m.samples),
                        human(m.sampled),
                        clip(&m.metric, o.name_width).into_owned(),
                    ]
                })
                .collect();
            grid(
                out,
                &format!("  {name}"),
                &["Mean", "Min", "Max", "Unit", "Samples", "Sampled", "Metric"],
                &cells,
            );
        } else {
            let _ = writeln!(out, "\n  {name}");
        }
        let Some(th) = &d.throttle else {
            continue;
        };
        let _ = writeln!(
            out,
            "\n  Throttled: {} of {} sampled ({:.1}%)",
            human(th.throttled),
            human(th.sampled),
            th.pct
        );
        if th.reasons.is_empty() {
            continue;
        }
        let cells: Vec<Vec<String>> = th
            .reasons
            .iter()
            .map(|r| {
                vec![
                    format!("{:#x}", r.bit),
                    int(r.time),
                    format!("{:.1}", r.pct),
                    if r.throttling {
                        shown(&r.reason).into_owned()
                    } else {
                        format!("{} (not throttling)", shown(&r.reason))
                    },
                ]
            })
            .collect();
        grid(
            out,
            "  Clock-event reasons",
            &["Bit", "Time (ns)", "Time(%)", "Reason"],
            &cells,
        );
    }
}

const IDLE: &str = "GPU idle time by cause (host wait: nothing submitted yet; kernel wait: under 30 ns between back-to-back kernels; other: submitted work not started)";
const TEMPORAL: &str = "GPU time by kind of work (unions over the recorded time; communication: NCCL/RCCL kernels; kinds may overlap)";
const LAUNCHES: &str = "Kernel launches (API: the launch call's duration; delay: from the call's end to the kernel's start; short: the kernel ran shorter than its call)";
const OUTLIERS: &str = "Longest launch delays, with their launch calls";

/// The rank (or pid) column of a device row over several processes.
fn who(rank: Option<u32>, pid: crate::Pid) -> String {
    match rank {
        Some(r) => format!("rank {r}"),
        None => format!("pid {}", pid_text(pid)),
    }
}

/// A kernel's name as the options show it: `short` or `full`, the base
/// name of `full`, or its mangled name from the kernel rows.
fn named<'a>(full: &'a str, short: &'a str, t: &'a Tables, o: &Options) -> &'a str {
    match o.names {
        crate::NameStyle::Short => short,
        crate::NameStyle::Base => crate::names::base_name(full),
        crate::NameStyle::Full => full,
        crate::NameStyle::Mangled => t
            .kernels
            .iter()
            .find(|r| r.name == full)
            .and_then(|r| r.mangled.as_deref())
            .unwrap_or(full),
    }
}

fn idle(out: &mut String, t: &Tables, o: &Options, several: bool) {
    if t.idle.is_empty() {
        if o.explicit {
            none(out, IDLE, "no GPU work");
        }
        return;
    }
    let mut header = vec![];
    if several {
        header.push("Process");
    }
    header.extend([
        "GPU",
        "Recorded (ns)",
        "Busy (ns)",
        "Idle (ns)",
        "Idle(%)",
        "Host wait (ns)",
        "Host(%)",
        "Kernel wait (ns)",
        "Kernel(%)",
        "Other (ns)",
        "Other(%)",
        "Device",
    ]);
    let cells: Vec<Vec<String>> = t.idle[..top(&t.idle, o)]
        .iter()
        .map(|x| {
            let mut c = vec![];
            if several {
                c.push(who(x.rank, x.pid));
            }
            c.extend([
                x.gpu.to_string(),
                int(x.recorded_ns),
                int(x.busy_ns),
                int(x.idle_ns),
                format!("{:.1}", x.idle_pct),
                int(x.host_wait_ns),
                format!("{:.1}", x.host_wait_pct),
                int(x.kernel_wait_ns),
                format!("{:.1}", x.kernel_wait_pct),
                int(x.other_wait_ns),
                format!("{:.1}", x.other_wait_pct),
                clip(&x.device, o.name_width).into_owned(),
            ]);
            c
        })
        .collect();
    grid_left(out, IDLE, &header, &cells, usize::from(several));
    more(out, t.idle.len(), o);
}

fn temporal(out: &mut String, t: &Tables, o: &Options, several: bool) {
    if t.temporal.is_empty() {
        if o.explicit {
            none(out, TEMPORAL, "no GPU work");
        }
        return;
    }
    let mut header = vec![];
    if several {
        header.push("Process");
    }
    header.extend([
        "GPU",
        "Recorded (ns)",
        "Compute(%)",
        "Communication(%)",
        "Memory(%)",
        "Idle(%)",
        "Comm. overlapped(%)",
        "Device",
    ]);
    let cells: Vec<Vec<String>> = t.temporal[..top(&t.temporal, o)]
        .iter()
        .map(|x| {
            let mut c = vec![];
            if several {
                c.push(who(x.rank, x.pid));
            }
            c.extend([
                x.gpu.to_string(),
                int(x.recorded_ns),
                format!("{:.1}", x.compute_pct),
                format!("{:.1}", x.communication_pct),
                format!("{:.1}", x.memory_pct),
                format!("{:.1}", x.idle_pct),
                if x.communication_ns == 0 {
                    "-".to_owned()
                } else {
                    format!("{:.1}", x.overlap_pct)
                },
                clip(&x.device, o.name_width).into_owned(),
            ]);
            c
        })
        .collect();
    grid_left(out, TEMPORAL, &header, &cells, usize::from(several));
    more(out, t.temporal.len(), o);
}

fn launches(out: &mut String, t: &Tables, o: &Options, several: bool) {
    if t.launches.is_empty() {
        if o.explicit {
            none(
                out,
                LAUNCHES,
                "no kernel matched with its launch call (are API calls traced?)",
            );
        }
        return;
    }
    let cells: Vec<Vec<String>> = t.launches[..top(&t.launches, o)]
        .iter()
        .map(|x| {
            vec![
                int(x.launches),
                fixed(x.api_median_ns, 1),
                int(x.api_p99_ns),
                fixed(x.delay_median_ns, 1),
                int(x.delay_p99_ns),
                int(x.delay_max_ns),
                int(x.short_kernels),
                format!("{:.1}", x.short_pct),
                clip(named(&x.name, &x.short_name, t, o), o.name_width).into_owned(),
            ]
        })
        .collect();
    grid(
        out,
        LAUNCHES,
        &[
            "Launches",
            "API Med (ns)",
            "API P99 (ns)",
            "Delay Med (ns)",
            "Delay P99 (ns)",
            "Delay Max (ns)",
            "Short",
            "Short(%)",
            "Name",
        ],
        &cells,
    );
    more(out, t.launches.len(), o);
    if t.launch_outliers.is_empty() {
        return;
    }
    let mut header = vec![];
    if several {
        header.push("PID");
    }
    header.extend([
        "Delay (ns)",
        "Kernel start (ns)",
        "Kernel (ns)",
        "API start (ns)",
        "API (ns)",
        "TID",
        "GPU",
        "API call",
        "Stream",
        "Kernel",
    ]);
    let cells: Vec<Vec<String>> = t
        .launch_outliers
        .iter()
        .map(|x| {
            let mut c = vec![];
            if several {
                c.push(pid_text(x.pid));
            }
            c.extend([
                int(x.delay_ns),
                int(x.start_ns),
                int(x.kernel_ns),
                int(x.api_start_ns),
                int(x.api_ns),
                x.tid.map_or("?".to_owned(), |t| t.to_string()),
                x.gpu.to_string(),
                clip(&x.api, 40).into_owned(),
                clip(&x.stream, 20).into_owned(),
                clip(named(&x.kernel, &x.short_name, t, o), o.name_width).into_owned(),
            ]);
            c
        })
        .collect();
    grid(out, OUTLIERS, &header, &cells);
}

fn streams(out: &mut String, t: &Tables, o: &Options, several: bool) {
    if t.streams.is_empty() {
        if o.explicit {
            none(out, STREAMS, "no GPU work");
        }
        return;
    }
    let mut header = vec![];
    if several {
        header.push("PID");
    }
    header.extend(["Kernels", "Memory ops", "Busy (ns)", "Busy(%)", "Stream"]);
    let cells: Vec<Vec<String>> = t.streams[..top(&t.streams, o)]
        .iter()
        .map(|s| {
            let mut c = vec![];
            if several {
                c.push(pid_text(s.pid));
            }
            c.extend([
                int(s.kernels),
                int(s.memory),
                int(s.busy),
                format!("{:.1}", s.pct),
                clip(&s.name, o.name_width).into_owned(),
            ]);
            c
        })
        .collect();
    grid(out, STREAMS, &header, &cells);
    more(out, t.streams.len(), o);
}

fn threads(out: &mut String, t: &Tables, o: &Options, several: bool) {
    if t.threads.is_empty() {
        if o.explicit {
            none(out, THREADS, "no API calls or ranges on threads");
        }
        return;
    }
    let mut header = vec![];
    if several {
        header.push("PID");
    }
    header.extend([
        "TID",
        "API calls",
        "Span (ns)",
        "Waiting calls",
        "Waiting (ns)",
        "Waiting(%)",
        "Thread",
    ]);
    let cells: Vec<Vec<String>> = t.threads[..top(&t.threads, o)]
        .iter()
        .map(|th| {
            let mut c = vec![];
            if several {
                c.push(pid_text(th.pid));
            }
            c.extend([
                th.tid.map_or("?".to_owned(), |t| t.to_string()),
                int(th.calls),
                int(th.span),
                int(th.waiting_calls),
                int(th.waiting),
                format!("{:.1}", th.pct),
                clip(&th.name, o.name_width).into_owned(),
            ]);
            c
        })
        .collect();
    grid(out, THREADS, &header, &cells);
    more(out, t.threads.len(), o);
}

fn span_line(s: Option<Span>) -> String {
    match s {
        Some(s) => format!(
            "{} (from {} to {} ns)",
            human(s.dur()),
            int(s.start),
            int(s.end)
        ),
        None => "empty (no events)".to_owned(),
    }
}

/// Where a kind of loss happened.
fn place(key: &str, apis: &[u64]) -> &'static str {
    let vendor = match apis {
        [4] => "CUPTI's activity buffers",
        [5] => "rocprofiler-sdk's buffers",
        _ => "the vendor library's record buffers",
    };
    match key {
        "thread_buffer" => "our event batches (a recording thread's buffer was full)",
        "vendor_records" => vendor,
        "invalid_records" => "malformed vendor records (left out)",
        "counters" => "per-kernel counter collection",
        k if k.starts_with("perfetto_") => "Perfetto's buffers",
        _ => "elsewhere",
    }
}

/// The losses line, and one line per place something was lost: our
/// event batches, the vendor library's record buffers, counter collection,
/// Perfetto's buffers; `unknown: ...` for a trace cut short, damaged or
/// never finalised, `none` for one that lost nothing.
pub fn losses(h: &FileSummary) -> Vec<String> {
    let of = |size: u64| {
        if size == 0 {
            String::new()
        } else {
            format!(" of {}", int(size))
        }
    };
    if let Some(at) = h.truncated_at {
        return vec![format!(
            "unknown: the trace stops at byte {}{} (cut short mid-packet); what came after is missing",
            int(at),
            of(h.size)
        )];
    }
    if let Some(at) = h.damaged_at {
        return vec![format!(
            "unknown: the trace is damaged at byte {}{}; what came after is not read",
            int(at),
            of(h.size)
        )];
    }
    if h.damaged_packets > 0 {
        return vec![format!(
            "unknown: {} packets are damaged inside and left out",
            int(h.damaged_packets)
        )];
    }
    match &h.losses {
        None => vec!["unknown: the trace has no summary (the process did not finish tracing; data after the last write is missing)".to_owned()],
        Some(l) if l.is_empty() => vec!["none".to_owned()],
        Some(l) => {
            let kv = |l: &[&(String, u64)]| {
                l.iter()
                    .map(|(k, v)| format!("{}={v}", shown(k)))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let mut lines = vec![format!(
                "{} (the trace is incomplete)",
                kv(&l.iter().collect::<Vec<_>>())
            )];
            let mut places: Vec<&str> = Vec::new();
            for (k, _) in l {
                let p = place(k, &h.apis);
                if !places.contains(&p) {
                    places.push(p);
                }
            }
            for p in places {
                let here: Vec<&(String, u64)> =
                    l.iter().filter(|(k, _)| place(k, &h.apis) == p).collect();
                lines.push(format!("  in {p}: {}", kv(&here)));
            }
            lines
        }
    }
}

fn sources(h: &FileSummary) -> String {
    if h.sources.is_empty() {
        return "not in the trace (it has no TraceConfig)".to_owned();
    }
    h.sources
        .iter()
        .map(|s| {
            if s == "track_event" && !h.categories.is_empty() {
                format!("{s} ({})", shown(&h.categories.join(", ")))
            } else {
                shown(s).into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn header(out: &mut String, h: &FileSummary) {
    let _ = writeln!(out, "Span: {}", span_line(h.span));
    let pids: Vec<String> = h.pids.iter().map(|&p| pid_text(p)).collect();
    let _ = match pids.len() {
        0 => writeln!(out, "Processes: none"),
        1 => writeln!(out, "Process: {}", pids[0]),
        n => writeln!(out, "Processes: {n} ({})", pids.join(", ")),
    };
    for d in &h.devices {
        let _ = writeln!(
            out,
            "GPU {}: {} ({})",
            d.gpu_id,
            shown(&d.name),
            shown(&d.model)
        );
    }
    if let Some((n, t)) = h.windows {
        // Windows may last longer than the events in them (a window in
        // which the program did little on the GPU).
        let of = h.span.map_or(String::new(), |s| {
            if t > s.dur() {
                format!(" (the events in them span {})", human(s.dur()))
            } else {
                format!(" of the {} span", human(s.dur()))
            }
        });
        let _ = writeln!(
            out,
            "Recording windows: {n}, {} recorded{of}; busy shares are of the recorded time",
            human(t)
        );
    }
    let _ = writeln!(out, "Sources: {}", sources(h));
    for (i, l) in losses(h).iter().enumerate() {
        let _ = if i == 0 {
            writeln!(out, "Losses: {l}")
        } else {
            writeln!(out, "{l}")
        };
    }
}

/// Renders the summary as text: every string from a trace escaped where
/// it is put in, and what might have been missed escaped at the end.
pub(crate) fn render(s: &Summary, o: &Options) -> String {
    let out = render_parts(s, o);
    match gpu_trace_reader::text::escape_but_newlines(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(safe) => safe,
    }
}

fn render_parts(s: &Summary, o: &Options) -> String {
    let mut out = String::new();
    if o.reports.contains(&Report::Verdict) && !s.verdict.text.is_empty() {
        let _ = writeln!(out, "Verdict: {}\n", s.verdict.text);
    }
    if !s.several() {
        for h in &s.files {
            let _ = writeln!(out, "{}", shown(&h.path));
            header(&mut out, h);
        }
        tables(&mut out, &s.all, Some(&s.telemetry), o, false);
        return out;
    }
    for h in &s.files {
        let _ = writeln!(out, "== {} ==", shown(&h.path));
        header(&mut out, h);
        out.push('\n');
    }
    if o.reports.contains(&Report::Ranks)
        && let Some(r) = &s.ranks
    {
        let _ = writeln!(out, "== Ranks ==");
        ranks(&mut out, r, o);
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "== All {} processes{} ==",
        s.processes.len(),
        if s.files.len() > 1 {
            format!(" of {} files", s.files.len())
        } else {
            String::new()
        }
    );
    let _ = writeln!(out, "Span: {}", span_line(s.all.span));
    tables(&mut out, &s.all, Some(&s.telemetry), o, true);
    for p in &s.processes {
        let rank = p.rank.map_or(String::new(), |r| match r.world_size {
            Some(w) => format!(", rank {}/{w}", r.rank),
            None => format!(", rank {}", r.rank),
        });
        let _ = writeln!(
            out,
            "\n== Process {}{rank} ({}) ==",
            pid_text(p.pid),
            shown(&p.file)
        );
        let _ = writeln!(out, "Span: {}", span_line(p.tables.span));
        tables(&mut out, &p.tables, None, o, false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_longer_than_their_events_are_not_called_a_share_of_the_span() {
        let span = |dur| Some(crate::Span { start: 0, end: dur });
        let line = |windows, span| {
            let mut out = String::new();
            header(
                &mut out,
                &FileSummary {
                    windows: Some(windows),
                    span,
                    ..FileSummary::default()
                },
            );
            out.lines()
                .find(|l| l.starts_with("Recording windows"))
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            line((2, 1_000_000_000), span(4_000_000_000)),
            "Recording windows: 2, 1.000 s recorded of the 4.000 s span; busy shares are of the recorded time"
        );
        assert_eq!(
            line((1, 2_151_000_000), span(1_180_000_000)),
            "Recording windows: 1, 2.151 s recorded (the events in them span 1.180 s); busy shares are of the recorded time"
        );
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(1234567), "1,234,567");
        assert_eq!(fixed(1234.56, 1), "1,234.6");
        assert_eq!(fixed(-1234567.0, 0), "-1,234,567");
        assert_eq!(fixed(0.5, 1), "0.5");
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abcd", 4), "abcd");
        assert_eq!(clip("abcdef", 0), "abcdef");
        assert_eq!(clip("äöüßxyz", 3), "äö…");
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(human(850), "850 ns");
        assert_eq!(human(12_345), "12.345 µs");
        assert_eq!(human(1_234_567_890), "1.235 s");
        assert_eq!(human(4_000_000_000_000), "4,000.000 s");
    }
}
