//! A traced program that replaces itself with `exec`, under the fake CUPTI (`cupti-sim`) with
//! the real `libgpu_trace_cuda.so`: no exit handler runs, so the tool cannot finish its trace
//! or remove its control socket there. What `gpu-trace status` makes of the socket left
//! behind, and what the trace holds.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{RunSpec, Scenario};
use gpu_trace_testkit::wait_announce;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

cupti_sim::child_entry!();

const LIMIT: Duration = Duration::from_secs(120);

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-proc-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // Mode 0700, as an XDG_RUNTIME_DIR must be for gpu-trace to use it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

fn scenario(ops: Vec<Op>) -> Scenario {
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "k".into(),
            symbol: "_Z1kv".into(),
            registers: 32,
            static_smem: 0,
            duration_us: 10,
        }],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn launches(n: u32) -> Op {
    Op::Repeat {
        times: n,
        ops: vec![
            Op::Launch {
                kernel: "k".into(),
                grid: [4, 1, 1],
                block: [64, 1, 1],
                stream: 1,
                layer: Layer::Runtime,
            },
            Op::StreamSync { stream: 1 },
        ],
    }
}

/// `s` traced, with its control socket in `dir`, writing `trace`; on a thread.
fn run(dir: &Path, trace: &Path, s: Scenario) -> std::thread::JoinHandle<cupti_sim::Outcome> {
    let tool = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
    let spec = RunSpec::new(tool, s)
        .env("INJECTION_OUTPUT", trace.display().to_string())
        .env("INJECTION_TRACE", "gpu,api")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    std::thread::spawn(move || cupti_sim::host::run_checked(spec, LIMIT))
}

/// `gpu-trace status [pid]` with the sockets in `dir`: (exit code, stdout, stderr).
fn status(dir: &Path, pid: Option<u32>) -> (Option<i32>, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-trace"));
    c.arg("status").env("XDG_RUNTIME_DIR", dir);
    if let Some(p) = pid {
        c.arg(p.to_string());
    }
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_program_replaced_by_exec_leaves_its_trace_and_no_socket_that_status_stumbles_on() {
    let dir = tmpdir("exec");
    let (replaced, stop) = (dir.join("replaced"), dir.join("stop"));
    let (other, other_go) = (dir.join("other"), dir.join("other.go"));
    // Waits (a minute at most), as the same process, once it is another program.
    let script = format!(
        "echo $$ > {r}.tmp && mv {r}.tmp {r}; i=0; while [ ! -e {s} ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done",
        r = replaced.display(),
        s = stop.display()
    );
    let execs = run(
        &dir,
        &dir.join("execs.pftrace"),
        scenario(vec![
            launches(3),
            // Well inside the first period of periodic writes (1 s).
            Op::SleepUs { us: 300_000 },
            Op::Exec {
                program: "/bin/sh".into(),
                args: vec!["-c".into(), script],
            },
        ]),
    );
    let stays = run(
        &dir,
        &dir.join("stays.pftrace"),
        scenario(vec![
            launches(2),
            Op::announce(&other),
            Op::wait_for(&other_go),
        ]),
    );
    let pid = wait_announce(&replaced);
    let live = wait_announce(&other);

    let (code, out, err) = status(&dir, None);
    assert_eq!(
        (code, err.as_str()),
        (Some(0), ""),
        "every traced process answered:\nstdout: {out}\nstderr: {err}"
    );
    assert!(
        out.starts_with(&format!("{live}: recording (window 1)")),
        "{out}"
    );
    assert!(
        !out.contains(&format!("{pid}:")),
        "the process that replaced its program is not listed: {out}"
    );
    // Asked for by pid, it is said plainly not to run gpu-trace any more.
    let (code, out, err) = status(&dir, Some(pid));
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "gpu-trace: process {pid} no longer runs gpu-trace (its program was replaced by exec, or tracing ended without removing its control socket)\n"
        )
    );

    std::fs::write(&stop, "").unwrap();
    std::fs::write(&other_go, "").unwrap();
    let out = execs.join().expect("the program that execs");
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    // Its trace ends where the last read of the buffer wrote it, as a killed process's does
    // (the exec came before the first periodic write): a trace of that process all the same,
    // not an empty file.
    let t = gpu_trace_reader::Trace::open(dir.join("execs.pftrace"))
        .expect("a trace, up to its last write");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert!(
        t.processes.iter().any(|p| p.pid == i64::from(pid)),
        "{:?}",
        t.processes
    );
    let out = stays.join().expect("the program that stays");
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
