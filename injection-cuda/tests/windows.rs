//! Recording windows end to end, with the real `libgpu_trace_cuda.so` under the fake CUPTI
//! (`cupti-sim`): switched from another process through the control socket, and by time.
//! Each window's kernels are exactly the ones launched inside it.

use cupti_sim::scenario::{KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{RunSpec, Scenario};
use gpu_trace_testkit::{checked_trace, kernel_counts, recording_windows, wait_announce};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-windows-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // As XDG_RUNTIME_DIR: used only when it is ours and 0700, as a login makes it.
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
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
        kernels: vec![
            k("before", "_Z6beforev"),
            k("between", "_Z7betweenv"),
            k("after", "_Z5afterv"),
            KernelSpec {
                duration_us: 600_000,
                ..k("long", "_Z4longv")
            },
        ],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn launches(kernel: &str, n: u32) -> Op {
    Op::Repeat {
        times: n,
        ops: vec![Op::Launch {
            kernel: kernel.into(),
            grid: [4, 1, 1],
            block: [64, 1, 1],
            stream: 1,
            layer: Layer::Runtime,
        }],
    }
}

/// `cmd` to process `pid`'s control socket in `sockets`; its reply.
fn send(sockets: &Path, pid: u32, cmd: &str) -> String {
    gpu_trace_agent::windows::send_in(sockets, pid, cmd, Duration::from_secs(10)).expect(cmd)
}

fn run(
    dir: &Path,
    s: Scenario,
    env: &[(&str, String)],
) -> std::thread::JoinHandle<cupti_sim::Outcome> {
    let mut spec = RunSpec::new(tool(), s)
        .env(
            "INJECTION_OUTPUT",
            dir.join("trace.pftrace").display().to_string(),
        )
        .env("INJECTION_TRACE", "gpu,api")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, v.clone());
    }
    std::thread::spawn(move || cupti_sim::host::run_checked(spec, Duration::from_secs(120)))
}

