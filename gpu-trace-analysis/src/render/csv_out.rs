//! The summary as CSV: one table per report, each with its own header row,
//! separated by an empty line. Every row starts with `report`, `scope`
//! (`process`, `all` for the tables over several processes, `device` for
//! telemetry, which is a GPU's, not a process's, `rank` for a row of the
//! ranks table and `job` for its total and verdict), `file` (a device's traces
//! joined by `;`) and `pid`, so that rows stay identifiable when the tables
//! are concatenated or filtered. Names are whole; numbers are plain (ns,
//! bytes, %).

use super::{Options, Report};
use crate::{CounterRow, DeviceTelemetry, RankRow, Ranks, Row, Summary, Tables, Verdict};

/// A CSV table being written: the `csv` crate quotes what needs quoting
/// (kernel names hold commas, and may hold quotes).
struct Table {
    w: csv::Writer<Vec<u8>>,
    rows: usize,
}

impl Table {
    fn new(header: &[&str]) -> Table {
        let mut w = csv::Writer::from_writer(Vec::new());
        let lead = ["report", "scope", "file", "pid"];
        let _ = w.write_record(lead.iter().chain(header));
        Table { w, rows: 0 }
    }

    fn row(&mut self, lead: &Lead<'_>, report: &str, cells: &[String]) {
        let lead = [
            report,
            lead.scope,
            lead.file.unwrap_or(""),
            &lead.pid.map(|p| p.to_string()).unwrap_or_default(),
        ]
        .map(str::to_owned);
        let _ = self.w.write_record(lead.iter().chain(cells));
        self.rows += 1;
    }

    fn finish(self) -> Vec<u8> {
        self.w.into_inner().unwrap_or_default()
    }
}

/// The columns every row starts with.
struct Lead<'a> {
    scope: &'a str,
    file: Option<&'a str>,
    pid: Option<i64>,
}

const DURATIONS: [&str; 10] = [
    "name",
    "count",
    "total_ns",
    "time_pct",
    "avg_ns",
    "median_ns",
    "p99_ns",
    "min_ns",
    "max_ns",
    "stddev_ns",
];

fn durations(
    t: &mut Table,
    lead: &Lead<'_>,
    report: &str,
    rows: &[Row],
    bytes: bool,
    kernels: bool,
) {
    for r in rows {
        let mut c = vec![
            r.name.clone(),
            r.count.to_string(),
            r.total.to_string(),
            r.pct.to_string(),
            r.avg.to_string(),
            r.median.to_string(),
            r.p99.to_string(),
            r.min.to_string(),
            r.max.to_string(),
            r.stddev.to_string(),
        ];
        if bytes {
            c.push(r.bytes.unwrap_or(0).to_string());
        }
        if kernels {
            c.push(r.short_name.clone().unwrap_or_default());
            c.push(crate::names::base_name(&r.name).to_owned());
            c.push(r.mangled.clone().unwrap_or_default());
        }
        t.row(lead, report, &c);
    }
}

fn counters(t: &mut Table, lead: &Lead<'_>, report: &str, rows: &[CounterRow]) {
    for c in rows {
        t.row(
            lead,
            report,
            &[
                c.kernel.clone().unwrap_or_default(),
                c.metric.clone(),
                c.kernels.to_string(),
                c.mean.to_string(),
                c.min.to_string(),
                c.max.to_string(),
            ],
        );
    }
}

/// The index of table `name`, made with `header` if new.
fn table(tables: &mut Vec<(String, Table)>, name: &str, header: &[&str]) -> usize {
    match tables.iter().position(|(n, _)| n == name) {
        Some(i) => i,
        None => {
            tables.push((name.to_owned(), Table::new(header)));
            tables.len() - 1
        }
    }
}

