//! End to end without a GPU: the fake CUPTI and driver (`cupti-sim`) load the built
//! `libgpu_trace_cuda.so` as `cuInit` and NVTX do, run a scripted CUDA program, and the trace
//! file it leaves is decoded with the core's reader and compared with the script exactly.
//! Each run is a fresh child process, like a real application.

use cupti_sim::counters::{Fault, ProfilerCall};
use cupti_sim::scenario::{CopyKind, KernelSpec, Layer, Op, ThreadSpec};
use cupti_sim::{Expected, Outcome, RunSpec, Scenario};
use gpu_trace_reader::{GpuEvent, Stage, Trace};
use gpu_trace_testkit::{tp_check, validate};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-cuda-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes a run's directory unless `GPU_TRACE_KEEP` is set (to look at the traces).
fn cleanup(dir: &Path) {
    if std::env::var_os("GPU_TRACE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
}

fn kernels() -> Vec<KernelSpec> {
    let k = |name: &str, symbol: &str, us| KernelSpec {
        name: name.into(),
        symbol: symbol.into(),
        registers: 32,
        static_smem: 1024,
        duration_us: us,
    };
    vec![
        k("vadd", "_Z4vaddPfS_S_i", 20),
        k("gemm", "_Z4gemmPKfS0_Pfi", 50),
    ]
}

fn launch(kernel: &str, stream: u32) -> Op {
    Op::Launch {
        kernel: kernel.into(),
        grid: [64, 2, 1],
        block: [128, 1, 1],
        stream,
        layer: Layer::Runtime,
    }
}

fn scenario(threads: Vec<Vec<Op>>) -> Scenario {
    let s = Scenario {
        kernels: kernels(),
        threads: threads.into_iter().map(|ops| ThreadSpec { ops }).collect(),
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

/// Runs the program under the fake with the trace written into `dir`, failing the test if it
/// does not finish in time (a hang at exit is a bug this suite looks for).
fn run(dir: &Path, s: &Scenario, env: &[(&str, &str)]) -> (Outcome, Trace, PathBuf) {
    let path = dir.join("trace.pftrace");
    let mut spec = RunSpec::new(tool(), s.clone())
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", "all")
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    let r = &out.report;
    assert_eq!(
        r.subscriber_names,
        ["gpu-trace"],
        "subscribed once, by name"
    );
    assert_eq!(r.records_dropped, 0, "records without a buffer: {r:#?}");
    assert_eq!(
        r.records_delivered,
        r.records_made.values().sum::<u64>(),
        "{r:#?}"
    );
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("trace file: {e:?}\n{}", out.stderr));
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.drop_counts(), Some(vec![]), "nothing dropped");
    (out, t, path)
}

/// API slices: those the runtime or driver names.
fn is_api(name: &str) -> bool {
    name.starts_with("cu")
}

/// What the trace shows, in the shape of [`Expected`].
fn seen(t: &Trace) -> Expected {
    let mut e = Expected::default();
    let bump = |m: &mut BTreeMap<String, u64>, k: &str, n: u64| {
        *m.entry(k.to_owned()).or_default() += n;
    };
    for g in &t.gpu_events {
        match &g.stage {
            Stage::Kernel => {
                bump(&mut e.kernels, &g.kernel.as_ref().unwrap().name, 1);
                if g.arg("graph_node_id").is_some() {
                    e.graph_kernels += 1;
                }
            }
            Stage::Memcpy => {
                bump(&mut e.copies, &g.name, 1);
                e.copy_bytes += g.bytes().unwrap_or(0);
            }
            Stage::Memset => e.memsets += 1,
            Stage::Other(o) => panic!("unexpected GPU stage {o}"),
        }
    }
    for s in t.slices.iter().filter(|s| is_api(&s.name)) {
        bump(&mut e.api_slices, &s.name, 1);
        if s.submissions.is_empty() {
            bump(&mut e.silent_slices, &s.name, 1);
        } else {
            bump(&mut e.arrows, &s.name, s.submissions.len() as u64);
        }
    }
    e
}

/// Every GPU event has exactly one arrow, from an API call that started before it, but the
/// nodes of a graph launch, which share the one arrow of their launch; every arrow points at
/// an event of the trace.
fn check_arrows(t: &Trace) {
    let by_id: HashMap<u64, &GpuEvent> = t.gpu_events_by_id();
    assert_eq!(by_id.len(), t.gpu_events.len(), "event ids are unique");
    let mut from: HashMap<u64, u32> = HashMap::new();
    for s in &t.slices {
        for id in &s.submissions {
            let g = by_id
                .get(id)
                .unwrap_or_else(|| panic!("{} points at no GPU event ({id})", s.name));
            assert!(
                g.ts >= s.ts,
                "{} → {} starts before the call",
                s.name,
                g.name
            );
            *from.entry(*id).or_default() += 1;
        }
    }
    for g in &t.gpu_events {
        if g.arg("graph_node_id").is_some() {
            assert!(from.get(&g.event_id).is_none_or(|&n| n == 1), "{g:?}");
            continue;
        }
        assert_eq!(
            from.get(&g.event_id),
            Some(&1),
            "{} ({:?}) has one arrow from an API call",
            g.name,
            g.kernel.as_ref().map(|k| &k.name)
        );
    }
}

/// The trace processor shows what our reader decoded, with no error or loss.
fn check_tp(path: &Path, t: &Trace) {
    if let Some(a) = tp_check(path, t, &[]) {
        assert_eq!(a.unfinished, 0, "slices that never end");
        assert_eq!(a.gpu_slices, t.gpu_events.len());
    }
}

/// The full comparison of a trace with the script.
fn check(t: &Trace, path: &Path, want: &Expected) {
    let got = seen(t);
    assert_eq!(got.kernels, want.kernels, "kernels by symbol");
    assert_eq!(got.graph_kernels, want.graph_kernels, "graph nodes");
    assert_eq!(got.copies, want.copies, "copies by direction");
    assert_eq!(got.copy_bytes, want.copy_bytes, "bytes copied");
    assert_eq!(got.memsets, want.memsets, "memsets");
    assert_eq!(got.api_slices, want.api_slices, "API slices by name");
    assert_eq!(got.arrows, want.arrows, "submission arrows by API call");
    assert_eq!(
        got.silent_slices, want.silent_slices,
        "API calls without an arrow"
    );
    check_arrows(t);
    check_tp(path, t);
    validate(path);
}

// ------------------------------------------------------------------------------- the tests

#[test]
fn kernels_copies_and_memsets_from_activity_buffers() {
    let s = scenario(vec![vec![
        Op::Memcpy {
            bytes: 1 << 20,
            kind: CopyKind::H2D,
            stream: None,
        },
        Op::Memset {
            bytes: 4096,
            value: 0,
            stream: Some(1),
        },
        Op::Repeat {
            times: 3,
            ops: vec![launch("vadd", 1)],
        },
        launch("gemm", 2),
        launch("gemm", 2),
        Op::Memcpy {
            bytes: 65536,
            kind: CopyKind::D2H,
            stream: Some(2),
        },
        Op::StreamSync { stream: 2 },
        Op::Memcpy {
            bytes: 512,
            kind: CopyKind::D2D,
            stream: None,
        },
        Op::Memset {
            bytes: 256,
            value: 7,
            stream: None,
        },
        Op::DeviceSync,
    ]]);
    for (layer, env) in [(Layer::Driver, "driver"), (Layer::Runtime, "runtime")] {
        kernels_copies_and_memsets_in(&s, layer, env);
    }
}

fn kernels_copies_and_memsets_in(s: &Scenario, layer: Layer, env: &str) {
    let dir = tmpdir(&format!("gpu-{env}"));
    let want = s.expected(layer, false);
    let (out, t, path) = run(&dir, s, &[("INJECTION_API_LAYER", env)]);
    // `all` takes counters too: under user replay the sim, as CUPTI, adds a `WaitNs` kernel
    // of its own after each profiled kernel (left out of the trace).
    assert_eq!(out.report.profiler_kernels, 5);
    assert_eq!(out.report.records_made["CONCURRENT_KERNEL"], 5 + 5);
    assert_eq!(out.report.records_made["MEMCPY"], 3);
    assert_eq!(out.report.records_made["MEMSET"], 2);
    check(&t, &path, &want);

    // The records' details: grid, block and name as launched; the device the fake describes;
    // copy sizes; a stream per CUDA stream.
    for k in t.kernels() {
        assert_eq!(k.grid, Some([64, 2, 1]), "{k:?}");
        assert_eq!(k.block, Some([128, 1, 1]), "{k:?}");
        assert_eq!(k.gpu_id, Some(0));
    }
    let queues: std::collections::BTreeSet<&str> = t.kernels().map(|k| k.queue.as_str()).collect();
    assert_eq!(queues.len(), 2, "kernels of two streams: {queues:?}");
    assert_eq!(t.devices.len(), 1, "{:?}", t.devices);
    assert_eq!(t.devices[0].name, "NVIDIA H200 (cupti-sim)");
    // The stream sync waits for the last work of its stream.
    let sync = t
        .slices
        .iter()
        .find(|s| s.name.contains("StreamSynchronize"))
        .unwrap();
    assert_eq!(sync.waits.len(), 1, "{sync:?}");
    let target = t.gpu_event(sync.waits[0]).unwrap();
    assert_eq!(target.name, "Memcpy DtoH");
    cleanup(&dir);
}

#[test]
fn api_callbacks_from_several_threads() {
    let dir = tmpdir("threads");
    let per = [5u32, 3, 4, 2];
    let s = scenario(
        per.iter()
            .enumerate()
            .map(|(i, n)| {
                let stream = i as u32 + 1;
                vec![
                    Op::Repeat {
                        times: *n,
                        ops: vec![launch("vadd", stream), Op::SleepUs { us: 50 }],
                    },
                    Op::Memcpy {
                        bytes: 1000,
                        kind: CopyKind::D2H,
                        stream: Some(stream),
                    },
                    Op::StreamSync { stream },
                ]
            })
            .collect(),
    );
    let want = s.expected(Layer::Driver, false);
    let (out, t, path) = run(&dir, &s, &[]);
    check(&t, &path, &want);

    // Each scripted thread's calls are on its own thread track, with its launches.
    let mut per_thread: BTreeMap<i64, u64> = BTreeMap::new();
    for x in t.slices.iter().filter(|x| x.name == "cuLaunchKernel") {
        let tid = t.thread_of(x.track).expect("on a thread track").tid;
        *per_thread.entry(tid).or_default() += 1;
    }
    let mut got: Vec<u64> = per_thread.values().copied().collect();
    got.sort_unstable();
    let mut want_per: Vec<u64> = per.iter().map(|&n| u64::from(n)).collect();
    want_per.sort_unstable();
    assert_eq!(got, want_per, "launches per thread");
    let mut tids: Vec<u64> = per_thread.keys().map(|&t| t as u64).collect();
    tids.sort_unstable();
    let mut app = out.report.app_thread_ids.clone();
    app.sort_unstable();
    assert_eq!(tids, app, "the application's threads");
    cleanup(&dir);
}

#[test]
fn a_driver_call_inside_a_runtime_call_appears_once() {
    let dir = tmpdir("layers");
    let s = scenario(vec![vec![
        Op::Repeat {
            times: 4,
            ops: vec![launch("vadd", 1)],
        },
        Op::Launch {
            kernel: "gemm".into(),
            grid: [8, 1, 1],
            block: [256, 1, 1],
            stream: 1,
            layer: Layer::Driver,
        },
        Op::StreamSync { stream: 1 },
    ]]);
    let want = s.expected(Layer::Runtime, false);
    let (out, t, path) = run(&dir, &s, &[("INJECTION_API_LAYER", "runtime")]);
    // The tool was told of every driver call, the nested ones included...
    let cb = &out.report.callbacks;
    assert_eq!(cb["DRIVER/cuLaunchKernel/ENTER"], 5, "{cb:#?}");
    assert_eq!(cb["RUNTIME/cudaLaunchKernel_v7000/ENTER"], 4, "{cb:#?}");
    // ...and drew each call once, at the layer the application called.
    assert_eq!(want.api_slices["cudaLaunchKernel_v7000"], 4);
    assert_eq!(want.api_slices["cuLaunchKernel"], 1);
    check(&t, &path, &want);
    cleanup(&dir);
}

#[test]
fn graph_capture_submits_nothing_until_the_graph_launches() {
    let dir = tmpdir("graph");
    let s = scenario(vec![vec![
        launch("gemm", 1),
        Op::BeginCapture { stream: 1 },
        launch("vadd", 1),
        launch("gemm", 1),
        launch("vadd", 1),
        Op::EndCapture {
            stream: 1,
            graph: "g".into(),
        },
        Op::Repeat {
            times: 2,
            ops: vec![Op::GraphLaunch {
                graph: "g".into(),
                stream: 1,
            }],
        },
        Op::StreamSync { stream: 1 },
    ]]);
    let want = s.expected(Layer::Driver, false);
    assert_eq!(want.graph_kernels, 6);
    assert_eq!(want.silent_slices["cuLaunchKernel"], 3);
    let (_, t, path) = run(&dir, &s, &[]);
    check(&t, &path, &want);
    // Each graph launch points at one of its nodes, with its correlation; the nodes of one
    // launch are distinct graph nodes, the same in both launches.
    let launches: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name == "cuGraphLaunch")
        .collect();
    assert_eq!(launches.len(), 2);
    for g in launches {
        assert_eq!(g.submissions.len(), 1, "{g:?}");
        let first = t.gpu_event(g.submissions[0]).unwrap();
        assert!(first.arg("graph_node_id").is_some(), "{first:?}");
    }
    let nodes: std::collections::BTreeSet<u64> = t
        .kernels()
        .filter_map(|k| k.arg("graph_node_id").and_then(|v| v.as_u64()))
        .collect();
    assert_eq!(
        nodes.len(),
        6,
        "distinct node ids (one per node per launch): {nodes:?}"
    );
    cleanup(&dir);
}

