//! Device memory in use (`-t memory`) and unified memory (`-t uvm`) end to end: the fake
//! CUPTI and driver run a scripted program that allocates, frees and migrates, and the trace
//! holds each GPU's memory curve step by step and each migration and fault, with nothing of
//! either when they are off.

use cupti_sim::scenario::{AllocKind, KernelSpec, Layer, Op, ThreadSpec, UvmOp};
use cupti_sim::{Outcome, RunSpec, Scenario};
use gpu_trace_reader::pb::Fields;
use gpu_trace_reader::wire;
use gpu_trace_reader::{ArgVal, Stage, Trace};
use gpu_trace_testkit::{tp_check, tp_query, validate};
use std::path::{Path, PathBuf};
use std::time::Duration;

cupti_sim::child_entry!();

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-trace-mem-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scenario(ops: Vec<Op>) -> Scenario {
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "touch".into(),
            symbol: "_Z5touchPf".into(),
            registers: 16,
            static_smem: 0,
            duration_us: 30,
        }],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid scenario");
    s
}

fn run(dir: &Path, s: &Scenario, trace: &str) -> (Outcome, Trace, PathBuf) {
    let path = dir.join("trace.pftrace");
    let tool = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
    let spec = RunSpec::new(tool, s.clone())
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", trace)
        .env("RUST_BACKTRACE", "0");
    let out = cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    assert!(
        out.report.violations.is_empty(),
        "{:?}",
        out.report.violations
    );
    let t = Trace::open(&path).unwrap_or_else(|e| panic!("trace file: {e:?}\n{}", out.stderr));
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.drop_counts(), Some(vec![]), "nothing dropped");
    (out, t, path)
}

fn alloc(bytes: u64, kind: AllocKind, slot: &str) -> Op {
    Op::Alloc {
        bytes,
        kind,
        slot: slot.into(),
    }
}

fn free(slot: &str) -> Op {
    Op::Free { slot: slot.into() }
}

/// (gpu_id, pid, bytes) of every `GpuMemTotalEvent`, in time order.
fn memory_totals(path: &Path) -> Vec<(u64, u64, u64, u64)> {
    let raw = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    for (f, v) in Fields::new(&raw).map_while(Result::ok) {
        if f != wire::TRACE_PACKET {
            continue;
        }
        let p = v.as_bytes().unwrap();
        let mut ts = 0;
        let mut ev = None;
        for (f, v) in Fields::new(p).map_while(Result::ok) {
            match f {
                wire::packet::TIMESTAMP => ts = v.as_u64().unwrap(),
                wire::packet::GPU_MEM_TOTAL_EVENT => ev = v.as_bytes(),
                _ => {}
            }
        }
        let Some(ev) = ev else { continue };
        let (mut gpu, mut pid, mut size) = (None, None, None);
        for (f, v) in Fields::new(ev).map_while(Result::ok) {
            match f {
                wire::gpu_mem_total::GPU_ID => gpu = v.as_u64(),
                wire::gpu_mem_total::PID => pid = v.as_u64(),
                wire::gpu_mem_total::SIZE => size = v.as_u64(),
                _ => {}
            }
        }
        out.push((ts, gpu.unwrap(), pid.unwrap(), size.unwrap()));
    }
    out.sort();
    out
}

const MIB: u64 = 1 << 20;

/// Allocations of every kind, freed in another order.
fn allocations() -> Vec<Op> {
    vec![
        alloc(MIB, AllocKind::Device, "a"),
        alloc(4 * MIB, AllocKind::Managed, "b"),
        alloc(64 << 10, AllocKind::Async, "c"),
        // 8 rows of 1,000 bytes at the fake's 1,024-byte pitch.
        alloc(1_000, AllocKind::Pitch { rows: 8 }, "d"),
        alloc(2 * MIB, AllocKind::Vmm, "e"),
        free("a"),
        free("c"),
        free("e"),
        free("b"),
        free("d"),
    ]
}

