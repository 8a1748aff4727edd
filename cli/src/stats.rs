//! `gpu-trace stats`: nsys-stats-like summaries of traces, per process and
//! over all of them. The arguments say what to read and how to show it;
//! [`gpu_trace_analysis`] reads the traces (each once, as it streams by)
//! into one summary and renders it.

use gpu_trace_analysis::render::{self, Report, text};
use gpu_trace_analysis::{Analyzer, ReadError, ReadOptions, STREAM_LIMIT};
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

/// The options, or what is wrong with them: how the summary is written,
/// what it shows, and the bytes read at most of each trace (`None`: the
/// reader's default).
fn options(a: &StatsArgs) -> Result<(Format, render::Options, Option<u64>), String> {
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
    let mut o = render::Options::default();
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
    let max_bytes = match &a.max_bytes {
        Some(m) => Some(parse_size(m).ok_or_else(|| {
            format!("--max-bytes {m:?}: expected a size above 0, in bytes or with K, M, G or T")
        })?),
        None => None,
    };
    Ok((format, o, max_bytes))
}

/// Characters of a warning shown at most (names in it come from the trace).
const WARNING_WIDTH: usize = 1000;

/// `gpu-trace stats`.
pub(crate) fn run(a: StatsArgs) -> ExitCode {
    let (format, o, max_bytes) = match options(&a) {
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
    let mut ok = true;
    let mut analyzer = Analyzer::new();
    for p in &a.traces {
        // Names from the trace (and the path) are escaped: each line of
        // ours stays one line, and nothing in a trace reaches the terminal
        // as a control sequence.
        let shown = p.display().to_string();
        let shown = escape(&shown);
        match analyzer.read(p, &read) {
            Ok(f) => {
                for w in &f.warnings {
                    eprintln!("gpu-trace: {shown}: {}", printable(w, WARNING_WIDTH));
                }
                let incomplete = !f.complete();
                if a.strict && (incomplete || !f.warnings.is_empty()) {
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
                        if max_bytes.is_some() {
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
    if analyzer.files().next().is_none() {
        return ExitCode::FAILURE;
    }
    let s = analyzer.finish();
    let out = match format {
        Format::Table => render::to_text(&s, &o),
        Format::Csv => render::to_csv(&s, &o),
        Format::Json => format!("{}\n", render::to_json(&s, &o)),
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