#[test]
fn a_profiler_api_capture_range_keeps_only_the_work_inside() {
    let dir = tmpdir("range");
    let s = scenario(vec![vec![
        launch("vadd", 1),
        Op::Memcpy {
            bytes: 100,
            kind: CopyKind::H2D,
            stream: None,
        },
        Op::ProfilerStart,
        launch("gemm", 1),
        launch("gemm", 1),
        Op::Memset {
            bytes: 64,
            value: 1,
            stream: Some(1),
        },
        Op::StreamSync { stream: 1 },
        Op::ProfilerStop,
        launch("vadd", 1),
        Op::Memcpy {
            bytes: 100,
            kind: CopyKind::D2H,
            stream: None,
        },
    ]]);
    let want = s.expected(Layer::Driver, true);
    assert_eq!(want.kernels.values().sum::<u64>(), 2);
    let (_, t, path) = run(&dir, &s, &[("INJECTION_CAPTURE_RANGE", "cudaProfilerApi")]);
    check(&t, &path, &want);
    cleanup(&dir);
}

#[test]
fn nvtx_through_our_injection() {
    let dir = tmpdir("nvtx");
    let s = scenario(vec![
        vec![
            Op::NvtxPush {
                message: "step".into(),
                domain: None,
            },
            Op::NvtxMark {
                message: "checkpoint".into(),
            },
            Op::NvtxPush {
                message: "forward".into(),
                domain: None,
            },
            launch("vadd", 1),
            Op::NvtxPop { domain: None },
            Op::NvtxStart {
                message: "io".into(),
                slot: "a".into(),
            },
            Op::NvtxPush {
                message: "allreduce".into(),
                domain: Some("nccl".into()),
            },
            Op::NvtxPop {
                domain: Some("nccl".into()),
            },
            Op::NvtxEnd { slot: "a".into() },
            Op::NvtxPop { domain: None },
        ],
        vec![
            Op::NvtxPush {
                message: "loader".into(),
                domain: None,
            },
            Op::NvtxPop { domain: None },
        ],
    ]);
    let want = s.expected(Layer::Driver, false);
    let (out, t, path) = run(&dir, &s, &[]);
    assert_eq!(out.report.initialize_nvtx, Some(1), "{}", out.stderr);
    assert!(
        out.report.nvtx_unhandled.is_empty(),
        "NVTX calls the injection left as no-ops: {:?}",
        out.report.nvtx_unhandled
    );
    check(&t, &path, &want);

    // Push/pop ranges nest as pushed, on the thread that pushed them; the launch sits inside
    // `forward`; the mark is an instant; the start/end range has its message.
    let depth_of = |name: &str| -> Vec<u32> {
        t.slices
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.depth)
            .collect()
    };
    let mut got_push: BTreeMap<String, u64> = BTreeMap::new();
    for m in want.nvtx_pushes.keys() {
        got_push.insert(m.clone(), depth_of(m).len() as u64);
    }
    assert_eq!(got_push, want.nvtx_pushes, "NVTX push ranges by message");
    assert_eq!(depth_of("step"), [0]);
    assert_eq!(depth_of("forward"), [1]);
    assert_eq!(depth_of("cuLaunchKernel"), [2]);
    assert_eq!(depth_of("loader"), [0]);
    let step = t.slices.iter().find(|s| s.name == "step").unwrap();
    let loader = t.slices.iter().find(|s| s.name == "loader").unwrap();
    assert_ne!(
        t.thread_of(step.track),
        t.thread_of(loader.track),
        "each thread's ranges on its own track"
    );
    let marks: Vec<&str> = t.instants.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(marks, ["checkpoint"]);
    assert_eq!(depth_of("io").len(), 1, "the start/end range");
    cleanup(&dir);
}

