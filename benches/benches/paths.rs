#![allow(missing_docs)] // criterion_group! generates undocumented items
//! The injection's hot paths, each in ns per event:
//!
//! - `callback/*`: one CUDA API call (entry + exit callback) through the
//!   CUPTI trampoline into `injection-cuda`, with API recording off (a
//!   session records GPU work only) and on;
//! - `decode/*`: one activity record, from CUPTI's buffer to a recorded
//!   event (record iteration, kernel-class lookup, model event);
//! - `encode/*`: one model event to Perfetto packet bytes, with interning
//!   hits (steady state) and misses (a fresh sequence each time; for
//!   kernels, every event a kernel not yet described);
//! - `counters/*`: one per-kernel counter sample, recorded and encoded.
//!
//! CUPTI is the simulator's, called in this process (`cupti_sim::inproc`:
//! the real safe layer over the simulator's CUPTI functions), so this runs
//! anywhere.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cupti::activity::{self, ActivityConfig};
use cupti::callback::Subscriber;
use cupti_sim::inproc as fake;
use cupti_sys as sys;
use gpu_trace_benches::{file_tracer, kernel, kernels, launch};
use gpu_trace_cuda::bench::Paths;
use gpu_trace_model::Batch;
use gpu_trace_model::model::{CounterGroup, CounterSpec, Event, KernelCounters, Unit};
use gpu_trace_perfetto::bench::Encoding;
use std::hint::black_box;
use std::sync::Arc;

const RUNTIME: sys::CUpti_CallbackDomain = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API;

fn callback_data(site: sys::CUpti_ApiCallbackSite, params: *const u8) -> sys::CUpti_CallbackData {
    sys::CUpti_CallbackData {
        callbackSite: site,
        functionName: c"cudaLaunchKernel".as_ptr(),
        functionParams: params.cast(),
        functionReturnValue: std::ptr::null_mut(),
        symbolName: c"_Z6kernelPf".as_ptr(),
        context: 0xc0de as sys::CUcontext,
        contextUid: 3,
        correlationData: std::ptr::null_mut(),
        correlationId: 42,
    }
}

/// Ends the session and, if the path ran (a filter may skip it), checks
/// that it really recorded: a benchmark of a path that silently does
/// nothing would be worthless.
fn finish(
    tracer: gpu_trace_perfetto::Tracer,
    dir: std::path::PathBuf,
    ran: bool,
    min_gpu: usize,
    min_slices: usize,
) {
    let path = tracer.output_path().expect("file output").to_path_buf();
    tracer.shutdown(std::time::Duration::from_secs(30));
    if !ran {
        let _ = std::fs::remove_dir_all(dir);
        return;
    }
    let t = gpu_trace_reader::Trace::open(&path).expect("trace decodes");
    assert!(
        t.gpu_events.len() >= min_gpu,
        "{} GPU events",
        t.gpu_events.len()
    );
    assert!(t.slices.len() >= min_slices, "{} slices", t.slices.len());
    let _ = std::fs::remove_dir_all(dir);
}

/// The safe layer over the simulator's CUPTI.
fn fake_cupti() -> cupti::Cupti {
    // SAFETY: the table resolves each name to the simulator's function of that
    // name, with its C prototype; they are functions of this binary.
    unsafe { cupti::Cupti::from_table(fake::api(&[]), "fake") }.expect("fake CUPTI loads")
}

fn callback(c: &mut Criterion) {
    let _serial = fake::serial();
    let (tracer, dir) = file_tracer("callback");
    let paths = Arc::new(Paths::new(&tracer));
    let cupti = fake_cupti();
    let p2 = paths.clone();
    let _sub = Subscriber::subscribe(&cupti, c"gpu-trace-bench", move |cb| p2.on_callback(cb))
        .expect("subscribe");
    let params = sys::cudaLaunchKernel_v7000_params {
        func: std::ptr::null(),
        gridDim: sys::dim3 { x: 4, y: 1, z: 1 },
        blockDim: sys::dim3 { x: 128, y: 1, z: 1 },
        args: std::ptr::null_mut(),
        sharedMem: 0,
        stream: 0xabc as sys::cudaStream_t,
    };
    let id =
        sys::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000.0;
    let mut g = c.benchmark_group("callback");
    g.throughput(Throughput::Elements(1));
    let mut ran = false;
    for (label, on) in [("api_off", false), ("api_on", true)] {
        paths.set_api(on);
        g.bench_function(label, |b| {
            ran = true;
            b.iter(|| {
                let mut enter = callback_data(
                    sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
                    (&raw const params).cast(),
                );
                let mut slot: u64 = 0;
                enter.correlationData = &raw mut slot;
                fake::fire(RUNTIME, id, (&raw const enter).cast());
                let mut exit = callback_data(
                    sys::CUpti_ApiCallbackSite::CUPTI_API_EXIT,
                    (&raw const params).cast(),
                );
                exit.correlationData = &raw mut slot;
                fake::fire(RUNTIME, id, (&raw const exit).cast());
            });
            // Keep the buffers from filling: drained like the emitter does.
            tracer.flush(std::time::Duration::from_secs(10));
        });
    }
    g.finish();
    drop(_sub);
    finish(tracer, dir, ran, 0, 1);
}

