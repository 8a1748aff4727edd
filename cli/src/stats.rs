//! `gpu-trace stats`: nsys-stats-like summaries of traces, per process and
//! over all of them. The arguments say what to read and how to show it;
//! [`gpu_trace_analysis`] reads the traces (each once, as it streams by)
//! into one summary and renders it.

use gpu_trace_analysis::render::{self, Report, text};
use gpu_trace_analysis::{Analyzer, NameStyle, ReadError, ReadOptions, STREAM_LIMIT};
use gpu_trace_reader::text::{escape, printable};
use std::io::Write as _;
use std::path::PathBuf;
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
    /// The tables to show, comma-separated: verdict, ranks, kernels,
    /// memops, api, nvtx, counters, devices, idle, temporal, launches,
    /// telemetry, streams, threads (default: all that have rows; ranks only
    /// over several processes), and python (kernel time by the Python line
    /// that launched it, in traces recorded with `-t python`; only when
    /// named).
    #[arg(long, value_name = "LIST")]
    report: Option<String>,
    /// How many frames deep, from the outermost, the top-down view of
    /// `--report python` goes.
    #[arg(long, value_name = "N", default_value = "4")]
    python_depth: String,
    /// How kernels are named in tables: short (the base name, with what
    /// tells it from other kernels of that base), base (the name alone,
    /// without namespaces, template arguments and parameters), full (the
    /// whole demangled name) or mangled. CSV and JSON carry every form.
    #[arg(long, value_name = "short|base|full|mangled", default_value = "short")]
    names: String,
    /// Read up to N traces at once, one per thread (0: one per core).
    #[arg(short, long, value_name = "N", default_value = "0")]
    jobs: String,
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

/// How the summary is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
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

/// The options, or what is wrong with them: how the summary is written,
/// what it shows, and the bytes read at most of each trace (`None`: the
/// reader's default).
fn options(a: &StatsArgs) -> Result<(Format, render::Options, Option<u64>, usize), String> {
    let format = format_of(a.format.as_deref(), a.json)?;
    let mut o = render::Options::default();
    if let Some(r) = &a.report {
        let (_, rest) = split_python(r);
        if !rest.is_empty() {
            o.reports = Report::parse_list(&rest)?;
        } else {
            o.reports.clear();
        }
        o.explicit = true;
    }
    if let Some(t) = &a.top {
        o.top = Some(count("--top", t, "rows")?);
    }
    o.name_width = count("--name-width", &a.name_width, "characters")?;
    o.names = NameStyle::parse(&a.names)?;
    if (1..4).contains(&o.name_width) {
        return Err(format!(
            "--name-width {:?}: expected 0 (whole names) or at least 4 characters",
            a.name_width
        ));
    }
    let max_bytes = max_bytes_of(a.max_bytes.as_deref())?;
    let jobs = count("--jobs", &a.jobs, "traces")?;
    Ok((format, o, max_bytes, jobs))
}

/// Whether `--report`'s list names `python`, and the list without it.
fn split_python(list: &str) -> (bool, String) {
    let mut python = false;
    let rest: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|w| {
            let p = w.eq_ignore_ascii_case("python");
            python |= p;
            !p
        })
        .collect();
    (python, rest.join(","))
}

/// `--report python`: GPU time by Python line, over every trace read
/// whole.
fn python_report(a: &StatsArgs, format: Format, depth: usize) -> Option<String> {
    let mut traces = Vec::new();
    for p in &a.traces {
        match gpu_trace_reader::Trace::open(p) {
            Ok(t) => traces.push(t),
            Err(e) => {
                eprintln!("gpu-trace: {}", escape(&e.to_string()));
                return None;
            }
        }
    }
    let r = gpu_trace_analysis::python::report(&traces, depth);
    if r.attributed == 0 {
        eprintln!(
            "gpu-trace: no kernel in these traces has a Python call stack (record with -t python, from a Python program)"
        );
    }
    Some(match format {
        Format::Table => gpu_trace_analysis::python::to_text(&r),
        Format::Csv => gpu_trace_analysis::python::to_csv(&r),
        Format::Json => format!("{}\n", gpu_trace_analysis::python::to_json(&r)),
    })
}

/// `--format` (and `--json`).
pub(crate) fn format_of(format: Option<&str>, json: bool) -> Result<Format, String> {
    Ok(match format.map(str::to_ascii_lowercase).as_deref() {
        None => {
            if json {
                Format::Json
            } else {
                Format::Table
            }
        }
        Some("json") => Format::Json,
        Some(f) if json => {
            return Err(format!("--json and --format {f:?} disagree"));
        }
        Some("table") => Format::Table,
        Some("csv") => Format::Csv,
        Some(_) => {
            return Err(format!(
                "--format {:?}: expected table, csv or json",
                format.unwrap_or_default()
            ));
        }
    })
}