/// Counters without counter permission (the fake refuses the profiler as
/// a driver does without it): one line that says so and what to change,
/// the same warning in the trace, and every kernel traced as usual.
#[test]
fn counters_without_permission_say_so_once_and_trace_the_rest() {
    let dir = tmpdir("noperm");
    let mut s = scenario(vec![vec![
        Op::Repeat {
            times: 6,
            ops: vec![launch("vadd", 1), launch("gemm", 1)],
        },
        Op::StreamSync { stream: 1 },
    ]]);
    s.profiler.faults.push(Fault::always(
        ProfilerCall::Initialize,
        "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
    ));
    let want = s.expected(Layer::Driver, false);
    let (out, t, path) = run(&dir, &s, &[("INJECTION_TRACE", "gpu,api,counters")]);
    check(&t, &path, &want);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("per-kernel counters are off"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].starts_with("gpu-trace: "), "{}", lines[0]);
    assert!(lines[0].contains("ERR_NVGPUCTRPERM"), "{}", lines[0]);
    assert!(lines[0].contains("traced as usual"), "{}", lines[0]);
    assert_eq!(
        out.report.profiler_calls["cuptiProfilerInitialize"], 1,
        "tried once, not per kernel"
    );
    assert!(
        t.logs
            .iter()
            .any(|l| l.message.contains("per-kernel counters are off")),
        "the trace carries the warning: {:?}",
        t.logs
    );
    // No per-kernel (COMPUTE) counter; the busy % derived from the
    // activity is there as always.
    assert!(t.counters.iter().all(|c| !c.groups.contains(&6)));
    cleanup(&dir);
}

