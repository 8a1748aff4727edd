//! What `gpu-trace record` and `gpu-trace start|stop|status` make and read
//! in places other users can write to, with the real binary: the test
//! process (root, as CI runs) is the victim, and commands it runs as
//! `nobody` are another local user who got to the shared folder first.
//! Each run's `TMPDIR` is a fresh folder like `/tmp` (root's, mode 1777),
//! and there is no `XDG_RUNTIME_DIR`, as under cron, sudo or Slurm. The
//! traced program is this test executable under the fake CUDA driver and
//! CUPTI (cupti-sim). Tests that need a second user say on stderr that
//! they are skipped when not run as root.

use gpu_trace_testkit::users::{SharedTmp, can_switch, euid, mode_of, other_mkdir, other_symlink};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

cupti_sim::child_entry!();

fn lib_dir() -> PathBuf {
    let cuda = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
    cuda.parent().unwrap().to_path_buf()
}

/// `gpu-trace` with `TMPDIR` the shared folder and no `XDG_RUNTIME_DIR`.
fn gpu_trace(tmpdir: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-trace"));
    c.env("TMPDIR", tmpdir)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("NVTX_INJECTION64_PATH")
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env("RUST_BACKTRACE", "0");
    c
}

/// `gpu-trace record` of this build's libraries.
fn record(tmpdir: &str) -> Command {
    let mut c = gpu_trace(tmpdir);
    c.arg("record").arg("--lib-dir").arg(lib_dir());
    c
}

/// The traced program: this executable running cupti-sim's program of two
/// kernels; its spec in `dir`, and the environment it needs set on `c`
/// (which `record` passes through).
fn cuda_program(dir: &Path, c: &mut Command) -> Vec<String> {
    use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
    let launch = Op::Launch {
        kernel: "vadd".into(),
        grid: [4, 1, 1],
        block: [64, 1, 1],
        stream: 0,
        layer: Layer::Runtime,
    };
    let s = cupti_sim::Scenario {
        kernels: vec![KernelSpec {
            name: "vadd".into(),
            symbol: "_Z4vaddPfS_S_i".into(),
            registers: 32,
            static_smem: 0,
            duration_us: 20,
        }],
        threads: vec![ThreadSpec {
            ops: vec![launch.clone(), launch, Op::DeviceSync],
        }],
        profiler: Default::default(),
    };
    s.validate().unwrap();
    let spec = cupti_sim::RunSpec::new(lib_dir().join("libgpu_trace_cuda.so"), s);
    let spec_path = dir.join("cuda-spec.json");
    std::fs::write(&spec_path, serde_json::to_vec(&spec).unwrap()).unwrap();
    c.env(cupti_sim::host::CHILD_ENV, &spec_path)
        .env(cupti_sim::host::REPORT_ENV, dir.join("report.json"))
        .env(
            "GPU_TRACE_CUPTI_PATH",
            cupti_sim::host::fake_library().unwrap(),
        );
    [
        std::env::current_exe().unwrap().display().to_string(),
        "--ignored".into(),
        "--exact".into(),
        cupti_sim::host::CHILD_TEST.into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
        "-q".into(),
    ]
    .into()
}

/// Runs `c`, failing the test after two minutes.
fn run(mut c: Command) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(c.output());
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("gpu-trace did not finish")
        .expect("gpu-trace runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What is in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn tmp_str(t: &SharedTmp) -> String {
    t.path().display().to_string()
}

