//! End-to-end tests: synthetic events through the real in-process Perfetto
//! session into a file, decoded with our reader and checked with the
//! Perfetto schema validator.
//!
//! A tracer owns process-global Perfetto state, as it does inside a real
//! application, so each scenario runs in a child process: the test binary
//! re-runs itself with `GPU_TRACE_TEST_CHILD=<scenario>` and the `child`
//! test plays the traced application.

use gpu_trace_agent::Config;
use gpu_trace_model::model::*;
use gpu_trace_perfetto::{Backend, GpuClock, Sources, Tracer, TracerOptions};
use gpu_trace_reader::{ArgVal, CounterUnits, Stage, Trace};
use smallvec::smallvec;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const CHILD: &str = "GPU_TRACE_TEST_CHILD";
/// Set: the child's recording waits for capture ranges.
const CAPTURE_RANGES: &str = "GPU_TRACE_TEST_CAPTURE_RANGES";
/// Set: the child's `Limits::stall` in milliseconds, instead of the default
/// `STALL_LIMIT`.
const STALL_MS: &str = "GPU_TRACE_TEST_STALL_MS";

// ---------------------------------------------------------------- child side

/// The traced "application", run only as a child process (the tests below
/// re-run this binary with `--ignored --exact child`).
#[test]
#[ignore = "the traced application of the other tests; runs only in their child processes"]
fn child() {
    let scenario = std::env::var(CHILD).expect("run by a test, which sets GPU_TRACE_TEST_CHILD");
    let (config, problems) = Config::from_env();
    for p in &problems {
        eprintln!("gpu-trace: {p}");
    }
    let clock = if scenario == "custom_clock" {
        GpuClock::Custom {
            name: "test.gpu_clock",
            sample: std::sync::Arc::new(|| {
                let b = gpu_trace_model::clock::boottime_ns();
                Some((b - GPU_CLOCK_OFFSET, b))
            }),
        }
    } else {
        GpuClock::Boottime
    };
    // As an injection starts: the settings settled by the agent (the
    // output's fallbacks said on stderr), then the writer.
    let mut settings = match config.trace_settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            println!("NO-TRACER");
            return;
        }
    };
    if let Ok(ms) = std::env::var(STALL_MS)
        && config.queue_full_waits
    {
        settings.limits.stall =
            Duration::from_millis(ms.parse().expect("GPU_TRACE_TEST_STALL_MS in ms"));
    }
    let mut options = TracerOptions::new(gpu_trace_testkit::BACKEND, settings);
    options.clock = clock;
    options.capture_ranges = std::env::var_os(CAPTURE_RANGES).is_some();
    let tracer = match Tracer::start(options) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            println!("NO-TRACER");
            return;
        }
    };
    println!("PID={}", std::process::id());
    if let Some(p) = tracer.output_path() {
        println!("OUTPUT={}", p.display());
    }
    match scenario.as_str() {
        "basic" | "env" | "exists" | "unwritable" => workload(&tracer, 0),
        "custom_clock" => workload(&tracer, GPU_CLOCK_OFFSET),
        "sigkill" => {
            workload(&tracer, 0);
            // Everything recorded reaches the service; the session's periodic reads
            // (INJECTION_FLUSH_PERIOD_MS) then put it into the file. Say READY once the file
            // holds every kernel, and wait for the kill.
            assert!(tracer.flush(Duration::from_secs(60)), "flush");
            let path = tracer.output_path().expect("a file").to_path_buf();
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            let mut seen = 0;
            while seen != SIGKILL_KERNELS {
                if std::time::Instant::now() > deadline {
                    println!("NOT-READY kernels={seen}");
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
                seen = Trace::open(&path).map_or(0, |t| t.kernels().count() as u64);
            }
            println!("READY");
            std::thread::sleep(Duration::from_secs(600));
        }
        "panic" => {
            tracer.set_backend(Box::new(PanickingBackend));
            workload(&tracer, 0);
            tracer.flush(Duration::from_secs(5));
            println!("STILL-RUNNING");
        }
        "system" => {}
        "overflow" => overflow(&tracer),
        "flood" => flood(&tracer, true),
        "loss" => {
            flood(&tracer, false);
            println!("STALLED_NS={}", tracer.recorder().stalled().as_nanos());
        }
        "capture" => capture(&tracer),
        "busy_live" => busy_live(&tracer),
        other => panic!("unknown scenario {other}"),
    }
    if let Some(l) = tracer.shutdown(Duration::from_secs(20)) {
        gpu_trace_agent::exit::report_losses(&l.drops, l.service, &config);
    }
    println!("DONE");
}

const GPU_CLOCK_OFFSET: u64 = 3_000_000_000;
const THREADS: u64 = 4;
const LAUNCHES_PER_THREAD: u64 = 250;
const GRAPH_NODES: u64 = 5;
/// Kernels the workload leaves in the trace.
const SIGKILL_KERNELS: u64 =
    THREADS * (LAUNCHES_PER_THREAD - 2 * LAUNCHES_PER_THREAD / 10) + GRAPH_NODES;

struct PanickingBackend;

impl Backend for PanickingBackend {
    fn flush(&self, _forced: bool) {
        panic!("backend bug");
    }
    fn sources_changed(&self, _s: &Sources) {}
}