/// Another profiler holds CUPTI (nsys, torch.profiler): one line that names
/// it, no trace, and the program runs as without the tool.
#[test]
fn a_profiler_holding_cupti_gets_one_line_and_the_program_runs() {
    let dir = tmpdir("held");
    let path = dir.join("trace.pftrace");
    let s = scenario(vec![vec![launch("vadd", 1), Op::StreamSync { stream: 1 }]]);
    let spec = RunSpec::new(tool(), s)
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env(cupti_sim::host::HELD_BY_ENV, "nsys");
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert_eq!(out.report.violations, Vec::<String>::new());
    assert_eq!(out.report.initialize_injection, Some(1));
    let ours: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace:"))
        .collect();
    assert_eq!(ours.len(), 1, "{}", out.stderr);
    assert!(
        ours[0].contains("CUPTI is already in use by nsys"),
        "{}",
        ours[0]
    );
    assert_eq!(out.report.subscribes, 0);
    assert_eq!(out.report.records_made.values().sum::<u64>(), 0);
    assert!(!path.exists(), "no trace is written");
    cleanup(&dir);
}

fn push(message: &str) -> Op {
    Op::NvtxPush {
        message: message.into(),
        domain: None,
    }
}

fn pop() -> Op {
    Op::NvtxPop { domain: None }
}

