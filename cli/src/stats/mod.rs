//! `gpu-trace stats`: nsys-stats-like summaries of traces, per process and
//! over all of them.
//!
//! Each trace is read once as it streams by ([`read`]); memory holds every
//! duration of each group (4 bytes each: medians and percentiles are
//! exact), the union of each engine's, stream's and thread's busy
//! intervals, the per-kernel counter values and the telemetry samples, not
//! the trace. A trace
//! with counters is read a second time to find the kernel of each value.

mod busy;
mod csv_out;
mod dist;
mod json;
mod ranks;
pub(crate) mod read;
mod report;
mod telemetry;
mod text;

use gpu_trace_reader::text::{escape, printable};
use gpu_trace_reader::{ReadError, ReadOptions, STREAM_LIMIT, Trace};
use read::{Acc, FileData, KernelsAt};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `gpu-trace stats`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct StatsArgs {
    /// table (default), csv or json.
    #[arg(long, value_name = "table|csv|json")]
    format: Option<String>,
    /// The same as --format json.
    #[arg(long)]
    json: bool,
    /// Write the summary to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The tables to show, comma-separated: ranks, kernels, memops, api,
    /// nvtx, counters, devices, telemetry, streams, threads (default: all
    /// that have rows; ranks only over several processes).
    #[arg(long, value_name = "LIST")]
    report: Option<String>,
    /// Only the first N rows of each table (the longest total time, the
    /// busiest, the most waiting).
    #[arg(long, value_name = "N")]
    top: Option<String>,
    /// Names longer than N characters are cut, with an ellipsis, in tables
    /// (0: never); CSV and JSON have them whole.
    #[arg(long, value_name = "N", default_value = "60")]
    name_width: String,
    /// Exit 1 on any warning, and when a trace reports anything lost, was
    /// not finalised, is cut short or is damaged.
    #[arg(long)]
    strict: bool,
    /// Read at most SIZE bytes of each trace (bytes, or with K, M, G or T:
    /// KiB, MiB, GiB, TiB); a larger one is not summarised. Default: a
    /// file whole, and at most 64G from a pipe or anything else whose size
    /// is not known beforehand.
    #[arg(long, value_name = "SIZE")]
    max_bytes: Option<String>,
    /// Traces to summarise: each process, and all of them together.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
}

/// A table of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Report {
    Ranks,
    Kernels,
    Memops,
    Api,
    Nvtx,
    Counters,
    Devices,
    Telemetry,
    Streams,
    Threads,
}

impl Report {
    const ALL: [Report; 10] = [
        Report::Ranks,
        Report::Kernels,
        Report::Memops,
        Report::Api,
        Report::Nvtx,
        Report::Counters,
        Report::Devices,
        Report::Telemetry,
        Report::Streams,
        Report::Threads,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Report::Ranks => "ranks",
            Report::Kernels => "kernels",
            Report::Memops => "memops",
            Report::Api => "api",
            Report::Nvtx => "nvtx",
            Report::Counters => "counters",
            Report::Devices => "devices",
            Report::Telemetry => "telemetry",
            Report::Streams => "streams",
            Report::Threads => "threads",
        }
    }

    /// A comma-separated list, in the order given.
    fn parse_list(list: &str) -> Result<Vec<Report>, String> {
        let mut out = Vec::new();
        for w in list.split(',').map(str::trim) {
            match Report::ALL
                .iter()
                .find(|r| r.name().eq_ignore_ascii_case(w))
            {
                Some(r) if !out.contains(r) => out.push(*r),
                Some(_) => {}
                None => {
                    let names: Vec<&str> = Report::ALL.iter().map(|r| r.name()).collect();
                    return Err(format!(
                        "--report {w:?}: expected {} (comma-separated)",
                        names.join(", ")
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// How the summary is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Csv,
    Json,
}

/// `123`, `64K`, `512M`, `64G`, `1T` (also `64GiB`, `64GB`: powers of
/// 1024 all), in bytes.
fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift).filter(|&b| b > 0)
}

/// What the tables show.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// In the order shown.
    pub(crate) reports: Vec<Report>,
    /// Whether the user named them: a named table that is empty says so.
    pub(crate) explicit: bool,
    pub(crate) top: Option<usize>,
    /// 0: names are never cut.
    pub(crate) name_width: usize,
    /// Bytes read at most of each trace (`None`: the reader's default).
    pub(crate) max_bytes: Option<u64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            reports: Report::ALL.to_vec(),
            explicit: false,
            top: None,
            name_width: 60,
            max_bytes: None,
        }
    }
}