/// Records a scripted "application": two devices, launches from several
/// threads with API slices, copies and memsets, a graph launch, NVTX and
/// per-kernel counters. GPU timestamps are shifted into the GPU clock by
/// `gpu_offset` (0 for BOOTTIME).
fn workload(tracer: &Tracer, gpu_offset: u64) {
    for id in 0..2 {
        let mut gpu = Device::new(id, "NVIDIA H200");
        gpu.vendor = Some("NVIDIA".into());
        gpu.uuid = Some([id as u8; 16]);
        gpu.pci_bdf = Some(format!("0000:0{id}:00.0"));
        gpu.architecture = "Hopper".into();
        gpu.arch_id = "sm_90".into();
        gpu.sm_count = 132;
        gpu.total_memory = Some(141 << 30);
        gpu.extra = vec![("driver".into(), "580".into())];
        tracer.add_device(gpu);
    }
    let names = tracer.names().clone();
    let kernels = tracer.kernels().clone();
    let regs = names.intern("launch__registers_per_thread");
    let occ = names.intern("sm__maximum_warps_per_active_cycle_pct");
    let mk = |mangled: &str| {
        let n = kernels.names(&names, mangled);
        let mut desc = KernelDesc::new(n.mangled, n.demangled, n.display, names.intern("sm_90"));
        desc.args = vec![(regs, ArgValue::Uint(32)), (occ, ArgValue::Double(100.0))];
        kernels.register(desc)
    };
    let k_add = mk("_Z6vecAddPfS_S_i");
    let k_fill = mk("_ZN2at6native18elementwise_kernelILi128ELi4EEEvi");
    let mut spec = CounterSpec::new(
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        Unit::Percent,
        CounterGroup::Compute,
    );
    spec.description = "SM throughput".into();
    let sm_tp = tracer.register_counter(spec);
    let mut spec = CounterSpec::new(
        "dram__bytes_read.sum.per_second",
        Unit::Byte,
        CounterGroup::Memory,
    );
    spec.description = "DRAM read bandwidth".into();
    spec.per = Some(Unit::Second);
    let dram = tracer.register_counter(spec);
    let launch = names.intern("cudaLaunchKernel");
    let memcpy = names.intern("cudaMemcpyAsync");
    let memset = names.intern("cudaMemsetAsync");
    let sync = names.intern("cudaStreamSynchronize");
    let graph = names.intern("cudaGraphLaunch");
    let rec = tracer.recorder().clone();

    std::thread::scope(|s| {
        for t in 0..THREADS {
            let rec = rec.clone();
            s.spawn(move || {
                let tid = gpu_trace_model::clock::thread_id();
                let device = (t % 2) as u32;
                let stream = 10 + t;
                rec.marker(tid, now(), &format!("worker {t}"), |text| Marker::Push {
                    domain: None,
                    text,
                });
                // A virtual clock keeps this thread's calls apart, as real
                // calls on one thread are.
                let mut clock = now();
                for i in 0..LAUNCHES_PER_THREAD {
                    let corr = 1 + t * 10_000 + i;
                    clock += 50_000;
                    let (name, start) = (if i % 10 == 5 { memcpy } else { launch }, clock);
                    let end = start + 2_000;
                    let mut call = ApiCall::new(
                        if i % 10 == 7 { memset } else { name },
                        tid,
                        start,
                        end,
                        corr,
                    );
                    call.submits = true;
                    rec.api(call);
                    let (gs, ge) = (end + 5_000 - gpu_offset, end + 9_000 - gpu_offset);
                    match i % 10 {
                        5 | 7 => {
                            let (bytes, kind) = if i % 10 == 5 {
                                let kind = MemoryOpKind::Copy {
                                    kind: CopyKind::HtoD,
                                    src: MemoryKind::Pinned,
                                    dst: MemoryKind::Device,
                                    peer: None,
                                };
                                (4096, kind)
                            } else {
                                let kind = MemoryOpKind::Set {
                                    value: 0,
                                    memory: MemoryKind::Device,
                                };
                                (1000, kind)
                            };
                            let mut op = MemoryOp::new(device, corr, gs, ge, bytes, kind);
                            op.context = device + 1;
                            op.stream = stream;
                            rec.memory(op);
                        }
                        _ => {
                            let mut exec = KernelExec::new(
                                device,
                                corr,
                                gs,
                                ge,
                                if i % 2 == 0 { k_add } else { k_fill },
                            );
                            exec.context = device + 1;
                            exec.stream = stream;
                            exec.grid = Dim3::new(1024, 1, 1);
                            exec.block = Dim3::new(256, 1, 1);
                            exec.waves_per_sm = Some(1.94);
                            rec.kernel(exec);
                            if i % 50 == 0 {
                                rec.kernel_counters(KernelCounters::new(
                                    device,
                                    corr,
                                    gs,
                                    ge,
                                    vec![(sm_tp, 55.5), (dram, 1.5e12)].into(),
                                ));
                            }
                        }
                    }
                    if i % 25 == 24 {
                        let s0 = clock + 10_000;
                        let mut call = ApiCall::new(sync, tid, s0, s0 + 20_000, 900_000 + corr);
                        call.waits = smallvec![corr];
                        rec.api(call);
                    }
                }
                rec.marker(tid, clock + 100_000, "", |_| Marker::Pop { domain: None });
            });
        }
    });
    // A graph with GRAPH_NODES kernels shares one correlation id.
    let tid = gpu_trace_model::clock::thread_id();
    let start = now();
    let corr = 777_777;
    let mut call = ApiCall::new(graph, tid, start, start + 3_000, corr);
    call.submits = true;
    rec.api(call);
    for n in 0..GRAPH_NODES {
        let gs = start + 10_000 + n * 5_000 - gpu_offset;
        let mut exec = KernelExec::new(0, corr, gs, gs + 4_000, k_add);
        exec.context = 1;
        exec.stream = 99;
        exec.grid = Dim3::new(8, 8, 1);
        exec.block = Dim3::new(32, 8, 1);
        exec.graph_node = 1000 + n;
        rec.kernel(exec);
    }
    // A range that starts on one thread and ends on another, and a mark.
    let domain = names.intern("MyLib");
    rec.marker(tid, now(), "epoch 1", |text| Marker::Start {
        id: 42,
        domain: Some(domain),
        text,
    });
    std::thread::spawn({
        let rec = rec.clone();
        move || {
            let t2 = gpu_trace_model::clock::thread_id();
            rec.marker(t2, now() + 1_000, "", |_| Marker::End { id: 42 });
        }
    })
    .join()
    .unwrap();
    rec.marker(tid, now(), "checkpoint", |text| Marker::Mark {
        domain: None,
        text,
    });
    rec.dropped(DropKind::VendorRecords, 3);
}

fn overflow(tracer: &Tracer) {
    // More events than one batch holds, in a burst.
    let rec = tracer.recorder();
    let names = tracer.names();
    let n = names.intern("cudaLaunchKernel");
    for i in 0..200_000u64 {
        rec.api(ApiCall::new(n, 1, i, i + 1, 0));
    }
}

const FLOOD_THREADS: u64 = 4;
const FLOOD_PER_THREAD: u64 = 60_000;

/// Kernels with their launch slices from several threads, as fast as they
/// can be recorded: megabytes more than the central buffer holds between
/// two timed reads. With `paced`, each thread waits for room every 1,000
/// events, as a vendor's delivery thread does; without, a tiny queue
/// (`INJECTION_QUEUE_SIZE`) must overflow and count its drops.
fn flood(tracer: &Tracer, paced: bool) {
    let names = tracer.names().clone();
    let kernels = tracer.kernels().clone();
    let n = kernels.names(&names, "_Z5floodv");
    let k = kernels.register(KernelDesc::new(
        n.mangled,
        n.demangled,
        n.display,
        names.intern("sm_90"),
    ));
    let launch = names.intern("cuLaunchKernel");
    let rec = tracer.recorder().clone();
    // Larger runs by hand: FLOOD_PER_THREAD=N FLOOD_THREADS=T.
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let per_thread = env("FLOOD_PER_THREAD", FLOOD_PER_THREAD);
    let threads = env("FLOOD_THREADS", FLOOD_THREADS);
    let t0 = std::time::Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let rec = rec.clone();
            s.spawn(move || {
                let tid = gpu_trace_model::clock::thread_id();
                let mut clock = now();
                for i in 0..per_thread {
                    if paced && i % 1000 == 0 {
                        rec.wait_for_room(Duration::from_secs(30));
                    }
                    let corr = 1 + t * 1_000_000 + i;
                    clock += 3_000;
                    let mut call = ApiCall::new(launch, tid, clock, clock + 1_000, corr);
                    call.submits = true;
                    rec.api(call);
                    let mut exec = KernelExec::new(0, corr, clock + 2_000, clock + 2_500, k);
                    exec.context = 1;
                    exec.stream = 7 + t;
                    exec.grid = Dim3::new(1, 1, 1);
                    exec.block = Dim3::new(32, 1, 1);
                    rec.kernel(exec);
                }
            });
        }
    });
    println!(
        "FLOOD events={} seconds={:.3}",
        2 * threads * per_thread,
        t0.elapsed().as_secs_f64()
    );
}

/// Kernels of 5 ms every 10 ms for 100 ms, then a wait: the busy counters
/// of those intervals reach the file while the process still runs (the
/// watermark passed them), not only at exit. Prints `BUSY-LIVE n` with the
/// non-zero busy values the file held, or `BUSY-LIVE 0` after 20 s.
fn busy_live(tracer: &Tracer) {
    let names = tracer.names().clone();
    let kernels = tracer.kernels().clone();
    let n = kernels.names(&names, "_Z4livev");
    let k = kernels.register(KernelDesc::new(
        n.mangled,
        n.demangled,
        n.display,
        names.intern("sm_90"),
    ));
    let rec = tracer.recorder().clone();
    // On an interval boundary: each interval is exactly half busy.
    let t0 = (now() / 10_000_000 + 1) * 10_000_000;
    for i in 0..10u64 {
        let start = t0 + i * 10_000_000;
        rec.kernel(KernelExec::new(0, i + 1, start, start + 5_000_000, k));
    }
    let path = tracer.output_path().expect("a file").to_path_buf();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen = 0;
    while seen == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        seen = Trace::open(&path).map_or(0, |t| {
            t.counters
                .iter()
                .filter(|c| c.name.as_str() == "Compute busy" && c.value > 0.0)
                .count()
        });
    }
    println!("BUSY-LIVE {seen}");
}

