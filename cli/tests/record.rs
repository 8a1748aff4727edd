//! `gpu-trace record` end to end without a GPU: the real binary runs a
//! program under the simulated runtimes (cupti-sim as CUDA driver and
//! CUPTI, rocprofiler-sim as rocprofiler-sdk), which load the built
//! injection libraries because of the variables `record` set, exactly as
//! the real driver and SDK would. The program is this test executable,
//! re-run with one of its ignored tests selected; shell scripts around it
//! fork, trap signals or exit with a code.

use cupti_sim::scenario::{CopyKind, KernelSpec, Layer, Op, ThreadSpec};
use gpu_trace_reader::{Stage, Trace};
use gpu_trace_testkit::wait_announce;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

cupti_sim::child_entry!();

/// Set in a HIP program's environment: its rocprofiler-sim spec.
const HIP_SPEC: &str = "GPU_TRACE_TEST_HIP_SPEC";

/// The HIP program: rocprofiler-sim running the default scenario with the
/// tool named by `ROCP_TOOL_LIBRARIES`, as rocprofiler-register does.
#[test]
#[ignore = "the HIP program that gpu-trace record runs in this file's tests"]
fn hip_program() {
    let spec = std::env::var_os(HIP_SPEC).expect("run by this file's tests");
    let mut spec: rocprofiler_sim::RunSpec =
        serde_json::from_slice(&std::fs::read(spec).unwrap()).unwrap();
    let tools = std::env::var("ROCP_TOOL_LIBRARIES").expect("set by gpu-trace record");
    spec.tool = tools.split(':').next().unwrap().into();
    let report = rocprofiler_sim::host::run_in_process(&spec).expect("simulated HIP program");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

const LIMIT: Duration = Duration::from_secs(120);

/// A kernel name of several KB, as templated C++ kernels have.
fn long_kernel() -> String {
    format!(
        "_ZN2at6native29vectorized_elementwise_kernelILi4E{}EEvv",
        "NS0_11FillFunctorIfEE".repeat(300)
    )
}

fn launch(kernel: &str) -> Op {
    Op::Launch {
        kernel: kernel.into(),
        grid: [4, 1, 1],
        block: [64, 1, 1],
        stream: 0,
        layer: Layer::Runtime,
    }
}

fn scenario() -> cupti_sim::Scenario {
    let k = |name: &str, symbol: String, us| KernelSpec {
        name: name.into(),
        symbol,
        registers: 32,
        static_smem: 0,
        duration_us: us,
    };
    let s = cupti_sim::Scenario {
        kernels: vec![
            k("vadd", "_Z4vaddPfS_S_i".into(), 20),
            k("fill", long_kernel(), 50),
        ],
        threads: vec![ThreadSpec {
            ops: vec![
                Op::Memcpy {
                    bytes: 4096,
                    kind: CopyKind::H2D,
                    stream: None,
                },
                launch("vadd"),
                launch("fill"),
                launch("fill"),
                Op::DeviceSync,
            ],
        }],
        profiler: Default::default(),
    };
    s.validate().unwrap();
    s
}

fn lib_dir() -> PathBuf {
    let cuda = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
    let dir = cuda.parent().unwrap().to_path_buf();
    assert!(dir.join("libgpu_trace_hip.so").exists());
    dir
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-rec-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `gpu-trace record` with the injection libraries of this build.
fn record() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-trace"));
    c.arg("record")
        .arg("--lib-dir")
        .arg(lib_dir())
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("NVTX_INJECTION64_PATH")
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env("RUST_BACKTRACE", "0");
    c
}

/// The command line of the CUDA program, and the environment it needs
/// (which `record` passes through): the fake as CUPTI, its spec.
fn cuda_program(dir: &Path, c: &mut Command) -> Vec<String> {
    cuda_program_of(dir, c, scenario())
}

/// [`cuda_program`] running `program`.
fn cuda_program_of(dir: &Path, c: &mut Command, program: cupti_sim::Scenario) -> Vec<String> {
    let spec = cupti_sim::RunSpec::new(lib_dir().join("libgpu_trace_cuda.so"), program);
    let spec_path = dir.join("cuda-spec.json");
    std::fs::write(&spec_path, serde_json::to_vec(&spec).unwrap()).unwrap();
    c.env(cupti_sim::host::CHILD_ENV, &spec_path).env(
        "GPU_TRACE_CUPTI_PATH",
        cupti_sim::host::fake_library().unwrap(),
    );
    child_args(cupti_sim::host::CHILD_TEST)
}

/// This executable running only its ignored test `name`.
fn child_args(name: &str) -> Vec<String> {
    [
        std::env::current_exe().unwrap().display().to_string(),
        "--ignored".into(),
        "--exact".into(),
        name.into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
        "-q".into(),
    ]
    .into()
}

/// Runs `c` to its end, failing the test after [`LIMIT`].
fn run(mut c: Command) -> Output {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(c.output());
    });
    rx.recv_timeout(LIMIT)
        .expect("gpu-trace record did not finish")
        .expect("gpu-trace record runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Lines on stderr that are neither ours nor the simulators' own.
fn foreign_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| !l.starts_with("gpu-trace:") && !l.trim().is_empty())
        .collect()
}

