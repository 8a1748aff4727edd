//! A process of a multi-rank job, end to end under the fake CUPTI (`cupti-sim`): the
//! launcher's `RANK` / `LOCAL_RANK` / `WORLD_SIZE` name the process in its trace, as our reader
//! and Perfetto's trace processor read it; and peer-to-peer copies carry their devices, bytes
//! and bandwidth.

use cupti_sim::scenario::{KernelSpec, Layer, Op, PEER_COPY, ThreadSpec};
use cupti_sim::{Outcome, RunSpec, Scenario};
use gpu_trace_reader::{ArgVal, Trace};
use gpu_trace_testkit::{tp_check, tp_tables, validate};
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-ranks-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // As XDG_RUNTIME_DIR: used only when it is ours and 0700, as a login makes it.
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
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

fn launch() -> Op {
    Op::Launch {
        kernel: "k".into(),
        grid: [4, 1, 1],
        block: [64, 1, 1],
        stream: 1,
        layer: Layer::Runtime,
    }
}

/// Runs `s` with `env`, the trace written to `dir/trace.pftrace`.
fn run(dir: &Path, s: Scenario, env: &[(&str, &str)]) -> (Outcome, Trace, PathBuf) {
    let path = dir.join("trace.pftrace");
    let mut spec = RunSpec::new(tool(), s)
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", "gpu,api")
        .env("XDG_RUNTIME_DIR", dir.display().to_string())
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("trace file: {e:?}\n{}", out.stderr));
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.drop_counts(), Some(vec![]), "nothing dropped");
    validate(&path);
    if let Some(a) = tp_check(&path, &t, &[]) {
        assert_eq!(a.gpu_slices, t.gpu_events.len());
    }
    (out, t, path)
}

/// The trace processor's name of each process with a pid, and its
/// `chrome.process_label` args (where TP v58 puts `process_labels`), in order.
fn tp_processes(path: &Path) -> Option<Vec<(String, String, Vec<String>)>> {
    let t = tp_tables(
        path,
        "select p.pid, p.name, \
                (select group_concat(a.string_value, ',') from \
                   (select string_value from args where arg_set_id = p.arg_set_id \
                      and flat_key = 'chrome.process_label' order by key) a) \
           from process p where p.pid > 0 order by p.pid;",
    )?;
    Some(
        t[0].iter()
            .map(|r| {
                let labels = if r[2] == "[NULL]" {
                    vec![]
                } else {
                    r[2].split(',').map(str::to_owned).collect()
                };
                (r[0].clone(), r[1].clone(), labels)
            })
            .collect(),
    )
}

