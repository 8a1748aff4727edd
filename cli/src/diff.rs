//! `gpu-trace diff A B`: two runs compared, name by name.

use crate::stats::{Format, count, format_of, max_bytes_of, read_traces, write_out};
use gpu_trace_analysis::render;
use gpu_trace_analysis::{Analyzer, NameStyle, ReadOptions};
use gpu_trace_reader::text::escape;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `gpu-trace diff`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct DiffArgs {
    /// table (default), csv or json.
    #[arg(long, value_name = "table|csv|json")]
    format: Option<String>,
    /// The same as --format json.
    #[arg(long)]
    json: bool,
    /// Write the comparison to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Only the first N rows of each table (the largest changes).
    #[arg(long, value_name = "N")]
    top: Option<String>,
    /// How kernels are named in tables: short, base or full (CSV and JSON
    /// carry the full and the short name).
    #[arg(long, value_name = "short|base|full", default_value = "short")]
    names: String,
    /// Names longer than N characters are cut, with an ellipsis, in tables
    /// (0: never).
    #[arg(long, value_name = "N", default_value = "60")]
    name_width: String,
    /// Read up to N traces at once, one per thread (0: one per core).
    #[arg(short, long, value_name = "N", default_value = "0")]
    jobs: String,
    /// Read at most SIZE bytes of each trace (as stats' --max-bytes).
    #[arg(long, value_name = "SIZE")]
    max_bytes: Option<String>,
    /// The first run (A): a trace, or a directory whose *.pftrace files are
    /// its traces (one per rank).
    a: PathBuf,
    /// The second run (B), likewise: changes are B − A.
    b: PathBuf,
}

/// The traces of a side: the file, or a directory's `*.pftrace` files in
/// name order.
fn traces_of(side: &str, p: &Path) -> Result<Vec<PathBuf>, String> {
    let shown = escape(&p.display().to_string()).into_owned();
    let meta = std::fs::metadata(p).map_err(|e| format!("{side} {shown}: {e}"))?;
    if !meta.is_dir() {
        return Ok(vec![p.to_owned()]);
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(p)
        .map_err(|e| format!("{side} {shown}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "pftrace") && f.is_file())
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(format!(
            "{side} {shown}: expected a trace, or a directory of .pftrace files (it has none)"
        ));
    }
    Ok(out)
}

/// `gpu-trace diff`.
pub(crate) fn run(a: DiffArgs) -> ExitCode {
    let parsed = (|| -> Result<_, String> {
        let format = format_of(a.format.as_deref(), a.json)?;
        let mut o = render::Options::default();
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
        o.names = match NameStyle::parse(&a.names)? {
            NameStyle::Mangled => {
                return Err(format!(
                    "--names {:?}: expected short, base or full (a diff matches kernels by their demangled names)",
                    a.names
                ));
            }
            n => n,
        };
        let jobs = count("--jobs", &a.jobs, "traces")?;
        let max_bytes = max_bytes_of(a.max_bytes.as_deref())?;
        let sides = (traces_of("A", &a.a)?, traces_of("B", &a.b)?);
        Ok((format, o, jobs, max_bytes, sides))
    })();
    let (format, o, jobs, max_bytes, (ta, tb)) = match parsed {
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
    // Each side's traces are read in parallel (see `stats --jobs`).
    let mut side_a = Analyzer::new();
    let mut side_b = Analyzer::new();
    let mut ok = read_traces(&mut side_a, &ta, &read, jobs, false);
    ok &= read_traces(&mut side_b, &tb, &read, jobs, false);
    if side_a.files().next().is_none() || side_b.files().next().is_none() {
        return ExitCode::FAILURE;
    }
    let d = gpu_trace_analysis::diff::diff(&side_a.finish(), &side_b.finish());
    let out = match format {
        Format::Table => render::diff_to_text(&d, &o),
        Format::Csv => render::diff_to_csv(&d, &o),
        Format::Json => format!("{}\n", render::diff_to_json(&d, &o)),
    };
    ok &= write_out(a.output.as_deref(), &out);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