/// Prints each source change the backend is told of, as `SOURCES gpu api
/// markers` (0/1).
struct PrintingBackend;

impl Backend for PrintingBackend {
    fn sources_changed(&self, s: &Sources) {
        println!(
            "SOURCES {} {} {}",
            u8::from(s.gpu),
            u8::from(s.api),
            u8::from(s.markers)
        );
    }
}

/// Opens and closes capture ranges the way the CUDA backend does at the
/// application's `cuProfilerStart` / `cuProfilerStop`.
fn capture(tracer: &Tracer) {
    tracer.set_backend(Box::new(PrintingBackend));
    let switch = tracer.capture_switch();
    println!("OPEN {}", u8::from(switch.is_open()));
    if std::env::var("CAPTURE_NEVER").is_ok() {
        println!("EVER {}", u8::from(switch.ever_opened()));
        println!("END");
        return;
    }
    switch.set(true);
    switch.set(true); // a second start changes nothing
    switch.set(false);
    switch.set(false);
    switch.set(true);
    println!("OPEN {}", u8::from(switch.is_open()));
    println!("EVER {}", u8::from(switch.ever_opened()));
    println!("END"); // the session's own stop follows
}

fn now() -> u64 {
    gpu_trace_model::clock::boottime_ns()
}

// --------------------------------------------------------------- parent side

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run_child(scenario: &str, dir: &Path, envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child",
        "--nocapture",
        "--test-threads=1",
    ])
    .current_dir(dir)
    .env(CHILD, scenario);
    for v in gpu_trace_agent::config::vars::ALL {
        cmd.env_remove(v);
    }
    cmd.env_remove(CAPTURE_RANGES);
    cmd.env_remove(STALL_MS);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run child");
    assert!(
        out.status.success(),
        "child {scenario} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn output_of(out: &Output) -> PathBuf {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split("OUTPUT=").nth(1))
        .unwrap_or_else(|| panic!("no OUTPUT line in {stdout}"));
    PathBuf::from(line)
}

use gpu_trace_testkit::{tp_check, tp_tables, validate};
use std::collections::BTreeMap;

fn pid_of(out: &Output) -> i64 {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.split("PID=").nth(1))
        .and_then(|p| p.parse().ok())
        .expect("PID line")
}

fn check_workload(t: &Trace, pid: i64) {
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let kernels: Vec<_> = t.kernels().collect();
    let per_thread_kernels = (0..LAUNCHES_PER_THREAD)
        .filter(|i| i % 10 != 5 && i % 10 != 7)
        .count() as u64;
    assert_eq!(
        kernels.len() as u64,
        THREADS * per_thread_kernels + GRAPH_NODES
    );
    let copies: Vec<_> = t
        .memory_ops()
        .filter(|e| e.stage == Stage::Memcpy)
        .collect();
    let sets: Vec<_> = t
        .memory_ops()
        .filter(|e| e.stage == Stage::Memset)
        .collect();
    assert_eq!(copies.len() as u64, THREADS * LAUNCHES_PER_THREAD / 10);
    assert_eq!(sets.len() as u64, THREADS * LAUNCHES_PER_THREAD / 10);
    assert_eq!(
        copies.iter().map(|c| c.bytes().unwrap()).sum::<u64>(),
        4096 * copies.len() as u64
    );
    assert_eq!(
        sets.iter().map(|c| c.bytes().unwrap()).sum::<u64>(),
        1000 * sets.len() as u64
    );
    assert_eq!(copies[0].name, "Memcpy HtoD");
    assert_eq!(
        copies[0].arg("src_kind").and_then(ArgVal::as_str),
        Some("pinned")
    );

    // Unique event ids.
    let by_id = t.gpu_events_by_id();
    assert_eq!(by_id.len(), t.gpu_events.len(), "duplicate event ids");

    // Kernel details and interning.
    let k = kernels.iter().find(|k| k.name == "vecAdd").expect("vecAdd");
    let ki = k.kernel.as_ref().unwrap();
    assert_eq!(ki.name, "_Z6vecAddPfS_S_i");
    assert_eq!(ki.demangled, "vecAdd(float*, float*, float*, int)");
    assert_eq!(ki.arch, "sm_90");
    assert!(
        ki.args
            .contains(&("launch__registers_per_thread".into(), ArgVal::Uint(32)))
    );
    assert!(
        kernels
            .iter()
            .any(|k| k.name == "at::native::elementwise_kernel")
    );
    assert_eq!(
        k.context.unwrap().pid,
        pid,
        "context carries the process id"
    );
    assert_eq!(k.context.unwrap().api, 4, "context api is CUDA");
    assert!(k.arg("device").is_some() && k.arg("stream").is_some());
    assert!(
        k.queue.starts_with("GPU ") && k.queue.contains(" · stream "),
        "{}",
        k.queue
    );
    assert!(
        k.queue_description.contains("NVIDIA H200"),
        "{}",
        k.queue_description
    );
    assert_eq!(k.grid, Some([1024, 1, 1]));
    assert_eq!(k.block, Some([256, 1, 1]));

    // Devices.
    assert_eq!(t.devices.len(), 2);
    assert_eq!(t.devices[1].name, "NVIDIA H200");
    assert_eq!(t.devices[1].pci_bdf, "0000:01:00.0");
    assert_eq!(t.devices[1].uuid, vec![1u8; 16]);

    // Every API slice that submitted work points at exactly one GPU event,
    // which starts after the launch began; waits point at real events.
    let launches: Vec<_> = t
        .slices
        .iter()
        .filter(|s| !s.submissions.is_empty())
        .collect();
    assert_eq!(launches.len() as u64, THREADS * LAUNCHES_PER_THREAD + 1);
    for s in &launches {
        assert_eq!(s.gpu_api, Some(4));
        if s.name != "cudaGraphLaunch" {
            assert_eq!((s.dur, s.depth), (2_000, 1), "{s:?}");
        }
        for id in &s.submissions {
            let g = by_id
                .get(id)
                .unwrap_or_else(|| panic!("dangling submission {id}"));
            assert!(g.ts > s.ts, "GPU work before its launch");
            assert!(t.thread_of(s.track).is_some(), "launch on a thread track");
        }
    }
    let graph = launches
        .iter()
        .find(|s| s.name == "cudaGraphLaunch")
        .unwrap();
    assert_eq!(
        by_id[&graph.submissions[0]]
            .arg("graph_node_id")
            .and_then(ArgVal::as_u64)
            .map(|n| n >= 1000),
        Some(true)
    );
    let waits: Vec<_> = t.slices.iter().filter(|s| !s.waits.is_empty()).collect();
    assert_eq!(waits.len() as u64, THREADS * (LAUNCHES_PER_THREAD / 25));
    for w in &waits {
        assert_eq!(w.name, "cudaStreamSynchronize");
        for id in &w.waits {
            assert!(by_id.contains_key(id), "dangling wait {id}");
        }
    }
    // Thread tracks carry names and pids; API calls nest in NVTX ranges.
    let ranges: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name.starts_with("worker "))
        .collect();
    assert_eq!(ranges.len() as u64, THREADS);
    for r in &ranges {
        assert_eq!(r.depth, 0);
        let thread_pid = t.thread_of(r.track).unwrap().pid;
        assert_eq!(thread_pid, pid);
        assert!(t.slices.iter().any(|s| s.track == r.track && s.depth == 1));
    }
    let epoch = t
        .slices
        .iter()
        .find(|s| s.name == "epoch 1")
        .expect("start/end range");
    assert_eq!(epoch.arg("domain").and_then(ArgVal::as_str), Some("MyLib"));
    assert!(t.tracks[&epoch.track].name.contains("MyLib"));
    assert!(t.instants.iter().any(|i| i.name == "checkpoint"));

    // Counter samples sit inside the kernel they measure, on COMPUTE.
    let counters_on = t
        .data_sources
        .iter()
        .any(|d| d.starts_with("gpu.counters."));
    assert_eq!(
        counters_on,
        t.counters.iter().any(|c| c.groups.contains(&6)),
        "per-kernel counters exactly when their data source runs"
    );
    let sm: Vec<_> = t
        .counters
        .iter()
        .filter(|c| c.name == "sm__throughput.avg.pct_of_peak_sustained_elapsed")
        .collect();
    let expected_samples = if counters_on {
        THREADS * LAUNCHES_PER_THREAD.div_ceil(50)
    } else {
        0
    };
    assert_eq!(
        sm.iter().filter(|c| c.value > 0.0).count() as u64,
        expected_samples
    );
    for c in sm.iter().filter(|c| c.value > 0.0) {
        assert_eq!(c.groups, vec![6]);
        assert_eq!(c.units.numerator, vec![37]);
        assert!(
            kernels
                .iter()
                .any(|k| k.gpu_id == Some(c.gpu_id) && k.ts <= c.ts && c.ts < k.ts + k.dur),
            "sample at {} outside every kernel",
            c.ts
        );
    }
    if let Some(dram) = t.counters.iter().find(|c| c.name.starts_with("dram__")) {
        assert_eq!(
            dram.units,
            CounterUnits {
                numerator: vec![7],
                denominator: vec![22]
            }
        );
    }

    // Clock: GPU events convert back to BOOTTIME near the API calls.
    let first_launch = launches.iter().map(|s| s.ts).min().unwrap();
    let first_kernel = kernels.iter().map(|k| k.ts).min().unwrap();
    assert!(first_kernel > first_launch && first_kernel - first_launch < 10_000_000_000);

    // The summary and the drop counts are in the trace.
    let summary = t.log("gpu-trace summary:").expect("summary");
    assert!(
        summary
            .message
            .contains(&format!("kernels={}", kernels.len())),
        "{}",
        summary.message
    );
    let drops = t.drop_counts().expect("drop line");
    assert_eq!(drops, vec![("vendor_records".to_owned(), 3)]);
    if let Some(l) = t.losses {
        assert_eq!(l.chunks_discarded, 0);
    }
}