/// The options, or what is wrong with them.
fn options(a: &StatsArgs) -> Result<(Format, Options), String> {
    let format = match a.format.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => {
            if a.json {
                Format::Json
            } else {
                Format::Table
            }
        }
        Some("json") => Format::Json,
        Some(f) if a.json => {
            return Err(format!("--json and --format {f:?} disagree"));
        }
        Some("table") => Format::Table,
        Some("csv") => Format::Csv,
        Some(_) => {
            return Err(format!(
                "--format {:?}: expected table, csv or json",
                a.format.as_deref().unwrap_or_default()
            ));
        }
    };
    let count = |flag: &str, v: &str, what: &str| -> Result<usize, String> {
        v.trim()
            .parse::<usize>()
            .map_err(|_| format!("{flag} {v:?}: expected a whole number of {what}"))
    };
    let mut o = Options::default();
    if let Some(r) = &a.report {
        o.reports = Report::parse_list(r)?;
        o.explicit = true;
    }
    if let Some(t) = &a.top {
        o.top = Some(count("--top", t, "rows")?);
    }
    o.name_width = count("--name-width", &a.name_width, "characters")?;
    if (1..4).contains(&o.name_width) {
        return Err(format!(
            "--name-width {:?}: expected 0 (whole names) or at least 4 characters",
            a.name_width
        ));
    }
    if let Some(m) = &a.max_bytes {
        o.max_bytes = Some(parse_size(m).ok_or_else(|| {
            format!("--max-bytes {m:?}: expected a size above 0, in bytes or with K, M, G or T")
        })?);
    }
    Ok((format, o))
}

/// Reads the trace at `p` as it streams by, drawing a progress bar
/// labelled `prefix`, and a second time for the kernels of per-kernel
/// counter values, if it has any. Also returns the trace without its events
/// (problems, logs ...).
///
/// Slices pair per track in file order, even on a track whose events are
/// out of time order there: gpu-trace writes a thread's API calls and its
/// NVTX ranges in separate passes onto the same track, so nearly every
/// trace with ranges has such tracks, and each pass is balanced (a call's
/// begin and end are written together), which file order keeps apart
/// where sorting by time may not (a range and a call that begin at the
/// same nanosecond). Memory stays bounded either way.
///
/// A pipe (anything but a regular file) is read once, at most
/// `max_bytes` (default [`STREAM_LIMIT`]): its per-kernel counter values
/// are not matched to their kernels.
fn read_file(
    p: &Path,
    prefix: &str,
    max_bytes: Option<u64>,
) -> Result<(FileData, Trace), ReadError> {
    let mut acc = Acc::default();
    let o = ReadOptions {
        max_bytes,
        progress: Some(prefix.to_owned()),
    };
    let t = Trace::visit_with(p, &o, &mut acc)?;
    let regular = std::fs::metadata(p).is_ok_and(|m| m.is_file());
    let mut at = KernelsAt::default();
    for x in &acc.samples {
        at.wanted.insert((x.gpu, x.ts), None);
    }
    let mut once = false;
    if !at.wanted.is_empty() {
        if regular {
            let o = ReadOptions {
                max_bytes,
                progress: None,
            };
            Trace::visit_with(p, &o, &mut at)?;
        } else {
            once = true;
        }
    }
    let mut f = acc.finish(&t, &at.wanted);
    f.path = p.display().to_string();
    // 0: not known (a pipe).
    f.size = if regular {
        std::fs::metadata(p).map_or(0, |m| m.len())
    } else {
        0
    };
    if once {
        f.problems.insert(
            0,
            "per-kernel counter values are not matched to their kernels: that takes a second read, and this input (not a regular file) can be read only once".to_owned(),
        );
    }
    Ok((f, t))
}

