//! gpu-check's `alloc` and `managed` cases on traces of the real injection run by cupti-sim:
//! the memory curve, unified-memory bytes and events, and the busy counters checked against
//! the trace's own GPU work pass, and altered expectations fail with the difference named.

use cupti_sim::RunSpec;
use cupti_sim::scenario::{AllocKind, KernelSpec, Op, Scenario, ThreadSpec, UvmOp};
use gpu_tests::{Options, Report, check_files};
use std::path::PathBuf;
use std::time::Duration;

cupti_sim::child_entry!();

const MIB: u64 = 1 << 20;

fn script(ops: Vec<Op>) -> Scenario {
    let s = Scenario {
        kernels: vec![KernelSpec {
            name: "fill".into(),
            symbol: "_Z4fillv".into(),
            registers: 16,
            static_smem: 0,
            duration_us: 40,
        }],
        threads: vec![ThreadSpec { ops }],
        profiler: Default::default(),
    };
    s.validate().expect("valid script");
    s
}

fn launch() -> Op {
    Op::Launch {
        kernel: "fill".into(),
        grid: [8, 1, 1],
        block: [256, 1, 1],
        stream: 0,
        layer: Default::default(),
    }
}

/// Runs `s` with `INJECTION_TRACE=trace` and returns the trace's path.
fn traced(tag: &str, s: &Scenario, trace: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("gpu-tests-activity-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{tag}.pftrace"));
    let tool = cupti_sim::host::artifact("gpu_trace_cuda").expect("libgpu_trace_cuda.so built");
    let spec = RunSpec::new(tool, s.clone())
        .env("INJECTION_OUTPUT", path.display().to_string())
        .env("INJECTION_TRACE", trace)
        .env("RUST_BACKTRACE", "0");
    cupti_sim::host::run_checked(spec, Duration::from_secs(120));
    (dir, path)
}

/// Removes a run's folder unless `GPU_TRACE_KEEP` is set (to look at the traces).
fn cleanup(dir: PathBuf) {
    if std::env::var_os("GPU_TRACE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
}

fn report(case: &str, trace: &std::path::Path, expect: &str) -> Report {
    check_files(case, case, trace, expect, &Options::default())
}

fn assert_fails(
    case: &str,
    trace: &std::path::Path,
    expect: &str,
    from: &str,
    to: &str,
    needle: &str,
) {
    assert!(expect.contains(from), "{from} not in {expect}");
    let rep = report(case, trace, &expect.replacen(from, to, 1));
    assert!(!rep.passed(), "{from} -> {to} passed:\n{}", rep.render());
    assert!(
        rep.failures.iter().any(|f| f.contains(needle)),
        "{from} -> {to}: no failure mentions {needle:?}:\n{}",
        rep.render()
    );
}

#[test]
fn the_memory_curve_is_checked_step_by_step() {
    let s = script(vec![
        Op::Alloc {
            bytes: MIB,
            kind: AllocKind::Device,
            slot: "a".into(),
        },
        Op::Alloc {
            bytes: 2 * MIB,
            kind: AllocKind::Device,
            slot: "b".into(),
        },
        Op::Alloc {
            bytes: MIB / 2,
            kind: AllocKind::Async,
            slot: "c".into(),
        },
        Op::Alloc {
            bytes: MIB,
            kind: AllocKind::Managed,
            slot: "m".into(),
        },
        // 64 rows at the fake's pitch of 1,024 bytes.
        Op::Alloc {
            bytes: 1000,
            kind: AllocKind::Pitch { rows: 64 },
            slot: "p".into(),
        },
        Op::Alloc {
            bytes: MIB,
            kind: AllocKind::Vmm,
            slot: "v".into(),
        },
        launch(),
        Op::DeviceSync,
        Op::Free { slot: "a".into() },
        Op::Free { slot: "c".into() },
        Op::Free { slot: "v".into() },
        Op::Free { slot: "m".into() },
        Op::Free { slot: "p".into() },
        Op::Free { slot: "b".into() },
    ]);
    let (dir, path) = traced("alloc", &s, "gpu,api,memory");
    let steps = [
        1.0, 3.0, 3.5, 4.5, 4.5625, 5.5625, 4.5625, 4.0625, 3.0625, 2.0625, 2.0, 0.0,
    ]
    .map(|m: f64| ((m * MIB as f64) as u64).to_string())
    .join(",");
    let expect =
        format!("EXPECT case=alloc kernels=1 kernel.fill=1 memory_steps={steps} busy_exact=1\n");
    let rep = report("alloc", &path, &expect);
    assert!(rep.passed(), "{}", rep.render());
    assert!(rep.render().contains("memory_steps=12"), "{}", rep.render());
    assert_fails(
        "alloc",
        &path,
        &expect,
        ",0 ",
        ",1 ",
        "device memory in use after each call",
    );
    // Without `-t memory` there is no curve to check.
    let (dir2, plain) = traced("alloc-off", &s, "gpu,api");
    let rep = report("alloc", &plain, &expect);
    assert!(
        rep.failures
            .iter()
            .any(|f| f.contains("device memory curves")),
        "{}",
        rep.render()
    );
    cleanup(dir);
    cleanup(dir2);
}

#[test]
fn unified_memory_bytes_and_events_are_checked() {
    let uvm = |op, bytes| Op::Uvm {
        op,
        bytes,
        address: 0x7f00_0000_0000,
    };
    let s = script(vec![
        Op::Alloc {
            bytes: MIB,
            kind: AllocKind::Managed,
            slot: "m".into(),
        },
        uvm(UvmOp::HtoD, 64 << 10),
        uvm(UvmOp::GpuFault, 0),
        uvm(UvmOp::HtoD, 192 << 10),
        launch(),
        Op::DeviceSync,
        uvm(UvmOp::CpuFault, 0),
        uvm(UvmOp::DtoH, 4 << 10),
        Op::Free { slot: "m".into() },
    ]);
    let (dir, path) = traced("managed", &s, "gpu,api,uvm");
    // cupti-sim's migrations to the GPU are coherence, to the host eviction.
    let expect = "EXPECT case=managed kernels=1 kernel.fill=1 uvm_bytes.coherence.HtoD=262144 \
                  uvm_bytes.any.DtoH=4096 uvm_bytes.user.HtoD=0 min_uvm.HtoD=2 \
                  min_uvm.gpu_page_fault=1 min_uvm.cpu_page_fault=1 busy_exact=1\n";
    let rep = report("managed", &path, expect);
    assert!(rep.passed(), "{}", rep.render());
    assert_fails(
        "managed",
        &path,
        expect,
        "coherence.HtoD=262144",
        "coherence.HtoD=262145",
        "migrated HtoD (coherence)",
    );
    assert_fails(
        "managed",
        &path,
        expect,
        "min_uvm.HtoD=2",
        "min_uvm.HtoD=3",
        "unified-memory HtoD",
    );
    assert_fails(
        "managed",
        &path,
        expect,
        "min_uvm.HtoD=2",
        "min_uvm.HtoX=1",
        "unknown unified-memory kind",
    );
    // Without `-t uvm`, none of it.
    let (dir2, plain) = traced("managed-off", &s, "gpu,api");
    let rep = report("managed", &plain, expect);
    assert!(
        rep.failures
            .iter()
            .any(|f| f.contains("unified-memory cpu_page_fault")),
        "{}",
        rep.render()
    );
    cleanup(dir);
    cleanup(dir2);
}
