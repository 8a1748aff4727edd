//! `gpu-trace`: record a Perfetto trace of an unmodified CUDA or HIP
//! application, and summarise traces.
//!
//! `record` only sets environment variables and runs the command: the
//! injection libraries do the work inside the application, so that a plain
//! `CUDA_INJECTION64_PATH=...` run gives the same trace.

mod stats;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(Parser, Debug)]
#[command(name = "gpu-trace", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a command with gpu-trace injected and write a .pftrace per process.
    Record(Box<RecordArgs>),
    /// Summarise traces: kernels, memory operations, API calls, ranges.
    Stats(stats::StatsArgs),
    /// List the per-kernel metrics a GPU offers (as ncu --query-metrics).
    Metrics(MetricsArgs),
}

#[derive(clap::Args, Debug)]
struct MetricsArgs {
    /// The chip (e.g. GH100, AD102); default: that of CUDA device 0.
    #[arg(long)]
    chip: Option<String>,
    /// Only metrics whose name or description contains this text.
    filter: Option<String>,
}

#[derive(clap::Args, Debug)]
struct RecordArgs {
    /// Output path or pattern: %p pid, %n program, %h host. A directory
    /// gets `<program>-<pid>.pftrace` inside it.
    #[arg(short, long)]
    output: Option<String>,
    /// What to record: gpu, api, nvtx, counters, all (comma-separated).
    #[arg(short, long)]
    trace: Option<String>,
    /// Per-kernel metrics to collect (comma-separated); implies counters.
    /// `gpu-trace metrics` lists them.
    #[arg(short, long)]
    metrics: Option<String>,
    /// Counters only for kernels whose mangled or demangled name matches
    /// one of these globs (comma-separated, `*` and `?`).
    #[arg(long, value_name = "GLOBS")]
    kernels: Option<String>,
    /// Counters: leave out the first N matching kernel launches.
    #[arg(long, value_name = "N")]
    kernel_skip: Option<String>,
    /// Counters: profile N matching launches (after the skipped ones).
    #[arg(long, value_name = "N")]
    kernel_count: Option<String>,
    /// file (default), system (serve a running traced) or both.
    #[arg(long)]
    mode: Option<String>,
    /// In-process buffer size, e.g. 64M.
    #[arg(long)]
    buffer_size: Option<String>,
    /// How often the file is written, ms.
    #[arg(long)]
    flush_period_ms: Option<String>,
    /// CUDA API slices from the driver layer (default: cuLaunchKernel, every
    /// call that reaches the GPU, cheapest) or the runtime layer
    /// (cudaLaunchKernel names, plus driver calls made directly; about twice
    /// the callbacks).
    #[arg(long, value_name = "driver|runtime")]
    api_layer: Option<String>,
    /// Record only between the application's cudaProfilerStart and
    /// cudaProfilerStop (torch.cuda.profiler.start()/stop()), any number of
    /// times, like nsys --capture-range=cudaProfilerApi. Outside those
    /// ranges tracing costs next to nothing.
    #[arg(long, value_name = "none|cudaProfilerApi")]
    capture_range: Option<String>,
    /// Log what the injection does to stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Do not print the summary after the run.
    #[arg(long)]
    no_stats: bool,
    /// Directory holding libgpu_trace_cuda.so / libgpu_trace_hip.so.
    #[arg(long, env = "GPU_TRACE_LIB_DIR")]
    lib_dir: Option<PathBuf>,
    /// The command to run.
    #[arg(trailing_var_arg = true, required = true)]
    command: Vec<String>,
}

const CUDA_LIB: &str = "libgpu_trace_cuda.so";
const HIP_LIB: &str = "libgpu_trace_hip.so";

