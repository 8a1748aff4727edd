//! `gpu-trace record`: check the options, point the program at the
//! injection libraries through its environment, run it, wait for it and
//! its traces, then say what was written (or why nothing was) and return
//! its exit status.
//!
//! Nothing here traces: the injection libraries do the work inside the
//! application, so that a plain `CUDA_INJECTION64_PATH=...` run gives the
//! same trace.

use crate::check;
use crate::libs::{CUDA_LIB, HIP_LIB, Libs};
use crate::options::{self, FLAGS, Flag};
use crate::signals::Catcher;
use crate::summary;
use gpu_trace_agent::Announcement;
use gpu_trace_agent::private_dir::PrivateDir;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// How long the launcher waits, after the program exits, for other traced
/// processes it started (children left running) to finish their traces.
const DESCENDANT_WAIT: Duration = Duration::from_secs(10);

const EXAMPLES: &str = "\
Examples:
  gpu-trace record -- python train.py
  gpu-trace record -o traces/ -- ./app --size 4096        # traces/app-<pid>.pftrace
  gpu-trace record -o run-%q{RANK}-%p -- torchrun --nproc-per-node 8 train.py
  gpu-trace record -t gpu,counters -m sm__throughput.avg.pct_of_peak_sustained_elapsed \\
                   --kernels 'gemm*' --kernel-count 20 -- ./app
  gpu-trace record --capture-range cudaProfilerApi -- python train.py

Each option sets an INJECTION_* variable in the program's environment; the
README's \"Environment variables\" table lists them all, with those that have
no option (INJECTION_QUEUE_SIZE, INJECTION_QUEUE_FULL, ...). Values already
in the environment are checked like the options, before the program starts.
Ctrl-C is passed to the program, and gpu-trace waits for it to write its
trace; a second Ctrl-C within 3 s kills it. The exit status is the
program's (128+N if signal N ended it), 2 for a bad option.";

