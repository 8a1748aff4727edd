//! `gpu-trace`: record a Perfetto trace of an unmodified CUDA or HIP
//! application, and summarise traces.
//!
//! `record` only sets environment variables and runs the command: the
//! injection libraries do the work inside the application, so that a plain
//! `CUDA_INJECTION64_PATH=...` run gives the same trace.

mod check;
mod control;
mod diff;
mod export;
mod export_csv;
mod libs;
mod metrics;
mod options;
mod record;
#[cfg(test)]
mod reference;
mod signals;
mod stats;
mod summary;

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

const ABOUT: &str =
    "Record Perfetto GPU traces of unmodified CUDA and HIP applications, and summarise them.";

const EXAMPLES: &str = "\
Examples:
  gpu-trace check                          # what this machine can trace, and where the libraries are
  gpu-trace record -- python train.py      # train-<pid>.pftrace, and a short summary
  gpu-trace stats train-1234.pftrace       # the full report, with its verdict
  gpu-trace diff before/ after/            # two runs (a trace or a directory of them each)
  gpu-trace export rank-*.pftrace -o tables/   # Parquet tables for DuckDB, Spark, Dask
  gpu-trace record --paused -- python train.py &   # then, from anywhere:
  gpu-trace start all; sleep 5; gpu-trace stop all # record a 5 s window of a live job
  gpu-trace record --window 2s --every 60s -- python train.py   # 2 s of every minute
  gpu-trace record --help                  # options, the output patterns, signals

Open a .pftrace in https://ui.perfetto.dev. Every option of `record` has an
INJECTION_* environment variable (the docs' reference, \"Environment variables\").";

#[derive(Parser, Debug)]
#[command(name = "gpu-trace", version, about = ABOUT, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a command with gpu-trace injected and write a .pftrace per process.
    Record(Box<record::RecordArgs>),
    /// Summarise traces: kernels, memory operations, API calls, ranges.
    Stats(stats::StatsArgs),
    /// Compare two runs: kernels, memory operations, API calls and ranges
    /// by name, with each run's idle time.
    Diff(diff::DiffArgs),
    /// Write traces as Parquet tables (kernels, memops, api_calls, ranges,
    /// counters, telemetry, windows) for DuckDB, Spark, Dask or pandas, or
    /// one trace as CSV tables.
    Export(export::ExportArgs),
    /// List the per-kernel metrics a GPU offers (as ncu --query-metrics).
    Metrics(metrics::MetricsArgs),
    /// Start recording (open a window) in running traced processes:
    /// those started with `record --paused`, or paused by `stop`.
    Start(control::ControlArgs),
    /// Stop recording (close the window) in running traced processes; the
    /// work already submitted is still written.
    Stop(control::ControlArgs),
    /// Say which traced processes of this user are running and whether
    /// each is recording.
    Status(control::ControlArgs),
    /// Say what this machine can trace: the CUDA driver, CUPTI, NVML,
    /// counter permission, rocprofiler-sdk, and where each was found.
    Check(CheckArgs),
    /// Print a shell completion script (e.g. `gpu-trace completions bash >
    /// /etc/bash_completion.d/gpu-trace`).
    Completions(CompletionsArgs),
    /// Print the man page (roff) of gpu-trace or of one of its commands
    /// (e.g. `gpu-trace man record | man -l -`).
    Man(ManArgs),
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// Directory holding libgpu_trace_cuda.so / libgpu_trace_hip.so.
    #[arg(long, env = "GPU_TRACE_LIB_DIR", value_name = "DIR")]
    lib_dir: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct CompletionsArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

#[derive(clap::Args, Debug)]
struct ManArgs {
    /// A command (record, stats, metrics, check); without one, gpu-trace's
    /// own page.
    command: Option<String>,
}

fn completions_cmd(a: CompletionsArgs) -> ExitCode {
    clap_complete::generate(
        a.shell,
        &mut Cli::command(),
        "gpu-trace",
        &mut std::io::stdout(),
    );
    ExitCode::SUCCESS
}

fn man_cmd(a: ManArgs) -> ExitCode {
    let top = Cli::command();
    let cmd = match &a.command {
        None => top,
        // Hidden commands (export, for the Python package) have no page.
        Some(name) => match top.find_subcommand(name).filter(|c| !c.is_hide_set()) {
            Some(c) => {
                let c = c.clone().name(format!("gpu-trace-{name}"));
                c.version(env!("CARGO_PKG_VERSION"))
            }
            None => {
                let names: Vec<&str> = top
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                eprintln!(
                    "gpu-trace: man {name:?}: expected one of {}",
                    names.join(", ")
                );
                return ExitCode::from(2);
            }
        },
    };
    match clap_mangen::Man::new(cmd).render(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu-trace: cannot write the man page: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    match Cli::parse().cmd {
        Cmd::Record(a) => record::record(*a, &argv),
        Cmd::Stats(a) => stats::run(a),
        Cmd::Diff(a) => diff::run(a),
        Cmd::Export(a) => export::run(a),
        Cmd::Metrics(a) => metrics::metrics_cmd(a),
        Cmd::Check(a) => check::check_cmd(a.lib_dir.as_deref()),
        Cmd::Start(a) => control::run("start", &a),
        Cmd::Stop(a) => control::run("stop", &a),
        Cmd::Status(a) => control::run("status", &a),
        Cmd::Completions(a) => completions_cmd(a),
        Cmd::Man(a) => man_cmd(a),
    }
}
