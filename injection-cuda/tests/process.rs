//! The traced program forks: the real `libgpu_trace_cuda.so` under the fake CUPTI
//! (`cupti-sim`). A child forked after tracing started inherits the tool's exit handler but
//! none of its threads; its `exit()` must leave the parent's tracing, trace and control
//! socket alone, and say nothing that is not a `gpu-trace:` line.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{RunSpec, Scenario};
use gpu_trace_testkit::{checked_trace, kernel_counts, wait_announce};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

cupti_sim::child_entry!();

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-process-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // Mode 0700, as an XDG_RUNTIME_DIR must be for gpu-trace to use it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

fn scenario(ops: Vec<Op>) -> Scenario {
    let k = |name: &str, symbol: &str| KernelSpec {
        name: name.into(),
        symbol: symbol.into(),
        registers: 32,
        static_smem: 0,
        duration_us: 10,
    };
    let s = Scenario {
        kernels: vec![k("before", "_Z6beforev"), k("after", "_Z5afterv")],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn launches(kernel: &str, n: u32) -> Op {
    Op::Repeat {
        times: n,
        ops: vec![
            Op::Launch {
                kernel: kernel.into(),
                grid: [4, 1, 1],
                block: [64, 1, 1],
                stream: 1,
                layer: Layer::Runtime,
            },
            Op::StreamSync { stream: 1 },
        ],
    }
}

/// Lines on stderr that are not ours: a panic message, a backtrace note.
fn foreign_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| !l.starts_with("gpu-trace:") && !l.trim().is_empty())
        .collect()
}

#[test]
fn a_forked_child_that_exits_leaves_the_parents_tracing_whole_and_says_nothing() {
    let dir = tmpdir("fork");
    let (forked, go) = (dir.join("forked"), dir.join("go"));
    let s = scenario(vec![
        launches("before", 3),
        Op::Fork { exit_code: 7 },
        Op::announce(&forked),
        Op::wait_for(&go),
        launches("after", 2),
    ]);
    let spec = RunSpec::new(tool(), s)
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,api")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    let child = std::thread::spawn(move || cupti_sim::host::run_checked(spec, LIMIT));
    // The child has exited by now; the parent still answers on its socket.
    let pid = wait_announce(&forked);
    let sockets = dir.join("gpu-trace");
    let socket = gpu_trace_agent::windows::socket_path(&sockets, pid);
    let status =
        gpu_trace_agent::windows::send_in(&sockets, pid, "status", Duration::from_secs(10));
    std::fs::write(&go, "").unwrap();
    let out = child.join().expect("run");
    assert_eq!(
        out.report.children,
        [Some(7)],
        "the child exits with its own code: {}",
        out.stderr
    );
    assert_eq!(
        foreign_lines(&out.stderr),
        Vec::<&str>::new(),
        "nothing but gpu-trace: lines on stderr:\n{}",
        out.stderr
    );
    let ours: Vec<&str> = out.stderr.lines().collect();
    assert!(
        ours.len() <= 1 && !out.stderr.contains("internal error"),
        "at most one line, and no internal error:\n{}",
        out.stderr
    );
    let status =
        status.unwrap_or_else(|e| panic!("the parent's control socket after the fork: {e}"));
    assert!(status.starts_with("open 1 "), "{status}");
    assert!(
        !socket.exists(),
        "the parent removed its socket at its exit"
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z5afterv".to_owned(), 2), ("_Z6beforev".to_owned(), 3)]),
        "the parent's trace holds its kernels from before and after the fork"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const LIMIT: Duration = Duration::from_secs(120);
