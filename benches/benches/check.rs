#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Cost of `gpu-check` on a full-size trace.
//!
//! * `check/empty_kernels_100k`: decoding and checking the trace of the
//!   GPU suite's full-size `empty_kernels` case (100,000 launches from 8
//!   threads, each kernel carrying the interned arguments the CUDA
//!   injection gives it), per kernel. The GPU suite checks every trace it
//!   makes, so this is the checker's share of a suite run.
//!
//! The trace is written once, before measuring, by a real tracer in this
//! process; the check is asserted to pass on it, so that the figure is
//! that of a complete check, not of an early failure.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpu_tests::{Options, check_files};
use gpu_trace_benches::{file_tracer, launch};
use gpu_trace_model::model::{ArgValue, Dim3, KernelDesc, KernelExec};
use std::time::Duration;

const LAUNCHES: u64 = 100_000;
const THREADS: u64 = 8;

/// Writes the trace and returns its path and the EXPECT line of the case.
fn full_size_trace() -> (std::path::PathBuf, std::path::PathBuf, String) {
    let (tracer, dir) = file_tracer("check");
    let names = tracer.names().clone();
    let u = ArgValue::Uint;
    let args = [
        ("launch__registers_per_thread", u(16)),
        ("launch__shared_mem_per_block_static", u(0)),
        ("launch__shared_mem_per_block_dynamic", u(0)),
        ("launch__shared_mem_config_size", u(32768)),
        ("launch__block_size", u(32)),
        ("launch__occupancy_limit_blocks", u(32)),
        ("launch__occupancy_limit_registers", u(64)),
        ("launch__occupancy_limit_shared_mem", u(32)),
        ("launch__occupancy_limit_warps", u(64)),
        (
            "sm__maximum_warps_per_active_cycle_pct",
            ArgValue::Double(50.0),
        ),
        (
            "sm__maximum_warps_avg_per_active_cycle",
            ArgValue::Double(32.0),
        ),
    ];
    let kn = tracer.kernels().names(&names, "_Z5emptyv");
    let mut desc = KernelDesc::new(kn.mangled, kn.demangled, kn.display, names.intern("sm_90"));
    desc.args = args.iter().map(|(n, v)| (names.intern(n), *v)).collect();
    let k = tracer.kernels().register(desc);
    let api = names.intern("cudaLaunchKernel_v7000");
    const { assert!(LAUNCHES.is_multiple_of(THREADS)) };
    let per = vec![LAUNCHES / THREADS; THREADS as usize];
    let rec = tracer.recorder().clone();
    std::thread::scope(|s| {
        for (i, &count) in per.iter().enumerate() {
            let rec = rec.clone();
            s.spawn(move || {
                let tid = gpu_trace_model::clock::thread_id();
                let mut t = gpu_trace_model::clock::boottime_ns();
                for j in 0..count {
                    // Correlation ids unique across threads.
                    let corr = 1 + j * THREADS + i as u64;
                    t += 50_000;
                    rec.api(launch(api, tid, corr, t));
                    // A full queue makes the recorder wait for the emitter
                    // (INJECTION_QUEUE_FULL=wait, the default): nothing is lost.
                    let mut exec = KernelExec::new(0, corr, t + 5_000, t + 8_000, k);
                    exec.context = 1;
                    exec.stream = 10 + i as u64;
                    exec.grid = Dim3::new(1, 1, 1);
                    exec.block = Dim3::new(32, 1, 1);
                    rec.kernel(exec);
                }
            });
        }
    });
    tracer.shutdown(Duration::from_secs(60));
    let path = tracer.output_path().expect("a file").to_path_buf();
    let list: Vec<String> = per.iter().map(u64::to_string).collect();
    let expect = format!(
        "EXPECT case=empty_kernels kernels={LAUNCHES} kernel.empty={LAUNCHES} threads={THREADS} \
         per_thread={} stream_per_thread=1 streams={THREADS} \
         submit_api.empty=cudaLaunchKernel grid.empty=1,1,1 block.empty=32,1,1",
        list.join(",")
    );
    (path, dir, expect)
}

fn check(c: &mut Criterion) {
    let (path, dir, expect) = full_size_trace();
    // The bench GPU is not an H200: accept any device name.
    let o = Options {
        device_name: String::new(),
        ..Options::default()
    };
    let rep = check_files("empty_kernels", "bench", &path, &expect, &o);
    assert!(rep.passed(), "{}", rep.render());
    let mut g = c.benchmark_group("check");
    g.throughput(Throughput::Elements(LAUNCHES));
    g.bench_function("empty_kernels_100k", |b| {
        b.iter(|| check_files("empty_kernels", "bench", &path, &expect, &o))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(1)).sample_size(10);
    targets = check
}
criterion_main!(benches);
