//! What the injection makes in places other users can write to, end to end
//! under the fake CUPTI (`cupti-sim`) and NVML (`nvml-sim`): the test
//! process (root, as CI runs) is the victim whose job is traced, and
//! commands it runs as `nobody` are another local user who got to the
//! shared folder first. Each run's `TMPDIR` is a fresh folder like `/tmp`
//! (root's, mode 1777). Without root the tests say they are skipped.
//!
//! Also here: what held up when another user tried, kept so: a flood of
//! malformed datagrams to a control socket, and every descriptor
//! close-on-exec.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{Outcome, RunSpec, Scenario};
use gpu_trace_reader::Trace;
use gpu_trace_testkit::users::{
    SharedTmp, as_other, can_switch, euid, exe_copy, mode_of, other_mkdir, other_symlink,
    setuid_works,
};
use gpu_trace_testkit::wait_announce;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

cupti_sim::child_entry!();

/// cupti-sim's device, as NVML names it: its lock file is
/// `telemetry-<this, lower case>.lock`.
const SIM_UUID: &str = "GPU-5a1b2c3d-0000-4000-8000-00000000c0de";

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn fake_nvml() -> PathBuf {
    cupti_sim::host::artifact("nvml_sim").expect("libnvml_sim.so built")
}

fn launch() -> Op {
    Op::Launch {
        kernel: "vadd".into(),
        grid: [4, 1, 1],
        block: [64, 1, 1],
        stream: 1,
        layer: Layer::Runtime,
    }
}

/// `n` launches, then `mid`, then `m` more, each batch waited for.
fn program(n: u32, mid: Vec<Op>, m: u32) -> Scenario {
    let batch = |k| Op::Repeat {
        times: k,
        ops: vec![launch()],
    };
    let mut ops = vec![batch(n), Op::StreamSync { stream: 1 }];
    ops.extend(mid);
    ops.extend([batch(m), Op::StreamSync { stream: 1 }]);
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "vadd".into(),
            symbol: "_Z4vaddPfS_S_i".into(),
            registers: 32,
            static_smem: 0,
            duration_us: 20,
        }],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

/// A run with telemetry from the fake NVML, the trace in `out`, `TMPDIR`
/// the shared folder and no `XDG_RUNTIME_DIR`: as under cron, sudo or
/// Slurm, where the shared temp folder is all there is.
fn spec(tmp: &SharedTmp, out: &Path, s: Scenario) -> RunSpec {
    RunSpec::new(tool(), s)
        .env("INJECTION_OUTPUT", out.display().to_string())
        .env("INJECTION_TRACE", "gpu,api,telemetry")
        .env("INJECTION_FLUSH_PERIOD_MS", "100")
        .env("INJECTION_TELEMETRY_PERIOD", "5ms")
        .env("GPU_TRACE_NVML_PATH", fake_nvml().display().to_string())
        .env(
            nvml_sim::SPEC_ENV,
            serde_json::to_string(&nvml_sim::Spec::default()).unwrap(),
        )
        .env("TMPDIR", tmp.path().display().to_string())
        .env("XDG_RUNTIME_DIR", "")
        .env("RUST_BACKTRACE", "0")
}

fn run(spec: RunSpec) -> Outcome {
    cupti_sim::host::run_checked(spec, Duration::from_secs(120))
}

fn our_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace:"))
        .collect()
}