#[test]
fn a_cuda_run_is_traced_and_summarised_in_a_few_short_lines() {
    let dir = tmpdir("cuda");
    let mut c = record();
    c.arg("-o").arg(dir.join("run"));
    let prog = cuda_program(&dir, &mut c);
    let report = dir.join("report.json");
    c.env(cupti_sim::host::REPORT_ENV, &report).args(&prog);
    let out = run(c);
    let err = stderr(&out);
    // Shown with --nocapture: what a user sees.
    eprintln!("{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    let r: cupti_sim::Report = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(
        r.initialize_injection,
        Some(1),
        "the driver loaded gpu-trace"
    );

    // `.pftrace` added to a name without an extension.
    let path = dir.join("run.pftrace");
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("{e}\n{err}"));
    assert_eq!(t.kernels().count(), 3);
    assert_eq!(t.drop_counts(), Some(vec![]));

    // Nothing but our lines, and no Perfetto log line.
    assert!(foreign_lines(&err).is_empty(), "{err}");
    assert!(!err.contains("perfetto_c.cc"), "{err}");
    // The summary: the file, its counts, the top kernels with the long name
    // cut, the pointer to the full report.
    let ours: Vec<&str> = err.lines().collect();
    assert!(ours.len() <= 8, "a handful of lines:\n{err}");
    assert!(ours.iter().all(|l| l.chars().count() < 200), "{err}");
    let wrote = format!("gpu-trace: wrote {} (", path.display());
    let line = ours.iter().find(|l| l.starts_with(&wrote)).expect(&err);
    assert!(
        line.contains("3 kernels, 1 copy, ") && line.ends_with("; lost: nothing"),
        "{line}"
    );
    assert!(
        err.contains("gpu-trace: top 2 of 2 kernels by GPU time:"),
        "{err}"
    );
    let fill = ours.iter().find(|l| l.contains("at::native")).expect(&err);
    assert!(fill.contains("100.0%") || fill.contains('%'), "{fill}");
    assert!(fill.ends_with('…') && fill.contains("  2  "), "{fill}");
    assert!(
        ours.iter()
            .any(|l| l.ends_with("vadd(float*, float*, float*, int)")),
        "{err}"
    );
    assert_eq!(
        *ours.last().unwrap(),
        format!(
            "gpu-trace: the full report: gpu-trace stats {}",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn verbose_shows_perfetto_log_lines_under_our_prefix() {
    let dir = tmpdir("verbose");
    let mut c = record();
    c.args(["-v", "--no-stats", "-o"])
        .arg(dir.join("v.pftrace"));
    // The standalone file is written without Perfetto's service by
    // default; through it, the SDK logs, and its lines are ours to show.
    c.env("INJECTION_FILE_WRITER", "service");
    let prog = cuda_program(&dir, &mut c);
    let out = run({
        c.args(&prog);
        c
    });
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("gpu-trace: perfetto: ") && l.contains("tracing session")),
        "{err}"
    );
    assert!(foreign_lines(&err).is_empty(), "{err}");
    assert!(err.contains(&format!(
        "gpu-trace: wrote {}",
        dir.join("v.pftrace").display()
    )));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_hip_run_is_traced() {
    let dir = tmpdir("hip");
    let spec = rocprofiler_sim::RunSpec::new(
        PathBuf::from("set-from-ROCP_TOOL_LIBRARIES"),
        rocprofiler_sim::Scenario::default_scenario(),
    );
    let spec_path = dir.join("hip-spec.json");
    std::fs::write(&spec_path, serde_json::to_vec(&spec).unwrap()).unwrap();
    let mut c = record();
    c.arg("-o")
        .arg(dir.join("hip.pftrace"))
        .env(HIP_SPEC, &spec_path)
        .args(child_args("hip_program"));
    let out = run(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let t = Trace::open(dir.join("hip.pftrace")).unwrap();
    let kernels = t
        .gpu_events
        .iter()
        .filter(|e| e.stage == Stage::Kernel)
        .count();
    assert!(kernels > 0);
    assert!(err.contains(&format!("{kernels} kernels")), "{err}");
    assert!(foreign_lines(&err).is_empty(), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A shell script run by `record` as the program; `$0` is this executable's
/// CUDA program, with its arguments in `PROG_ARGS`.
fn script(dir: &Path, body: &str) -> (Command, Vec<String>) {
    let mut c = record();
    let prog = cuda_program(dir, &mut c);
    c.env("PROG", prog.join(" "));
    (c, vec!["sh".into(), "-c".into(), body.into()])
}

#[test]
fn each_process_the_program_forks_writes_its_own_pid_file() {
    let dir = tmpdir("fork");
    let (mut c, sh) = script(&dir, "$PROG & $PROG & wait; $PROG");
    c.arg("-o").arg(format!("{}/%n-%p", dir.display())).args(sh);
    let out = run(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pftrace"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}\n{err}");
    let exe = std::env::current_exe().unwrap();
    let name = exe.file_name().unwrap().to_string_lossy().into_owned();
    for f in &files {
        let pid = f
            .strip_prefix(&format!("{name}-"))
            .and_then(|r| r.strip_suffix(".pftrace"))
            .unwrap_or_else(|| panic!("{f}"));
        assert!(pid.parse::<u32>().is_ok(), "{f}");
        assert_eq!(Trace::open(dir.join(f)).unwrap().kernels().count(), 3);
        assert!(err.contains(&format!("gpu-trace: wrote {}", dir.join(f).display())));
    }
    assert!(
        err.contains("top 2 of 2 kernels by GPU time (all files):"),
        "{err}"
    );
    assert!(
        err.contains("  6  "),
        "six launches of fill over the files:\n{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_programs_exit_status_is_returned() {
    let dir = tmpdir("codes");
    for (body, code) in [("exit 0", 0), ("exit 3", 3), ("kill -9 $$", 128 + 9)] {
        let mut c = record();
        c.args(["--", "sh", "-c", body]);
        let out = run(c);
        assert_eq!(out.status.code(), Some(code), "{body}: {}", stderr(&out));
    }
    // A traced program's status too.
    let (mut c, sh) = script(&dir, "$PROG; exit 7");
    c.arg("-o").arg(dir.join("seven.pftrace")).args(sh);
    let out = run(c);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(dir.join("seven.pftrace").exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// `record` in a process group of its own, with stdout and stderr read
/// line by line: `sent` gets each line as it comes.
struct Running {
    child: std::process::Child,
    pgid: rustix::process::Pid,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(mut c: Command) -> Running {
        use std::os::unix::process::CommandExt;
        c.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let (tx, rx) = mpsc::channel();
        let pipe = |r: Box<dyn Read + Send>, tx: mpsc::Sender<String>| {
            std::thread::spawn(move || {
                for l in BufReader::new(r).lines() {
                    let Ok(l) = l else { break };
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            });
        };
        pipe(Box::new(child.stdout.take().unwrap()), tx.clone());
        pipe(Box::new(child.stderr.take().unwrap()), tx);
        Running {
            pgid: rustix::process::Pid::from_child(&child),
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Waits for a line containing `text`.
    fn wait_for(&mut self, text: &str) {
        loop {
            match self.lines.recv_timeout(LIMIT) {
                Ok(l) => {
                    let hit = l.contains(text);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no line with {text:?}; so far:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// SIGINT to the whole process group, as a terminal sends it.
    fn interrupt(&self) {
        rustix::process::kill_process_group(self.pgid, rustix::process::Signal::INT).unwrap();
    }

    /// `sig` to gpu-trace alone, as a supervisor sends it.
    fn signal_launcher(&self, sig: rustix::process::Signal) {
        rustix::process::kill_process(rustix::process::Pid::from_child(&self.child), sig).unwrap();
    }

    /// The exit status, and every line.
    fn finish(mut self) -> (Option<i32>, String) {
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            // Lines keep coming until the launcher exits; without any for
            // LIMIT, it hangs.
            match self.lines.recv_timeout(LIMIT) {
                Ok(l) => self.seen.push(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("gpu-trace did not exit; so far:\n{}", self.seen.join("\n"))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break self.child.wait().unwrap(),
            }
        };
        // The pipes close when every process holding them has exited.
        while let Ok(l) = self.lines.recv_timeout(LIMIT) {
            self.seen.push(l);
        }
        (status.code(), std::mem::take(&mut self.seen).join("\n"))
    }
}

impl Drop for Running {
    /// A failed test leaves no program running.
    fn drop(&mut self) {
        let _ = rustix::process::kill_process_group(self.pgid, rustix::process::Signal::KILL);
    }
}

#[test]
fn sigint_to_the_process_group_ends_the_program_not_the_launcher() {
    let mut c = record();
    c.args(["--", "sh", "-c", "echo READY; exec sleep 600"]);
    let mut r = Running::start(c);
    r.wait_for("READY");
    r.interrupt();
    let (code, all) = r.finish();
    assert_eq!(code, Some(130), "{all}");
    // The program dies of the signal at once, so the launcher's signal
    // thread may see the signal before the program's end (it says it
    // waits), after it (the same Ctrl-C: nothing said; CI once saw the
    // launcher stop there, before its lines on the program's end), or not
    // before the launcher returns.
    let waiting = "gpu-trace: SIGINT: waiting for the program to exit and write its trace; Ctrl-C again within 3 s kills it";
    for l in all.lines().filter(|l| l.starts_with("gpu-trace: SIGINT")) {
        assert_eq!(l, waiting, "{all}");
    }
    assert!(all.contains(") was ended by SIGINT"), "{all}");
}

#[test]
fn sigterm_to_the_launcher_alone_is_passed_to_the_program() {
    let mut c = record();
    c.args(["--", "sh", "-c", "echo READY; exec sleep 600"]);
    let mut r = Running::start(c);
    r.wait_for("READY");
    r.signal_launcher(rustix::process::Signal::TERM);
    let (code, all) = r.finish();
    assert_eq!(code, Some(128 + 15), "{all}");
    assert!(
        all.contains("gpu-trace: SIGTERM passed to the program: waiting for the program to exit and write its trace"),
        "{all}"
    );
    assert!(all.contains("gpu-trace: sh (pid "), "{all}");
    assert!(all.contains(") was ended by SIGTERM"), "{all}");
}

#[test]
fn a_program_that_crashes_is_said_to_have_crashed() {
    // Under `--no-stats` nothing else would tell a crash from an exit.
    let mut c = record();
    c.args(["--no-stats", "--", "sh", "-c", "ulimit -c 0; kill -SEGV $$"]);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 11), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("was ended by"))
        .unwrap_or_else(|| panic!("no line says how the program ended:\n{err}"));
    assert!(line.starts_with("gpu-trace: sh (pid "), "{line}");
    assert!(line.ends_with(") was ended by SIGSEGV"), "{line}");
}

#[test]
fn after_sigint_the_launcher_waits_for_the_trace_and_returns_the_status() {
    let dir = tmpdir("sigint-trace");
    // On SIGINT the program does its GPU work, then exits 5.
    let (mut c, sh) = script(
        &dir,
        "trap 'trap - INT; $PROG; exit 5' INT; echo READY; while :; do sleep 0.05; done",
    );
    c.arg("-o").arg(dir.join("late.pftrace")).args(sh);
    let mut r = Running::start(c);
    r.wait_for("READY");
    r.interrupt();
    let (code, all) = r.finish();
    assert_eq!(code, Some(5), "{all}");
    let path = dir.join("late.pftrace");
    assert_eq!(Trace::open(&path).unwrap().kernels().count(), 3, "{all}");
    assert!(
        all.contains(&format!("gpu-trace: wrote {} (", path.display())),
        "{all}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_second_sigint_within_the_window_kills_the_program() {
    let mut c = record();
    // The program ignores SIGINT.
    c.args(["--", "sh", "-c", "trap '' INT; echo READY; exec sleep 600"]);
    let mut r = Running::start(c);
    r.wait_for("READY");
    r.interrupt();
    r.wait_for("waiting for the program to exit");
    r.interrupt();
    let (code, all) = r.finish();
    assert_eq!(code, Some(128 + 9), "{all}");
    assert!(
        all.contains("gpu-trace: SIGINT again: killing the program (pid "),
        "{all}"
    );
}

#[test]
fn a_process_that_cannot_trace_says_why_and_the_launcher_repeats_it() {
    let dir = tmpdir("untraced");
    // Nowhere to write: the output, the working directory and the temp
    // directory are all /proc.
    let mut c = record();
    let prog = cuda_program(&dir, &mut c);
    c.current_dir("/proc")
        .env("TMPDIR", "/tmp")
        .arg("-o")
        .arg("/proc/no-such-dir/x.pftrace")
        .args(["--", "env", "TMPDIR=/proc"])
        .args(&prog);
    let out = run(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("gpu-trace: no trace was written: cannot write a trace file: tried /proc/no-such-dir/x.pftrace, ")
            && last.ends_with("; rerun with --verbose to see what gpu-trace did"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// What `gpu-trace check` says of the CUDA driver on this machine.
fn driver_found() -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .arg("check")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("driver "))
        .unwrap_or_else(|| panic!("{text}"))
        .to_owned();
    !line.contains("not found")
}

#[test]
fn without_a_gpu_the_launcher_says_what_is_missing() {
    for verbose in [false, true] {
        let mut c = record();
        if verbose {
            c.arg("-v");
        }
        c.args(["--", "true"]);
        let out = run(c);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let last = err.lines().last().unwrap_or_default();
        if driver_found() {
            assert!(last.contains("the program never started CUDA"), "{err}");
        } else {
            assert_eq!(
                last,
                "gpu-trace: no trace was written: this machine has no CUDA driver (libcuda.so.1) and no ROCm (librocprofiler-sdk.so.1), so the program could not use a GPU; `gpu-trace check` shows where gpu-trace looked"
            );
        }
        assert!(!err.contains("rerun with --verbose") || !verbose, "{err}");
    }
}

#[test]
fn an_existing_output_is_an_error_unless_forced() {
    let dir = tmpdir("exists");
    let path = dir.join("keep.pftrace");
    std::fs::write(&path, b"precious").unwrap();
    let mut c = record();
    c.arg("-o").arg(dir.join("keep")).args(["--", "true"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "gpu-trace: {} exists; pass --force-overwrite to replace it, or name another output with -o (%p adds the pid)",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");

    let mut c = record();
    c.arg("--force-overwrite").arg("-o").arg(&path);
    let prog = cuda_program(&dir, &mut c);
    c.args(&prog);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(Trace::open(&path).unwrap().kernels().count(), 3);
    assert!(!dir.join("keep.1.pftrace").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rank_variables_name_the_file() {
    let dir = tmpdir("rank");
    let pattern = format!("{}/rank%q{{GPU_TRACE_TEST_RANK}}", dir.display());
    let mut c = record();
    c.arg("-o").arg(&pattern).env("GPU_TRACE_TEST_RANK", "3");
    let prog = cuda_program(&dir, &mut c);
    c.args(&prog);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        Trace::open(dir.join("rank3.pftrace"))
            .unwrap()
            .kernels()
            .count(),
        3
    );

    // Set only for the traced process, as torchrun sets RANK for its
    // workers: said at launch, used in the process.
    let mut c = record();
    c.arg("-o").arg(&pattern).env_remove("GPU_TRACE_TEST_RANK");
    let prog = cuda_program(&dir, &mut c);
    c.args(["--", "env", "GPU_TRACE_TEST_RANK=5"]).args(&prog);
    let out = run(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.lines().next().unwrap(),
        format!(
            "gpu-trace: -o {pattern:?}: GPU_TRACE_TEST_RANK is not set here; a traced process that does not have it either writes %n-%p.pftrace instead, and says so"
        )
    );
    assert_eq!(
        Trace::open(dir.join("rank5.pftrace"))
            .unwrap()
            .kernels()
            .count(),
        3
    );

    // Set nowhere: the process says so and writes the default name.
    let mut c = record();
    c.current_dir(&dir)
        .arg("-o")
        .arg(&pattern)
        .env_remove("GPU_TRACE_TEST_RANK");
    let prog = cuda_program(&dir, &mut c);
    c.args(&prog);
    let out = run(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("gpu-trace: INJECTION_OUTPUT={pattern:?}: expected %q{{GPU_TRACE_TEST_RANK}} to name a set environment variable, and GPU_TRACE_TEST_RANK is not set; using \"%n-%p.pftrace\"")),
        "{err}"
    );
    let written = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_string_lossy().ends_with(".pftrace")
                && !e.file_name().to_string_lossy().starts_with("rank")
        })
        .count();
    assert_eq!(written, 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `gpu-trace record --paused`, switched with the real `gpu-trace status`,
/// `start` and `stop` from outside, as a user does: the program launches
/// 3 kernels paused, 4 after `start all`, 2 after `stop PID`; the trace holds
/// exactly the 4, in one window, and `gpu-trace stats` says so.
#[test]
fn record_paused_then_start_and_stop_from_the_command_line() {
    let dir = tmpdir("switch");
    let (a, a_go, b, b_go) = (
        dir.join("a"),
        dir.join("a.go"),
        dir.join("b"),
        dir.join("b.go"),
    );
    let mut program = scenario();
    program.threads = vec![ThreadSpec {
        ops: [
            vec![launch("vadd"); 3],
            vec![Op::DeviceSync, Op::announce(&a), Op::wait_for(&a_go)],
            vec![launch("fill"); 4],
            vec![Op::DeviceSync, Op::announce(&b), Op::wait_for(&b_go)],
            vec![launch("vadd"); 2],
            vec![Op::DeviceSync],
        ]
        .concat(),
    }];
    program.validate().unwrap();
    let runtime = dir.join("run-dir");
    std::fs::create_dir_all(&runtime).unwrap();
    // As XDG_RUNTIME_DIR: used only when it is ours and 0700, as a login makes it.
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut c = record();
    c.env("XDG_RUNTIME_DIR", &runtime)
        .arg("--paused")
        .arg("-o")
        .arg(dir.join("run"));
    let prog = cuda_program_of(&dir, &mut c, program);
    c.args(&prog).stderr(Stdio::piped());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(c.output());
    });
    let control = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
            .args(args)
            .env("XDG_RUNTIME_DIR", &runtime)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr(&out),
        )
    };
    let pid = wait_announce(&a);
    let (code, out, err) = control(&["status"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with(&format!("{pid}: paused (no window yet), ")),
        "{out}"
    );
    let (code, out, err) = control(&["start", "all"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with(&format!("{pid}: recording (window 1), ")),
        "{out}"
    );
    std::fs::write(&a_go, "").unwrap();
    assert_eq!(wait_announce(&b), pid);
    let (code, out, err) = control(&["stop", &pid.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with(&format!("{pid}: paused after window 1, ")),
        "{out}"
    );
    std::fs::write(&b_go, "").unwrap();
    let rec = rx
        .recv_timeout(LIMIT)
        .expect("gpu-trace record did not finish")
        .expect("gpu-trace record runs");
    let err = stderr(&rec);
    // Shown with --nocapture: what a user sees.
    eprintln!("{err}");
    assert_eq!(rec.status.code(), Some(0), "{err}");
    assert!(foreign_lines(&err).is_empty(), "{err}");
    let wrote = err
        .lines()
        .find(|l| l.starts_with("gpu-trace: wrote "))
        .expect(&err);
    assert!(
        wrote.contains("4 kernels, ")
            && wrote.contains(", in 1 recording window (")
            && wrote.ends_with(" recorded); lost: nothing"),
        "{wrote}"
    );
    // Gone with the program: nothing left to switch.
    let (code, _, none) = control(&["status"]);
    assert_eq!(code, Some(1), "{none}");
    assert!(
        none.starts_with("gpu-trace: no traced process of this user is running"),
        "{none}"
    );

    let path = dir.join("run.pftrace");
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("{e}\n{err}"));
    let names: Vec<&str> = t.kernels().map(|e| &*e.name).collect();
    assert_eq!(names.len(), 4, "{names:?}\n{err}");
    assert!(
        names
            .iter()
            .all(|n| *n == "at::native::vectorized_elementwise_kernel"),
        "{names:?}"
    );
    assert_eq!(t.drop_counts(), Some(vec![]));
    let stats = Command::new(env!("CARGO_BIN_EXE_gpu-trace"))
        .arg("stats")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert_eq!(stats.status.code(), Some(0), "{}", stderr(&stats));
    assert!(
        text.lines()
            .any(|l| l.starts_with("Recording windows: 1, ")),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