/// The warnings a trace deserves, each one line: a trace cut short says
/// where, once (with the slices left open and the GPU work missing there).
fn warnings(f: &FileData) -> Vec<String> {
    let mut out = Vec::new();
    let mut problems: Vec<&String> = f.problems.iter().collect();
    if let Some(at) = f.truncated_at {
        let mut open = 0u64;
        let mut why = None;
        problems.retain(|p| {
            if let Some(w) = p.strip_prefix("trace ends mid-packet: ") {
                why = Some(w.to_owned());
                return false;
            }
            match p.split_once(" unterminated slices on track ") {
                Some((n, _)) => {
                    open += n.parse::<u64>().unwrap_or(0);
                    false
                }
                None => true,
            }
        });
        let mut w = format!(
            "the trace stops at byte {}{}, in the middle of a packet (cut short: was the process killed, or the file copied while written?); read up to there",
            text::int(at),
            if f.size == 0 {
                String::new()
            } else {
                format!(" of {}", text::int(f.size))
            }
        );
        if let Some(why) = why {
            w.push_str(&format!(" ({why})"));
        }
        if open > 0 {
            w.push_str(&format!("; {open} slices still open there are left out"));
        }
        if !f.dangling.is_empty() {
            w.push_str(&format!(
                "; {} API calls point at GPU work after the cut",
                f.dangling.len()
            ));
        }
        out.push(w);
    } else if let Some((name, ts)) = f.dangling.first() {
        out.push(format!(
            "{} API calls point at GPU work that is not in the trace (the first: {name} at {ts} ns)",
            f.dangling.len()
        ));
    }
    let shown = 5;
    out.extend(problems.iter().take(shown).map(|p| p.to_string()));
    if problems.len() > shown {
        out.push(format!("and {} more problems", problems.len() - shown));
    }
    if f.procs.is_empty() && f.losses.is_none() {
        out.push(
            "no GPU work, API calls, ranges or counters in the trace (not one of gpu-trace's?)"
                .to_owned(),
        );
    }
    out
}

/// Characters of a warning shown at most (names in it come from the trace).
const WARNING_WIDTH: usize = 1000;

/// `gpu-trace stats`.
pub(crate) fn run(a: StatsArgs) -> ExitCode {
    let (format, o) = match options(&a) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            return ExitCode::from(2);
        }
    };
    let mut ok = true;
    let mut files = Vec::new();
    for p in &a.traces {
        // Names from the trace (and the path) are escaped: each line of
        // ours stays one line, and nothing in a trace reaches the terminal
        // as a control sequence.
        let shown = p.display().to_string();
        let shown = escape(&shown);
        match read_file(p, "gpu-trace:", o.max_bytes) {
            Ok((f, _)) => {
                let w = warnings(&f);
                for w in &w {
                    eprintln!("gpu-trace: {shown}: {}", printable(w, WARNING_WIDTH));
                }
                let incomplete = f.truncated_at.is_some()
                    || f.damaged_at.is_some()
                    || f.damaged_packets > 0
                    || !f.losses.as_ref().is_some_and(|l| l.is_empty());
                if a.strict && (incomplete || !w.is_empty()) {
                    eprintln!(
                        "gpu-trace: {shown}: {} (--strict)",
                        if incomplete {
                            "the trace is incomplete"
                        } else {
                            "warnings"
                        }
                    );
                    ok = false;
                }
                files.push(f);
            }
            Err(e) => {
                match e {
                    // The error names the path.
                    ReadError::Io { .. } => eprintln!("gpu-trace: {}", escape(&e.to_string())),
                    ReadError::TooLarge { limit } => eprintln!(
                        "gpu-trace: {shown}: more than {} bytes ({}): not summarised",
                        text::int(limit),
                        if o.max_bytes.is_some() {
                            "--max-bytes".to_owned()
                        } else {
                            format!(
                                "the limit for a pipe or anything else whose size is not known beforehand, {} GiB; see --max-bytes",
                                STREAM_LIMIT >> 30
                            )
                        }
                    ),
                    e => eprintln!(
                        "gpu-trace: {shown}: {}",
                        printable(&e.to_string(), WARNING_WIDTH)
                    ),
                }
                ok = false;
            }
        }
    }
    if files.is_empty() {
        return ExitCode::FAILURE;
    }
    let s = report::build(files);
    let out = match format {
        Format::Table => text::render(&s, &o),
        Format::Csv => csv_out::render(&s, &o),
        Format::Json => format!("{}\n", json::render(&s, &o)),
    };
    let written = match &a.output {
        Some(path) => std::fs::write(path, out.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => {
            let mut so = std::io::stdout().lock();
            so.write_all(out.as_bytes())
                .and_then(|()| so.flush())
                .map_err(|e| format!("cannot write the summary: {e}"))
        }
    };
    if let Err(e) = written {
        eprintln!("gpu-trace: {e}");
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