/// Where the injection libraries may be: the flag / variable, next to this
/// executable, and the conventional install places around it.
fn find_lib(name: &str, lib_dir: Option<&Path>) -> Option<PathBuf> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let mut dirs: Vec<PathBuf> = lib_dir.map(Path::to_path_buf).into_iter().collect();
    if let Some(d) = exe_dir {
        dirs.push(d.join("../lib/gpu-trace"));
        dirs.push(d.join("../lib"));
        dirs.push(d);
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

/// The counters filter's flags, checked before anything runs: a value the
/// injection would refuse stops here, naming the flag.
fn check_filter_flags(a: &RecordArgs) -> Result<(), String> {
    use gpu_trace_core::filter::{KernelFilter, vars};
    let flags = [
        (vars::KERNELS, "--kernels", &a.kernels),
        (vars::SKIP, "--kernel-skip", &a.kernel_skip),
        (vars::COUNT, "--kernel-count", &a.kernel_count),
    ];
    let get = |var: &str| flags.iter().find(|f| f.0 == var).and_then(|f| f.2.clone());
    let (_, problems) = KernelFilter::from_lookup(&get);
    match problems.first() {
        None => Ok(()),
        Some(p) => {
            let flag = flags.iter().find(|f| f.0 == p.var).map_or(p.var, |f| f.1);
            Err(format!("{flag} {:?}: expected {}", p.value, p.expected))
        }
    }
}

fn record(a: RecordArgs) -> ExitCode {
    if let Err(e) = check_filter_flags(&a) {
        eprintln!("gpu-trace: {e}");
        return ExitCode::from(2);
    }
    let cuda = find_lib(CUDA_LIB, a.lib_dir.as_deref());
    let hip = find_lib(HIP_LIB, a.lib_dir.as_deref());
    if cuda.is_none() && hip.is_none() {
        eprintln!(
            "gpu-trace: found neither {CUDA_LIB} nor {HIP_LIB} next to this program; build them (cargo build --release) or pass --lib-dir. Running the command untraced."
        );
    }
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    if let Some(lib) = &cuda {
        if let Ok(prev) = std::env::var("CUDA_INJECTION64_PATH")
            && Path::new(&prev) != lib
        {
            eprintln!("gpu-trace: replacing CUDA_INJECTION64_PATH={prev}");
        }
        cmd.env("CUDA_INJECTION64_PATH", lib);
        // NVTX calls reach CUPTI only through an NVTX injection; ours
        // forwards to CUPTI.
        if std::env::var_os("NVTX_INJECTION64_PATH").is_none() {
            cmd.env("NVTX_INJECTION64_PATH", lib);
        }
    }
    if let Some(lib) = &hip {
        let joined = match std::env::var("ROCP_TOOL_LIBRARIES") {
            Ok(prev) if !prev.is_empty() => format!("{}:{prev}", lib.display()),
            _ => lib.display().to_string(),
        };
        cmd.env("ROCP_TOOL_LIBRARIES", joined);
    }
    use gpu_trace_core::config::vars;
    for (var, val) in [
        (vars::OUTPUT, &a.output),
        (vars::TRACE, &a.trace),
        (vars::METRICS, &a.metrics),
        (vars::MODE, &a.mode),
        (vars::BUFFER_SIZE, &a.buffer_size),
        (vars::FLUSH_PERIOD_MS, &a.flush_period_ms),
        // The CUDA backend's own settings (injection-cuda's `config::vars`).
        ("INJECTION_API_LAYER", &a.api_layer),
        ("INJECTION_CAPTURE_RANGE", &a.capture_range),
        (gpu_trace_core::filter::vars::KERNELS, &a.kernels),
        (gpu_trace_core::filter::vars::SKIP, &a.kernel_skip),
        (gpu_trace_core::filter::vars::COUNT, &a.kernel_count),
    ] {
        if let Some(v) = val {
            cmd.env(var, v);
        }
    }
    if a.verbose {
        cmd.env(vars::VERBOSE, "1");
    }
    let log = std::env::temp_dir().join(format!("gpu-trace-record-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    cmd.env(gpu_trace_core::RECORD_LOG_VAR, &log);
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpu-trace: cannot run {:?}: {e}", a.command[0]);
            return ExitCode::from(127);
        }
    };
    let traces: Vec<PathBuf> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(PathBuf::from)
        .collect();
    let _ = std::fs::remove_file(&log);
    for t in &traces {
        eprintln!("gpu-trace: wrote {}", t.display());
        if !a.no_stats {
            match stats::summarize_file(t, "gpu-trace:") {
                Ok((s, _)) => eprint!("{}", stats::render(&s)),
                Err(e) => eprintln!("gpu-trace: cannot summarise {}: {e}", t.display()),
            }
        }
    }
    let system_only = a
        .mode
        .clone()
        .or_else(|| std::env::var(gpu_trace_core::config::vars::MODE).ok())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("system"));
    if system_only {
        eprintln!("gpu-trace: system mode: the running traced session holds the trace");
    } else if traces.is_empty() && (cuda.is_some() || hip.is_some()) {
        eprintln!(
            "gpu-trace: no trace was written (the command used no GPU, or tracing failed; rerun with --verbose)"
        );
    }
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c as u8),
        (None, Some(sig)) => ExitCode::from(128u8.wrapping_add(sig as u8)),
        _ => ExitCode::FAILURE,
    }
}

fn metrics_cmd(a: MetricsArgs) -> ExitCode {
    let cupti = match cupti::Cupti::load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpu-trace: CUPTI is not usable ({e}); cannot list metrics");
            return ExitCode::FAILURE;
        }
    };
    let chip = match a.chip {
        Some(c) => c,
        None => match cupti::profiler::Profiler::initialize(&cupti).and_then(|p| p.chip_name(0)) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "gpu-trace: cannot read the chip of CUDA device 0 ({e}); name it with --chip (e.g. GH100)"
                );
                return ExitCode::FAILURE;
            }
        },
    };
    let list =
        match cupti::profiler::MetricCatalog::new(&cupti, &chip).and_then(|c| c.base_metrics()) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("gpu-trace: cannot list the metrics of chip {chip:?}: {e}");
                return ExitCode::FAILURE;
            }
        };
    let needle = a.filter.as_deref().map(str::to_ascii_lowercase);
    let shown: Vec<_> = list
        .iter()
        .filter(|m| {
            needle.as_deref().is_none_or(|n| {
                m.name.to_ascii_lowercase().contains(n)
                    || m.description.to_ascii_lowercase().contains(n)
            })
        })
        .collect();
    println!(
        "{} metrics of {chip} (base names: add a rollup such as .sum, .avg, .max, .pct_of_peak_sustained_elapsed)",
        shown.len()
    );
    let width = shown.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in shown {
        let kind = match m.kind {
            cupti::profiler::MetricKind::Counter => "counter",
            cupti::profiler::MetricKind::Ratio => "ratio",
            cupti::profiler::MetricKind::Throughput => "throughput",
            _ => "other",
        };
        println!(
            "{:width$}  {:10}  {:8}  {}",
            m.name, kind, m.dim_unit, m.description
        );
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Record(a) => record(*a),
        Cmd::Stats(a) => stats::run(a),
        Cmd::Metrics(a) => metrics_cmd(a),
    }
}