/// The kernels the counters filter picked, from its verbose lines (which
/// name the launch's correlation id) and the trace (whose kernel event ids
/// hold it). The fake refuses the profiler, so counters end at the first
/// pick; the `cuptiProfilerInitialize` call count says whether one came.
fn picked(stderr: &str, t: &Trace) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("gpu-trace: counters: the filter picks "))
        .map(|l| {
            let corr: u64 = l
                .rsplit_once("(correlation id ")
                .and_then(|(_, c)| c.trim_end_matches(')').parse().ok())
                .unwrap_or_else(|| panic!("no correlation id in {l:?}"));
            let k = t
                .gpu_events
                .iter()
                .find(|g| (g.event_id >> 22) & ((1 << 41) - 1) == corr)
                .unwrap_or_else(|| panic!("no GPU event of correlation {corr}"));
            k.kernel.as_ref().expect("a kernel").name.to_string()
        })
        .collect()
}

/// The NVTX filter looks at the ranges open on the launching thread only,
/// at any depth, excludes win, and the skip counts only launches that
/// passed: the one kernel picked is the expected one, and a filter that
/// leaves every launch out never starts the profiler.
#[test]
fn the_nvtx_filter_picks_launches_by_the_ranges_of_their_thread() {
    let dir = tmpdir("nvtx-filter");
    let s = scenario(vec![
        // Inside "train" from the start, but its launches come last.
        vec![
            push("train step"),
            Op::SleepUs { us: 300_000 },
            push("backward"),
            launch("vadd", 1), // excluded
            pop(),
            push("inner"),
            launch("vadd", 1), // passes: skipped (skip 1)
            launch("gemm", 1), // passes: picked
            pop(),
            pop(),
            Op::StreamSync { stream: 1 },
        ],
        // Launches while the other thread is inside "train": never its
        // ranges (if they were, a vadd would be picked).
        vec![
            Op::Repeat {
                times: 5,
                ops: vec![launch("vadd", 2)],
            },
            push("eval"),
            launch("vadd", 2),
            pop(),
            Op::StreamSync { stream: 2 },
        ],
    ]);
    let want = s.expected(Layer::Driver, false);
    let env = [
        ("INJECTION_TRACE", "gpu,api,counters"),
        ("INJECTION_VERBOSE", "1"),
        ("INJECTION_KERNEL_NVTX_INCLUDE", "train*"),
        ("INJECTION_KERNEL_NVTX_EXCLUDE", "*backward*"),
        ("INJECTION_KERNEL_SKIP", "1"),
    ];
    let (out, t, path) = run(&dir, &s, &env);
    check(&t, &path, &want);
    assert_eq!(
        picked(&out.stderr, &t),
        ["_Z4gemmPKfS0_Pfi"],
        "{}",
        out.stderr
    );
    assert_eq!(
        out.report
            .profiler_calls
            .get("cuptiProfilerInitialize")
            .copied()
            .unwrap_or(0),
        1,
        "{}",
        out.stderr
    );
    cleanup(&dir);

    // Every launch is inside an excluded range or outside the included
    // ones: the profiler is never started, nothing is said about it.
    let dir = tmpdir("nvtx-filter-none");
    let env = [
        ("INJECTION_TRACE", "gpu,api,counters"),
        ("INJECTION_VERBOSE", "1"),
        ("INJECTION_KERNEL_NVTX_INCLUDE", "train*,eval"),
        ("INJECTION_KERNEL_NVTX_EXCLUDE", "inner,backward,eval"),
    ];
    let (out, t, path) = run(&dir, &s, &env);
    check(&t, &path, &want);
    assert!(picked(&out.stderr, &t).is_empty(), "{}", out.stderr);
    assert_eq!(
        out.report
            .profiler_calls
            .get("cuptiProfilerInitialize")
            .copied()
            .unwrap_or(0),
        0,
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("per-kernel counters are off"),
        "{}",
        out.stderr
    );
    cleanup(&dir);
}

