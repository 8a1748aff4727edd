//! Shared fixtures for the overhead benchmarks: a tracer writing to a
//! throw-away file, and synthetic events shaped like real ones.

use gpu_trace_core::model::{
    ApiCall, ArgValue, Device, Dim3, KernelDesc, KernelExec, KernelId, NameId, Vendor,
};
use gpu_trace_core::{Config, GpuClock, Limits, Tracer, TracerOptions};
use smallvec::smallvec;
use std::path::PathBuf;

/// A tracer in standalone mode writing into the temp directory, recording
/// GPU work, API calls and markers.
pub fn file_tracer(tag: &str) -> (Tracer, PathBuf) {
    let dir = std::env::temp_dir().join(format!("gpu-trace-bench-{}-{tag}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let config = Config {
        output: dir.join("bench.pftrace").display().to_string(),
        buffer_kb: 256 * 1024,
        ..Config::default()
    };
    let tracer = Tracer::start(TracerOptions {
        backend: gpu_trace_core::testing::BACKEND,
        config,
        clock: GpuClock::Boottime,
        limits: Limits {
            events: 1 << 20,
            text: 1 << 20,
            sealed: 64,
            ..Limits::default()
        },
        capture_ranges: false,
    })
    .expect("tracer");
    tracer.add_device(Device {
        id: 0,
        name: "Bench GPU".into(),
        vendor: Some(Vendor::Nvidia),
        arch_id: "sm_90".into(),
        sm_count: 132,
        ..Device::default()
    });
    (tracer, dir)
}

/// Registers `n` kernel classes shaped like PyTorch's.
pub fn kernels(tracer: &Tracer, n: usize) -> Vec<KernelId> {
    let names = tracer.names();
    let regs = names.intern("launch__registers_per_thread");
    (0..n)
        .map(|i| {
            let kn = tracer.kernels().names(
                names,
                &format!("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEELi{i}EEEviT0_"),
            );
            tracer.kernels().register(KernelDesc {
                mangled: kn.mangled,
                demangled: kn.demangled,
                display: kn.display,
                arch: names.intern("sm_90"),
                args: vec![(regs, ArgValue::Uint(32))],
            })
        })
        .collect()
}

/// A kernel execution record.
pub fn kernel(kernel: KernelId, corr: u64, t: u64) -> KernelExec {
    KernelExec {
        device: 0,
        context: 1,
        stream: 7,
        correlation_id: corr,
        start: t,
        end: t + 2_500,
        kernel,
        grid: Dim3::new(1024, 1, 1),
        block: Dim3::new(256, 1, 1),
        // As both backends write it: the CUDA backend leaves waves out (13
        // bytes a kernel, derivable from the grid and the class's
        // occupancy), and HIP has no occupancy to derive them from.
        waves_per_sm: None,
        graph_node: 0,
    }
}

/// A launch API call.
pub fn launch(name: NameId, thread: u32, corr: u64, t: u64) -> ApiCall {
    ApiCall {
        name,
        thread,
        start: t,
        end: t + 3_000,
        correlation_id: corr,
        submits: true,
        waits: smallvec![],
        status: 0,
    }
}