/// A folder of root's (mode 0700) the other user cannot see into.
fn roots_own(tmp: &SharedTmp, name: &str) -> PathBuf {
    let d = tmp.join(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

fn trace(path: &Path, stderr: &str) -> Trace {
    Trace::open(path).unwrap_or_else(|e| panic!("trace file: {e:?}\n{stderr}"))
}

/// The other user makes root's folder `/tmp/gpu-trace-0` first, open to
/// all, with a link named as the GPU's lock file to where they want a
/// file of root's. The folder is refused, in one line; nothing is made
/// through the link; the GPU is still sampled and the program traced.
#[test]
fn telemetry_locks_are_not_taken_in_a_folder_another_user_made() {
    if !can_switch("telemetry_locks_are_not_taken_in_a_folder_another_user_made") {
        return;
    }
    let tmp = SharedTmp::new("cuda-locks");
    let planted = tmp.join("gpu-trace-0");
    other_mkdir(&planted, "0777");
    let wanted = tmp.join("made-by-root");
    let lock = format!("telemetry-{}.lock", SIM_UUID.to_ascii_lowercase());
    other_symlink(&wanted, &planted.join(&lock));
    let out = roots_own(&tmp, "out").join("trace.pftrace");
    let o = run(spec(
        &tmp,
        &out,
        program(1, vec![Op::SleepUs { us: 300_000 }], 1),
    ));
    assert!(
        !wanted.exists(),
        "root created {} through a link another user planted\n{}",
        wanted.display(),
        o.stderr
    );
    let why = format!(
        "{}: owned by uid 65534, not by this user (uid 0): another user made it; not using it",
        planted.display()
    );
    assert_eq!(
        our_lines(&o.stderr),
        [
            format!(
                "gpu-trace: no control socket ({why}); gpu-trace start/stop cannot reach this process"
            ),
            format!(
                "gpu-trace: telemetry: no lock for GPU 0 ({why}); sampling it without one, so other processes of this user may sample it too"
            ),
        ]
    );
    let t = trace(&out, &o.stderr);
    assert_eq!(t.kernels().count(), 2);
    assert!(
        t.counters.iter().any(|c| &*c.name == "clocks.sm"),
        "sampled"
    );
}

/// The other user links root's folder name to a folder of root's: the
/// traced process neither changes that folder's mode nor puts its socket
/// there; it says so, and the program is traced.
#[test]
fn a_control_folder_linked_elsewhere_is_neither_changed_nor_used() {
    if !can_switch("a_control_folder_linked_elsewhere_is_neither_changed_nor_used") {
        return;
    }
    let tmp = SharedTmp::new("cuda-control-link");
    let roots = tmp.join("root-dir");
    std::fs::create_dir(&roots).unwrap();
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o755)).unwrap();
    let planted = tmp.join("gpu-trace-0");
    other_symlink(&roots, &planted);
    let out = roots_own(&tmp, "out").join("trace.pftrace");
    let o = run(spec(&tmp, &out, program(2, vec![], 0)).env("INJECTION_TELEMETRY_PERIOD", "off"));
    assert_eq!(
        mode_of(&roots),
        0o755,
        "root's folder was changed through a link another user planted\n{}",
        o.stderr
    );
    assert_eq!(
        std::fs::read_dir(&roots).unwrap().count(),
        0,
        "something was put in root's folder through the link"
    );
    assert_eq!(
        our_lines(&o.stderr),
        [format!(
            "gpu-trace: no control socket ({}: is a symbolic link; not following it); gpu-trace start/stop cannot reach this process",
            planted.display()
        )]
    );
    assert_eq!(trace(&out, &o.stderr).kernels().count(), 2);
}

/// The record log is appended to, never created, and never through a
/// link: the other user's link (in a folder of theirs, where even
/// `fs.protected_symlinks` does not stop root following it) to a file of
/// root's is refused, and a log the launcher has removed is not made again.
#[test]
fn the_record_log_is_not_followed_through_a_link_nor_made_again() {
    if !can_switch("the_record_log_is_not_followed_through_a_link_nor_made_again") {
        return;
    }
    let tmp = SharedTmp::new("cuda-record-log");
    let secret = roots_own(&tmp, "root-only").join("file");
    std::fs::write(&secret, "root's\n").unwrap();
    let theirs = tmp.join("theirs");
    other_mkdir(&theirs, "0755");
    let link = theirs.join("gpu-trace-record-1.log");
    other_symlink(&secret, &link);
    let outs = roots_own(&tmp, "out");
    let o = run(spec(&tmp, &outs.join("a.pftrace"), program(1, vec![], 0))
        .env("INJECTION_TELEMETRY_PERIOD", "off")
        .env("INJECTION_CONTROL", "off")
        .env("GPU_TRACE_RECORD_LOG", link.display().to_string()));
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "root's\n",
        "appended to a file of root's through another user's link\n{}",
        o.stderr
    );
    assert_eq!(
        our_lines(&o.stderr),
        [format!(
            "gpu-trace: GPU_TRACE_RECORD_LOG={:?}: {}: owned by uid 65534, not by this user (uid 0): another user made it; not using it",
            link.display().to_string(),
            theirs.display()
        )]
    );
    // Removed by the launcher before this late process announced itself.
    let gone = roots_own(&tmp, "private").join("record-1.log");
    let o = run(spec(&tmp, &outs.join("b.pftrace"), program(1, vec![], 0))
        .env("INJECTION_TELEMETRY_PERIOD", "off")
        .env("INJECTION_CONTROL", "off")
        .env("GPU_TRACE_RECORD_LOG", gone.display().to_string()));
    assert!(
        !gone.exists(),
        "a traced process made the record log again\n{}",
        o.stderr
    );
    assert!(our_lines(&o.stderr).is_empty(), "{}", o.stderr);
}