/// A whole number given to `flag`.
pub(crate) fn count(flag: &str, v: &str, what: &str) -> Result<usize, String> {
    v.trim()
        .parse::<usize>()
        .map_err(|_| format!("{flag} {v:?}: expected a whole number of {what}"))
}

/// `--max-bytes`.
pub(crate) fn max_bytes_of(m: Option<&str>) -> Result<Option<u64>, String> {
    match m {
        Some(m) => Ok(Some(parse_size(m).ok_or_else(|| {
            format!("--max-bytes {m:?}: expected a size above 0, in bytes or with K, M, G or T")
        })?)),
        None => Ok(None),
    }
}

/// Characters of a warning shown at most (names in it come from the trace).
const WARNING_WIDTH: usize = 1000;

/// `gpu-trace stats`.
pub(crate) fn run(a: StatsArgs) -> ExitCode {
    let (format, o, max_bytes, jobs) = match options(&a) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            return ExitCode::from(2);
        }
    };
    let read = ReadOptions {
        max_bytes,
        progress: Some("gpu-trace:".to_owned()),
    };
    if a.report.as_deref().is_some_and(|r| split_python(r).0) {
        if !o.reports.is_empty() {
            eprintln!(
                "gpu-trace: --report python is shown alone; leave it out of the list to see the other tables"
            );
            return ExitCode::from(2);
        }
        let depth = match count("--python-depth", &a.python_depth, "frames") {
            Ok(d) if d > 0 => d,
            _ => {
                eprintln!(
                    "gpu-trace: --python-depth {:?}: expected a whole number of frames, at least 1",
                    a.python_depth
                );
                return ExitCode::from(2);
            }
        };
        let Some(python) = python_report(&a, format, depth) else {
            return ExitCode::FAILURE;
        };
        return if write_out(a.output.as_deref(), &python) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let mut analyzer = Analyzer::new();
    let mut ok = read_traces(&mut analyzer, &a.traces, &read, jobs, a.strict);
    if analyzer.files().next().is_none() {
        return ExitCode::FAILURE;
    }
    let s = analyzer.finish();
    let out = match format {
        Format::Table => render::to_text(&s, &o),
        Format::Csv => render::to_csv(&s, &o),
        Format::Json => format!("{}\n", render::to_json(&s, &o)),
    };
    if !write_out(a.output.as_deref(), &out) {
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Writes `out` to `path`, or to stdout; false (said on stderr) when it
/// cannot.
pub(crate) fn write_out(path: Option<&std::path::Path>, out: &str) -> bool {
    let written = match path {
        Some(path) => std::fs::write(path, out.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => {
            let mut so = std::io::stdout().lock();
            so.write_all(out.as_bytes())
                .and_then(|()| so.flush())
                .map_err(|e| format!("cannot write the summary: {e}"))
        }
    };
    match written {
        Ok(()) => true,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            false
        }
    }
}

/// Reads `paths` into `analyzer`, `jobs` at once (0: one per core), and
/// says each trace's warnings and errors on stderr, in the order given;
/// false when a trace could not be read or (`strict`) is incomplete or
/// has warnings.
pub(crate) fn read_traces(
    analyzer: &mut Analyzer,
    paths: &[PathBuf],
    read: &ReadOptions,
    jobs: usize,
    strict: bool,
) -> bool {
    let before = analyzer.files().count();
    let results = analyzer.read_all(paths, read, jobs);
    let files: Vec<_> = analyzer.files().skip(before).collect();
    let mut files = files.into_iter();
    let mut ok = true;
    for (p, r) in paths.iter().zip(results) {
        // Names from the trace (and the path) are escaped: each line of
        // ours stays one line, and nothing in a trace reaches the terminal
        // as a control sequence.
        let shown = p.display().to_string();
        let shown = escape(&shown);
        match r {
            Ok(()) => {
                let Some(f) = files.next() else { continue };
                for w in &f.warnings {
                    eprintln!("gpu-trace: {shown}: {}", printable(w, WARNING_WIDTH));
                }
                let incomplete = !f.complete();
                if strict && (incomplete || !f.warnings.is_empty()) {
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
            }
            Err(e) => {
                match e {
                    // The error names the path.
                    ReadError::Io { .. } => eprintln!("gpu-trace: {}", escape(&e.to_string())),
                    ReadError::TooLarge { limit } => eprintln!(
                        "gpu-trace: {shown}: more than {} bytes ({}): not summarised",
                        text::int(limit),
                        if read.max_bytes.is_some() {
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
    ok
}