#[test]
fn a_rank_names_its_process_and_labels_it_for_our_reader_and_the_trace_processor() {
    let dir = tmpdir("rank");
    let s = scenario(vec![launch(), launch(), Op::StreamSync { stream: 1 }]);
    let (out, t, path) = run(
        &dir,
        s,
        &[("RANK", "1"), ("LOCAL_RANK", "1"), ("WORLD_SIZE", "2")],
    );
    assert!(
        !out.stderr.contains("RANK"),
        "good values say nothing: {}",
        out.stderr
    );
    assert_eq!(t.processes.len(), 1, "{:?}", t.processes);
    let pid = t.processes[0].pid;
    let p = t.process(pid).expect("the process is described");
    assert!(p.name.ends_with(" [rank 1/2]"), "{p:?}");
    assert_eq!(p.labels, ["rank=1", "local_rank=1", "world_size=2"]);
    assert_eq!(p.label("rank"), Some("1"));
    if let Some(procs) = tp_processes(&path) {
        assert_eq!(procs.len(), 1, "{procs:?}");
        let (tp_pid, name, labels) = &procs[0];
        assert_eq!(tp_pid, &pid.to_string());
        assert_eq!(name, &p.name, "the trace processor names it as we do");
        assert_eq!(labels, &["rank=1", "local_rank=1", "world_size=2"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_rank_is_said_once_and_left_out_of_the_trace() {
    let dir = tmpdir("bad");
    let s = scenario(vec![launch(), Op::StreamSync { stream: 1 }]);
    let (out, t, path) = run(&dir, s, &[("RANK", "abc"), ("WORLD_SIZE", "2")]);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains("RANK")).collect();
    assert_eq!(
        lines,
        [
            "gpu-trace: RANK=\"abc\": expected a whole number (the process's rank, from 0); using no rank labels"
        ],
        "{}",
        out.stderr
    );
    assert_eq!(out.status, Some(0), "the program runs on");
    assert_eq!(t.processes.len(), 1, "{:?}", t.processes);
    let p = &t.processes[0];
    assert!(p.labels.is_empty(), "{p:?}");
    assert!(!p.name.contains("[rank"), "{p:?}");
    if let Some(procs) = tp_processes(&path) {
        assert_eq!(procs.len(), 1, "{procs:?}");
        assert!(!procs[0].1.contains("[rank"), "{procs:?}");
        assert!(procs[0].2.is_empty(), "{procs:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn peer_copies_carry_their_devices_bytes_and_bandwidth() {
    let dir = tmpdir("peer");
    let s = scenario(vec![
        Op::MemcpyPeer {
            bytes: 1_000_000,
            src_device: 0,
            dst_device: 1,
            stream: None,
        },
        Op::MemcpyPeer {
            bytes: 4_000_000,
            src_device: 1,
            dst_device: 0,
            stream: Some(1),
        },
        Op::StreamSync { stream: 1 },
    ]);
    let want = s.expected(Layer::Runtime, false);
    assert_eq!(want.copies[PEER_COPY], 2);
    let (out, t, path) = run(&dir, s, &[]);
    assert_eq!(
        out.report.records_made.get("MEMCPY2"),
        Some(&2),
        "{:?}",
        out.report
    );
    let peer: Vec<_> = t
        .gpu_events
        .iter()
        .filter(|e| e.name == PEER_COPY)
        .collect();
    assert_eq!(peer.len(), 2, "{:?}", t.gpu_events);
    let uint = |e: &gpu_trace_reader::GpuEvent, k: &str| e.arg(k).and_then(ArgVal::as_u64);
    let mut got: Vec<(u64, u64, u64)> = peer
        .iter()
        .map(|e| {
            let bytes = uint(e, "bytes").expect("bytes");
            let bw = e
                .arg("bandwidth_GBps")
                .and_then(ArgVal::as_f64)
                .expect("bandwidth");
            let want_bw = bytes as f64 / e.dur as f64;
            assert!(
                (bw - want_bw).abs() < 1e-9,
                "{bw} GB/s, {bytes} B in {} ns",
                e.dur
            );
            (
                uint(e, "src_device").expect("src_device"),
                uint(e, "dst_device").expect("dst_device"),
                bytes,
            )
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, [(0, 1, 1_000_000), (1, 0, 4_000_000)]);
    // The driver calls that made them (the default API layer) point at them.
    let calls: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name.starts_with("cuMemcpyPeer"))
        .collect();
    let names: Vec<&str> = calls.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cuMemcpyPeer", "cuMemcpyPeerAsync"]);
    for (c, e) in calls.iter().zip(&peer) {
        assert_eq!(c.submissions, [e.event_id], "{} submits its copy", c.name);
    }
    if let Some(tables) = tp_tables(
        &path,
        "select extract_arg(s.arg_set_id, 'src_device'), extract_arg(s.arg_set_id, 'dst_device'), \
                extract_arg(s.arg_set_id, 'bytes'), \
                printf('%.6f', extract_arg(s.arg_set_id, 'bandwidth_GBps') * s.dur / \
                               extract_arg(s.arg_set_id, 'bytes')) \
           from gpu_slice s where s.name = 'Memcpy PtoP' order by s.ts;",
    ) {
        assert_eq!(
            tables[0],
            [
                ["0", "1", "1000000", "1.000000"],
                ["1", "0", "4000000", "1.000000"]
            ],
            "the trace processor shows the args"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