#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub(crate) struct RecordArgs {
    /// Output path or pattern: %p pid, %n program, %h host, %q{VAR} the
    /// environment variable VAR in each traced process (characters other
    /// than letters, digits, '.', '_' and '-', such as '/', become '_'),
    /// %% a %. A directory
    /// (or a trailing /) gets <program>-<pid>.pftrace inside it; a name
    /// without an extension gets .pftrace. [default: %n-%p.pftrace]
    #[arg(short, long, value_name = "PATTERN")]
    pub(crate) output: Option<String>,
    /// Replace an existing output file (without %p, a name known before the
    /// program starts). Otherwise an existing file is an error.
    #[arg(long)]
    pub(crate) force_overwrite: bool,
    /// What to record: gpu, api, nvtx (or markers, roctx), counters, telemetry,
    /// uvm (CUDA unified memory), memory (CUDA device memory in use),
    /// python (each launch's Python call stack, with api), all
    /// (comma-separated). [default: gpu,api,markers,telemetry]
    #[arg(short, long, value_name = "LIST")]
    pub(crate) trace: Option<String>,
    /// Per-kernel metrics to collect (comma-separated); implies counters.
    /// `gpu-trace metrics` lists them.
    #[arg(short, long, value_name = "LIST")]
    pub(crate) metrics: Option<String>,
    /// Counters only for kernels whose mangled or demangled name matches
    /// one of these globs (comma-separated, `*` and `?`; a `mangled:`,
    /// `demangled:` or `function:` prefix matches that name only).
    #[arg(long, value_name = "GLOBS")]
    pub(crate) kernels: Option<String>,
    /// Counters only for launches inside an NVTX/roctx push/pop range (on
    /// the launching thread, at any depth) that one of these globs matches
    /// (comma-separated).
    #[arg(long, value_name = "GLOBS")]
    pub(crate) nvtx_include: Option<String>,
    /// No counters for launches inside an NVTX/roctx push/pop range that one
    /// of these globs matches (comma-separated; wins over --nvtx-include).
    #[arg(long, value_name = "GLOBS")]
    pub(crate) nvtx_exclude: Option<String>,
    /// Counters: leave out the first N launches that pass the name and
    /// range filters.
    #[arg(long, value_name = "N")]
    pub(crate) kernel_skip: Option<String>,
    /// Counters: profile N such launches (after the skipped ones).
    #[arg(long, value_name = "N")]
    pub(crate) kernel_count: Option<String>,
    /// Start with recording off; `gpu-trace start PID` (or a --delay)
    /// opens a window. On CUDA, CUPTI is detached while no window records,
    /// so a paused process does not pay its idle cost, at most 1,000 times
    /// a run (CUPTI keeps memory at each detach; INJECTION_DETACH=N sets the
    /// limit, INJECTION_DETACH=off keeps CUPTI attached).
    #[arg(long)]
    pub(crate) paused: bool,
    /// Open the first recording window after this long (30s, 500ms, 2m).
    #[arg(long, value_name = "TIME")]
    pub(crate) delay: Option<String>,
    /// Close the first window after this long; nothing more is recorded
    /// unless a --window/--every cycle or `gpu-trace start` opens another.
    #[arg(long, value_name = "TIME")]
    pub(crate) duration: Option<String>,
    /// Duty cycle: record windows of this length, one every --every.
    #[arg(long, value_name = "TIME", requires = "every")]
    pub(crate) window: Option<String>,
    /// Duty cycle: the period of the windows (with --window), e.g.
    /// `--window 2s --every 60s` records 2 s of each minute.
    #[arg(long, value_name = "TIME", requires = "window")]
    pub(crate) every: Option<String>,
    /// With --capture-range (cudaProfilerApi or nvtx:NAME): record this
    /// many ranges, then stop.
    #[arg(long, value_name = "N", requires = "capture_range")]
    pub(crate) capture_count: Option<String>,
    /// file (default), system (serve a running traced) or both.
    #[arg(long, value_name = "file|system|both")]
    pub(crate) mode: Option<String>,
    /// In-process buffer size, 1M to 4G. [default: 64M]
    #[arg(long, value_name = "SIZE")]
    pub(crate) buffer_size: Option<String>,
    /// How often the file is written, 100 to 600000 ms. [default: 1000]
    #[arg(long, value_name = "MS")]
    pub(crate) flush_period_ms: Option<String>,
    /// CUDA API slices from the driver layer (default: cuLaunchKernel, every
    /// call that reaches the GPU, cheapest) or the runtime layer
    /// (cudaLaunchKernel names, plus driver calls made directly; about twice
    /// the callbacks).
    #[arg(long, value_name = "driver|runtime")]
    pub(crate) api_layer: Option<String>,
    /// Record only between the application's cudaProfilerStart and
    /// cudaProfilerStop (torch.cuda.profiler.start()/stop()), any number of
    /// times, like nsys --capture-range=cudaProfilerApi. Outside those
    /// ranges tracing costs next to nothing.
    /// `nvtx:NAME` records only inside NVTX ranges named NAME (the
    /// `step 100` range), as nsys --capture-range=nvtx.
    #[arg(long, value_name = "none|cudaProfilerApi|nvtx:NAME")]
    pub(crate) capture_range: Option<String>,
    /// How often GPU telemetry (clocks, power, utilisation, GPM) is
    /// sampled: 1ms to 10s. [default: 10ms]
    #[arg(long, value_name = "PERIOD")]
    pub(crate) telemetry_period: Option<String>,
    /// Do not sample GPU telemetry.
    #[arg(long, conflicts_with = "telemetry_period")]
    pub(crate) no_telemetry: bool,
    /// Log what the injection (and Perfetto inside it) does to stderr.
    #[arg(short, long)]
    pub(crate) verbose: bool,
    /// Do not print the summary after the run.
    #[arg(long)]
    pub(crate) no_stats: bool,
    /// Directory holding libgpu_trace_cuda.so / libgpu_trace_hip.so
    /// [default: beside gpu-trace, then ../lib/gpu-trace, ../lib, then the gpu_trace Python package's].
    #[arg(long, env = "GPU_TRACE_LIB_DIR", value_name = "DIR")]
    pub(crate) lib_dir: Option<PathBuf>,
    /// The command to run.
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