/// Busy % per 10 ms as computed here, independently of the tool, from the
/// GPU work the reader decoded: for each (counter name, GPU), the points
/// where the value changes (from 0 before the first busy interval), as
/// the trace processor prints them.
fn expected_busy(t: &Trace) -> BTreeMap<(String, String), Vec<(String, String)>> {
    const W: u64 = 10_000_000;
    let mut intervals: BTreeMap<(String, String), Vec<(u64, u64)>> = BTreeMap::new();
    for e in &t.gpu_events {
        let name = match (&e.stage, e.name.as_str()) {
            (Stage::Kernel, _) => "Compute busy",
            (Stage::Memset, _) => "Memset busy",
            (Stage::Memcpy, "Memcpy HtoD") => "Copy HtoD busy",
            (Stage::Memcpy, "Memcpy DtoH") => "Copy DtoH busy",
            _ => continue,
        };
        let gpu = e.gpu_id.unwrap().to_string();
        intervals
            .entry((name.to_owned(), gpu))
            .or_default()
            .push((e.ts, e.ts + e.dur));
    }
    intervals
        .into_iter()
        .map(|(key, mut v)| {
            // The union, then its share of each interval.
            v.sort();
            let mut union: Vec<(u64, u64)> = Vec::new();
            for (s, e) in v {
                match union.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => union.push((s, e)),
                }
            }
            let mut busy: BTreeMap<u64, u64> = BTreeMap::new();
            for (s, e) in union {
                let mut a = s;
                while a < e {
                    let b = (a / W + 1) * W;
                    *busy.entry(a / W).or_default() += e.min(b) - a;
                    a = b;
                }
            }
            let (first, last) = (*busy.keys().next().unwrap(), *busy.keys().last().unwrap());
            let mut points = Vec::new();
            let mut prev = 0.0;
            for i in first..=last + 1 {
                let v = busy.get(&i).map_or(0.0, |&ns| ns as f64 * 100.0 / W as f64);
                if v != prev {
                    points.push(((i * W).to_string(), format!("{v:.6}")));
                    prev = v;
                }
            }
            (key, points)
        })
        .collect()
}

/// The busy counters the trace processor shows equal [`expected_busy`],
/// and each thread's "GPU wait" track holds the time it spent in its
/// synchronisations. Skipped without a trace processor.
fn check_busy_and_waits_in_tp(path: &Path, t: &Trace) {
    let Some(tables) = gpu_trace_testkit::tp_tables(
        path,
        "select k.name, k.gpu_id, c.ts, printf('%.6f', c.value), k.unit, k.description
           from counter c join gpu_counter_track k on c.track_id = k.id
          where k.name like '% busy' order by k.name, k.gpu_id, c.ts;
         select th.tid, c.ts, printf('%.6f', c.value)
           from counter c join thread_counter_track k on c.track_id = k.id
           join thread th using (utid)
          where k.name = 'GPU wait' order by th.tid, c.ts;",
    ) else {
        return;
    };
    let mut got: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
    for r in &tables[0] {
        assert_eq!(r[4], "%", "{r:?}");
        assert!(r[5].starts_with("Share of each 10 ms"), "{r:?}");
        got.entry((r[0].clone(), r[1].clone()))
            .or_default()
            .push((r[2].clone(), r[3].clone()));
    }
    let want = expected_busy(t);
    assert!(want.contains_key(&("Compute busy".to_owned(), "0".to_owned())));
    assert_eq!(got, want, "busy % per (counter, GPU): (ts, value)");
    // GPU wait: the synchronisations of each worker thread, 20 µs each.
    let mut waits: BTreeMap<String, f64> = BTreeMap::new();
    let mut last: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for r in &tables[1] {
        let ts: u64 = r[1].parse().unwrap();
        let v: f64 = r[2].parse().unwrap();
        // The integral of the track: each value holds until the next.
        if let Some((t0, v0)) = last.insert(r[0].clone(), (ts, v)) {
            *waits.entry(r[0].clone()).or_default() += v0 / 100.0 * (ts - t0) as f64;
        }
    }
    assert!(
        last.values().all(|&(_, v)| v == 0.0),
        "every track returns to 0"
    );
    let mut want_waits: BTreeMap<String, f64> = BTreeMap::new();
    for s in t
        .slices
        .iter()
        .filter(|s| s.name == "cudaStreamSynchronize")
    {
        let tid = t.thread_of(s.track).unwrap().tid.to_string();
        *want_waits.entry(tid).or_default() += s.dur as f64;
    }
    assert_eq!(waits.len(), THREADS as usize);
    for (tid, ns) in &want_waits {
        assert!(
            (waits[tid] - ns).abs() < 1.0,
            "thread {tid}: {} ns, not {ns}",
            waits[tid]
        );
    }
}