/// A CUPTI-laid-out buffer of `n` concurrent-kernel records.
fn kernel_records(buf: &mut [u8], n: usize) -> usize {
    let size = fake::record_size(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL.0);
    for i in 0..n {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut k: sys::CUpti_ActivityKernel10 = unsafe { std::mem::zeroed() };
        k.kind = sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = 1_000 + i as u64 * 10;
        k.end = k.start + 5;
        k.streamId = 7;
        k.contextId = 1;
        k.correlationId = i as u32 + 1;
        (k.gridX, k.gridY, k.gridZ) = (64, 1, 1);
        (k.blockX, k.blockY, k.blockZ) = (256, 1, 1);
        k.registersPerThread = 32;
        k.name = [c"_Z6vecAddPfS_S_i", c"_Z4gemmPKfS0_Pfi"][i % 2].as_ptr();
        // SAFETY: in bounds (the caller sized the buffer); unaligned write
        // of a plain C struct.
        unsafe { std::ptr::write_unaligned(buf.as_mut_ptr().add(i * size).cast(), k) };
    }
    n * size
}

fn decode(c: &mut Criterion) {
    let _serial = fake::serial();
    let (tracer, dir) = file_tracer("decode");
    let paths = Arc::new(Paths::new(&tracer));
    let cupti = fake_cupti();
    let p2 = paths.clone();
    let _activity =
        activity::register(&cupti, ActivityConfig::default(), move |r| p2.on_records(r))
            .expect("register");
    let (request, complete) = fake::buffer_callbacks();
    const N: usize = 4096;
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(N as u64));
    let mut ran = false;
    g.bench_function("kernel_record", |b| {
        ran = true;
        b.iter_custom(|iters| {
            let mut spent = std::time::Duration::ZERO;
            for _ in 0..iters {
                let (mut buf, mut size, mut max) = (std::ptr::null_mut(), 0usize, 0usize);
                // SAFETY: the pool's own request/complete pair, as CUPTI
                // calls them: a buffer is requested, filled within its
                // size, returned.
                unsafe {
                    request(&mut buf, &mut size, &mut max);
                    let slice = std::slice::from_raw_parts_mut(buf, size);
                    let valid = kernel_records(slice, N);
                    let t = std::time::Instant::now();
                    complete(std::ptr::null_mut(), 0, buf, size, valid);
                    spent += t.elapsed();
                }
                // The emitter's work is not this path's: drain untimed.
                tracer.flush(std::time::Duration::from_secs(10));
            }
            spent
        });
    });
    g.finish();
    finish(tracer, dir, ran, N, 0);
}

fn batch(events: impl Iterator<Item = Event>) -> Vec<Batch> {
    vec![Batch {
        thread: 1,
        events: events.collect(),
        text: Vec::new(),
    }]
}

fn encode(c: &mut Criterion) {
    let (tracer, dir) = file_tracer("encode");
    let ks = kernels(&tracer, 64);
    let api = tracer.names().intern("cudaLaunchKernel");
    const N: u64 = 1024;
    let gpu = batch((0..N).map(|i| Event::Kernel(kernel(ks[(i % 64) as usize], i + 1, i * 5000))));
    // Every event a different kernel: on a fresh sequence, every one interns.
    let distinct = kernels(&tracer, N as usize);
    let gpu_distinct =
        batch((0..N).map(|i| Event::Kernel(kernel(distinct[i as usize], N + i + 1, i * 5000))));
    let calls = batch((0..N).map(|i| Event::Api(launch(api, 1, i + 1, i * 5000))));
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Elements(N));
    let mut enc = Encoding::new(&tracer);
    g.bench_function(BenchmarkId::new("kernel", "interned"), |b| {
        b.iter(|| black_box(enc.render_stages(&gpu)))
    });
    g.bench_function(BenchmarkId::new("kernel", "all_new_kernels"), |b| {
        b.iter(|| {
            enc.forget_interning();
            black_box(enc.render_stages(&gpu_distinct))
        })
    });
    g.bench_function(BenchmarkId::new("api_call", "interned"), |b| {
        b.iter(|| black_box(enc.api_calls(&calls)))
    });
    g.bench_function(BenchmarkId::new("api_call", "fresh_sequence"), |b| {
        b.iter(|| {
            enc.forget_interning();
            black_box(enc.api_calls(&calls))
        })
    });
    g.finish();
    tracer.shutdown(std::time::Duration::from_secs(30));
    let _ = std::fs::remove_dir_all(dir);
}

fn counters(c: &mut Criterion) {
    let (tracer, dir) = file_tracer("counters");
    let specs: Vec<_> = [
        "sm__throughput.avg.pct",
        "dram__bytes.sum",
        "gpu__time_duration.sum",
    ]
    .iter()
    .map(|n| tracer.register_counter(CounterSpec::new(*n, Unit::None, CounterGroup::Compute)))
    .collect();
    let sample = |i: u64| {
        KernelCounters::new(
            0,
            i + 1,
            i * 5000,
            i * 5000 + 2000,
            specs.iter().map(|&id| (id, i as f64)).collect(),
        )
    };
    const N: u64 = 1024;
    let mut g = c.benchmark_group("counters");
    g.throughput(Throughput::Elements(N));
    let rec = tracer.recorder().clone();
    g.bench_function("record", |b| {
        b.iter(|| {
            for i in 0..N {
                rec.kernel_counters(sample(i));
            }
            tracer.flush(std::time::Duration::from_secs(10));
        })
    });
    let samples = batch((0..N).map(|i| Event::KernelCounters(sample(i))));
    let mut enc = Encoding::new(&tracer);
    g.bench_function("encode", |b| b.iter(|| black_box(enc.counters(&samples))));
    g.finish();
    tracer.shutdown(std::time::Duration::from_secs(30));
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, callback, decode, encode, counters);
criterion_main!(benches);