impl RecordArgs {
    fn value(&self, id: &str) -> Option<String> {
        match id {
            "output" => self.output.clone(),
            "trace" => self.trace.clone(),
            "metrics" => self.metrics.clone(),
            "mode" => self.mode.clone(),
            "buffer_size" => self.buffer_size.clone(),
            "flush_period_ms" => self.flush_period_ms.clone(),
            "api_layer" => self.api_layer.clone(),
            "capture_range" => self.capture_range.clone(),
            "kernels" => self.kernels.clone(),
            "kernel_skip" => self.kernel_skip.clone(),
            "kernel_count" => self.kernel_count.clone(),
            "nvtx_include" => self.nvtx_include.clone(),
            "nvtx_exclude" => self.nvtx_exclude.clone(),
            "capture_count" => self.capture_count.clone(),
            "paused" => self.paused.then(|| "1".to_owned()),
            "delay" => self.delay.clone(),
            "duration" => self.duration.clone(),
            "window" => self.window.clone(),
            "every" => self.every.clone(),
            "telemetry_period" if self.no_telemetry => Some("off".to_owned()),
            "telemetry_period" => self.telemetry_period.clone(),
            _ => None,
        }
    }

    /// The flags that set variables, each named as the user typed it in
    /// `argv` (the options before the command).
    fn flags(&self, argv: &[String]) -> Vec<Flag> {
        let options = &argv[..argv.len().saturating_sub(self.command.len())];
        let short = |long: &str| match long {
            "--output" => Some("-o"),
            "--trace" => Some("-t"),
            "--metrics" => Some("-m"),
            _ => None,
        };
        FLAGS
            .iter()
            .map(|&(var, id, long)| {
                let typed = options
                    .iter()
                    .rev()
                    .find_map(|a| {
                        if a == long || a.starts_with(&format!("{long}=")) {
                            Some(long)
                        } else {
                            short(long).filter(|s| a.starts_with(s) && !a.starts_with("--"))
                        }
                    })
                    .unwrap_or(long);
                Flag {
                    var,
                    typed: typed.to_owned(),
                    value: self.value(id),
                }
            })
            .collect()
    }
}

fn bad(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("gpu-trace: {msg}");
    ExitCode::from(2)
}

/// `record`. `argv` is this process's command line, for naming flags.
pub(crate) fn record(a: RecordArgs, argv: &[String]) -> ExitCode {
    let checked = match options::check(&a.flags(argv), a.verbose) {
        Ok(c) => c,
        Err(e) => return bad(e),
    };
    let libs = match Libs::find(a.lib_dir.as_deref()) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    if !libs.any() {
        eprintln!(
            "gpu-trace: found neither {CUDA_LIB} nor {HIP_LIB} beside this program, in ../lib/gpu-trace or in ../lib; build them (cargo build --release) or pass --lib-dir. Running the command untraced."
        );
    }
    let output_flag = a
        .flags(argv)
        .into_iter()
        .find(|f| f.var == gpu_trace_agent::config::vars::OUTPUT)
        .map_or_else(|| "-o".to_owned(), |f| f.typed);
    for v in &checked.unset_output_vars {
        eprintln!(
            "gpu-trace: {output_flag} {:?}: {v} is not set here; a traced process that does not have it either writes {} instead, and says so",
            checked.config.output,
            gpu_trace_agent::config::DEFAULT_OUTPUT
        );
    }
    if checked.config.mode.file() && checked.unset_output_vars.is_empty() {
        match options::known_output(&checked.config.output, &a.command) {
            Ok(Some(p)) if p.exists() => {
                if !a.force_overwrite {
                    return bad(format_args!(
                        "{} exists; pass --force-overwrite to replace it, or name another output with -o (%p adds the pid)",
                        p.display()
                    ));
                }
                if let Err(e) = std::fs::remove_file(&p) {
                    return bad(format_args!(
                        "--force-overwrite: cannot remove {}: {e}",
                        p.display()
                    ));
                }
            }
            Ok(_) => {}
            Err(e) => return bad(format_args!("{output_flag}: {e}")),
        }
    }

    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]);
    point_at(&mut cmd, &libs);
    for (var, val) in &checked.env {
        cmd.env(var, val);
    }
    let log = match RecordLog::create() {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "gpu-trace: cannot create the record log ({e}); the traces are written but not summarised"
            );
            RecordLog::none()
        }
    };
    if let Some(p) = log.path() {
        cmd.env(gpu_trace_agent::RECORD_LOG_VAR, p);
    }

    // Caught before the program starts: a Ctrl-C at any moment leaves us
    // waiting for it.
    let catcher = match Catcher::install() {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!(
                "gpu-trace: cannot catch signals ({e}); Ctrl-C stops gpu-trace with the program"
            );
            None
        }
    };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpu-trace: cannot run {:?}: {e}", a.command[0]);
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return ExitCode::from(code);
        }
    };
    let forwarder = catcher.map(|c| c.forward_to(child.id()));
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpu-trace: cannot wait for the program: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(f) = &forwarder {
        f.program_exited();
    }
    let announced = log.read();
    wait_for_others(&announced, child.id());

    let traces: Vec<PathBuf> = announced
        .iter()
        .filter_map(|a| match a {
            Announcement::Trace { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    let untraced: Vec<(u32, &str)> = announced
        .iter()
        .filter_map(|a| match a {
            Announcement::Untraced { pid, reason } => Some((*pid, reason.as_str())),
            _ => None,
        })
        .collect();
    if a.no_stats {
        for t in &traces {
            eprintln!("gpu-trace: wrote {}", t.display());
        }
    } else if !traces.is_empty() {
        eprint!("{}", summary::render(&traces));
    }
    if !checked.config.mode.file() {
        eprintln!("gpu-trace: system mode: the running traced session holds the trace");
    } else if traces.is_empty() {
        eprintln!(
            "gpu-trace: no trace was written: {}",
            why_untraced(&libs, &untraced, a.verbose)
        );
    } else {
        for (pid, reason) in &untraced {
            // The reason is the process's, from the record log: one line.
            gpu_trace_model::warn!("process {pid} ran untraced: {reason}");
        }
    }

    if let Some(sig) = status.signal() {
        // Said apart from the summary: a crash or a kill is the program's
        // end, not a gpu-trace loss, and its trace ends at the last write.
        eprintln!(
            "gpu-trace: {} (pid {}) was ended by {}{}",
            a.command[0],
            child.id(),
            crate::signals::signal_name(sig),
            if status.core_dumped() {
                " (core dumped)"
            } else {
                ""
            }
        );
    }
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c as u8),
        (None, Some(sig)) => ExitCode::from(128u8.wrapping_add(sig as u8)),
        _ => ExitCode::FAILURE,
    }
}