/// The curve the allocations draw: the total after each call.
fn expected_curve() -> Vec<u64> {
    let steps: [i64; 10] = [
        MIB as i64,
        4 * MIB as i64,
        64 << 10,
        8 * 1024,
        2 * MIB as i64,
        -(MIB as i64),
        -(64 << 10),
        -2 * MIB as i64,
        -4 * MIB as i64,
        -8 * 1024,
    ];
    let mut total = 0i64;
    steps
        .iter()
        .map(|d| {
            total += d;
            total as u64
        })
        .collect()
}

#[test]
fn memory_in_use_follows_every_allocation_and_free() {
    let dir = tmpdir("curve");
    let mut ops = allocations();
    // Work between them leaves the curve alone.
    ops.insert(
        2,
        Op::Launch {
            kernel: "touch".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            stream: 0,
            layer: Layer::Runtime,
        },
    );
    let s = scenario(ops);
    let (out, t, path) = run(&dir, &s, "gpu,api,memory");
    let pid = t.gpu_events[0].context.as_ref().unwrap().pid as u64;
    let totals = memory_totals(&path);
    assert!(
        totals.iter().all(|&(_, gpu, p, _)| gpu == 0 && p == pid),
        "{totals:?}"
    );
    let curve: Vec<u64> = totals.iter().map(|t| t.3).collect();
    assert_eq!(curve, expected_curve(), "bytes in use after each call");
    // The allocation and free calls are API slices too, with the same times.
    let calls: Vec<&str> = t
        .slices
        .iter()
        .filter(|s| s.name.starts_with("cuMem"))
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(calls.len(), 8, "{calls:?}");
    // What the trace processor (the UI) shows: the process's "GPU Memory"
    // track of GPU 0, the same steps.
    if let Some(rows) = tp_query(
        &path,
        "select t.name, t.type, extract_arg(t.dimension_arg_set_id, 'gpu'), p.pid, c.value
           from counter c join track t on c.track_id = t.id
           join process p on p.upid = extract_arg(t.dimension_arg_set_id, 'upid')
          where t.type = 'process_gpu_memory' order by c.ts",
    ) {
        let want: Vec<Vec<String>> = expected_curve()
            .iter()
            .map(|b| {
                [
                    "GPU Memory".to_owned(),
                    "process_gpu_memory".to_owned(),
                    "0".to_owned(),
                    pid.to_string(),
                    format!("{b}.000000"),
                ]
                .to_vec()
            })
            .collect();
        assert_eq!(rows, want);
    }
    tp_check(&path, &t, &[]);
    validate(&path);
    // The virtual-memory calls, which no API slice shows, were watched.
    assert!(out.report.callbacks.contains_key("DRIVER/cuMemCreate/EXIT"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn memory_accounting_is_off_unless_asked_for_and_costs_no_callback() {
    let dir = tmpdir("off");
    let s = scenario(allocations());
    let (out, _t, path) = run(&dir, &s, "gpu");
    assert!(memory_totals(&path).is_empty());
    let watched: Vec<&String> = out
        .report
        .callbacks
        .keys()
        .filter(|k| k.starts_with("DRIVER/cuMem") || k.starts_with("RUNTIME/cuda"))
        .collect();
    assert!(
        watched.is_empty(),
        "callbacks without memory or API: {watched:?}"
    );
    // API calls alone show the calls, not the curve.
    let dir2 = tmpdir("off-api");
    let (_, t, path) = run(&dir2, &s, "gpu,api");
    assert!(memory_totals(&path).is_empty());
    assert!(t.slices.iter().any(|s| s.name == "cuMemAlloc_v2"));
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(dir2);
}

fn uvm(op: UvmOp, bytes: u64, address: u64) -> Op {
    Op::Uvm { op, bytes, address }
}

fn managed_program() -> Scenario {
    scenario(vec![
        alloc(MIB, AllocKind::Managed, "m"),
        uvm(UvmOp::HtoD, 64 << 10, 0x7f00_1000_0000),
        uvm(UvmOp::GpuFault, 0, 0x7f00_1001_0000),
        uvm(UvmOp::HtoD, 192 << 10, 0x7f00_1002_0000),
        Op::Launch {
            kernel: "touch".into(),
            grid: [4, 1, 1],
            block: [128, 1, 1],
            stream: 0,
            layer: Layer::Runtime,
        },
        Op::DeviceSync,
        uvm(UvmOp::CpuFault, 0, 0x7f00_1000_0000),
        uvm(UvmOp::DtoH, 4 << 10, 0x7f00_1000_0000),
        uvm(UvmOp::Thrashing, 2 << 20, 0x7f00_1000_0000),
        free("m"),
    ])
}

#[test]
fn unified_memory_migrations_and_faults_are_on_each_gpus_queue() {
    let dir = tmpdir("uvm");
    let (out, t, path) = run(&dir, &managed_program(), "gpu,uvm");
    assert_eq!(
        out.report.records_made.get("UNIFIED_MEMORY_COUNTER"),
        Some(&6),
        "the tool configured every counter and enabled their records once CUDA was ready (at the managed allocation, after the context was made): {:?}",
        out.report.records_made
    );
    let um: Vec<_> = t
        .gpu_events
        .iter()
        .filter(|e| matches!(&e.stage, Stage::Other(s) if s.as_str() == "Unified memory"))
        .collect();
    let names: Vec<&str> = um.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "UM migration HtoD",
            "UM GPU page fault",
            "UM migration HtoD",
            "UM CPU page fault",
            "UM migration DtoH",
            "UM thrashing"
        ]
    );
    let arg = |e: &gpu_trace_reader::GpuEvent, n: &str| e.arg(n).cloned();
    // Migrations: bytes, address, direction, cause; on GPU 0's queue.
    let htod_bytes: u64 = um
        .iter()
        .filter(|e| e.name.as_str() == "UM migration HtoD")
        .map(|e| e.bytes().unwrap())
        .sum();
    assert_eq!(htod_bytes, 256 << 10);
    let first = um[0];
    assert_eq!(first.gpu_id, Some(0));
    assert_eq!(first.queue.as_str(), "GPU 0 · unified memory");
    assert!(first.dur > 0);
    assert_eq!(
        arg(first, "address").and_then(|a| a.as_str().map(str::to_owned)),
        Some("0x7f0010000000".into())
    );
    assert_eq!(
        arg(first, "cause").and_then(|a| a.as_str().map(str::to_owned)),
        Some("coherence".into())
    );
    assert_eq!(arg(first, "dst").and_then(|a| a.as_u64()), Some(0));
    assert_eq!(arg(first, "src"), None, "the host is no GPU");
    let fault = um[1];
    assert_eq!(fault.arg("faults").and_then(ArgVal::as_u64), Some(1));
    assert_eq!(
        fault
            .arg("cause")
            .and_then(|a| a.as_str().map(str::to_owned)),
        Some("write".into())
    );
    // The CPU fault is an instant, on the (first) GPU's queue.
    let cpu = um[3];
    assert_eq!((cpu.gpu_id, cpu.dur), (Some(0), 0));
    assert_eq!(cpu.queue.as_str(), "GPU 0 · unified memory");
    let dtoh = um[4];
    assert_eq!(
        dtoh.arg("cause")
            .and_then(|a| a.as_str().map(str::to_owned)),
        Some("eviction".into())
    );
    assert_eq!(dtoh.arg("src").and_then(ArgVal::as_u64), Some(0));
    let thrash = um[5];
    assert_eq!((thrash.gpu_id, thrash.dur), (Some(0), 0));
    // Migrations keep the copy engines busy.
    assert!(
        t.counters
            .iter()
            .any(|c| c.name.as_str() == "Copy HtoD busy" && c.value > 0.0),
        "migrations count as copy-engine work"
    );
    if let Some(rows) = tp_query(
        &path,
        "select count(*), sum(extract_arg(arg_set_id, 'bytes'))
           from gpu_slice where name = 'UM migration HtoD'",
    ) {
        assert_eq!(rows, [["2".to_owned(), (256u64 << 10).to_string()]]);
    }
    tp_check(&path, &t, &[]);
    validate(&path);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unified_memory_is_off_by_default() {
    let dir = tmpdir("uvm-off");
    let (out, t, _) = run(&dir, &managed_program(), "gpu,api");
    assert_eq!(out.report.records_made.get("UNIFIED_MEMORY_COUNTER"), None);
    assert!(
        t.gpu_events
            .iter()
            .all(|e| !matches!(e.stage, Stage::Other(_)))
    );
    let _ = std::fs::remove_dir_all(dir);
}
