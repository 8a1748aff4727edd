//! The checker on traces made without a GPU.
//!
//! The traces of a correct program come from the real CUDA injection
//! (`libgpu_trace_cuda.so`) run by `cupti-sim`, the fake CUPTI and driver, on
//! a scripted program; the `EXPECT` lines gpu-check compares them with are
//! derived from the script alone ([`sim::expect_line`]). The parent checks
//! that they pass, and that altered expectations fail, each difference named.
//!
//! Traces with known defects (arrows to nothing, work nobody submitted,
//! duplicates, drops), which the injection must never write, are built by
//! hand: a child process records them through a real
//! `gpu_trace_perfetto::Tracer` into a file and prints the `EXPECT` lines of the
//! program they claim to be. They test gpu-check's failure reports.

mod sim;

use cupti_sim::scenario::{CopyKind as SimCopy, Op, ThreadSpec};
use cupti_sim::{RunSpec, Scenario};
use gpu_tests::check::LOSS_LINE;
use gpu_tests::{Expect, Options, Report, check_files};
use gpu_trace_agent::Config;
use gpu_trace_model::Recorder;
use gpu_trace_model::model::*;
use gpu_trace_perfetto::{Tracer, TracerOptions};
use smallvec::{SmallVec, smallvec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const CHILD: &str = "GPU_TESTS_SYNTHETIC_CHILD";

cupti_sim::child_entry!();

// ------------------------------------------------ child side (hand-built traces)

/// Writes a hand-built trace; run only as a child process (the tests below
/// re-run this binary with `--ignored --exact child`).
#[test]
#[ignore = "writes the hand-built traces of the other tests; runs only in their child processes"]
fn child() {
    let scenario =
        std::env::var(CHILD).expect("run by a test, which sets GPU_TESTS_SYNTHETIC_CHILD");
    let (config, _) = Config::from_env();
    let settings = config.trace_settings().expect("the settings");
    let tracer =
        Tracer::start(TracerOptions::new(gpu_trace_testkit::BACKEND, settings)).expect("tracer");
    let mut gpu = Device::new(0, "NVIDIA H200");
    gpu.vendor = Some("NVIDIA".into());
    gpu.uuid = Some([7; 16]);
    gpu.pci_bdf = Some("0000:19:00.0".into());
    gpu.architecture = "Hopper".into();
    gpu.arch_id = "sm_90".into();
    gpu.sm_count = 132;
    gpu.total_memory = Some(141 << 30);
    tracer.add_device(gpu);
    let app = App::new(&tracer);
    let expect = match scenario.as_str() {
        "occupancy" => occupancy(&app),
        "broken" => broken(&app),
        "dangling" => dangling(&app),
        "graph_copies" => graph_copies(&app, false),
        "graph_copies_fixed" => graph_copies(&app, true),
        "loss" => loss(&app),
        other => panic!("unknown scenario {other}"),
    };
    if let Some(l) = tracer.shutdown(std::time::Duration::from_secs(20)) {
        gpu_trace_agent::exit::report_losses(&l.drops, l.service, &config);
    }
    // The test harness has printed "test child ... " without a newline.
    println!("\nOUTPUT={}", tracer.output_path().unwrap().display());
    println!("{expect}");
}

/// Records events by hand: ids, names, a virtual clock per thread.
struct App {
    rec: Recorder,
    names: Arc<gpu_trace_model::names::Names>,
    kernels: Arc<gpu_trace_model::names::Kernels>,
    corr: AtomicU64,
}

/// One application thread: its id and its virtual clock.
struct Thread {
    tid: u32,
    clock: u64,
}

impl Thread {
    fn current() -> Thread {
        Thread {
            tid: gpu_trace_model::clock::thread_id(),
            clock: gpu_trace_model::clock::boottime_ns(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 50_000;
        self.clock
    }
}

/// A kernel launch to record.
#[derive(Clone, Copy)]
struct Launch {
    kernel: KernelId,
    stream: u64,
    context: u32,
    block: u32,
    graph_node: u64,
    dur: u64,
}

impl App {
    fn new(t: &Tracer) -> App {
        App {
            rec: t.recorder().clone(),
            names: t.names().clone(),
            kernels: t.kernels().clone(),
            corr: AtomicU64::new(1),
        }
    }

    fn kernel(&self, mangled: &str, args: &[(&str, ArgValue)]) -> KernelId {
        let n = self.kernels.names(&self.names, mangled);
        let mut desc = KernelDesc::new(
            n.mangled,
            n.demangled,
            n.display,
            self.names.intern("sm_90"),
        );
        desc.args = args
            .iter()
            .map(|(k, v)| (self.names.intern(k), *v))
            .collect();
        self.kernels.register(desc)
    }

    fn next_corr(&self) -> u64 {
        self.corr.fetch_add(1, Ordering::Relaxed)
    }

    fn api(&self, th: &mut Thread, name: &str, submits: bool, waits: SmallVec<[u64; 2]>) -> u64 {
        let corr = self.next_corr();
        let start = th.tick();
        let mut call = ApiCall::new(self.names.intern(name), th.tid, start, start + 2_000, corr);
        call.submits = submits;
        call.waits = waits;
        self.rec.api(call);
        corr
    }

    fn exec(&self, corr: u64, start: u64, l: Launch) {
        let mut k = KernelExec::new(0, corr, start, start + l.dur, l.kernel);
        k.context = l.context;
        k.stream = l.stream;
        k.grid = Dim3::new(1, 1, 1);
        k.block = Dim3::new(l.block, 1, 1);
        k.graph_node = l.graph_node;
        self.rec.kernel(k);
    }

    /// An API call that launched `l`; returns its correlation id.
    fn launch(&self, th: &mut Thread, api: &str, l: Launch) -> u64 {
        let corr = self.api(th, api, true, smallvec![]);
        self.exec(corr, th.clock + 5_000, l);
        corr
    }

    /// A copy or memset of correlation `corr` (graph nodes share theirs).
    fn mem(&self, corr: u64, start: u64, bytes: u64, kind: MemoryOpKind) {
        let mut op = MemoryOp::new(0, corr, start, start + 1_000, bytes, kind);
        op.context = 1;
        op.stream = 7;
        self.rec.memory(op);
    }
}

fn plain(kernel: KernelId, stream: u64) -> Launch {
    Launch {
        kernel,
        stream,
        context: 1,
        block: 32,
        graph_node: 0,
        dur: 3_000,
    }
}

/// Two kernels with the occupancy args of cuda/occupancy.cu, and its record
/// lines. Their numbers come from CUDA's occupancy API on a real H200, which
/// cupti-sim does not answer; deriving them here would restate the
/// injection's own calculation, so the trace is built by hand and tests how
/// gpu-check compares the args with the record lines.
fn occupancy(app: &App) -> String {
    let mk = |mangled: &str, regs: u64, limits: [u64; 4], pct: f64, warps: f64| {
        app.kernel(
            mangled,
            &[
                ("launch__registers_per_thread", ArgValue::Uint(regs)),
                ("launch__shared_mem_per_block_static", ArgValue::Uint(0)),
                ("launch__shared_mem_per_block_dynamic", ArgValue::Uint(0)),
                ("launch__occupancy_limit_blocks", ArgValue::Uint(limits[0])),
                ("launch__occupancy_limit_warps", ArgValue::Uint(limits[1])),
                (
                    "launch__occupancy_limit_registers",
                    ArgValue::Uint(limits[2]),
                ),
                (
                    "launch__occupancy_limit_shared_mem",
                    ArgValue::Uint(limits[3]),
                ),
                (
                    "sm__maximum_warps_per_active_cycle_pct",
                    ArgValue::Double(pct),
                ),
                (
                    "sm__maximum_warps_avg_per_active_cycle",
                    ArgValue::Double(warps),
                ),
            ],
        )
    };
    let regs = mk("_Z13occ_many_regsPf", 120, [32, 8, 2, 32], 25.0, 16.0);
    let b32 = mk("_Z12occ_block_32Pf", 10, [32, 64, 64, 32], 50.0, 32.0);
    let mut th = Thread::current();
    app.launch(
        &mut th,
        "cudaLaunchKernel_v7000",
        Launch {
            block: 256,
            ..plain(regs, 0)
        },
    );
    app.launch(&mut th, "cudaLaunchKernel_v7000", plain(b32, 0));
    "EXPECT case=occupancy kernels=2 kernel.occ_many_regs=1 kernel.occ_block_32=1 records=2\n\
     EXPECT record=occ kernel=occ_many_regs block=256 dyn_smem=0 regs=120 static_smem=0 blocks_per_sm=2 active_warps=16 max_warps=64 occupancy_pct=25.0000\n\
     EXPECT record=occ kernel=occ_block_32 block=32 dyn_smem=0 regs=10 static_smem=0 blocks_per_sm=32 active_warps=32 max_warps=64 occupancy_pct=50.0000"
        .into()
}

/// Known defects: a launch whose kernel never arrives, a kernel nobody
/// launched, a kernel written twice, a late wait target, dropped records.
fn broken(app: &App) -> String {
    let k = app.kernel("_Z5emptyv", &[]);
    let mut th = Thread::current();
    app.launch(&mut th, "cudaLaunchKernel_v7000", plain(k, 1));
    app.api(&mut th, "cudaLaunchKernel_v7000", true, smallvec![]); // never runs
    let orphan = app.next_corr();
    app.exec(orphan, th.clock + 9_000, plain(k, 1));
    let twice = app.launch(&mut th, "cudaLaunchKernel_v7000", plain(k, 1));
    app.exec(twice, th.clock + 5_000, plain(k, 1));
    let long = app.launch(
        &mut th,
        "cudaLaunchKernel_v7000",
        Launch {
            dur: 10_000_000,
            ..plain(k, 1)
        },
    );
    app.api(
        &mut th,
        "cudaStreamSynchronize_v3020",
        false,
        smallvec![long],
    );
    app.rec.dropped(DropKind::VendorRecords, 2);
    "EXPECT case=empty_kernels kernels=4 threads=1 per_thread=3 stream_per_thread=1 kernel.empty=4 \
     waits.cudaStreamSynchronize=empty"
        .into()
}

/// Three kernels and a call that claims to submit work that never comes
/// (as a zero-byte copy would): one dangling arrow, nothing else wrong.
fn dangling(app: &App) -> String {
    let k = app.kernel("_Z5emptyv", &[]);
    let mut th = Thread::current();
    for _ in 0..3 {
        app.launch(&mut th, "cudaLaunchKernel_v7000", plain(k, 4));
    }
    app.api(&mut th, "cuMemcpyHtoDAsync_v2", true, smallvec![]);
    "EXPECT case=empty_kernels kernels=3 kernel.empty=3 threads=1 per_thread=3 \
     stream_per_thread=1 streams=1 memcpy=0 memset=0"
        .into()
}

/// A defective trace of cuda/graph_copies.cu with M launches: graph copies
/// and memsets without a graph_node_id, so that the nodes after the first of
/// each launch have no submitter. Without `fixed`, the zero-byte copy and
/// memset also claim a submission (dangling arrows), and the stream sync
/// after them waits for the memset that never ran. (cupti-sim runs neither
/// graph memory nodes nor zero-byte copies, so these are built by hand; they
/// test what gpu-check names in such a trace.)
fn graph_copies(app: &App, fixed: bool) -> String {
    use gpu_trace_model::model::CopyKind::*;
    use gpu_trace_model::model::MemoryKind::*;
    let (b, m) = (4096u64, 3u64);
    let k = app.kernel("_Z17graph_copy_kernelPiPKim", &[]);
    let copy = |src, dst, kind| MemoryOpKind::Copy {
        kind,
        src,
        dst,
        peer: None,
    };
    let mut th = Thread::current();
    let plain_copy = app.api(&mut th, "cuMemcpyHtoDAsync_v2", true, smallvec![]);
    app.mem(plain_copy, th.clock + 5_000, b, copy(Pinned, Device, HtoD));
    app.api(&mut th, "cuMemcpyHtoDAsync_v2", !fixed, smallvec![]);
    let zero_set = app.api(&mut th, "cuMemsetD8Async", !fixed, smallvec![]);
    // The sync waits for the last call that submitted.
    let last = if fixed { plain_copy } else { zero_set };
    app.api(&mut th, "cuStreamSynchronize", false, smallvec![last]);
    // The capture: calls that run nothing.
    for f in [
        "cuMemcpyHtoDAsync_v2",
        "cuMemsetD8Async",
        "cuLaunchKernel",
        "cuMemcpyDtoHAsync_v2",
    ] {
        app.api(&mut th, f, false, smallvec![]);
    }
    for _ in 0..m {
        let corr = app.api(&mut th, "cuGraphLaunch", true, smallvec![]);
        let t = th.clock + 5_000;
        app.mem(corr, t, b, copy(Pinned, Device, HtoD));
        app.mem(
            corr,
            t + 2_000,
            b,
            MemoryOpKind::Set {
                value: 0x5a,
                memory: Device,
            },
        );
        app.exec(
            corr,
            t + 4_000,
            Launch {
                graph_node: 77,
                ..plain(k, 7)
            },
        );
        app.mem(corr, t + 8_000, b, copy(Device, Pinned, DtoH));
    }
    format!(
        "EXPECT case=graph_copies arg.bytes={b} arg.m={m} kernels={m} graph_kernels={m} \
         kernel.graph_copy_kernel={m} graph_nodes.graph_copy_kernel=1 grid.graph_copy_kernel=1,1,1 \
         block.graph_copy_kernel=32,1,1 memcpy={} copy.HtoD={} copy.DtoH={m} copy_bytes.HtoD={} \
         copy_bytes.DtoH={} copy_kinds=HtoD:pinned:device:{},DtoH:device:pinned:{m} memset={m} \
         memset_bytes={} memset_values=90:{m} api.cudaGraphLaunch={m} arrows.cudaGraphLaunch={m} \
         arrows.cudaMemcpyAsync=1 arrows.cudaMemsetAsync=0 arrows.cudaLaunchKernel=0",
        2 * m + 1,
        m + 1,
        (m + 1) * b,
        m * b,
        m + 1,
        m * b,
    )
}

/// Launches from 4 threads as fast as they can be recorded; run with a
/// 64 KiB queue that drops when full (`INJECTION_QUEUE_SIZE=64K
/// INJECTION_QUEUE_FULL=drop`) it must drop and count.
fn loss(app: &App) -> String {
    let k = app.kernel("_Z5emptyv", &[]);
    let (threads, per) = (4u64, 60_000u64);
    std::thread::scope(|s| {
        for i in 0..threads {
            s.spawn(move || {
                let mut th = Thread::current();
                for _ in 0..per {
                    app.launch(&mut th, "cudaLaunchKernel_v7000", plain(k, 10 + i));
                }
            });
        }
    });
    let n = threads * per;
    format!(
        "EXPECT case=empty_kernels arg.n={n} arg.t={threads} kernels={n} kernel.empty={n} \
         grid.empty=1,1,1 block.empty=32,1,1 submit_api.empty=cudaLaunchKernel threads={threads} \
         per_thread={per},{per},{per},{per} stream_per_thread=1 streams={threads} memcpy=0 memset=0"
    )
}

// --------------------------------------------------------------- parent side

struct Run {
    dir: PathBuf,
    trace: PathBuf,
    stdout: String,
    stderr: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(scenario: &str) -> Run {
    run_with(scenario, &[])
}

/// Runs the child with `env` set besides the output path.
fn run_with(scenario: &str, env: &[(&str, &str)]) -> Run {
    let dir = std::env::temp_dir().join(format!(
        "gpu-tests-synthetic-{}-{scenario}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, scenario);
    for v in gpu_trace_agent::config::vars::ALL {
        cmd.env_remove(v);
    }
    cmd.env("INJECTION_OUTPUT", dir.join(format!("{scenario}.pftrace")));
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "child {scenario}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = stdout
        .lines()
        .find_map(|l| l.split("OUTPUT=").nth(1))
        .map(PathBuf::from)
        .expect("OUTPUT line");
    Run {
        dir,
        trace,
        stdout,
        stderr,
    }
}

fn report(case: &str, trace: &Path, expect: &str) -> Report {
    check_files(case, case, trace, expect, &Options::default())
}

fn assert_pass(case: &str, r: &Run) {
    let rep = report(case, &r.trace, &r.stdout);
    assert!(rep.passed(), "{}", rep.render());
    assert!(rep.render().contains(&format!("PASS {case}: ")));
}

/// Checks that replacing `from` with `to` in the output makes the check
/// fail with a message containing `needle`.
fn assert_fails(case: &str, r: &Run, from: &str, to: &str, needle: &str) {
    assert!(r.stdout.contains(from), "{from} not in the output");
    let altered = r.stdout.replacen(from, to, 1);
    let rep = report(case, &r.trace, &altered);
    assert!(!rep.passed(), "{from} -> {to} passed:\n{}", rep.render());
    assert!(
        rep.failures.iter().any(|f| f.contains(needle)),
        "{from} -> {to}: no failure mentions {needle:?}:\n{}",
        rep.render()
    );
}

// ------------------------------------------- traces of the real injection (cupti-sim)

/// The built injection library.
fn tool() -> PathBuf {
    cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built")
}

/// A launch of `kernel()` on `stream` with one block of 32 threads.
fn launch(kernel: &str, stream: u32) -> Op {
    Op::Launch {
        kernel: kernel.into(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        stream,
        layer: Default::default(),
    }
}

fn script(kernels: &[&str], threads: Vec<Vec<Op>>) -> Scenario {
    let s = Scenario {
        kernels: kernels.iter().map(|k| sim::kernel(k, 3)).collect(),
        threads: threads.into_iter().map(|ops| ThreadSpec { ops }).collect(),
        profiler: Default::default(),
    };
    s.validate().expect("valid script");
    s
}

/// Runs `s` under cupti-sim with the real injection writing the trace, and returns the
/// trace with the `EXPECT` line derived from the script as the run's output. Fails the test
/// if the run misbehaves (records never handed back, protocol violations, a hang).
fn sim_run(case: &str, tag: &str, s: &Scenario, env: &[(&str, &str)]) -> Run {
    // Tests run in parallel and several run the same scenario: each run
    // gets its own folder.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "gpu-tests-synthetic-{}-sim-{tag}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join(format!("{tag}.pftrace"));
    let mut spec = RunSpec::new(tool(), s.clone())
        .env("INJECTION_OUTPUT", trace.display().to_string())
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        spec = spec.env(*k, *v);
    }
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    Run {
        dir,
        trace,
        stdout: sim::expect_line(case, s),
        stderr: out.stderr,
    }
}

/// Three threads, each launching on its own stream, then syncing it.
fn empty_kernels_script() -> Scenario {
    let per = [4u32, 3, 3];
    script(
        &["empty"],
        per.iter()
            .enumerate()
            .map(|(i, &n)| {
                let stream = i as u32 + 1;
                vec![
                    Op::Repeat {
                        times: n,
                        ops: vec![launch("empty", stream)],
                    },
                    Op::StreamSync { stream },
                ]
            })
            .collect(),
    )
}

fn empty_kernels_run() -> Run {
    // The runtime API layer: slices carry the runtime's names.
    sim_run(
        "empty_kernels",
        "empty_kernels",
        &empty_kernels_script(),
        &[("INJECTION_API_LAYER", "runtime")],
    )
}

#[test]
fn empty_kernels_per_thread_and_streams() {
    let r = empty_kernels_run();
    assert_pass("empty_kernels", &r);
    assert!(
        number(
            &report("empty_kernels", &r.trace, &r.stdout),
            "dangling_arrows"
        ) == Some("0"),
        "dangling_arrows=0 is on the verdict line"
    );
    assert_fails(
        "empty_kernels",
        &r,
        "per_thread=4,3,3",
        "per_thread=5,3,2",
        "kernels per launching thread",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "threads=3",
        "threads=4",
        "threads that launched kernels",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "kernels=10",
        "kernels=11",
        "kernels: trace has 10",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "streams=3",
        "streams=2",
        "streams that ran kernels",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "block.empty=32,1,1",
        "block.empty=64,1,1",
        "block other than",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "submit_api.empty=cudaLaunchKernel",
        "submit_api.empty=cudaLaunchKernelExC",
        "was launched with cudaLaunchKernelExC",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "waits.cudaStreamSynchronize=empty",
        "waits.cudaStreamSynchronize=other",
        "expected kernels other",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "memset=0",
        "memset=0 bogus.key=1",
        "unknown EXPECT key bogus.key",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "case=empty_kernels",
        "case=graph",
        "not \"empty_kernels\"",
    );
    assert_fails(
        "empty_kernels",
        &r,
        "per_thread=4,3,3 ",
        "",
        "did not state per_thread",
    );
    // Another device name is named.
    let rep = check_files(
        "empty_kernels",
        "x",
        &r.trace,
        &r.stdout,
        &Options {
            device_name: "B200".into(),
            ..Options::default()
        },
    );
    assert!(
        rep.failures.iter().any(|f| f.contains("\"NVIDIA H200")),
        "{}",
        rep.render()
    );
}

#[test]
fn graph_nodes_share_their_launch_arrow() {
    // Two captured 3-node graphs launched 4 times each, 2 plain kernels, a memset.
    let (n, m, p) = (3u32, 4u32, 2u32);
    let capture = |kernel: &str, graph: &str| {
        vec![
            Op::BeginCapture { stream: 1 },
            Op::Repeat {
                times: n,
                ops: vec![launch(kernel, 1)],
            },
            Op::EndCapture {
                stream: 1,
                graph: graph.into(),
            },
        ]
    };
    let mut ops = vec![Op::Memset {
        bytes: 64,
        value: 0,
        stream: None,
    }];
    ops.extend(capture("graph_explicit_node", "a"));
    ops.extend(capture("graph_capture_node", "b"));
    ops.push(Op::Repeat {
        times: p,
        ops: vec![launch("plain_kernel", 2)],
    });
    ops.push(Op::Repeat {
        times: m,
        ops: vec![
            Op::GraphLaunch {
                graph: "a".into(),
                stream: 1,
            },
            Op::GraphLaunch {
                graph: "b".into(),
                stream: 1,
            },
        ],
    });
    ops.push(Op::DeviceSync);
    let s = script(
        &["graph_explicit_node", "graph_capture_node", "plain_kernel"],
        vec![ops],
    );
    let r = sim_run("graph", "graph", &s, &[]);
    assert_pass("graph", &r);
    assert!(
        report("graph", &r.trace, &r.stdout)
            .render()
            .contains("graph_nodes_without_arrow=16")
    );
    assert_fails(
        "graph",
        &r,
        "graph_launches=8",
        "graph_launches=9",
        "slices that launched graph kernels",
    );
    // cupti-sim gives each launch's nodes new ids.
    assert_fails(
        "graph",
        &r,
        "graph_nodes.graph_explicit_node=12",
        "graph_nodes.graph_explicit_node=3",
        "distinct graph nodes",
    );
    // Launches into the capture submit nothing.
    assert_fails(
        "graph",
        &r,
        "arrows.cudaLaunchKernel=2",
        "arrows.cudaLaunchKernel=8",
        "submission arrows from cudaLaunchKernel calls: trace has 2",
    );
    assert_fails(
        "graph",
        &r,
        "kernel.plain_kernel=2",
        "kernel.plain_kernel=3",
        "kernels named plain_kernel",
    );
}

#[test]
fn memops_by_direction_kind_and_value() {
    let copy = |bytes, kind, stream| Op::Memcpy {
        bytes,
        kind,
        stream,
    };
    let s = script(
        &[],
        vec![vec![
            copy(1000, SimCopy::H2D, None),
            copy(2000, SimCopy::H2D, Some(1)),
            copy(1280, SimCopy::H2D, None),
            copy(3000, SimCopy::D2H, None),
            copy(4000, SimCopy::D2D, Some(2)),
            Op::Memset {
                bytes: 100,
                value: 0x5a,
                stream: None,
            },
            Op::Memset {
                bytes: 200,
                value: 0,
                stream: Some(1),
            },
            Op::DeviceSync,
        ]],
    );
    let r = sim_run("memops", "memops", &s, &[]);
    assert_pass("memops", &r);
    assert_fails(
        "memops",
        &r,
        "copy_bytes.HtoD=4280",
        "copy_bytes.HtoD=4281",
        "bytes copied HtoD",
    );
    assert_fails(
        "memops",
        &r,
        "HtoD:pageable:device:3",
        "HtoD:pinned:device:3",
        "copies by direction",
    );
    assert_fails(
        "memops",
        &r,
        "memset_values=0:1,90:1",
        "memset_values=90:2",
        "memsets by value",
    );
    assert_fails(
        "memops",
        &r,
        "memset_bytes=300",
        "memset_bytes=301",
        "bytes set",
    );
    assert_fails(
        "memops",
        &r,
        "api.cudaMemcpy=3",
        "api.cudaMemcpy=4",
        "cudaMemcpy calls",
    );
    assert_fails(
        "memops",
        &r,
        "arrows.cudaMemcpyAsync=2",
        "arrows.cudaMemcpyAsync=1",
        "submission arrows from cudaMemcpyAsync calls",
    );
}

#[test]
fn nvtx_names_depths_domains_and_threads() {
    let r_loops = 2;
    let push = |m: &str| Op::NvtxPush {
        message: m.into(),
        domain: None,
    };
    let pop = || Op::NvtxPop { domain: None };
    let mark = |m: &str| Op::NvtxMark { message: m.into() };
    let k = || launch("nvtx_kernel", 0);
    let main = vec![
        mark("before_cuda"),
        push("outer"),
        k(),
        push("inner_w_\u{e9}"),
        k(),
        push("inner_ex"),
        k(),
        pop(),
        pop(),
        mark("mark_a"),
        mark("mark_ex"),
        Op::Repeat {
            times: r_loops,
            ops: vec![push("loop"), k(), pop()],
        },
        Op::NvtxPush {
            message: "registered_range".into(),
            domain: Some("gpu_tests".into()),
        },
        k(),
        Op::NvtxPop {
            domain: Some("gpu_tests".into()),
        },
        pop(),
        Op::NvtxStart {
            message: "startend_a".into(),
            slot: "a".into(),
        },
        k(),
        Op::NvtxEnd { slot: "a".into() },
    ];
    let worker = vec![
        push("worker"),
        push("worker_inner"),
        k(),
        pop(),
        pop(),
        Op::NvtxStart {
            message: "startend_b".into(),
            slot: "b".into(),
        },
        Op::NvtxEnd { slot: "b".into() },
    ];
    let s = script(&["nvtx_kernel"], vec![main, worker]);
    let r = sim_run("nvtx", "nvtx", &s, &[]);
    assert_pass("nvtx", &r);
    assert_fails(
        "nvtx",
        &r,
        "range.inner_ex=1@2",
        "range.inner_ex=1@1",
        "sit at depths",
    );
    assert_fails(
        "nvtx",
        &r,
        "thread.worker=t1",
        "thread.worker=t0",
        "should differ",
    );
    assert_fails(
        "nvtx",
        &r,
        "domain.registered_range=gpu_tests",
        "domain.registered_range=other",
        "has domain",
    );
    assert_fails(
        "nvtx",
        &r,
        "kernels_in.outer=6",
        "kernels_in.outer=7",
        "launches inside outer",
    );
    assert_fails(
        "nvtx",
        &r,
        "startend.startend_a=1",
        "startend.startend_a=2",
        "start/end ranges",
    );
    assert_fails("nvtx", &r, "mark.mark_a=1", "mark.mark_a=0", "marks mark_a");
}

#[test]
fn sync_calls_and_their_wait_targets() {
    let mut ops = Vec::new();
    for (i, k) in ["work_a", "work_b", "work_c"].into_iter().enumerate() {
        ops.push(Op::Repeat {
            times: 2,
            ops: vec![launch(k, i as u32 + 1)],
        });
    }
    ops.push(Op::StreamSync { stream: 1 });
    ops.push(Op::DeviceSync);
    let s = script(&["work_a", "work_b", "work_c"], vec![ops]);
    let r = sim_run("multi_stream_sync", "sync", &s, &[]);
    assert_pass("multi_stream_sync", &r);
    assert_fails(
        "multi_stream_sync",
        &r,
        "waits.cudaStreamSynchronize=work_a",
        "waits.cudaStreamSynchronize=work_b",
        "cudaStreamSynchronize waits for",
    );
    assert_fails(
        "multi_stream_sync",
        &r,
        "api.cudaDeviceSynchronize=1",
        "api.cudaDeviceSynchronize=2",
        "cudaDeviceSynchronize calls",
    );
    assert_fails(
        "multi_stream_sync",
        &r,
        "streams=3",
        "streams=1",
        "streams that ran kernels",
    );
}

#[test]
fn graph_copies_outside_the_graph_count_and_submit() {
    // What cupti-sim can run of cuda/graph_copies.cu: copies and a memset around a captured
    // kernel graph (the fake neither captures copies nor makes zero-byte ones; the
    // hand-built graph_copies traces below show what gpu-check says of those).
    let (b, m) = (4096u64, 3u32);
    let s = script(
        &["graph_copy_kernel"],
        vec![vec![
            Op::Memcpy {
                bytes: b,
                kind: SimCopy::H2D,
                stream: Some(1),
            },
            Op::Memset {
                bytes: b,
                value: 0x5a,
                stream: Some(1),
            },
            Op::BeginCapture { stream: 1 },
            launch("graph_copy_kernel", 1),
            Op::EndCapture {
                stream: 1,
                graph: "g".into(),
            },
            Op::Repeat {
                times: m,
                ops: vec![Op::GraphLaunch {
                    graph: "g".into(),
                    stream: 1,
                }],
            },
            Op::Memcpy {
                bytes: b,
                kind: SimCopy::D2H,
                stream: Some(1),
            },
            Op::StreamSync { stream: 1 },
        ]],
    );
    let r = sim_run("graph_copies", "graph_copies", &s, &[]);
    assert_pass("graph_copies", &r);
    assert_fails(
        "graph_copies",
        &r,
        "arrows.cudaLaunchKernel=0",
        "arrows.cudaLaunchKernel=1",
        "submission arrows from cudaLaunchKernel calls: trace has 0",
    );
    assert_fails(
        "graph_copies",
        &r,
        "arrows.cudaGraphLaunch=3",
        "arrows.cudaGraphLaunch=1",
        "submission arrows from cudaGraphLaunch calls: trace has 3",
    );
    assert_fails(
        "graph_copies",
        &r,
        "copy_bytes.DtoH=4096",
        "copy_bytes.DtoH=4097",
        "bytes copied DtoH",
    );
    assert_fails(
        "graph_copies",
        &r,
        "memset=1 ",
        "memset=2 ",
        "memsets: trace has 1",
    );
}

// ------------------------------------------------------- hand-built traces

#[test]
fn occupancy_matches_the_driver_records() {
    let r = run("occupancy");
    assert_pass("occupancy", &r);
    let rep = report("occupancy", &r.trace, &r.stdout);
    assert!(
        rep.render().contains("occ_many_regs"),
        "table: {}",
        rep.render()
    );
    assert_fails(
        "occupancy",
        &r,
        "blocks_per_sm=2 ",
        "blocks_per_sm=3 ",
        "the driver says 3",
    );
    assert_fails(
        "occupancy",
        &r,
        "occupancy_pct=50.0000",
        "occupancy_pct=50.5",
        "theoretical occupancy",
    );
    assert_fails(
        "occupancy",
        &r,
        "regs=120",
        "regs=121",
        "launch__registers_per_thread=120",
    );
    assert_fails(
        "occupancy",
        &r,
        "records=2",
        "records=3",
        "EXPECT record lines",
    );
}

#[test]
fn defects_in_a_trace_are_each_named() {
    let r = run("broken");
    let rep = report("empty_kernels", &r.trace, &r.stdout);
    assert!(!rep.passed());
    let text = rep.render();
    for needle in [
        "1 submission arrows point at no GPU event (from cudaLaunchKernel_v7000",
        "2 GPU events have no submitting API slice (1 with a second-space id",
        "written twice",
        "events were dropped: vendor_records=2",
        "wait targets end after the call returned",
    ] {
        assert!(
            rep.failures.iter().any(|f| f.contains(needle)),
            "missing {needle:?} in\n{text}"
        );
    }
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("FAIL empty_kernels: "),
        "{text}"
    );
}

/// A key number of a report.
fn number<'a>(rep: &'a Report, key: &str) -> Option<&'a str> {
    rep.numbers
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn a_dangling_arrow_alone_fails_the_check() {
    let r = run("dangling");
    let rep = report("empty_kernels", &r.trace, &r.stdout);
    assert_eq!(rep.failures.len(), 1, "{}", rep.render());
    assert!(
        rep.failures[0]
            .starts_with("1 submission arrows point at no GPU event (from cuMemcpyHtoDAsync_v2"),
        "{}",
        rep.render()
    );
    assert_eq!(number(&rep, "dangling_arrows"), Some("1"));
    assert!(
        rep.render()
            .lines()
            .last()
            .unwrap()
            .starts_with("FAIL empty_kernels: 1 submission arrows"),
        "{}",
        rep.render()
    );
}

#[test]
fn graph_copies_counts_hold_and_the_gaps_are_named() {
    // Zero-byte calls claim submissions, graph copies and memsets are not
    // marked as graph nodes.
    let r = run("graph_copies");
    let rep = report("graph_copies", &r.trace, &r.stdout);
    let text = rep.render();
    let wanted = [
        "2 submission arrows point at no GPU event (from ",
        "6 GPU events have no submitting API slice (6 with a second-space id",
        "6 of them copies/memsets, likely graph memcpy/memset nodes without a graph_node_id",
        "1 wait arrows point at no GPU event",
        "submission arrows from cudaMemcpyAsync calls: trace has 2, program says 1",
        "submission arrows from cudaMemsetAsync calls: trace has 1, program says 0",
    ];
    for needle in wanted {
        assert!(
            rep.failures.iter().any(|f| f.contains(needle)),
            "missing {needle:?} in\n{text}"
        );
    }
    assert_eq!(rep.failures.len(), 5, "only these fail:\n{text}");
    assert_eq!(number(&rep, "dangling_arrows"), Some("2"));

    // Zero-byte calls that submit nothing: only the graph nodes remain.
    let r = run("graph_copies_fixed");
    let rep = report("graph_copies", &r.trace, &r.stdout);
    assert_eq!(rep.failures.len(), 1, "{}", rep.render());
    assert!(rep.failures[0].starts_with("6 GPU events have no submitting API slice"));
    assert_eq!(number(&rep, "dangling_arrows"), Some("0"));
    assert_eq!(number(&rep, "graph_nodes_without_arrow"), Some("3"));
    assert_fails(
        "graph_copies",
        &r,
        "arrows.cudaLaunchKernel=0",
        "arrows.cudaLaunchKernel=1",
        "submission arrows from cudaLaunchKernel calls: trace has 0",
    );
    assert_fails(
        "graph_copies",
        &r,
        "copy_bytes.HtoD=16384",
        "copy_bytes.HtoD=16385",
        "bytes copied HtoD",
    );
    assert_fails(
        "graph_copies",
        &r,
        "memset=3 ",
        "memset=4 ",
        "memsets: trace has 3",
    );
    assert_fails(
        "graph_copies",
        &r,
        " memset_bytes=12288",
        "",
        "did not state memset_bytes",
    );
}

#[test]
fn a_forced_loss_passes_only_as_expected() {
    let r = run_with(
        "loss",
        &[
            ("INJECTION_QUEUE_SIZE", "64K"),
            ("INJECTION_QUEUE_FULL", "drop"),
        ],
    );
    // Without --expect-loss the drops fail the check.
    let rep = report("empty_kernels", &r.trace, &r.stdout);
    assert!(
        rep.failures
            .iter()
            .any(|f| f.starts_with("events were dropped: ") && f.contains("thread_buffer=")),
        "{}",
        rep.render()
    );
    let lossy = |stderr: &str, expect: &str, trace: &Path| {
        check_files(
            "empty_kernels",
            "forced_loss",
            trace,
            expect,
            &Options {
                expect_loss: Some(stderr.into()),
                ..Options::default()
            },
        )
    };
    let rep = lossy(&r.stderr, &r.stdout, &r.trace);
    assert!(rep.passed(), "{}\nstderr: {}", rep.render(), r.stderr);
    let n: u64 = number(&rep, "thread_buffer").unwrap().parse().unwrap();
    assert!(n > 0);
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with(LOSS_LINE))
        .expect("a loss line");
    assert!(line.contains(&format!("thread_buffer={n}")), "{line}");
    assert!(
        rep.notes
            .iter()
            .any(|n| n.contains("skipped under --expect-loss")),
        "{}",
        rep.render()
    );

    let fails = |rep: Report, needle: &str| {
        assert!(
            rep.failures.iter().any(|f| f.contains(needle)),
            "no failure mentions {needle:?}:\n{}",
            rep.render()
        );
    };
    fails(lossy("", &r.stdout, &r.trace), "has no line starting with");
    fails(
        lossy(&format!("{}{line}\n", r.stderr), &r.stdout, &r.trace),
        "has 2 lines starting with",
    );
    let other = r.stderr.replace(
        &format!("thread_buffer={n}"),
        &format!("thread_buffer={}", n + 1),
    );
    fails(
        lossy(&other, &r.stdout, &r.trace),
        &format!(
            "says thread_buffer={}, the trace says thread_buffer={n}",
            n + 1
        ),
    );
    fails(
        lossy(
            &r.stderr,
            &r.stdout.replacen("kernels=240000", "kernels=10", 1),
            &r.trace,
        ),
        "more than the 10 the program made",
    );
    // A trace that lost nothing is not a forced loss.
    let clean = empty_kernels_run();
    fails(
        lossy("", &clean.stdout, &clean.trace),
        "the trace counts thread_buffer=0",
    );

    // The binary: --expect-loss STDERR-FILE.
    let dir = r.trace.parent().unwrap();
    let (out, err) = (dir.join("loss.out"), dir.join("loss.err"));
    std::fs::write(&out, &r.stdout).unwrap();
    std::fs::write(&err, &r.stderr).unwrap();
    let bin = env!("CARGO_BIN_EXE_gpu-check");
    let o = Command::new(bin)
        .arg("--label")
        .arg("forced_loss")
        .arg("--expect-loss")
        .arg(&err)
        .arg("empty_kernels")
        .arg(&r.trace)
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("PASS forced_loss: "),
        "{text}"
    );
    let o = Command::new(bin)
        .arg("--expect-loss")
        .arg(dir.join("missing.err"))
        .arg("empty_kernels")
        .arg(&r.trace)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn unreadable_inputs_fail_cleanly() {
    let rep = check_files(
        "nvtx",
        "nvtx",
        Path::new("/nonexistent.pftrace"),
        "EXPECT case=nvtx",
        &Options::default(),
    );
    assert!(
        rep.failures[0].contains("cannot decode the trace"),
        "{}",
        rep.render()
    );
    let rep = check_files(
        "nvtx",
        "nvtx",
        Path::new("/nonexistent.pftrace"),
        "no lines",
        &Options::default(),
    );
    assert!(rep.failures[0].contains("no EXPECT line"));
    assert!(Expect::parse("EXPECT case=x").is_ok());
}

#[test]
fn the_binary_reports_and_exits_by_verdict() {
    let r = empty_kernels_run();
    let dir = r.trace.parent().unwrap();
    let good = dir.join("good.out");
    let bad = dir.join("bad.out");
    std::fs::write(&good, &r.stdout).unwrap();
    std::fs::write(&bad, r.stdout.replace("kernels=10", "kernels=12")).unwrap();
    let bin = env!("CARGO_BIN_EXE_gpu-check");
    let run_bin = |args: &[&std::ffi::OsStr]| Command::new(bin).args(args).output().unwrap();
    let o = run_bin(&[
        "--label".as_ref(),
        "ek_cli".as_ref(),
        "empty_kernels".as_ref(),
        r.trace.as_os_str(),
        good.as_os_str(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.lines().last().unwrap().starts_with("PASS ek_cli: "),
        "{out}"
    );
    let o = run_bin(&[
        "empty_kernels".as_ref(),
        r.trace.as_os_str(),
        bad.as_os_str(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL empty_kernels: kernels: trace has 10, program says 12"),
        "{out}"
    );
    let o = run_bin(&["nonsense".as_ref(), r.trace.as_os_str(), good.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    let o = run_bin(&["empty_kernels".as_ref()]);
    assert_eq!(o.status.code(), Some(2));
    // A python without the perfetto wheel skips validation with a note.
    let o = run_bin(&[
        "--validate".as_ref(),
        "/nonexistent/python".as_ref(),
        "empty_kernels".as_ref(),
        r.trace.as_os_str(),
        good.as_os_str(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("schema validation skipped"), "{out}");
}

/// The empty-kernels program with 400 ms of host work at the end of its
/// first thread, traced with telemetry from the fake NVML (`nvml-sim`),
/// whose default GPU is cupti-sim's: `nvml` changes its spec.
fn telemetry_run(tag: &str, nvml: &nvml_sim::Spec) -> Run {
    let mut s = empty_kernels_script();
    s.threads[0].ops.push(Op::SleepUs { us: 400_000 });
    let lib = cupti_sim::host::artifact("nvml_sim").expect("libnvml_sim.so built");
    let spec = serde_json::to_string(nvml).unwrap();
    let locks = std::env::temp_dir().join(format!("gpu-tests-locks-{}-{tag}", std::process::id()));
    sim_run(
        "empty_kernels",
        tag,
        &s,
        &[
            ("INJECTION_API_LAYER", "runtime"),
            ("INJECTION_FLUSH_PERIOD_MS", "100"),
            ("INJECTION_TELEMETRY_PERIOD", "5ms"),
            ("INJECTION_TELEMETRY_LOCK_DIR", locks.to_str().unwrap()),
            ("GPU_TRACE_NVML_PATH", lib.to_str().unwrap()),
            (nvml_sim::SPEC_ENV, &spec),
        ],
    )
}

#[test]
fn telemetry_is_checked_and_its_cost_reported() {
    let r = telemetry_run("telemetry", &nvml_sim::Spec::default());
    let rep = report("empty_kernels", &r.trace, &r.stdout);
    assert!(rep.passed(), "{}", rep.render());
    assert_eq!(
        number(&rep, "telemetry_gpus"),
        Some("1"),
        "{}",
        rep.render()
    );
    assert_eq!(number(&rep, "telemetry_gpm"), Some("1"));
    let samples: u64 = number(&rep, "telemetry_clock_samples")
        .unwrap()
        .parse()
        .unwrap();
    assert!(samples >= 10, "{}", rep.render());
    let pct: f64 = number(&rep, "telemetry_core_pct").unwrap().parse().unwrap();
    assert!((0.0..100.0).contains(&pct), "{}", rep.render());

    // A reading no GPU could give fails the check, named.
    let mut hot = nvml_sim::Spec::default();
    hot.devices[0].values.temperature = 400;
    let r = telemetry_run("telemetry-hot", &hot);
    let rep = report("empty_kernels", &r.trace, &r.stdout);
    assert!(
        rep.failures
            .iter()
            .any(|f| f.contains("telemetry temperature.gpu = 400")),
        "{}",
        rep.render()
    );
}