/// The rows of one table of `r` for a scope.
fn add(tables: &mut Vec<(String, Table)>, r: Report, lead: &Lead<'_>, t: &Tables, o: &Options) {
    let take = |n: usize| o.top.map_or(n, |t| t.min(n));
    let with_bytes: Vec<&str> = DURATIONS.iter().copied().chain(["bytes"]).collect();
    let with_names: Vec<&str> = DURATIONS
        .iter()
        .copied()
        .chain(["short_name", "base_name", "mangled"])
        .collect();
    match r {
        Report::Kernels | Report::Api | Report::Nvtx | Report::Memops => {
            let (rows, bytes) = match r {
                Report::Kernels => (&t.kernels, false),
                Report::Api => (&t.api, false),
                Report::Nvtx => (&t.ranges, false),
                _ => (&t.memory, true),
            };
            let kernels = r == Report::Kernels;
            let header: &[&str] = if bytes {
                &with_bytes
            } else if kernels {
                &with_names
            } else {
                &DURATIONS
            };
            let i = table(tables, r.name(), header);
            durations(
                &mut tables[i].1,
                lead,
                r.name(),
                &rows[..take(rows.len())],
                bytes,
                kernels,
            );
        }
        Report::Counters => {
            let header = ["kernel", "counter", "kernels", "mean", "min", "max"];
            let i = table(tables, "counters", &header);
            counters(
                &mut tables[i].1,
                lead,
                "counters",
                &t.counters[..take(t.counters.len())],
            );
            let i = table(tables, "counters_by_kernel", &header);
            let mut kernels: Vec<&str> = Vec::new();
            let rows: Vec<CounterRow> = t
                .counters_by_kernel
                .iter()
                .filter(|c| {
                    let k = c.kernel.as_deref().unwrap_or("");
                    if !kernels.contains(&k) {
                        kernels.push(k);
                    }
                    o.top.is_none_or(|n| kernels.len() <= n)
                })
                .cloned()
                .collect();
            counters(&mut tables[i].1, lead, "counters_by_kernel", &rows);
        }
        // Once, over every scope (see `render`).
        Report::Telemetry | Report::Ranks | Report::Verdict => {}
        Report::Idle => {
            let i = table(
                tables,
                "idle",
                &[
                    "rank",
                    "gpu",
                    "device",
                    "recorded_ns",
                    "busy_ns",
                    "idle_ns",
                    "idle_pct",
                    "host_wait_ns",
                    "kernel_wait_ns",
                    "other_wait_ns",
                    "host_wait_pct",
                    "kernel_wait_pct",
                    "other_wait_pct",
                ],
            );
            for x in &t.idle[..take(t.idle.len())] {
                let own = Lead {
                    scope: lead.scope,
                    file: Some(&x.file),
                    pid: Some(x.pid),
                };
                tables[i].1.row(
                    &own,
                    "idle",
                    &[
                        x.rank.map(|r| r.to_string()).unwrap_or_default(),
                        x.gpu.to_string(),
                        x.device.clone(),
                        x.recorded_ns.to_string(),
                        x.busy_ns.to_string(),
                        x.idle_ns.to_string(),
                        x.idle_pct.to_string(),
                        x.host_wait_ns.to_string(),
                        x.kernel_wait_ns.to_string(),
                        x.other_wait_ns.to_string(),
                        x.host_wait_pct.to_string(),
                        x.kernel_wait_pct.to_string(),
                        x.other_wait_pct.to_string(),
                    ],
                );
            }
        }
        Report::Temporal => {
            let i = table(
                tables,
                "temporal",
                &[
                    "rank",
                    "gpu",
                    "device",
                    "recorded_ns",
                    "compute_ns",
                    "communication_ns",
                    "memory_ns",
                    "idle_ns",
                    "compute_pct",
                    "communication_pct",
                    "memory_pct",
                    "idle_pct",
                    "overlap_pct",
                ],
            );
            for x in &t.temporal[..take(t.temporal.len())] {
                let own = Lead {
                    scope: lead.scope,
                    file: Some(&x.file),
                    pid: Some(x.pid),
                };
                tables[i].1.row(
                    &own,
                    "temporal",
                    &[
                        x.rank.map(|r| r.to_string()).unwrap_or_default(),
                        x.gpu.to_string(),
                        x.device.clone(),
                        x.recorded_ns.to_string(),
                        x.compute_ns.to_string(),
                        x.communication_ns.to_string(),
                        x.memory_ns.to_string(),
                        x.idle_ns.to_string(),
                        x.compute_pct.to_string(),
                        x.communication_pct.to_string(),
                        x.memory_pct.to_string(),
                        x.idle_pct.to_string(),
                        x.overlap_pct.to_string(),
                    ],
                );
            }
        }
        Report::Launches => {
            let i = table(
                tables,
                "launches",
                &[
                    "name",
                    "short_name",
                    "launches",
                    "api_median_ns",
                    "api_p99_ns",
                    "delay_median_ns",
                    "delay_p99_ns",
                    "delay_max_ns",
                    "short_kernels",
                    "short_pct",
                ],
            );
            for x in &t.launches[..take(t.launches.len())] {
                tables[i].1.row(
                    lead,
                    "launches",
                    &[
                        x.name.clone(),
                        x.short_name.clone(),
                        x.launches.to_string(),
                        x.api_median_ns.to_string(),
                        x.api_p99_ns.to_string(),
                        x.delay_median_ns.to_string(),
                        x.delay_p99_ns.to_string(),
                        x.delay_max_ns.to_string(),
                        x.short_kernels.to_string(),
                        x.short_pct.to_string(),
                    ],
                );
            }
            let i = table(
                tables,
                "launch_outliers",
                &[
                    "gpu",
                    "stream",
                    "kernel",
                    "short_name",
                    "start_ns",
                    "kernel_ns",
                    "delay_ns",
                    "api",
                    "api_start_ns",
                    "api_ns",
                    "tid",
                ],
            );
            for x in &t.launch_outliers[..take(t.launch_outliers.len())] {
                let own = Lead {
                    scope: lead.scope,
                    file: Some(&x.file),
                    pid: Some(x.pid),
                };
                tables[i].1.row(
                    &own,
                    "launch_outliers",
                    &[
                        x.gpu.to_string(),
                        x.stream.clone(),
                        x.kernel.clone(),
                        x.short_name.clone(),
                        x.start_ns.to_string(),
                        x.kernel_ns.to_string(),
                        x.delay_ns.to_string(),
                        x.api.clone(),
                        x.api_start_ns.to_string(),
                        x.api_ns.to_string(),
                        x.tid.map(|t| t.to_string()).unwrap_or_default(),
                    ],
                );
            }
        }
        Report::Devices => {
            let i = table(
                tables,
                "devices",
                &["gpu", "device", "engine", "ops", "busy_ns", "busy_pct"],
            );
            for e in &t.devices[..take(t.devices.len())] {
                tables[i].1.row(
                    lead,
                    "devices",
                    &[
                        e.gpu.to_string(),
                        e.device.clone(),
                        e.engine.clone(),
                        e.ops.to_string(),
                        e.busy.to_string(),
                        e.pct.to_string(),
                    ],
                );
            }
        }
        Report::Streams => {
            let i = table(
                tables,
                "streams",
                &["gpu", "stream", "kernels", "memops", "busy_ns", "busy_pct"],
            );
            for s in &t.streams[..take(t.streams.len())] {
                let own = Lead {
                    scope: lead.scope,
                    file: Some(&s.file),
                    pid: Some(s.pid),
                };
                tables[i].1.row(
                    &own,
                    "streams",
                    &[
                        s.gpu.to_string(),
                        s.name.clone(),
                        s.kernels.to_string(),
                        s.memory.to_string(),
                        s.busy.to_string(),
                        s.pct.to_string(),
                    ],
                );
            }
        }
        Report::Threads => {
            let i = table(
                tables,
                "threads",
                &[
                    "tid",
                    "thread",
                    "api_calls",
                    "span_ns",
                    "waiting_calls",
                    "waiting_ns",
                    "waiting_pct",
                ],
            );
            for th in &t.threads[..take(t.threads.len())] {
                let own = Lead {
                    scope: lead.scope,
                    file: Some(&th.file),
                    pid: Some(th.pid),
                };
                tables[i].1.row(
                    &own,
                    "threads",
                    &[
                        th.tid.map(|t| t.to_string()).unwrap_or_default(),
                        th.name.clone(),
                        th.calls.to_string(),
                        th.span.to_string(),
                        th.waiting_calls.to_string(),
                        th.waiting.to_string(),
                        th.pct.to_string(),
                    ],
                );
            }
        }
    }
}