/// The other user makes root's control folder first and fills it with
/// entries for live processes: a socket of theirs that never answers, and
/// a link to a socket of root's that they cannot reach themselves.
/// `gpu-trace status|start|stop` refuses the folder at once, saying why,
/// and sends nothing anywhere.
#[test]
fn start_stop_status_refuse_a_control_folder_another_user_made_at_once() {
    if !can_switch("start_stop_status_refuse_a_control_folder_another_user_made_at_once") {
        return;
    }
    let tmp = SharedTmp::new("cli-control");
    let planted = tmp.join("gpu-trace-0");
    other_mkdir(&planted, "0777");
    // Live pids for the entries.
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let (live, me) = (sleeper.id(), std::process::id());
    // Their socket (bound here, then handed to them: it stays bound and
    // never answers).
    let theirs = UnixDatagram::bind(planted.join(format!("{live}.sock"))).unwrap();
    theirs.set_nonblocking(true).unwrap();
    rustix::fs::chownat(
        rustix::fs::CWD,
        planted.join(format!("{live}.sock")),
        Some(rustix::process::Uid::from_raw(65534)),
        Some(rustix::process::Gid::from_raw(65534)),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    // A socket of root's, in a folder only root can enter.
    let private = tmp.join("root-only");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let roots = UnixDatagram::bind(private.join("ctl.sock")).unwrap();
    roots.set_nonblocking(true).unwrap();
    other_symlink(
        &private.join("ctl.sock"),
        &planted.join(format!("{me}.sock")),
    );

    let why = format!(
        "gpu-trace: {}: owned by uid 65534, not by this user (uid 0): another user made it; not using it\n",
        planted.display()
    );
    for args in [
        vec!["status".to_owned()],
        vec!["start".to_owned(), "all".to_owned()],
        vec!["stop".to_owned(), live.to_string()],
        vec!["status".to_owned(), me.to_string()],
    ] {
        let t = Instant::now();
        let o = run({
            let mut c = gpu_trace(&tmp_str(&tmp));
            c.args(&args);
            c
        });
        let took = t.elapsed();
        let mut buf = [0u8; 64];
        if let Ok(n) = roots.recv(&mut buf) {
            panic!(
                "{args:?} sent {:?} to root's socket through another user's link",
                String::from_utf8_lossy(&buf[..n])
            );
        }
        if let Ok(n) = theirs.recv(&mut buf) {
            panic!(
                "{args:?} sent {:?} to another user's socket",
                String::from_utf8_lossy(&buf[..n])
            );
        }
        assert!(
            took < Duration::from_secs(2),
            "{args:?} took {took:?} on another user's folder"
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), why, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// A dead entry (its process was killed and left the socket) is given up
/// on at once: the socket refuses, no answer is waited for.
#[test]
fn a_dead_control_socket_is_given_up_on_at_once() {
    let tmp = SharedTmp::new("cli-dead");
    let dir = tmp.join(format!("gpu-trace-{}", euid()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id();
    drop(UnixDatagram::bind(dir.join(format!("{pid}.sock"))).unwrap());
    let t = Instant::now();
    let o = run({
        let mut c = gpu_trace(&tmp_str(&tmp));
        c.args(["status", &pid.to_string()]);
        c
    });
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!(
            "gpu-trace: process {pid} no longer runs gpu-trace"
        )),
        "{}",
        stderr(&o)
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// The record log is a new file, mode 0600, in this user's folder of the
/// temp directory (not the shared folder itself), and gone after the run:
/// nothing of gpu-trace's is left in the shared folder but that folder.
#[test]
fn the_record_log_is_private_and_gone_after_the_run() {
    let tmp = SharedTmp::new("cli-log");
    let seen = tmp.join("seen");
    let o = run({
        let mut c = record(&tmp_str(&tmp));
        c.args([
            "--",
            "sh",
            "-c",
            &format!(
                "stat -c '%a %u %n' \"$GPU_TRACE_RECORD_LOG\" > {}",
                seen.display()
            ),
        ]);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let seen = std::fs::read_to_string(&seen).unwrap();
    let ours = tmp.join(format!("gpu-trace-{}", euid()));
    let prefix = format!("600 {} {}/record-", euid(), ours.display());
    assert!(
        seen.starts_with(&prefix) && seen.trim_end().ends_with(".log"),
        "the record log: {seen}"
    );
    let log = seen.trim_end().rsplit(' ').next().unwrap();
    assert!(!Path::new(log).exists(), "{log} left behind");
    assert_eq!(
        names(tmp.path()),
        [format!("gpu-trace-{}", euid()), "seen".into()]
    );
    assert_eq!(mode_of(&ours), 0o700);
}

/// A traced process that the program left running, and that starts using
/// the GPU only after `record` has finished, finds the record log gone and
/// does not make it again.
#[test]
fn a_traced_process_that_outlives_record_does_not_make_the_log_again() {
    let tmp = SharedTmp::new("cli-late");
    let mut c = record(&tmp_str(&tmp));
    let prog = cuda_program(tmp.path(), &mut c);
    let logpath = tmp.join("logpath");
    let late = tmp.join("late.pftrace");
    c.args(["-o", &late.display().to_string(), "--", "sh", "-c"])
        .arg(format!(
            "echo \"$GPU_TRACE_RECORD_LOG\" > {}; (sleep 1; exec {}) >/dev/null 2>&1 &",
            logpath.display(),
            prog.join(" ")
        ));
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = tmp.join("report.json");
    let until = Instant::now() + Duration::from_secs(60);
    while !report.exists() {
        assert!(Instant::now() < until, "the late program never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The report is written at the very end: let its exit finish.
    std::thread::sleep(Duration::from_millis(200));
    assert!(late.exists(), "the late process was traced");
    let log = std::fs::read_to_string(&logpath).unwrap();
    let log = Path::new(log.trim());
    assert!(log.is_absolute(), "{}", log.display());
    assert!(
        !log.exists(),
        "a late traced process made the record log {} again",
        log.display()
    );
}

/// A relative or empty `TMPDIR` is not the temp directory: nothing is made
/// in the program's working directory.
#[test]
fn a_relative_or_empty_tmpdir_makes_nothing_in_the_working_directory() {
    let tmp = SharedTmp::new("cli-reltmp");
    let cwd = tmp.join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let out = tmp.join("out");
    std::fs::create_dir(&out).unwrap();
    for tmpdir in ["rel", ""] {
        let mut c = record(tmpdir);
        let prog = cuda_program(tmp.path(), &mut c);
        c.current_dir(&cwd)
            .arg("-o")
            .arg(out.join("t-%p"))
            .arg("--")
            .args(&prog)
            .stdout(Stdio::null());
        let o = run(c);
        assert_eq!(
            names(&cwd),
            Vec::<String>::new(),
            "TMPDIR={tmpdir:?} made these in the working directory"
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("gpu-trace: wrote "),
            "TMPDIR={tmpdir:?}: {}",
            stderr(&o)
        );
    }
}

/// When neither the asked place nor the working directory can take the
/// trace, it goes to this user's own folder in the temp directory (mode
/// 0700), not into the shared folder where anyone can see and pre-empt
/// the name.
#[test]
fn the_last_resort_for_a_trace_is_our_own_folder_in_the_temp_directory() {
    let tmp = SharedTmp::new("cli-fallback");
    let mut c = record(&tmp_str(&tmp));
    let prog = cuda_program(tmp.path(), &mut c);
    c.current_dir("/proc")
        .args(["-o", "/proc/no-such-dir/t.pftrace", "--"])
        .args(&prog);
    let o = run(c);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let ours = tmp.join(format!("gpu-trace-{}", euid()));
    let wrote: Vec<String> = names(&ours)
        .into_iter()
        .filter(|n| n.ends_with(".pftrace"))
        .collect();
    assert_eq!(wrote.len(), 1, "{err}");
    assert!(
        err.contains("cannot write the trace to /proc/no-such-dir/t.pftrace: ")
            && err.contains(&format!("writing {}", ours.join(&wrote[0]).display())),
        "{err}"
    );
    assert_eq!(mode_of(&ours), 0o700);
    assert_eq!(
        names(tmp.path()),
        [
            "cuda-spec.json",
            &format!("gpu-trace-{}", euid()),
            "report.json"
        ]
    );
}