/// Sets the variables that make the CUDA driver and rocprofiler-sdk load
/// the injection libraries.
fn point_at(cmd: &mut Command, libs: &Libs) {
    if let Some(lib) = &libs.cuda {
        if let Ok(prev) = std::env::var("CUDA_INJECTION64_PATH")
            && Path::new(&prev) != lib
        {
            eprintln!(
                "gpu-trace: replacing CUDA_INJECTION64_PATH={}",
                gpu_trace_model::log::quoted(&prev)
            );
        }
        cmd.env("CUDA_INJECTION64_PATH", lib);
        // NVTX calls reach CUPTI only through an NVTX injection; ours
        // forwards to CUPTI.
        if std::env::var_os("NVTX_INJECTION64_PATH").is_none() {
            cmd.env("NVTX_INJECTION64_PATH", lib);
        }
    }
    if let Some(lib) = &libs.hip {
        let joined = match std::env::var("ROCP_TOOL_LIBRARIES") {
            Ok(prev) if !prev.is_empty() => format!("{}:{prev}", lib.display()),
            _ => lib.display().to_string(),
        };
        cmd.env("ROCP_TOOL_LIBRARIES", joined);
    }
}

/// Why no process wrote a trace, in one clause.
fn why_untraced(libs: &Libs, untraced: &[(u32, &str)], verbose: bool) -> String {
    let rerun = if verbose {
        ""
    } else {
        "; rerun with --verbose to see what gpu-trace did"
    };
    if !untraced.is_empty() {
        let mut reasons: Vec<&str> = untraced.iter().map(|(_, r)| *r).collect();
        reasons.dedup();
        return format!("{}{rerun}", reasons.join("; "));
    }
    if !libs.any() {
        return "gpu-trace's libraries were not found (see above)".to_owned();
    }
    let cuda = libs.cuda.is_some().then(check::cuda_driver);
    let hip = libs.hip.is_some().then(check::rocprofiler_sdk);
    let present = |f: &Option<check::Found>| f.as_ref().is_some_and(check::Found::is_found);
    if !present(&cuda) && !present(&hip) {
        let mut missing = Vec::new();
        if cuda.is_some() {
            missing.push("no CUDA driver (libcuda.so.1)");
        }
        if hip.is_some() {
            missing.push("no ROCm (librocprofiler-sdk.so.1)");
        }
        return format!(
            "this machine has {}, so the program could not use a GPU; `gpu-trace check` shows where gpu-trace looked",
            missing.join(" and ")
        );
    }
    format!(
        "the program never started CUDA{} in a process gpu-trace could see (it used no GPU){rerun}",
        if present(&hip) { " or HIP" } else { "" }
    )
}