/// What the trace processor (the UI's engine) shows of the workload: the
/// same numbers as [`check_workload`], through its tables. Skipped (said
/// on stderr) without a trace processor.
fn check_workload_in_tp(path: &Path, t: &Trace, pid: i64) {
    let Some(seen) = tp_check(path, t, &[]) else {
        return;
    };
    assert_eq!(seen.unfinished, 0, "slices that never end");

    let tables = tp_tables(
        path,
        &format!(
            "select s.name, k.name, extract_arg(k.dimension_arg_set_id, 'gpu'), count(*),
                    min(s.dur), sum(extract_arg(s.arg_set_id, 'device')
                                    = extract_arg(k.dimension_arg_set_id, 'gpu'))
               from gpu_slice s join track k on s.track_id = k.id
              where k.type = 'gpu_render_stage' group by 1, 2, 3;
             select s.name, extract_arg(a, 'kernel_name'), extract_arg(a, 'kernel_demangled_name'),
                    extract_arg(a, 'arch'),
                    extract_arg(a, 'launch.grid_size.x'), extract_arg(a, 'launch.grid_size.y'),
                    extract_arg(a, 'launch.grid_size.z'),
                    extract_arg(a, 'launch.workgroup_size.x'), extract_arg(a, 'launch.workgroup_size.y'),
                    extract_arg(a, 'launch.workgroup_size.z'),
                    extract_arg(a, 'launch__registers_per_thread'),
                    extract_arg(a, 'sm__maximum_warps_per_active_cycle_pct'),
                    round(extract_arg(a, 'launch__waves_per_multiprocessor'), 2),
                    extract_arg(a, 'graph_node_id') is not null, count(*)
               from (select name, arg_set_id as a from gpu_slice
                      where extract_arg(arg_set_id, 'kernel_name') is not null) s
              group by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14;
             select group_concat(extract_arg(arg_set_id, 'graph_node_id'))
               from (select arg_set_id from gpu_slice
                      where extract_arg(arg_set_id, 'graph_node_id') is not null order by ts);
             select s.name, extract_arg(a, 'bytes'), extract_arg(a, 'src_kind'),
                    extract_arg(a, 'dst_kind'), extract_arg(a, 'value'),
                    extract_arg(a, 'memory_kind'), count(*)
               from (select name, arg_set_id as a from gpu_slice where name like 'Mem%') s
              group by 1, 2, 3, 4, 5, 6;
             select name, count(*), sum(n_out = 1), sum(n_gpu_after = 1) from (
               select s.name,
                      (select count(*) from flow f where f.slice_out = s.id) as n_out,
                      (select count(*) from flow f join gpu_slice g on f.slice_in = g.id
                        where f.slice_out = s.id and g.ts > s.ts) as n_gpu_after
                 from slice s
                where extract_arg(s.arg_set_id,
                                  'gpu_correlation.render_stage_submission_event_ids[0]')
                      is not null)
              group by 1;
             select o.id in (select id from gpu_slice), i.id in (select id from gpu_slice),
                    i.name, count(*)
               from flow f join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id
              group by 1, 2, 3;
             select count(*) from gpu_slice g join track k on g.track_id = k.id
              where k.type = 'gpu_render_stage'
                and not exists (select 1 from flow f where f.slice_in = g.id);
             select k.name, k.gpu_id, k.unit, k.description, count(c.id), sum(c.value > 0),
                    max(c.value)
               from gpu_counter_track k left join counter c on c.track_id = k.id
              where k.name not like '% busy'
              group by k.id;
             select count(*) from counter c join gpu_counter_track k on c.track_id = k.id
              where k.name not like '% busy' and c.value > 0 and not exists (
                select 1 from gpu_slice s join track g on s.track_id = g.id
                 where extract_arg(g.dimension_arg_set_id, 'gpu') = k.gpu_id
                   and s.ts <= c.ts and c.ts < s.ts + s.dur);
             select s.name, s.depth, ifnull(p.name, ''), s.dur = 0, count(*)
               from slice s left join slice p on s.parent_id = p.id
              where s.id not in (select id from gpu_slice)
              group by 1, 2, 3, 4;
             select s.name, th.tid, ifnull(th.name, ''), pr.pid
               from slice s join thread_track tt on s.track_id = tt.id
               join thread th using (utid) join process pr using (upid)
              where s.depth = 0 and s.id not in (select id from gpu_slice);
             select s.name, k.name, k.type, pr.pid, extract_arg(s.arg_set_id, 'debug.domain')
               from slice s join process_track k on s.track_id = k.id
               join process pr using (upid);
             select pid, name from process where pid = {pid};"
        ),
    )
    .unwrap();
    let [
        gpu_tracks,
        kernel_args,
        graph_nodes,
        memory_args,
        submitters,
        flows,
        gpu_without_arrow,
        counter_tracks,
        samples_outside,
        slices,
        thread_slices,
        process_slices,
        process,
    ]: [Vec<Vec<String>>; 13] = tables.try_into().unwrap();

    // GPU slices: every kernel, copy and memset once, on the queue of its
    // stream and on its GPU, each with a duration.
    let mut want: BTreeMap<(String, String), (u32, u64)> = BTreeMap::new();
    for th in 0..THREADS {
        let device = (th % 2) as u32;
        let queue = format!("GPU {device} · stream {}", 10 + th);
        for i in 0..LAUNCHES_PER_THREAD {
            let name = match i % 10 {
                5 => "Memcpy HtoD",
                7 => "Memset",
                _ if i % 2 == 0 => "vecAdd",
                _ => "at::native::elementwise_kernel",
            };
            want.entry((name.into(), queue.clone()))
                .or_insert((device, 0))
                .1 += 1;
        }
    }
    want.insert(
        ("vecAdd".into(), "GPU 0 · stream 99".into()),
        (0, GRAPH_NODES),
    );
    let got: BTreeMap<(String, String), (u32, u64)> = gpu_tracks
        .iter()
        .map(|r| {
            assert_eq!(r[4], "4000", "duration of {} on {}", r[0], r[1]);
            assert_eq!(
                r[5], r[3],
                "{} on {}: device arg = the track's GPU",
                r[0], r[1]
            );
            (
                (r[0].clone(), r[1].clone()),
                (r[2].parse().unwrap(), r[3].parse().unwrap()),
            )
        })
        .collect();
    assert_eq!(got, want, "GPU slices per (name, queue): (gpu, count)");

    // Kernel launch arguments, as the UI lists them.
    let demangled = |n: &str| {
        t.kernels()
            .find_map(|k| k.kernel.as_ref().filter(|i| i.name == n))
            .map(|i| i.demangled.clone())
            .unwrap()
    };
    let per_thread = |name: &str| -> u64 {
        THREADS
            * (0..LAUNCHES_PER_THREAD)
                .filter(|i| i % 10 != 5 && i % 10 != 7)
                .filter(|i| (i % 2 == 0) == (name == "vecAdd"))
                .count() as u64
    };
    let row = |name: &str,
               mangled: &str,
               grid: [u32; 3],
               block: [u32; 3],
               waves: &str,
               graph: bool,
               n: u64| {
        let mut r = vec![
            name.to_owned(),
            mangled.to_owned(),
            demangled(mangled),
            "sm_90".into(),
        ];
        r.extend(grid.iter().chain(&block).map(u32::to_string));
        r.extend(["32".into(), "100.000000".into(), waves.to_owned()]);
        r.extend([u8::from(graph).to_string(), n.to_string()]);
        r
    };
    let mut want_args = vec![
        row(
            "vecAdd",
            "_Z6vecAddPfS_S_i",
            [1024, 1, 1],
            [256, 1, 1],
            "1.940000",
            false,
            per_thread("vecAdd"),
        ),
        row(
            "at::native::elementwise_kernel",
            "_ZN2at6native18elementwise_kernelILi128ELi4EEEvi",
            [1024, 1, 1],
            [256, 1, 1],
            "1.940000",
            false,
            per_thread("at::native::elementwise_kernel"),
        ),
        row(
            "vecAdd",
            "_Z6vecAddPfS_S_i",
            [8, 8, 1],
            [32, 8, 1],
            "[NULL]",
            true,
            GRAPH_NODES,
        ),
    ];
    want_args.sort();
    let mut kernel_args = kernel_args;
    kernel_args.sort();
    assert_eq!(
        kernel_args, want_args,
        "kernel slices grouped by their args"
    );
    let nodes: Vec<String> = (0..GRAPH_NODES).map(|n| (1000 + n).to_string()).collect();
    assert_eq!(
        graph_nodes,
        [[nodes.join(",")]],
        "graph node ids in time order"
    );
    let n_ops = (THREADS * LAUNCHES_PER_THREAD / 10).to_string();
    let mut memory_args = memory_args;
    memory_args.sort();
    assert_eq!(
        memory_args,
        [
            [
                "Memcpy HtoD",
                "4096",
                "pinned",
                "device",
                "[NULL]",
                "[NULL]",
                &n_ops
            ],
            ["Memset", "1000", "[NULL]", "[NULL]", "0", "device", &n_ops],
        ]
    );

    // Arrows: every API slice that submitted work has exactly one, to a GPU
    // slice that starts after it; waits come from GPU slices; only the
    // graph's further nodes (which share its one correlation) have none.
    let launches_of = |name: &str| -> u64 {
        THREADS
            * (0..LAUNCHES_PER_THREAD)
                .filter(|i| match name {
                    "cudaMemcpyAsync" => i % 10 == 5,
                    "cudaMemsetAsync" => i % 10 == 7,
                    _ => i % 10 != 5 && i % 10 != 7,
                })
                .count() as u64
    };
    let mut want_submitters: Vec<Vec<String>> =
        ["cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"]
            .iter()
            .map(|n| {
                let c = launches_of(n).to_string();
                vec![n.to_string(), c.clone(), c.clone(), c]
            })
            .collect();
    want_submitters.push(vec![
        "cudaGraphLaunch".into(),
        "1".into(),
        "1".into(),
        "1".into(),
    ]);
    want_submitters.sort();
    let mut submitters = submitters;
    submitters.sort();
    assert_eq!(
        submitters, want_submitters,
        "API slices with a submission: (name, n, n with one arrow, n with one arrow to later GPU work)"
    );
    let n_launch_arrows: u64 = THREADS * LAUNCHES_PER_THREAD + 1;
    let n_waits = THREADS * (LAUNCHES_PER_THREAD / 25);
    let mut flow_kinds: BTreeMap<(bool, bool, bool), u64> = BTreeMap::new();
    for r in &flows {
        let key = (r[0] == "1", r[1] == "1", r[2] == "cudaStreamSynchronize");
        *flow_kinds.entry(key).or_default() += r[3].parse::<u64>().unwrap();
    }
    assert_eq!(
        flow_kinds,
        BTreeMap::from([
            ((false, true, false), n_launch_arrows),
            ((true, false, true), n_waits)
        ]),
        "arrows by (from GPU, to GPU, to a sync): {flows:?}"
    );
    assert_eq!(gpu_without_arrow, [[(GRAPH_NODES - 1).to_string()]]);

    // Counters: one track per counter and GPU with its unit and description;
    // per-kernel values and their return to zero, inside a kernel of that GPU.
    let per_gpu = THREADS / 2 * LAUNCHES_PER_THREAD.div_ceil(50);
    let mut want_counters = Vec::new();
    for gpu in 0..2 {
        for (name, unit, desc, max) in [
            (
                "dram__bytes_read.sum.per_second",
                "B/s",
                "DRAM read bandwidth",
                "1500000000000.000000",
            ),
            (
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "%",
                "SM throughput",
                "55.500000",
            ),
        ] {
            want_counters.push(
                [
                    name,
                    &gpu.to_string(),
                    unit,
                    desc,
                    &(2 * per_gpu).to_string(),
                    &per_gpu.to_string(),
                    max,
                ]
                .map(str::to_owned)
                .to_vec(),
            );
        }
    }
    want_counters.sort();
    let mut counter_tracks = counter_tracks;
    counter_tracks.sort();
    assert_eq!(
        counter_tracks, want_counters,
        "counter tracks: (name, gpu, unit, description, values, non-zero, max)"
    );
    assert_eq!(
        samples_outside,
        [["0"]],
        "counter values outside every kernel of their GPU"
    );

    // NVTX ranges hold their thread's API calls; the graph launch, the
    // cross-thread range and the mark stand alone.
    let mut want_slices: BTreeMap<(String, u32, String, bool), u64> = BTreeMap::new();
    for th in 0..THREADS {
        let worker = format!("worker {th}");
        want_slices.insert((worker.clone(), 0, String::new(), false), 1);
        for (n, c) in [
            (
                "cudaLaunchKernel",
                launches_of("cudaLaunchKernel") / THREADS,
            ),
            ("cudaMemcpyAsync", launches_of("cudaMemcpyAsync") / THREADS),
            ("cudaMemsetAsync", launches_of("cudaMemsetAsync") / THREADS),
            ("cudaStreamSynchronize", n_waits / THREADS),
        ] {
            want_slices.insert((n.into(), 1, worker.clone(), false), c);
        }
    }
    for n in ["cudaGraphLaunch", "epoch 1"] {
        want_slices.insert((n.into(), 0, String::new(), false), 1);
    }
    want_slices.insert(("checkpoint".into(), 0, String::new(), true), 1);
    let got_slices: BTreeMap<(String, u32, String, bool), u64> = slices
        .iter()
        .map(|r| {
            (
                (
                    r[0].clone(),
                    r[1].parse().unwrap(),
                    r[2].clone(),
                    r[3] == "1",
                ),
                r[4].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got_slices, want_slices,
        "(name, depth, parent, instant) → count"
    );

    // Threads and the process: the ranges sit on the thread tracks of four
    // threads of the traced process, named as the system names them (the
    // name a thread had when it first recorded, if it has exited by the time
    // its events are written: the workers here have).
    let mut worker_tids = std::collections::BTreeSet::new();
    for r in &thread_slices {
        assert_eq!(
            r[3],
            pid.to_string(),
            "{} on a thread of another process",
            r[0]
        );
        let tid: i64 = r[1].parse().unwrap();
        // Unnamed worker threads carry the process's name; the test
        // harness names the child's own thread after the test.
        let exe = std::env::current_exe().unwrap();
        let exe = exe.file_name().unwrap().to_string_lossy();
        assert!(
            r[2] == "child" || (!r[2].is_empty() && exe.starts_with(r[2].as_str())),
            "thread {tid} is named {:?}",
            r[2]
        );
        if r[0].starts_with("worker ") {
            worker_tids.insert(tid);
        }
    }
    assert_eq!(worker_tids.len() as u64, THREADS, "{thread_slices:?}");
    assert_eq!(
        process_slices,
        [[
            "epoch 1",
            "Ranges (MyLib)",
            "process_merged_track_event",
            &pid.to_string(),
            "MyLib"
        ]]
    );
    let exe = std::env::current_exe().unwrap();
    assert_eq!(process.len(), 1, "{process:?}");
    assert!(
        Path::new(&process[0][1]).file_name() == exe.file_name(),
        "process {pid} is named {:?}, not after {}",
        process[0][1],
        exe.display()
    );
}

#[test]
fn standalone_trace_has_everything_once_and_validates() {
    let dir = tmpdir("basic");
    let out = run_child(
        "basic",
        &dir,
        &[
            ("INJECTION_OUTPUT", "trace-%p.pftrace"),
            (
                "INJECTION_METRICS",
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            ),
        ],
    );
    let path = output_of(&out);
    assert!(path.starts_with(&dir));
    let t = Trace::open(&path).unwrap();
    check_workload(&t, pid_of(&out));
    check_workload_in_tp(&path, &t, pid_of(&out));
    check_busy_and_waits_in_tp(&path, &t);
    // Telemetry is on by default (a data source of its own).
    assert_eq!(
        t.data_sources,
        vec![
            "track_event",
            "gpu.renderstages.nv",
            "gpu.counters.nv",
            "gpu.telemetry.nv"
        ]
    );
    // Interning: each kernel and queue is described once per sequence.
    let raw = std::fs::read(&path).unwrap();
    let vecadd_descriptions = raw.windows(16).filter(|w| w == b"_Z6vecAddPfS_S_i").count();
    let rs_sequences: std::collections::HashSet<u32> =
        t.gpu_events.iter().map(|e| e.sequence).collect();
    assert_eq!(vecadd_descriptions, rs_sequences.len());
    validate(&path);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn busy_counters_are_written_while_the_process_runs() {
    let dir = tmpdir("busy_live");
    let out = run_child(
        "busy_live",
        &dir,
        &[
            ("INJECTION_FLUSH_PERIOD_MS", "100"),
            ("INJECTION_TRACE", "gpu"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let seen: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("BUSY-LIVE "))
        .unwrap_or_else(|| panic!("no BUSY-LIVE line: {stdout}"))
        .parse()
        .unwrap();
    // 50% in each of the ten intervals: one point of 50, written long
    // before the exit.
    assert_eq!(seen, 1, "{stdout}");
    let t = Trace::open(output_of(&out)).unwrap();
    let busy: Vec<(u64, f64)> = t
        .counters
        .iter()
        .filter(|c| c.name.as_str() == "Compute busy")
        .map(|c| (c.ts, c.value))
        .collect();
    assert_eq!(busy.len(), 2, "{busy:?}");
    assert_eq!((busy[0].1, busy[1].1), (50.0, 0.0));
    assert_eq!(busy[1].0 - busy[0].0, 100_000_000, "ten intervals at 50%");
    assert!(
        t.logs.iter().all(|l| !l.message.contains("arrived after")),
        "no record was late: {:?}",
        t.logs
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn custom_gpu_clock_is_converted_with_snapshots() {
    let dir = tmpdir("clock");
    let out = run_child("custom_clock", &dir, &[("INJECTION_TRACE", "all")]);
    let path = output_of(&out);
    let t = Trace::open(&path).unwrap();
    assert_eq!(t.custom_clocks_used.len(), 1);
    check_workload(&t, pid_of(&out));
    // The trace processor converts the GPU clock as our reader does.
    check_workload_in_tp(&path, &t, pid_of(&out));
    check_busy_and_waits_in_tp(&path, &t);
    validate(&path);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn event_ids_are_unique_across_processes() {
    let dir = tmpdir("twoproc");
    let a = Trace::open(output_of(&run_child("basic", &dir, &[]))).unwrap();
    let b = Trace::open(output_of(&run_child("basic", &dir, &[]))).unwrap();
    let ids: std::collections::HashSet<u64> = a.gpu_events.iter().map(|e| e.event_id).collect();
    assert!(b.gpu_events.iter().all(|e| !ids.contains(&e.event_id)));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn existing_output_file_is_kept_and_a_new_name_announced() {
    let dir = tmpdir("exists");
    let target = dir.join("run.pftrace");
    std::fs::write(&target, b"precious").unwrap();
    let out = run_child(
        "exists",
        &dir,
        &[("INJECTION_OUTPUT", target.to_str().unwrap())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run.pftrace exists and is kept; writing"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    let path = output_of(&out);
    assert_eq!(path, dir.join("run.1.pftrace"));
    check_workload(&Trace::open(&path).unwrap(), pid_of(&out));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn unwritable_directory_falls_back_and_the_app_runs_on() {
    let dir = tmpdir("unwritable");
    let out = run_child(
        "unwritable",
        &dir,
        &[("INJECTION_OUTPUT", "/proc/gpu-trace-nowhere/x.pftrace")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write the trace to /proc/gpu-trace-nowhere/x.pftrace"),
        "{stderr}"
    );
    let path = output_of(&out);
    assert!(
        path.starts_with(&dir),
        "falls back to the working directory"
    );
    check_workload(&Trace::open(&path).unwrap(), pid_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("DONE"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_environment_values_are_named_and_defaults_used() {
    let dir = tmpdir("env");
    let bad = [
        ("INJECTION_VERBOSE", "loud"),
        ("INJECTION_METRICS", "ok.metric, no good!"),
        ("INJECTION_DATA_SOURCE_NAME_SUFFIX", "bad suffix"),
        ("INJECTION_OUTPUT", "trace-%z.pftrace"),
        ("INJECTION_MODE", "sideways"),
        ("INJECTION_BUFFER_SIZE", "lots"),
        ("INJECTION_FLUSH_PERIOD_MS", "5"),
        ("INJECTION_TRACE", "gpu,everything"),
    ];
    let out = run_child("env", &dir, &bad);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (var, value) in bad {
        let needle = format!(
            "{var}={:?}",
            if var == "INJECTION_METRICS" {
                "no good!"
            } else {
                value
            }
        );
        assert!(stderr.contains(&needle), "missing {needle} in:\n{stderr}");
    }
    // Defaults: file mode, default name in the working directory, suffix nv.
    let path = output_of(&out);
    assert_eq!(path.parent().unwrap(), dir);
    let t = Trace::open(&path).unwrap();
    assert!(t.data_sources.contains(&"gpu.renderstages.nv".to_owned()));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn suffix_and_recording_selection_shape_the_session() {
    let dir = tmpdir("suffix");
    let out = run_child(
        "basic",
        &dir,
        &[
            ("INJECTION_DATA_SOURCE_NAME_SUFFIX", "mytool"),
            ("INJECTION_TRACE", "gpu,counters"),
        ],
    );
    let t = Trace::open(output_of(&out)).unwrap();
    assert_eq!(
        t.data_sources,
        vec!["gpu.renderstages.mytool", "gpu.counters.mytool"]
    );
    assert!(
        t.slices.is_empty(),
        "API calls and markers were not asked for"
    );
    assert!(t.kernels().count() > 0);
    assert!(!t.counters.is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

/// The child's lines that start with `prefix`, before its `END` line.
fn lines_with(out: &Output, prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .take_while(|l| *l != "END")
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

#[test]
fn capture_ranges_switch_every_source_and_nothing_else() {
    let dir = tmpdir("capture");
    // Without a capture range the switch does nothing: recording runs
    // from the start.
    let out = run_child("capture", &dir, &[]);
    assert_eq!(lines_with(&out, "SOURCES"), ["SOURCES 1 1 1"]);
    assert_eq!(lines_with(&out, "OPEN"), ["OPEN 1", "OPEN 1"]);

    // With one, nothing records until the first start; each change reaches
    // the backend once.
    let out = run_child("capture", &dir, &[(CAPTURE_RANGES, "1")]);
    assert_eq!(
        lines_with(&out, "SOURCES"),
        [
            "SOURCES 0 0 0",
            "SOURCES 1 1 1",
            "SOURCES 0 0 0",
            "SOURCES 1 1 1"
        ]
    );
    assert_eq!(lines_with(&out, "OPEN"), ["OPEN 0", "OPEN 1"]);
    assert_eq!(lines_with(&out, "EVER"), ["EVER 1"]);

    // A range that never opens records nothing, and the backend can tell
    // (to say so at exit).
    let out = run_child(
        "capture",
        &dir,
        &[(CAPTURE_RANGES, "1"), ("CAPTURE_NEVER", "1")],
    );
    assert_eq!(lines_with(&out, "SOURCES"), ["SOURCES 0 0 0"]);
    assert_eq!(lines_with(&out, "EVER"), ["EVER 0"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sigkill_leaves_a_valid_trace_up_to_the_last_write() {
    let dir = tmpdir("sigkill");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir(&dir)
        .env(CHILD, "sigkill")
        .env("INJECTION_FLUSH_PERIOD_MS", "100")
        .env("INJECTION_OUTPUT", "killed.pftrace")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let path = dir.join("killed.pftrace");
    // The child says READY once its file holds every kernel: kill it then.
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut said = Vec::new();
    for line in std::io::BufRead::lines(stdout) {
        let line = line.unwrap();
        let done = line.contains("READY");
        said.push(line);
        if done {
            break;
        }
    }
    assert_eq!(
        said.last().map(String::as_str),
        Some("READY"),
        "the child's file held every kernel before the kill: {said:?}"
    );
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed");
    let t = Trace::open(&path).unwrap();
    assert_eq!(t.kernels().count() as u64, SIGKILL_KERNELS);
    assert!(
        t.problems
            .iter()
            .all(|p| p.kind != gpu_trace_reader::ProblemKind::Unresolved),
        "{:?}",
        t.problems
    );
    validate(&path);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_panicking_backend_disables_tracing_and_the_app_continues() {
    let dir = tmpdir("panic");
    let out = run_child("panic", &dir, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("internal error in backend flush"),
        "{stderr}"
    );
    assert!(stderr.contains("application continues"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("STILL-RUNNING") && stdout.contains("DONE"),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn system_mode_without_traced_neither_hangs_nor_writes() {
    let dir = tmpdir("system");
    let out = run_child(
        "system",
        &dir,
        &[
            ("INJECTION_MODE", "system"),
            ("PERFETTO_PRODUCER_SOCK_NAME", "/nonexistent/sock"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("DONE"), "{stdout}");
    assert!(!stdout.contains("OUTPUT="));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The events of the "overflow" scenario: (written as slices, dropped).
fn overflow_outcome(envs: &[(&str, &str)]) -> (u64, u64) {
    let dir = tmpdir("overflow");
    let out = run_child("overflow", &dir, envs);
    let t = Trace::open(output_of(&out)).unwrap();
    let drops = t.drop_counts().unwrap();
    let dropped = drops
        .iter()
        .find(|(k, _)| k == "thread_buffer")
        .map(|d| d.1)
        .unwrap_or(0);
    let written = t.slices.len() as u64;
    std::fs::remove_dir_all(dir).unwrap();
    (written, dropped)
}

#[test]
fn a_burst_within_the_queue_is_absorbed_whole() {
    let (written, dropped) = overflow_outcome(&[("INJECTION_TRACE", "gpu,api")]);
    // 200k events are far more than one batch holds, but within the
    // sealed-batch budget (or waited for): nothing is dropped.
    assert_eq!((written, dropped), (200_000, 0));
}

#[test]
fn overflowing_thread_buffers_are_counted_in_the_trace() {
    // The smallest queue, and drop instead of wait: one thread records
    // 200k events in a few milliseconds, far faster than they are written,
    // into room for a few hundred.
    let (written, dropped) = overflow_outcome(&[
        ("INJECTION_TRACE", "gpu,api"),
        ("INJECTION_QUEUE_SIZE", "64K"),
        ("INJECTION_QUEUE_FULL", "drop"),
    ]);
    assert!(dropped > 0, "the burst overflowed the queue");
    assert!(written > 0, "what fitted was written");
    assert_eq!(
        written + dropped,
        200_000,
        "every event is written or counted"
    );
}

#[test]
fn a_flood_faster_than_the_file_is_written_loses_nothing() {
    flood_loses_nothing("direct");
}

#[test]
fn a_flood_through_the_in_process_service_loses_nothing() {
    flood_loses_nothing("service");
}

/// The flood, written by `writer` (`INJECTION_FILE_WRITER`).
fn flood_loses_nothing(writer: &str) {
    let dir = tmpdir(&format!("flood-{writer}"));
    // Through the service: a 1 MiB ring, read every second by the clock:
    // the flood writes tens of megabytes between two timed reads, so only
    // reads by fill level keep it whole. The direct writer has no ring.
    let out = run_child(
        "flood",
        &dir,
        &[
            ("INJECTION_TRACE", "gpu,api"),
            ("INJECTION_BUFFER_SIZE", "1M"),
            ("INJECTION_FILE_WRITER", writer),
        ],
    );
    let path = output_of(&out);
    let t = Trace::open(&path).unwrap();
    let total = FLOOD_THREADS * FLOOD_PER_THREAD;
    assert_eq!(t.kernels().count() as u64, total, "every kernel once");
    let launches: Vec<_> = t
        .slices
        .iter()
        .filter(|s| s.name == "cuLaunchKernel")
        .collect();
    assert_eq!(launches.len() as u64, total, "every launch slice once");
    let ids = t.gpu_events_by_id();
    assert!(
        launches
            .iter()
            .all(|s| s.submissions.len() == 1 && ids.contains_key(&s.submissions[0])),
        "every launch points at its kernel"
    );
    assert!(
        t.drop_counts().unwrap().iter().all(|(_, n)| *n == 0),
        "{:?}",
        t.drop_counts()
    );
    if writer == "service" {
        assert_eq!(t.losses.map(|l| l.lost()), Some(0), "{:?}", t.losses);
    } else {
        // Nothing between the encoder and the file keeps statistics.
        assert!(t.losses.is_none(), "{:?}", t.losses);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("incomplete"), "{err}");
    if let Some(problems) = gpu_trace_testkit::tp_problems(&path) {
        assert!(problems.is_empty(), "trace processor: {problems:?}");
        // What the UI shows: every kernel a GPU slice, each with one arrow
        // from its launch.
        let n = gpu_trace_testkit::tp_query(
            &path,
            "select (select count(*) from gpu_slice where name = 'flood'), \
                    (select count(*) from flow f join slice s on f.slice_in = s.id \
                     where s.name = 'flood');",
        )
        .unwrap();
        assert_eq!(n[0], [total.to_string(), total.to_string()]);
    }
    validate(&path);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_forced_loss_is_counted_in_the_trace_and_said_once() {
    let dir = tmpdir("loss");
    let out = run_child(
        "loss",
        &dir,
        &[
            ("INJECTION_TRACE", "gpu,api"),
            ("INJECTION_QUEUE_SIZE", "64K"),
            ("INJECTION_QUEUE_FULL", "drop"),
        ],
    );
    let path = output_of(&out);
    let t = Trace::open(&path).unwrap();
    let drops = t.drop_counts().unwrap();
    let dropped = drops
        .iter()
        .find(|(k, _)| k == "thread_buffer")
        .map_or(0, |d| d.1);
    let written = t.kernels().count() as u64 + t.slices.len() as u64;
    let total = 2 * FLOOD_THREADS * FLOOD_PER_THREAD;
    assert!(dropped > 0, "a 64 KiB queue cannot hold the burst");
    assert_eq!(written + dropped, total, "written or counted, never both");
    let err = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("incomplete")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].starts_with("gpu-trace: "), "{err}");
    assert!(
        said[0].contains(&format!("thread_buffer={dropped}")),
        "{err}"
    );
    assert!(said[0].contains("INJECTION_QUEUE_FULL=drop"), "{err}");
    validate(&path);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_full_queue_makes_threads_wait_instead_of_dropping() {
    let dir = tmpdir("wait");
    // The same unpaced burst as the forced loss, into a small queue: by
    // default a thread that finds it full waits for the writer. How long
    // one event may wait (`Limits::stall`, 500 ms by default) is raised to
    // two minutes: on a loaded machine the writer can be starved of CPU
    // for longer than 500 ms, and the threads would then drop by design.
    // What this test proves is the waiting, not that limit.
    let out = run_child(
        "loss",
        &dir,
        &[
            ("INJECTION_TRACE", "gpu,api"),
            ("INJECTION_QUEUE_SIZE", "1M"),
            (STALL_MS, "120000"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stalled: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("STALLED_NS="))
        .unwrap_or_else(|| panic!("no STALLED_NS line in {stdout}"))
        .parse()
        .unwrap();
    // The queue did fill (an application thread may fill an eighth of
    // 1 MiB): the threads waited rather than the writer keeping up.
    assert!(stalled > 0, "no thread waited: the test proved nothing");
    let t = Trace::open(output_of(&out)).unwrap();
    let total = FLOOD_THREADS * FLOOD_PER_THREAD;
    assert_eq!(t.kernels().count() as u64, total);
    assert_eq!(t.slices.len() as u64, total);
    assert!(
        t.drop_counts().unwrap().iter().all(|(_, n)| *n == 0),
        "{:?}",
        t.drop_counts()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("incomplete"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