/// The telemetry tables: one row per GPU and metric, and one per GPU and
/// clock-event reason (bit 0: any throttling reason).
fn telemetry(tables: &mut Vec<(String, Table)>, devices: &[DeviceTelemetry]) {
    let i = table(
        tables,
        "telemetry",
        &[
            "gpu",
            "device",
            "metric",
            "unit",
            "samples",
            "sampled_ns",
            "mean",
            "min",
            "max",
        ],
    );
    let j = table(
        tables,
        "throttling",
        &[
            "gpu",
            "device",
            "bit",
            "reason",
            "throttling",
            "time_ns",
            "time_pct",
            "sampled_ns",
        ],
    );
    for d in devices {
        let files = d.files.join(";");
        let lead = Lead {
            scope: "device",
            file: Some(&files),
            pid: None,
        };
        for m in &d.metrics {
            tables[i].1.row(
                &lead,
                "telemetry",
                &[
                    d.gpu.to_string(),
                    d.device.clone(),
                    m.metric.clone(),
                    m.unit.clone(),
                    m.samples.to_string(),
                    m.sampled.to_string(),
                    m.mean.to_string(),
                    m.min.to_string(),
                    m.max.to_string(),
                ],
            );
        }
        let Some(th) = &d.throttle else { continue };
        let any = (0, "any throttling reason", true, th.throttled, th.pct);
        let reasons = th
            .reasons
            .iter()
            .map(|r| (r.bit, r.reason.as_str(), r.throttling, r.time, r.pct));
        for (bit, reason, throttling, time, pct) in std::iter::once(any).chain(reasons) {
            tables[j].1.row(
                &lead,
                "throttling",
                &[
                    d.gpu.to_string(),
                    d.device.clone(),
                    bit.to_string(),
                    reason.to_owned(),
                    throttling.to_string(),
                    time.to_string(),
                    pct.to_string(),
                    th.sampled.to_string(),
                ],
            );
        }
    }
}