/// `XDG_RUNTIME_DIR` naming a folder that does not exist: it is passed
/// over and not made; the sockets and locks go to this user's folder in
/// `TMPDIR`, made 0700.
#[test]
fn a_runtime_folder_that_does_not_exist_is_not_made() {
    let tmp = SharedTmp::new("cuda-xdg");
    let missing = tmp.join("run-user-0");
    let out = tmp.join("trace.pftrace");
    let (a, go) = (tmp.join("a"), tmp.join("a.go"));
    let s = program(1, vec![Op::announce(&a), Op::wait_for(&go)], 1);
    let child = {
        let s = spec(&tmp, &out, s).env("XDG_RUNTIME_DIR", missing.display().to_string());
        std::thread::spawn(move || run(s))
    };
    let pid = wait_announce(&a);
    let ours = tmp.join(format!("gpu-trace-{}", euid()));
    // Wait for the sampler to take the GPU's lock.
    let lock = ours.join(format!("telemetry-{}.lock", SIM_UUID.to_ascii_lowercase()));
    for _ in 0..400 {
        if lock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(&go, "").unwrap();
    let o = child.join().unwrap();
    assert!(
        !missing.exists(),
        "made {} from XDG_RUNTIME_DIR\n{}",
        missing.display(),
        o.stderr
    );
    assert_eq!(mode_of(&ours), 0o700);
    assert!(lock.exists(), "{}", o.stderr);
    assert!(
        !ours.join(format!("{pid}.sock")).exists(),
        "removed at exit"
    );
    assert!(our_lines(&o.stderr).is_empty(), "{}", o.stderr);
}

/// The other user runs a setuid-root program that loads gpu-trace, with
/// an environment that asks root to write a trace, append to a record log
/// and make a lock folder where they cannot, and to load libraries of
/// their choosing: gpu-trace does not start, says why in one line, and
/// the program runs as it would without it.
#[test]
fn in_a_setuid_program_gpu_trace_stays_off() {
    if !can_switch("in_a_setuid_program_gpu_trace_stays_off") {
        return;
    }
    let tmp = SharedTmp::new("cuda-setuid");
    if !setuid_works(&tmp) {
        eprintln!(
            "in_a_setuid_program_gpu_trace_stays_off: skipped: setuid programs do not run setuid in {} (a nosuid mount, or no_new_privs)",
            tmp.path().display()
        );
        return;
    }
    let exe = exe_copy(&tmp, true);
    let roots = roots_own(&tmp, "root-only");
    let log = roots.join("record.log");
    std::fs::write(&log, "root's\n").unwrap();
    let run_dir = tmp.join("run");
    std::fs::create_dir(&run_dir).unwrap();
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec_path = run_dir.join("spec.json");
    let report = run_dir.join("report.json");
    let s = RunSpec::new(tool(), program(2, vec![], 0));
    std::fs::write(&spec_path, serde_json::to_vec(&s).unwrap()).unwrap();
    let fake = cupti_sim::host::fake_library().unwrap();
    let out = as_other(Command::new(&exe).args([
        "--ignored",
        "--exact",
        cupti_sim::host::CHILD_TEST,
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]))
    .current_dir(&run_dir)
    .env(cupti_sim::host::CHILD_ENV, &spec_path)
    .env(cupti_sim::host::REPORT_ENV, &report)
    .env(cupti_sim::host::LIBRARY_ENV, &fake)
    .env("CUDA_INJECTION64_PATH", tool())
    .env("NVTX_INJECTION64_PATH", tool())
    .env("GPU_TRACE_CUPTI_PATH", &fake)
    .env("GPU_TRACE_NVML_PATH", fake_nvml())
    .env(
        nvml_sim::SPEC_ENV,
        serde_json::to_string(&nvml_sim::Spec::default()).unwrap(),
    )
    .env("INJECTION_OUTPUT", roots.join("trace.pftrace"))
    .env("INJECTION_TRACE", "gpu,api,telemetry")
    .env("INJECTION_TELEMETRY_LOCK_DIR", roots.join("locks"))
    .env("GPU_TRACE_RECORD_LOG", &log)
    .env("RUST_BACKTRACE", "0")
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let made: Vec<String> = std::fs::read_dir(&roots)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "record.log")
        .collect();
    assert!(
        made.is_empty(),
        "root made {made:?} in {} for the other user\n{stderr}",
        roots.display()
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "root's\n",
        "root appended to its own file for the other user\n{stderr}"
    );
    assert_eq!(
        our_lines(&stderr),
        [
            "gpu-trace: this program runs setuid, setgid or with file capabilities (AT_SECURE); gpu-trace stays off in this process and reads none of its settings, which come from the environment of whoever started it"
        ],
        "{stderr}"
    );
    let r: cupti_sim::Report = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r.initialize_injection, Some(1), "the driver goes on");
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// Another process of this user floods a traced process's control socket
/// with 3,000 malformed datagrams (empty, binary, oversized, near-misses
/// of the commands): it keeps recording, answers a real command after
/// them, writes its whole trace and exits as it would.
#[test]
fn malformed_datagrams_leave_the_process_recording() {
    let tmp = SharedTmp::new("cuda-flood");
    let runtime = tmp.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = tmp.join("trace.pftrace");
    let (a, go) = (tmp.join("a"), tmp.join("a.go"));
    let child = {
        let s = spec(
            &tmp,
            &out,
            program(2, vec![Op::announce(&a), Op::wait_for(&go)], 3),
        )
        .env("XDG_RUNTIME_DIR", runtime.display().to_string());
        std::thread::spawn(move || run(s))
    };
    let pid = wait_announce(&a);
    let sockets = runtime.join("gpu-trace");
    let target = gpu_trace_agent::windows::socket_path(&sockets, pid);
    let unbound = UnixDatagram::unbound().unwrap();
    let me = tmp.join("flood.sock");
    let bound = UnixDatagram::bind(&me).unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let fixed: [&[u8]; 8] = [
        b"",
        b"\xff\xfe\x00",
        b"quit",
        b"startstop",
        b"start\0",
        b"st\xffart",
        b"status please and more",
        &[b'A'; 60_000],
    ];
    for i in 0..3000u32 {
        let junk: Vec<u8> = match fixed.get(i as usize % 16) {
            Some(f) => f.to_vec(),
            None => (0..(next() % 300)).map(|_| next() as u8).collect(),
        };
        // Some with an address to answer to, some without.
        let sock = if i % 2 == 0 { &unbound } else { &bound };
        sock.send_to(&junk, &target)
            .unwrap_or_else(|e| panic!("datagram {i}: {e}"));
        // Its answers, if any, to keep our queue from filling.
        bound.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 512];
        while bound.recv(&mut buf).is_ok() {}
        bound.set_nonblocking(false).unwrap();
    }
    let status =
        gpu_trace_agent::windows::send_in(&sockets, pid, "status", Duration::from_secs(10))
            .unwrap();
    assert!(status.starts_with("open 1 "), "{status}");
    std::fs::write(&go, "").unwrap();
    let o = child.join().unwrap();
    assert!(our_lines(&o.stderr).is_empty(), "{}", o.stderr);
    assert_eq!(trace(&out, &o.stderr).kernels().count(), 5);
}

