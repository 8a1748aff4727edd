//! `gpu-trace export --format parquet TRACE... -o DIR`: traces as Parquet
//! tables, one dataset per kind of event, for DuckDB, Spark, Dask and
//! pandas; `--format csv`: one trace's tables as CSV, what the Python
//! package's `gpu_trace.load()` reads ([`crate::export_csv`]).

use crate::stats::{count, max_bytes_of};
use gpu_trace_analysis::ReadOptions;
use gpu_trace_reader::text::{escape, printable};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `gpu-trace export`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct ExportArgs {
    /// The format written: parquet (DIR/<table>/<trace>.parquet for
    /// kernels, memops, api_calls, ranges, counters, telemetry, windows), or
    /// csv (one trace: DIR/<table>.csv for kernels, memory, api, ranges,
    /// counters; what the Python package's gpu_trace.load reads).
    #[arg(long, value_name = "parquet|csv", default_value = "parquet")]
    format: String,
    /// The directory of the tables (made if missing).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Export up to N traces at once, one per thread (0: one per core).
    #[arg(short, long, value_name = "N", default_value = "0")]
    jobs: String,
    /// Read at most SIZE bytes of each trace (as stats' --max-bytes).
    #[arg(long, value_name = "SIZE")]
    max_bytes: Option<String>,
    /// Traces to export (one per rank of a job, say).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
}

/// `gpu-trace export`.
#[cfg(feature = "parquet")]
pub(crate) fn run(a: ExportArgs) -> ExitCode {
    use gpu_trace_analysis::export::{export, file_stem};
    if let Some(rc) = csv(&a) {
        return rc;
    }
    let parsed = (|| -> Result<_, String> {
        if !a.format.eq_ignore_ascii_case("parquet") {
            return Err(format!(
                "--format \"{}\": expected parquet or csv",
                escape(&a.format)
            ));
        }
        let jobs = match count("--jobs", &a.jobs, "traces")? {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        Ok((jobs, max_bytes_of(a.max_bytes.as_deref())?))
    })();
    let (jobs, max_bytes) = match parsed {
        Ok(x) => x,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            return ExitCode::from(2);
        }
    };
    // Each trace's files are named after it; two of one name (in two
    // directories) are told apart by their place in the list.
    let stems: Vec<String> = a.traces.iter().map(|t| file_stem(t)).collect();
    let names: Vec<String> = stems
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if stems.iter().filter(|x| *x == s).count() > 1 {
                format!("{s}-{i}")
            } else {
                s.clone()
            }
        })
        .collect();
    let read = ReadOptions {
        max_bytes,
        progress: None,
    };
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<_, _>>>> =
        a.traces.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(a.traces.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(t) = a.traces.get(i) else { break };
                    let r = export(t, &a.output, &names[i], &read);
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    let mut ok = true;
    for (t, r) in a.traces.iter().zip(results) {
        let shown = escape(&t.display().to_string()).into_owned();
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(x)) => {
                let rows: Vec<String> = x.rows.iter().map(|(t, n)| format!("{n} {t}")).collect();
                eprintln!("gpu-trace: {shown}: {}", rows.join(", "));
            }
            Some(Err(e)) => {
                // A file that cannot be opened is named by the error itself.
                let named = matches!(
                    e,
                    gpu_trace_analysis::export::ExportError::Read(
                        gpu_trace_reader::ReadError::Io { .. }
                    ) | gpu_trace_analysis::export::ExportError::Write { .. }
                );
                let e = printable(&e.to_string(), 1000).into_owned();
                if named {
                    eprintln!("gpu-trace: {e}");
                } else {
                    eprintln!("gpu-trace: {shown}: {e}");
                }
                ok = false;
            }
            None => ok = false,
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `gpu-trace export`, in a build without Parquet.
#[cfg(not(feature = "parquet"))]
pub(crate) fn run(a: ExportArgs) -> ExitCode {
    if let Some(rc) = csv(&a) {
        return rc;
    }
    let _ = (
        a.format,
        a.output,
        a.jobs,
        a.max_bytes,
        a.traces,
        count,
        max_bytes_of,
    );
    eprintln!("gpu-trace: export: this gpu-trace was built without its `parquet` feature");
    ExitCode::from(2)
}

/// `--format csv`: the CSV tables of one trace; `None` for another format.
fn csv(a: &ExportArgs) -> Option<ExitCode> {
    if !a.format.eq_ignore_ascii_case("csv") {
        return None;
    }
    let [trace] = a.traces.as_slice() else {
        eprintln!(
            "gpu-trace: export --format csv: expected one trace, got {}",
            a.traces.len()
        );
        return Some(ExitCode::from(2));
    };
    Some(match crate::export_csv::export(trace, &a.output) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu-trace: {}", printable(&e, 1000));
            ExitCode::FAILURE
        }
    })
}