/// The ranks table (scope `rank`), with a row over all ranks (scope
/// `job`), and the verdict as a table of one row.
fn ranks(tables: &mut Vec<(String, Table)>, r: &Ranks) {
    let i = table(
        tables,
        "ranks",
        &[
            "rank",
            "order",
            "gpus",
            "kernels",
            "copies",
            "api_calls",
            "gpu_busy_ns",
            "steps",
            "step_ns",
            "gpu_per_step_ns",
            "waiting_pct",
        ],
    );
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for x in &r.rows {
        let lead = Lead {
            scope: "rank",
            file: Some(&x.file),
            pid: Some(x.pid),
        };
        tables[i].1.row(
            &lead,
            "ranks",
            &[
                x.rank.map(|r| r.to_string()).unwrap_or_default(),
                x.order.to_string(),
                x.devices
                    .iter()
                    .map(|g| g.to_string())
                    .collect::<Vec<_>>()
                    .join(";"),
                x.kernels.to_string(),
                x.copies.to_string(),
                x.api_calls.to_string(),
                x.gpu_busy.to_string(),
                x.steps.to_string(),
                opt(x.step_time),
                opt(x.gpu_per_step),
                x.wait_pct.to_string(),
            ],
        );
    }
    let sum = |f: fn(&RankRow) -> u64| r.rows.iter().map(f).sum::<u64>().to_string();
    let job = Lead {
        scope: "job",
        file: None,
        pid: None,
    };
    tables[i].1.row(
        &job,
        "ranks",
        &[
            String::new(),
            String::new(),
            String::new(),
            sum(|x| x.kernels),
            sum(|x| x.copies),
            sum(|x| x.api_calls),
            sum(|x| x.gpu_busy),
            sum(|x| x.steps),
            String::new(),
            String::new(),
            String::new(),
        ],
    );
    let j = table(
        tables,
        "rank_verdict",
        &[
            "rank",
            "order",
            "measure",
            "value",
            "median_of_others",
            "excess",
            "verdict",
        ],
    );
    let cells = match &r.straggler {
        Some(s) => {
            let x = &r.rows[s.row];
            let lead = Lead {
                scope: "job",
                file: Some(&x.file),
                pid: Some(x.pid),
            };
            let c = [
                x.rank.map(|r| r.to_string()).unwrap_or_default(),
                x.order.to_string(),
                s.measure.key().to_owned(),
                s.value.to_string(),
                s.others.to_string(),
                s.excess.to_string(),
                r.verdict(),
            ];
            tables[j].1.row(&lead, "rank_verdict", &c);
            return;
        }
        None => [
            String::new(),
            String::new(),
            r.measure.key().to_owned(),
            String::new(),
            String::new(),
            String::new(),
            r.verdict(),
        ],
    };
    tables[j].1.row(&job, "rank_verdict", &cells);
}

/// The verdict (scope `job`): one row per finding, then the paragraph
/// (kind `verdict`).
fn verdict(tables: &mut Vec<(String, Table)>, v: &Verdict) {
    let i = table(tables, "verdict", &["kind", "pct", "text"]);
    let job = Lead {
        scope: "job",
        file: None,
        pid: None,
    };
    for f in &v.findings {
        tables[i].1.row(
            &job,
            "verdict",
            &[f.kind.clone(), f.pct.to_string(), f.text.clone()],
        );
    }
    tables[i].1.row(
        &job,
        "verdict",
        &["verdict".to_owned(), String::new(), v.text.clone()],
    );
}

/// Renders the summary as CSV.
pub(crate) fn render(s: &Summary, o: &Options) -> String {
    let mut tables: Vec<(String, Table)> = Vec::new();
    for &r in &o.reports {
        if r == Report::Verdict {
            verdict(&mut tables, &s.verdict);
            continue;
        }
        if r == Report::Telemetry {
            telemetry(&mut tables, &s.telemetry);
            continue;
        }
        if r == Report::Ranks {
            if let Some(x) = &s.ranks {
                ranks(&mut tables, x);
            }
            continue;
        }
        if s.several() {
            let lead = Lead {
                scope: "all",
                file: None,
                pid: None,
            };
            add(&mut tables, r, &lead, &s.all, o);
        }
        for p in &s.processes {
            let lead = Lead {
                scope: "process",
                file: Some(&p.file),
                pid: Some(p.pid),
            };
            add(&mut tables, r, &lead, &p.tables, o);
        }
    }
    let parts: Vec<String> = tables
        .into_iter()
        // An explicitly asked-for table stays, header only, when empty.
        .filter(|(_, t)| t.rows > 0 || o.explicit)
        .map(|(_, t)| String::from_utf8_lossy(&t.finish()).into_owned())
        .collect();
    parts.join("\n")
}