/// The file through which the traced processes tell us their traces:
/// `record-<pid>.log` in this user's runtime folder (a directory only this
/// user can enter, [`PrivateDir`]), created new (`O_EXCL`, mode 0600) and
/// removed at the end. The traced processes only append to it, never
/// create it: one that outlives us finds it gone.
struct RecordLog {
    file: Option<(PrivateDir, String)>,
}

impl RecordLog {
    fn create() -> Result<RecordLog, String> {
        let dir = PrivateDir::create(&gpu_trace_agent::private_dir::runtime_dir())?;
        let name = format!("record-{}.log", std::process::id());
        // A log of an earlier launcher with our pid is stale.
        dir.remove(&name);
        dir.create_file(&name, rustix::fs::OFlags::WRONLY)?;
        Ok(RecordLog {
            file: Some((dir, name)),
        })
    }

    fn none() -> RecordLog {
        RecordLog { file: None }
    }

    /// Where the traced processes find it.
    fn path(&self) -> Option<PathBuf> {
        self.file.as_ref().map(|(d, n)| d.path().join(n))
    }

    fn read(&self) -> Vec<Announcement> {
        use std::io::Read;
        let Some((dir, name)) = &self.file else {
            return Vec::new();
        };
        let mut text = String::new();
        if let Ok(Some(fd)) = dir.open_file(name, rustix::fs::OFlags::RDONLY) {
            let _ = std::fs::File::from(fd).read_to_string(&mut text);
        }
        gpu_trace_agent::output::read_record_log(&text)
    }
}

impl Drop for RecordLog {
    fn drop(&mut self) {
        if let Some((dir, name)) = &self.file {
            dir.remove(name);
        }
    }
}

/// Waits (at most [`DESCENDANT_WAIT`]) for the traced processes other than
/// the program that are still running: their traces are finished when
/// they exit.
fn wait_for_others(announced: &[Announcement], program: u32) {
    use rustix::event::{PollFd, PollFlags, poll};
    let fds: Vec<(u32, std::os::fd::OwnedFd)> = announced
        .iter()
        .filter_map(|a| match a {
            Announcement::Trace { pid, .. } if *pid != program => Some(*pid),
            _ => None,
        })
        .filter_map(|pid| {
            let p = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
            let fd = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()?;
            Some((pid, fd))
        })
        .collect();
    if fds.is_empty() {
        return;
    }
    let mut running: Vec<&(u32, std::os::fd::OwnedFd)> = fds.iter().collect();
    let start = Instant::now();
    let mut first = true;
    loop {
        let left = if first {
            Duration::ZERO
        } else {
            DESCENDANT_WAIT.saturating_sub(start.elapsed())
        };
        let timeout = rustix::time::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut polls: Vec<PollFd<'_>> = running
            .iter()
            .map(|(_, fd)| PollFd::new(fd, PollFlags::IN))
            .collect();
        // A pidfd is readable once its process has exited.
        if poll(&mut polls, Some(&timeout)).is_err() {
            return;
        }
        let exited: Vec<bool> = polls.iter().map(|p| !p.revents().is_empty()).collect();
        drop(polls);
        let mut i = 0;
        running.retain(|_| {
            i += 1;
            !exited[i - 1]
        });
        if running.is_empty() {
            return;
        }
        let pids = || {
            running
                .iter()
                .map(|(p, _)| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if first {
            eprintln!(
                "gpu-trace: waiting up to {} s for traced processes still running: {}",
                DESCENDANT_WAIT.as_secs(),
                pids()
            );
            first = false;
        } else if start.elapsed() >= DESCENDANT_WAIT {
            eprintln!(
                "gpu-trace: traced processes still running after {} s: {}; their traces may be incomplete",
                DESCENDANT_WAIT.as_secs(),
                pids()
            );
            return;
        }
    }
}