#[test]
fn another_process_stops_and_restarts_recording_and_each_window_holds_exactly_its_kernels() {
    let dir = tmpdir("control");
    let (a, a_go, b, b_go) = (
        dir.join("a"),
        dir.join("a.go"),
        dir.join("b"),
        dir.join("b.go"),
    );
    let s = scenario(vec![
        launches("before", 3),
        Op::StreamSync { stream: 1 },
        Op::announce(&a),
        Op::wait_for(&a_go),
        launches("between", 4),
        Op::StreamSync { stream: 1 },
        Op::announce(&b),
        Op::wait_for(&b_go),
        launches("after", 2),
        Op::StreamSync { stream: 1 },
    ]);
    let child = run(&dir, s, &[]);
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&a);
    let status = send(&sockets, pid, "status");
    assert!(status.starts_with("open 1 "), "{status}");
    let r = send(&sockets, pid, "stop");
    assert!(r.starts_with("closed 1 "), "{r}");
    std::fs::write(&a_go, "").unwrap();
    assert_eq!(wait_announce(&b), pid);
    let r = send(&sockets, pid, "start");
    assert!(r.starts_with("open 2 "), "{r}");
    std::fs::write(&b_go, "").unwrap();
    let out = child.join().expect("run");
    assert!(
        !out.stderr
            .lines()
            .any(|l| l.contains("window") && !l.starts_with("gpu-trace:")),
        "{}",
        out.stderr
    );
    // The socket is gone with the process.
    assert!(!gpu_trace_agent::windows::socket_path(&sockets, pid).exists());
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z5afterv".to_owned(), 2), ("_Z6beforev".to_owned(), 3)]),
        "kernels of the closed window are not recorded, the others all are"
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
    // Each window's kernels lie inside it.
    for e in &t.gpu_events {
        let Some(k) = &e.kernel else { continue };
        let (_, ts, dur) = if k.name.as_str() == "_Z6beforev" {
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
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_delay_and_a_duration_record_only_the_middle() {
    let dir = tmpdir("timed");
    // Generous margins: the window opens 1.5 s after start and lasts 1.5 s; the program
    // launches at about 0, 3 s (inside: 1.5 + 1.5 = 3 s is the end, so the middle part is
    // launched at 2.25 s) and 4.5 s.
    let s = scenario(vec![
        launches("before", 3),
        Op::StreamSync { stream: 1 },
        Op::SleepUs { us: 2_250_000 },
        launches("between", 4),
        Op::StreamSync { stream: 1 },
        Op::SleepUs { us: 2_250_000 },
        launches("after", 2),
        Op::StreamSync { stream: 1 },
    ]);
    let out = run(
        &dir,
        s,
        &[
            ("INJECTION_DELAY", "1500ms".to_owned()),
            ("INJECTION_DURATION", "1500ms".to_owned()),
        ],
    )
    .join()
    .expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z7betweenv".to_owned(), 4)]),
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
fn bad_window_settings_are_named_and_the_program_runs_whole() {
    let dir = tmpdir("bad");
    let s = scenario(vec![launches("before", 2), Op::StreamSync { stream: 1 }]);
    let out = run(
        &dir,
        s,
        &[
            ("INJECTION_WINDOW", "2s".to_owned()),
            ("INJECTION_DELAY", "soon".to_owned()),
        ],
    )
    .join()
    .expect("run");
    let ours: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("INJECTION_"))
        .collect();
    assert_eq!(
        ours,
        [
            "gpu-trace: INJECTION_DELAY=\"soon\": expected a duration up to 7d, such as 30s, 500ms, 2m or 1h; using no delay",
            "gpu-trace: INJECTION_WINDOW=\"2s\": expected INJECTION_EVERY as well (the period of the windows); using no duty cycle",
        ],
        "{}",
        out.stderr
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z6beforev".to_owned(), 2)])
    );
    assert!(
        recording_windows(&t).is_empty(),
        "a run never switched draws no window"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_nvtx_capture_range_records_only_inside_the_named_ranges_up_to_the_count() {
    let dir = tmpdir("nvtx");
    let push = |m: &str| Op::NvtxPush {
        message: m.into(),
        domain: None,
    };
    let pop = || Op::NvtxPop { domain: None };
    let s = scenario(vec![
        launches("before", 2),
        push("step 1"),
        launches("before", 1),
        pop(),
        push("step 2"),
        push("inner"),
        launches("between", 3),
        pop(),
        launches("between", 1),
        pop(),
        Op::StreamSync { stream: 1 },
        push("step 2"),
        launches("after", 2),
        pop(),
        Op::StreamSync { stream: 1 },
    ]);
    let out = run(
        &dir,
        s,
        &[
            ("INJECTION_CAPTURE_RANGE", "nvtx:step 2".to_owned()),
            ("INJECTION_CAPTURE_COUNT", "1".to_owned()),
            ("INJECTION_TRACE", "gpu,api,markers".to_owned()),
        ],
    )
    .join()
    .expect("run");
    // check_trace: no slice left unfinished, so the range that closed the window ends in it.
    let t = checked_trace(&dir.join("trace.pftrace"));
    let ranges: Vec<(&str, u64)> = t
        .slices
        .iter()
        .filter(|s| s.name == "step 2" || s.name == "inner" || s.name == "step 1")
        .map(|s| (s.name.as_str(), s.dur))
        .collect();
    assert_eq!(
        ranges.iter().map(|r| r.0).collect::<Vec<_>>(),
        ["step 2", "inner"],
        "the window's own range and the one inside it: {ranges:?}"
    );
    assert!(ranges.iter().all(|r| r.1 > 0), "{ranges:?}");
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z7betweenv".to_owned(), 4)]),
        "only the first \"step 2\" range, nested ranges included\n{}",
        out.stderr
    );
    let w = recording_windows(&t);
    assert_eq!(
        w.iter().map(|(n, ..)| n.as_str()).collect::<Vec<_>>(),
        ["recording window 1 opened (NVTX range \"step 2\")"],
        "{w:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tool's threads (the window controller on its socket, the emitter, the session's,
/// Perfetto's, those CUPTI makes while the tool starts) block the asynchronous signals, so
/// that a signal sent to the process reaches a thread of the application: a program that
/// blocks SIGTERM everywhere and waits for it with `sigwait` gets it, instead of a tool thread
/// taking SIGTERM's default action. The application's own SIGUSR1 handler runs for every
/// signal, on its threads; the tool installs no handler.
#[test]
fn the_applications_signals_reach_its_own_threads_and_handlers() {
    let dir = tmpdir("signals");
    let s = scenario(vec![
        launches("before", 3),
        Op::StreamSync { stream: 1 },
        Op::Signals { count: 50 },
        launches("after", 2),
        Op::StreamSync { stream: 1 },
    ]);
    let out = run(&dir, s, &[]).join().expect("run");
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    let r = &out.report;
    // Threads that are not the program's: not the process's first thread, not the one
    // that loaded the tool, not a scripted one.
    let pid = r.thread_masks.iter().map(|t| t.tid).min().unwrap_or(0);
    let tool_threads: Vec<_> = r
        .thread_masks
        .iter()
        .filter(|t| {
            t.tid != pid && t.tid != r.program_thread_id && !r.app_thread_ids.contains(&t.tid)
        })
        .collect();
    assert!(
        tool_threads.iter().any(|t| t.name.starts_with("gpu-trace")),
        "the tool's threads are there: {:?}",
        r.thread_masks
    );
    let bit = |sig: i32| 1u64 << (sig - 1);
    for t in &tool_threads {
        for (name, sig) in [
            ("SIGINT", 2),
            ("SIGUSR1", 10),
            ("SIGUSR2", 12),
            ("SIGTERM", 15),
        ] {
            assert!(
                t.blocked & bit(sig) != 0,
                "{name} blocked in thread {} {:?} (mask {:#x})",
                t.tid,
                t.name,
                t.blocked
            );
        }
        assert_eq!(
            t.blocked & bit(11),
            0,
            "SIGSEGV left to the thread that faults"
        );
    }
    assert_eq!(r.signals_handled, 50, "the handler ran for every SIGUSR1");
    assert!(
        r.signal_handler_threads
            .iter()
            .all(|n| !n.starts_with("gpu-trace")),
        "the handler ran on program threads only: {:?}",
        r.signal_handler_threads
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z5afterv".to_owned(), 2), ("_Z6beforev".to_owned(), 3)])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `n` cudaProfilerStart/Stop ranges of 3 `between` kernels, each followed by 2 `after`.
fn profiler_ranges(n: usize) -> Scenario {
    let mut ops = Vec::new();
    for _ in 0..n {
        ops.push(Op::ProfilerStart);
        ops.push(launches("between", 3));
        ops.push(Op::ProfilerStop);
        ops.push(launches("after", 2));
    }
    ops.push(Op::StreamSync { stream: 1 });
    scenario(ops)
}

/// `INJECTION_CAPTURE_RANGE=cudaProfilerApi` toggled many times: each window holds exactly the
/// kernels launched between its start and stop, and each has its markers.
#[test]
fn profiler_api_windows_toggled_many_times_hold_exactly_their_kernels_and_are_marked() {
    let dir = tmpdir("profiler-api");
    let out = run(
        &dir,
        profiler_ranges(20),
        &[("INJECTION_CAPTURE_RANGE", "cudaProfilerApi".to_owned())],
    )
    .join()
    .expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z7betweenv".to_owned(), 60)]),
        "{}",
        out.stderr
    );
    let w = recording_windows(&t);
    assert_eq!(w.len(), 20, "{w:?}");
    for (i, (name, _, dur)) in w.iter().enumerate() {
        assert_eq!(
            name,
            &format!("recording window {} opened (cudaProfilerStart)", i + 1)
        );
        assert!(*dur > 0, "window {} closed: {w:?}", i + 1);
    }
    let closed = t
        .logs
        .iter()
        .filter(|l| l.message.ends_with("closed (cudaProfilerStop)"))
        .count();
    assert_eq!(closed, 20);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `INJECTION_CAPTURE_COUNT` with `cudaProfilerApi`: the first N ranges are recorded, the later
/// ones are not (without the count all 5 would be).
#[test]
fn profiler_api_capture_count_records_only_the_first_ranges() {
    let dir = tmpdir("profiler-api-count");
    let out = run(
        &dir,
        profiler_ranges(5),
        &[
            ("INJECTION_CAPTURE_RANGE", "cudaProfilerApi".to_owned()),
            ("INJECTION_CAPTURE_COUNT", "3".to_owned()),
            ("INJECTION_VERBOSE", "1".to_owned()),
        ],
    )
    .join()
    .expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z7betweenv".to_owned(), 9)]),
        "{}",
        out.stderr
    );
    assert_eq!(recording_windows(&t).len(), 3);
    assert!(
        out.stderr
            .contains("gpu-trace: 3 cudaProfilerStart range(s) recorded; recording stays off"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A duty cycle (`INJECTION_WINDOW`, `INJECTION_EVERY`) opens a window at start and again at
/// each period: kernels launched inside each window are recorded, those between are not.
#[test]
fn a_duty_cycle_records_each_periods_window() {
    let dir = tmpdir("duty");
    // Windows [0, 300 ms), [1 s, 1.3 s), [2 s, 2.3 s): the program launches at about 0.1 s
    // (inside), 0.6 s (outside), 1.15 s (inside), 1.65 s (outside), 2.15 s (inside).
    let s = scenario(vec![
        Op::SleepUs { us: 100_000 },
        launches("before", 2),
        Op::StreamSync { stream: 1 },
        Op::SleepUs { us: 500_000 },
        launches("after", 3),
        Op::StreamSync { stream: 1 },
        Op::SleepUs { us: 550_000 },
        launches("between", 4),
        Op::StreamSync { stream: 1 },
        Op::SleepUs { us: 500_000 },
        launches("after", 3),
        Op::StreamSync { stream: 1 },
        Op::SleepUs { us: 500_000 },
        launches("between", 5),
        Op::StreamSync { stream: 1 },
    ]);
    let out = run(
        &dir,
        s,
        &[
            ("INJECTION_WINDOW", "300ms".to_owned()),
            ("INJECTION_EVERY", "1s".to_owned()),
        ],
    )
    .join()
    .expect("run");
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z6beforev".to_owned(), 2), ("_Z7betweenv".to_owned(), 9)]),
        "{}",
        out.stderr
    );
    let w = recording_windows(&t);
    assert!(w.len() >= 3, "{w:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// VmRSS (kB) and thread count of process `pid`.
fn rss_and_threads(pid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    Some((field("VmRSS:")?, field("Threads:")?))
}

#[test]
fn hundreds_of_windows_switched_while_the_program_launches_keep_every_arrow_and_leak_nothing() {
    // As on the H200: start and stop from outside as fast as
    // they answer, while the program launches, from its first moments.
    let dir = tmpdir("toggle");
    let ready = dir.join("ready");
    let s = scenario(vec![
        Op::announce(&ready),
        Op::Repeat {
            times: 6000,
            ops: vec![launches("between", 1), Op::SleepUs { us: 1000 }],
        },
        Op::StreamSync { stream: 1 },
    ]);
    let child = run(
        &dir,
        s,
        &[
            ("INJECTION_PAUSED", "1".to_owned()),
            // A small buffer, written out often: what the trace holds
            // does not stay in memory.
            ("INJECTION_BUFFER_SIZE", "2048".to_owned()),
        ],
    );
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&ready);
    let send = |cmd| gpu_trace_agent::windows::send_in(&sockets, pid, cmd, Duration::from_secs(10));
    let (mut n, mut at_50, mut last) = (0u32, None, None);
    while n < 400 {
        let Ok(r) = send("start") else { break };
        assert!(r.starts_with("open "), "{r}");
        let Ok(r) = send("stop") else { break };
        assert!(r.starts_with("closed "), "{r}");
        n += 1;
        let now = rss_and_threads(pid);
        if n == 50 {
            at_50 = now;
        }
        last = now.or(last);
    }
    let out = child.join().expect("run");
    assert!(
        n >= 150,
        "only {n} windows before the program ended\n{}",
        out.stderr
    );
    let ((rss_50, threads_50), (rss_end, threads_end)) = (
        at_50.expect("read at window 50"),
        last.expect("read at the end"),
    );
    eprintln!("windows {n}: RSS {rss_50} -> {rss_end} kB, threads {threads_50} -> {threads_end}");
    // The emitter's helpers (a flush, a delivery) come and go.
    assert!(
        threads_end <= threads_50 + 2,
        "threads {threads_50} at window 50, {threads_end} at window {n}"
    );
    assert!(
        rss_end < rss_50 + 4096,
        "RSS {rss_50} kB at window 50, {rss_end} kB at window {n}"
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    let opened = recording_windows(&t).len() as u32;
    assert_eq!(opened, n, "every window marked");
    // Every launch recorded has its kernel: none straddles a switch. (A
    // call that began before a window opened was recorded at its exit,
    // with GPU records not yet on at its launch: 1 in 3 runs of 1,000
    // windows under load, before such calls were left out.)
    let launches: Vec<_> = t
        .slices
        .iter()
        .filter(|s| !s.submissions.is_empty())
        .collect();
    assert!(!launches.is_empty());
    for s in &launches {
        for id in &s.submissions {
            assert!(
                t.gpu_event(*id).is_some(),
                "{} at {} has no kernel",
                s.name,
                s.ts
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_paused_program_detaches_cupti_between_windows_and_each_window_still_holds_its_kernels() {
    // "1": at most one detach (CUPTI keeps memory at each), the one at the
    // start; attached again for window 1, then attached for good.
    for detach in ["on", "off", "1"] {
        let dir = tmpdir(&format!("detach-{detach}"));
        let (a, a_go, b, b_go, c, c_go) = (
            dir.join("a"),
            dir.join("a.go"),
            dir.join("b"),
            dir.join("b.go"),
            dir.join("c"),
            dir.join("c.go"),
        );
        // Paused phases launch long enough for the drain to settle, and
        // on after the detach: CUPTI no longer sees those launches.
        // 1.5 s each: a detach comes about half a second into a pause.
        let paused = || Op::Repeat {
            times: 150,
            ops: vec![launches("before", 1), Op::SleepUs { us: 10_000 }],
        };
        let s = scenario(vec![
            paused(),
            Op::announce(&a),
            Op::wait_for(&a_go),
            launches("between", 4),
            Op::StreamSync { stream: 1 },
            Op::announce(&b),
            Op::wait_for(&b_go),
            paused(),
            Op::announce(&c),
            Op::wait_for(&c_go),
            launches("after", 2),
            Op::StreamSync { stream: 1 },
        ]);
        let child = run(
            &dir,
            s,
            &[
                ("INJECTION_PAUSED", "1".to_owned()),
                ("INJECTION_DETACH", detach.to_owned()),
                ("INJECTION_VERBOSE", "1".to_owned()),
            ],
        );
        let sockets = dir.join("gpu-trace");
        let pid = wait_announce(&a);
        assert!(send(&sockets, pid, "start").starts_with("open 1 "));
        std::fs::write(&a_go, "").unwrap();
        assert_eq!(wait_announce(&b), pid);
        assert!(send(&sockets, pid, "stop").starts_with("closed 1 "));
        std::fs::write(&b_go, "").unwrap();
        assert_eq!(wait_announce(&c), pid);
        assert!(send(&sockets, pid, "start").starts_with("open 2 "));
        std::fs::write(&c_go, "").unwrap();
        let out = child.join().expect("run");
        let r = &out.report;
        // Detached at the start and after window 1; attached again for
        // each window; never a CUPTI call in between (each would attach
        // it again).
        let want = match detach {
            "on" => 2,
            "off" => 0,
            _ => 1,
        };
        assert_eq!(r.finalizes, want, "detach={detach}\n{}", out.stderr);
        // Said when verbose, one line each.
        assert_eq!(
            out.stderr
                .matches("gpu-trace: CUPTI detached (time ")
                .count(),
            want as usize,
            "{}",
            out.stderr
        );
        assert_eq!(
            out.stderr
                .matches("gpu-trace: CUPTI attached again (")
                .count(),
            want as usize
        );
        assert_eq!(r.subscribes, 1 + want, "detach={detach}");
        assert!(
            r.calls_while_detached.is_empty(),
            "{:?}",
            r.calls_while_detached
        );
        assert_eq!(r.records_lost_at_finalize, 0);
        let t = checked_trace(&dir.join("trace.pftrace"));
        assert_eq!(
            kernel_counts(&t),
            BTreeMap::from([("_Z5afterv".to_owned(), 2), ("_Z7betweenv".to_owned(), 4)]),
            "detach={detach}: each window holds exactly its kernels"
        );
        // CUPTI hands out correlation ids from 1 again after a detach
        // (the fake does): the trace's ids stay unique, and each launch
        // points at its own kernel.
        let mut ids: Vec<u64> = t.gpu_events.iter().map(|e| e.event_id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), t.gpu_events.len(), "GPU event ids are unique");
        let launches: Vec<_> = t
            .slices
            .iter()
            .filter(|s| !s.submissions.is_empty())
            .collect();
        assert_eq!(launches.len(), 6, "detach={detach}");
        for s in &launches {
            for id in &s.submissions {
                let e = t.gpu_event(*id).expect("the launch's kernel");
                assert!(
                    e.ts >= s.ts,
                    "a launch at {} points at a kernel at {}",
                    s.ts,
                    e.ts
                );
            }
        }
        let logged = t
            .logs
            .iter()
            .find(|l| l.message.starts_with("CUPTI was detached "));
        let capped = "then it stayed attached, 1 detaches being the most INJECTION_DETACH allows";
        match detach {
            "on" => assert!(
                logged.is_some_and(
                    |l| l.message.contains("detached 2 time(s)") && !l.message.contains(capped)
                ),
                "{:?}",
                t.logs
            ),
            "off" => assert!(logged.is_none(), "{:?}", t.logs),
            _ => {
                assert!(
                    logged
                        .is_some_and(|l| l.message.contains("detached 1 time(s)")
                            && l.message.contains(capped)),
                    "{:?}",
                    t.logs
                );
                assert!(
                    out.stderr.contains("gpu-trace: CUPTI stays attached from now on: it was detached 1 times, the most INJECTION_DETACH allows"),
                    "{}",
                    out.stderr
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_window_closed_while_its_kernel_runs_detaches_only_after_the_kernel_is_in() {
    let dir = tmpdir("detach-drain");
    let (a, a_go, b, b_go) = (
        dir.join("a"),
        dir.join("a.go"),
        dir.join("b"),
        dir.join("b.go"),
    );
    let s = scenario(vec![
        Op::announce(&a),
        Op::wait_for(&a_go),
        launches("between", 2),
        // Runs 600 ms, past the window's close.
        launches("long", 1),
        Op::announce(&b),
        Op::wait_for(&b_go),
        // API calls all along, where a detach could happen too early.
        Op::Repeat {
            times: 250,
            ops: vec![launches("before", 1), Op::SleepUs { us: 10_000 }],
        },
        Op::StreamSync { stream: 1 },
    ]);
    let child = run(&dir, s, &[("INJECTION_PAUSED", "1".to_owned())]);
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&a);
    assert!(send(&sockets, pid, "start").starts_with("open 1 "));
    std::fs::write(&a_go, "").unwrap();
    assert_eq!(wait_announce(&b), pid);
    assert!(send(&sockets, pid, "stop").starts_with("closed 1 "));
    std::fs::write(&b_go, "").unwrap();
    // cupti-sim names a finalise while recorded work runs a violation
    // (the kernel would be lost), and run_checked fails on one.
    let out = child.join().expect("run");
    assert_eq!(out.report.finalizes, 1, "{}", out.stderr);
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z4longv".to_owned(), 1), ("_Z7betweenv".to_owned(), 2)]),
        "the window's kernels, the one still running at its close too"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_window_opened_before_the_detach_could_happen_turns_its_callbacks_off_again() {
    // Paused, the detach asks for a driver-call exit (every driver call's
    // callback on); the program makes none before a window opens. The
    // window must not keep those callbacks: a call gpu-trace does not record
    // (cuProfilerStart) gets none.
    let dir = tmpdir("detach-undone");
    let (a, a_go) = (dir.join("a"), dir.join("a.go"));
    let s = scenario(vec![
        Op::announce(&a),
        Op::wait_for(&a_go),
        Op::ProfilerStart,
        launches("between", 2),
        Op::StreamSync { stream: 1 },
    ]);
    let child = run(
        &dir,
        s,
        &[
            ("INJECTION_PAUSED", "1".to_owned()),
            ("INJECTION_VERBOSE", "1".to_owned()),
        ],
    );
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&a);
    // Past the drain's settling and a flush or two.
    std::thread::sleep(Duration::from_millis(1500));
    let r = send(&sockets, pid, "start");
    assert!(r.starts_with("open 1 "), "{r}");
    std::fs::write(&a_go, "").unwrap();
    let out = child.join().expect("run");
    assert_eq!(out.report.finalizes, 0, "{}", out.stderr);
    assert!(
        !out.report
            .callbacks
            .keys()
            .any(|k| k.starts_with("DRIVER/cuProfilerStart")),
        "{:?}",
        out.report.callbacks
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z7betweenv".to_owned(), 2)])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn detaches_that_held_the_program_for_long_stop_until_the_run_has_room_for_them() {
    // cuptiFinalize returns once the GPU's running work has ended (on the
    // H200, 194-199 ms beside a 200 ms kernel; the fake does the same).
    // Detaches may hold the program's threads 0.5% of the run: after this
    // one (~0.7 s, 3-4 s in) CUPTI stays attached after the next window.
    let dir = tmpdir("detach-stall");
    let files: Vec<PathBuf> = ["a", "a.go", "b", "b.go", "c", "c.go", "d", "d.go"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    let calls = || Op::Repeat {
        times: 150,
        ops: vec![launches("before", 1), Op::SleepUs { us: 10_000 }],
    };
    let s = scenario(vec![
        // Detached at the start (nothing runs then: a short detach).
        calls(),
        Op::announce(&files[0]),
        Op::wait_for(&files[1]),
        launches("between", 4),
        Op::StreamSync { stream: 1 },
        Op::announce(&files[2]),
        Op::wait_for(&files[3]),
        // Outside any window: 1.2 s of kernels still running when the
        // window's drain ends, half a second after its close.
        launches("long", 2),
        calls(),
        Op::announce(&files[4]),
        Op::wait_for(&files[5]),
        launches("after", 2),
        Op::StreamSync { stream: 1 },
        Op::announce(&files[6]),
        Op::wait_for(&files[7]),
        calls(),
    ]);
    let child = run(
        &dir,
        s,
        &[
            ("INJECTION_PAUSED", "1".to_owned()),
            ("INJECTION_VERBOSE", "1".to_owned()),
        ],
    );
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&files[0]);
    for (n, cmd) in ["start", "stop", "start", "stop"].iter().enumerate() {
        if n > 0 {
            assert_eq!(wait_announce(&files[2 * n]), pid);
        }
        let r = send(&sockets, pid, cmd);
        assert!(
            r.starts_with(if n % 2 == 0 { "open " } else { "closed " }),
            "{r}"
        );
        std::fs::write(&files[2 * n + 1], "").unwrap();
    }
    let out = child.join().expect("run");
    let r = &out.report;
    // At the start and after window 1 (the long one); none after window 2.
    assert_eq!(r.finalizes, 2, "{}", out.stderr);
    assert_eq!(r.subscribes, 3, "attached again for each window");
    assert!(
        out.stderr
            .contains("that detach held the application's thread for ")
            && out
                .stderr
                .contains("CUPTI stays attached until the next window: detaching has held"),
        "{}",
        out.stderr
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(
        kernel_counts(&t),
        BTreeMap::from([("_Z5afterv".to_owned(), 2), ("_Z7betweenv".to_owned(), 4)])
    );
    assert!(
        t.logs
            .iter()
            .any(|l| l.message.contains("CUPTI was detached 2 time(s)")
                && l.message.contains("it stayed attached")),
        "{:?}",
        t.logs
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn many_detaches_and_attaches_leak_nothing_of_ours() {
    // On the H200, 100 socket windows that each detached CUPTI
    // grew the process by 7.7 MB from window 10 to 100 (85 kB a cycle),
    // against 1 MB when windows opened before a detach could come. This is
    // our side of it: with the fake CUPTI, no allocation is CUPTI's (what
    // grows here is the trace's own data, about 10 kB a window).
    let dir = tmpdir("detach-leak");
    let ready = dir.join("ready");
    let s = scenario(vec![
        Op::Announce {
            path: ready.display().to_string(),
        },
        // Driver calls all along: a detach happens at one's exit.
        Op::Repeat {
            times: 4000,
            ops: vec![launches("between", 1), Op::SleepUs { us: 5000 }],
        },
        Op::StreamSync { stream: 1 },
    ]);
    let child = run(&dir, s, &[("INJECTION_PAUSED", "1".to_owned())]);
    let sockets = dir.join("gpu-trace");
    let pid = wait_announce(&ready);
    let (mut at_5, mut last) = (None, None);
    for n in 1..=20 {
        assert!(send(&sockets, pid, "start").starts_with("open "));
        std::thread::sleep(Duration::from_millis(20));
        assert!(send(&sockets, pid, "stop").starts_with("closed "));
        // A detach comes about half a second after the close.
        std::thread::sleep(Duration::from_millis(650));
        let now = rss_and_threads(pid);
        if n == 5 {
            at_5 = now;
        }
        last = now.or(last);
    }
    let out = child.join().expect("run");
    let r = &out.report;
    let ((rss_5, threads_5), (rss_end, threads_end)) = (
        at_5.expect("read at window 5"),
        last.expect("read at window 20"),
    );
    eprintln!(
        "{} detaches: RSS {rss_5} -> {rss_end} kB, threads {threads_5} -> {threads_end}",
        r.finalizes
    );
    // Most cycles detach even on a loaded machine (the first one at the
    // start, paused).
    assert!(
        r.finalizes >= 10,
        "{} detaches\n{}",
        r.finalizes,
        out.stderr
    );
    // Each window that found CUPTI detached attached it again: every
    // detach but perhaps the last is undone by one.
    let attaches = r.subscribes - 1;
    assert!(
        attaches <= r.finalizes && r.finalizes <= attaches + 1,
        "{attaches} attaches after {} detaches",
        r.finalizes
    );
    assert!(
        r.calls_while_detached.is_empty(),
        "{:?}",
        r.calls_while_detached
    );
    assert!(
        threads_end <= threads_5 + 2,
        "threads {threads_5} at window 5, {threads_end} at window 20"
    );
    assert!(
        rss_end < rss_5 + 1024,
        "RSS {rss_5} kB at window 5, {rss_end} kB at window 20, over {} detaches",
        r.finalizes
    );
    let t = checked_trace(&dir.join("trace.pftrace"));
    assert_eq!(recording_windows(&t).len(), 20, "every window marked");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each thread of `pid`: its name and its context switches so far
/// (voluntary and not), by thread id.
fn switches(pid: u32) -> BTreeMap<u32, (String, u64)> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        let name = status
            .lines()
            .find_map(|l| l.strip_prefix("Name:"))
            .unwrap_or("")
            .trim()
            .to_owned();
        out.insert(
            tid,
            (
                name,
                field("voluntary_ctxt_switches:") + field("nonvoluntary_ctxt_switches:"),
            ),
        );
    }
    out
}

/// A paused program (`INJECTION_PAUSED`), announced and then asleep for
/// `sleep_s` seconds, its file written by `writer`; returns its pid, the
/// thread that runs it, and its folder.
fn paused_program(
    tag: &str,
    writer: &str,
    sleep_s: u64,
) -> (u32, std::thread::JoinHandle<cupti_sim::Outcome>, PathBuf) {
    let dir = tmpdir(tag);
    let ready = dir.join("ready");
    let s = scenario(vec![
        launches("before", 1),
        Op::StreamSync { stream: 1 },
        Op::announce(&ready),
        Op::SleepUs {
            us: sleep_s * 1_000_000,
        },
    ]);
    let child = run(
        &dir,
        s,
        &[
            ("INJECTION_PAUSED", "1".to_owned()),
            ("INJECTION_FILE_WRITER", writer.to_owned()),
        ],
    );
    (wait_announce(&ready), child, dir)
}

#[test]
fn a_paused_standalone_process_runs_no_perfetto_thread() {
    let (pid, child, dir) = paused_program("no-perfetto", "direct", 1);
    let names: Vec<String> = switches(pid).into_values().map(|(n, _)| n).collect();
    let out = child.join().unwrap();
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        names.iter().any(|n| n == "gpu-trace-emit"),
        "the emitter runs: {names:?}"
    );
    // The Perfetto SDK's thread (its task runner, which also runs the
    // in-process service) is `TracingMuxer`; the direct writer starts none.
    assert!(!names.iter().any(|n| is_perfetto(n)), "{names:?}");
    // Through the service, the same program has them: the check above
    // can fail.
    let (pid, child, _) = paused_program("perfetto", "service", 1);
    let names: Vec<String> = switches(pid).into_values().map(|(n, _)| n).collect();
    child.join().unwrap();
    assert!(names.iter().any(|n| is_perfetto(n)), "{names:?}");
    let _ = std::fs::remove_dir_all(dir);
}

fn is_perfetto(thread: &str) -> bool {
    thread == "TracingMuxer" || thread.to_lowercase().contains("perfetto")
}

/// How often a paused standalone process's threads wake, through the
/// in-process service and with the direct writer: context switches per
/// second of each thread over 5 s. A measurement, printed:
/// `cargo test -p injection-cuda --test windows -- --ignored --nocapture paused_wakeups`.
#[test]
#[ignore = "a measurement of 12 s, printed"]
fn paused_wakeups() {
    for writer in ["service", "direct"] {
        let (pid, child, _) = paused_program(&format!("wakeups-{writer}"), writer, 7);
        std::thread::sleep(Duration::from_secs(1));
        let a = switches(pid);
        std::thread::sleep(Duration::from_secs(5));
        let b = switches(pid);
        child.join().unwrap();
        let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
        for (tid, (name, n)) in &b {
            let before = a.get(tid).map_or(0, |x| x.1);
            *by_name.entry(name.clone()).or_default() += n - before;
        }
        let total: u64 = by_name.values().sum();
        println!(
            "{writer}: {} threads, {:.1} wake-ups/s in all: {}",
            b.len(),
            total as f64 / 5.0,
            by_name
                .iter()
                .map(|(n, v)| format!("{n}={:.1}/s", *v as f64 / 5.0))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
}