/// Without NVTX pointed at the library no range is ever seen: said once,
/// and an include filter then picks nothing.
#[test]
fn an_nvtx_filter_without_the_nvtx_injection_says_so() {
    let dir = tmpdir("nvtx-filter-blind");
    let s = scenario(vec![vec![
        push("train"),
        launch("vadd", 1),
        pop(),
        Op::StreamSync { stream: 1 },
    ]]);
    let path = dir.join("trace.pftrace");
    let mut spec = RunSpec::new(tool(), s.clone())
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", "gpu,counters")
        .env("INJECTION_KERNEL_NVTX_INCLUDE", "train")
        .env("RUST_BACKTRACE", "0");
    spec.nvtx = false;
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("NVTX_INJECTION64_PATH"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].starts_with("gpu-trace: ") && lines[0].contains("inside ranges train"));
    assert_eq!(
        out.report
            .profiler_calls
            .get("cuptiProfilerInitialize")
            .copied()
            .unwrap_or(0),
        0,
        "{}",
        out.stderr
    );
    let t = Trace::open(&path).unwrap();
    assert!(
        t.logs
            .iter()
            .any(|l| l.message.contains("NVTX_INJECTION64_PATH is not set")),
        "the trace carries the warning: {:?}",
        t.logs
    );
    cleanup(&dir);
}