/// The descriptors of process `pid` (past the standard three) that are
/// not close-on-exec, each with what it is.
fn inheritable(pid: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).unwrap() {
        let e = e.unwrap();
        let fd: u32 = e.file_name().to_string_lossy().parse().unwrap();
        let Ok(info) = std::fs::read_to_string(e.path()) else {
            continue; // closed meanwhile
        };
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
            .unwrap();
        if fd > 2 && flags & 0o2_000_000 == 0 {
            let what = std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            out.push((fd, what));
        }
    }
    out
}

/// Every descriptor a traced process holds past its standard three is
/// close-on-exec: the trace file, the control socket, the GPU's lock, the
/// tracing service's own, and the fake driver's and test harness's. (Those
/// this test process itself was given open across exec, as cargo's
/// jobserver pipe, reach the program the same way and are left out.)
#[test]
fn every_descriptor_of_a_traced_process_is_close_on_exec() {
    let given = inheritable("self");
    let tmp = SharedTmp::new("cuda-cloexec");
    let runtime = tmp.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = tmp.join("trace.pftrace");
    let (a, go) = (tmp.join("a"), tmp.join("a.go"));
    let child = {
        let s = spec(
            &tmp,
            &out,
            program(
                1,
                vec![
                    Op::SleepUs { us: 300_000 },
                    Op::announce(&a),
                    Op::wait_for(&go),
                ],
                1,
            ),
        )
        .env("XDG_RUNTIME_DIR", runtime.display().to_string());
        std::thread::spawn(move || run(s))
    };
    let pid = wait_announce(&a).to_string();
    let leaks: Vec<(u32, String)> = inheritable(&pid)
        .into_iter()
        .filter(|l| !given.contains(l))
        .collect();
    let seen: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    std::fs::write(&go, "").unwrap();
    let o = child.join().unwrap();
    assert!(leaks.is_empty(), "not close-on-exec: {leaks:?}");
    let lock = format!("telemetry-{}.lock", SIM_UUID.to_ascii_lowercase());
    for ours in [out.display().to_string(), lock, "socket:".to_owned()] {
        assert!(
            seen.iter().any(|w| w.contains(&ours)),
            "no descriptor of {ours} among {seen:?}\n{}",
            o.stderr
        );
    }
}
