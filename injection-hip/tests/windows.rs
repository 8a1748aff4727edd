//! Recording windows end to end on the HIP path: the real `libgpu_trace_hip.so` under the
//! simulated rocprofiler-sdk (`rocprofiler-sim`), switched from another process through the
//! control socket and by time. Each window's dispatches are exactly the ones launched inside
//! it, as on the CUDA path (`injection-cuda/tests/windows.rs`).

use gpu_trace_testkit::{checked_trace, kernel_counts, recording_windows, wait_announce};
use rocprofiler_sim::scenario::{Op, ThreadSpec};
use rocprofiler_sim::{Outcome, RunSpec, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

rocprofiler_sim::child_entry!();

const BEFORE: &str = "_Z4vaddPKfS0_Pfi";
const BETWEEN: &str = "_Z4gemmPKfS0_Pfiii";
const AFTER: &str = "_Z6reducePKfPfi";

fn tool() -> PathBuf {
    rocprofiler_sim::host::artifact("gpu_trace_hip").expect("libgpu_trace_hip.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "gpu-trace-hip-windows-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // As XDG_RUNTIME_DIR: used only when it is ours and 0700, as a login makes it.
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    d
}

/// The default scenario's agents and kernels (`vadd`, `gemm`, `reduce`), one thread of `ops`.
fn scenario(ops: Vec<Op>) -> Scenario {
    let mut s = Scenario::default_scenario();
    s.threads = vec![ThreadSpec { ops }];
    s.validate().expect("valid scenario");
    s
}

/// `n` launches of `kernel` on GPU 0's stream 1, then a wait for them.
fn launches(kernel: &str, n: u32) -> Vec<Op> {
    vec![
        Op::Repeat {
            times: n,
            ops: vec![Op::Launch {
                kernel: kernel.into(),
                grid: [4, 1, 1],
                block: [64, 1, 1],
                shared_mem: 0,
                device: 0,
                stream: 1,
                counters: BTreeMap::new(),
            }],
        },
        Op::StreamSync {
            device: 0,
            stream: 1,
        },
    ]
}

/// Runs the program in a child process on a thread of its own, so that the test can act on
/// it meanwhile.
fn run(dir: &Path, s: Scenario, env: &[(&str, &str)]) -> std::thread::JoinHandle<Outcome> {
    let mut spec = RunSpec::new(tool(), s)
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,api")
        .env("INJECTION_TELEMETRY_PERIOD", "off")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    std::thread::spawn(move || {
        let out = rocprofiler_sim::host::run_isolated(&spec).expect("simulator run");
        assert!(out.report.configure_called, "{}", out.stderr);
        out
    })
}

#[test]
fn another_process_stops_and_restarts_recording_and_each_window_holds_exactly_its_dispatches() {
    let dir = tmpdir("control");
    let (a, a_go, b, b_go) = (
        dir.join("a"),
        dir.join("a.go"),
        dir.join("b"),
        dir.join("b.go"),
    );
    let p = |p: &Path| p.display().to_string();
    let wait = |f: &Path| Op::WaitFile {
        path: p(f),
        timeout_ms: 60_000,
    };
    let mut ops = launches("vadd", 3);
    ops.extend([Op::Announce { path: p(&a) }, wait(&a_go)]);
    ops.extend(launches("gemm", 4));
    ops.extend([Op::Announce { path: p(&b) }, wait(&b_go)]);
    ops.extend(launches("reduce", 2));
    let child = run(&dir, scenario(ops), &[]);
    let sockets = dir.join("gpu-trace");
    let send = |pid, cmd| {
        gpu_trace_agent::windows::send_in(&sockets, pid, cmd, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    };
    let pid = wait_announce(&a);
    let status = send(pid, "status");
    assert!(status.starts_with("open 1 "), "{status}");
    let r = send(pid, "stop");
    assert!(r.starts_with("closed 1 "), "{r}");
    std::fs::write(&a_go, "").unwrap();
    assert_eq!(wait_announce(&b), pid);
    let r = send(pid, "start");
    assert!(r.starts_with("open 2 "), "{r}");
    std::fs::write(&b_go, "").unwrap();
    let out = child.join().expect("run");
    assert_eq!(
        out.report.violations,
        Vec::<String>::new(),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.lines().any(|l| l.starts_with("gpu-trace")),
        "{}",
        out.stderr
    );
    // The socket is gone with the process.
    assert!(!gpu_trace_agent::windows::socket_path(&sockets, pid).exists());
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([(BEFORE.to_owned(), 3), (AFTER.to_owned(), 2)]),
        "dispatches of the closed window are not recorded, the others all are"
    );
    let w = recording_windows(&t);
    assert_eq!(
        w.iter().map(|(n, ..)| n.as_str()).collect::<Vec<_>>(),
        [
            "recording window 1 opened (start)",
            "recording window 2 opened (gpu-trace start)"
        ],
        "{w:?}"
    );
    // Each window's dispatches lie inside it, and each launch call points at its dispatch.
    for e in &t.gpu_events {
        let Some(k) = &e.kernel else { continue };
        let (_, ts, dur) = if k.name.as_str() == BEFORE {
            &w[0]
        } else {
            &w[1]
        };
        assert!(
            e.ts >= *ts && e.ts + e.dur <= ts + dur,
            "{} outside its window",
            k.name
        );
    }
    let launches: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name.as_str() == "hipLaunchKernel")
        .collect();
    assert_eq!(launches.len(), 5, "the launch calls of the open windows");
    for s in launches {
        assert_eq!(s.submissions.len(), 1, "{s:?}");
        assert!(t.gpu_event(s.submissions[0]).is_some(), "{s:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_window_closed_while_its_dispatch_runs_keeps_it_and_records_nothing_after() {
    let dir = tmpdir("inflight");
    let (a, a_go) = (dir.join("a"), dir.join("a.go"));
    let p = |p: &Path| p.display().to_string();
    let mut s = scenario(vec![]);
    // A long kernel, still running when the window closes.
    s.kernels
        .iter_mut()
        .find(|k| k.name == "gemm")
        .unwrap()
        .duration_us = 300_000;
    let mut ops = launches("gemm", 1);
    ops.pop(); // no wait: it runs on
    ops.extend([
        Op::Announce { path: p(&a) },
        Op::WaitFile {
            path: p(&a_go),
            timeout_ms: 60_000,
        },
        Op::StreamSync {
            device: 0,
            stream: 1,
        },
    ]);
    ops.extend(launches("reduce", 2));
    s.threads = vec![ThreadSpec { ops }];
    let child = run(&dir, s, &[]);
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&a);
    let r = gpu_trace_agent::windows::send_in(&sockets, pid, "stop", Duration::from_secs(10))
        .expect("stop");
    assert!(r.starts_with("closed 1 "), "{r}");
    std::fs::write(&a_go, "").unwrap();
    let out = child.join().expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([(BETWEEN.to_owned(), 1)]),
        "the dispatch submitted inside the window, and nothing after it\n{}",
        out.stderr
    );
    let w = recording_windows(&t);
    let g = t.gpu_events.iter().find(|e| e.kernel.is_some()).unwrap();
    assert!(
        g.ts + g.dur > w[0].1 + w[0].2,
        "the kernel ran past the close: {g:?} {w:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn paused_records_nothing_until_started_and_a_delay_and_duration_record_only_the_middle() {
    // Paused and never started: nothing of the program, one window-less trace.
    let dir = tmpdir("paused");
    let mut ops = launches("vadd", 3);
    ops.extend(launches("gemm", 2));
    let out = run(&dir, scenario(ops), &[("INJECTION_PAUSED", "1")])
        .join()
        .expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(kernel_counts(&t), BTreeMap::new(), "{}", out.stderr);
    assert!(t.slices.is_empty(), "{:?}", t.slices.first());
    let _ = std::fs::remove_dir_all(&dir);

    // The window opens 1.5 s after start and lasts 1.5 s; the program launches at about 0,
    // 2.25 s (inside) and 4.5 s.
    let dir = tmpdir("timed");
    let mut ops = launches("vadd", 3);
    ops.push(Op::SleepUs { us: 2_250_000 });
    ops.extend(launches("gemm", 4));
    ops.push(Op::SleepUs { us: 2_250_000 });
    ops.extend(launches("reduce", 2));
    let out = run(
        &dir,
        scenario(ops),
        &[
            ("INJECTION_DELAY", "1500ms"),
            ("INJECTION_DURATION", "1500ms"),
        ],
    )
    .join()
    .expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([(BETWEEN.to_owned(), 4)]),
        "{}",
        out.stderr
    );
    let w = recording_windows(&t);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "recording window 1 opened (scheduled)");
    assert!((1_400_000_000..1_700_000_000).contains(&w[0].2), "{w:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_window_setting_is_named_once_and_the_program_runs_whole() {
    let dir = tmpdir("bad");
    let out = run(
        &dir,
        scenario(launches("vadd", 2)),
        &[("INJECTION_WINDOW", "1s")],
    )
    .join()
    .expect("run");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("gpu-trace: INJECTION_WINDOW=")
            && lines[0].contains("INJECTION_EVERY as well"),
        "{}",
        lines[0]
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(kernel_counts(&t), BTreeMap::from([(BEFORE.to_owned(), 2)]));
    let _ = std::fs::remove_dir_all(&dir);
}