#[test]
fn a_panic_in_a_callback_stops_recording_and_the_trace_still_ends() {
    // The injection panics once: in the API callback, at the exit of the
    // first kernel launch it records, or in its first activity buffer (both
    // called by CUPTI through the cupti crate), or in the backend's flush
    // (called by the writer). Whoever catches it, the outcome is one: it is
    // said once, recording stops, the application runs to its end with its
    // exit code, and the trace still gets its end: the summary and the loss
    // line, which only the exit handler writes.
    for site in ["api", "buffer", "flush"] {
        let dir = tmpdir(&format!("panic-{site}"));
        let path = dir.join("trace.pftrace");
        let s = scenario(vec![
            vec![launch("vadd", 1), launch("gemm", 1), Op::DeviceSync],
            vec![launch("gemm", 2), launch("vadd", 2), Op::DeviceSync],
        ]);
        let spec = RunSpec::new(tool(), s)
            .env("INJECTION_OUTPUT", path.display().to_string())
            .env("INJECTION_TRACE", "all")
            .env("GPU_TRACE_CUDA_FAILPOINT", format!("panic:{site}"))
            .env("RUST_BACKTRACE", "0");
        let out = cupti_sim::host::run_isolated(&spec).expect("fake CUPTI run");
        let t = Trace::open(&path).unwrap_or_else(|e| panic!("{site}: {e:?}\n{}", out.stderr));
        assert!(
            t.log("gpu-trace summary:").is_some(),
            "{site}: the trace ends with its summary\n{}",
            out.stderr
        );
        assert!(
            t.drop_counts().is_some(),
            "{site}: the trace ends with its loss line\n{}",
            out.stderr
        );
        // Work launched before the panic whose records came after it is
        // not in the trace: its launches' arrows point at nothing.
        assert!(
            t.problems
                .iter()
                .all(|p| p.kind == gpu_trace_reader::ProblemKind::Dangling),
            "{site}: {:?}",
            t.problems
        );
        validate(&path);
        let r = &out.report;
        assert_eq!(
            out.status,
            Some(0),
            "{site}: the exit code is the program's"
        );
        assert!(r.violations.is_empty(), "{site}: {:#?}", r.violations);
        assert_eq!(
            r.app_thread_ids.len(),
            2,
            "{site}: every thread ran to its end"
        );
        assert_eq!(
            r.records_undelivered, 0,
            "{site}: CUPTI's buffers were flushed at exit: {r:#?}"
        );
        let ours: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("gpu-trace:"))
            .collect();
        let errors: Vec<&&str> = ours
            .iter()
            .filter(|l| l.contains("internal error"))
            .collect();
        assert_eq!(errors.len(), 1, "{site}: said once\n{}", out.stderr);
        assert!(
            errors[0].contains(&format!("failpoint panic:{site}"))
                && errors[0].contains("the application continues"),
            "{}",
            errors[0]
        );
        assert!(!out.stderr.contains("panicked at"), "{}", out.stderr);
        cleanup(&dir);
    }
}
