#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Cost of one event from the model into Perfetto.
//!
//! * `baseline/fn_ptr`: an empty call through a function pointer, the floor
//!   every other number compares against.
//! * `record/*`: what an application thread pays to hand an event over
//!   (the per-thread buffer push), at 1, 4 and 16 threads. Measured as the
//!   recording threads' CPU time, so that a machine with fewer cores than
//!   threads still shows contention (a shared lock would show up as futex
//!   time) rather than time spent waiting for a core.
//! * `record_and_emit/*`: the whole path, including the emitter thread
//!   encoding and writing the packets into a live in-process session and
//!   the service writing the file: the process's CPU time.
//!
//! Every figure is per event (criterion's "time" of one element).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gpu_trace_benches::{file_tracer, kernel, kernels, launch};
use rustix::time::{ClockId, clock_gettime};
use std::hint::black_box;
use std::sync::Barrier;
use std::time::Duration;

fn empty(x: u64) -> u64 {
    x
}

fn baseline(c: &mut Criterion) {
    let f: fn(u64) -> u64 = black_box(empty);
    c.bench_function("baseline/fn_ptr", |b| b.iter(|| f(black_box(1))));
}

const BATCH: u64 = 10_000;

fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn process_cpu() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Runs `per_thread` on `threads` threads released together and returns the
/// CPU time they spent, summed.
fn parallel(threads: u64, per_thread: impl Fn(u64) + Sync) -> Duration {
    let barrier = Barrier::new(threads as usize);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, f) = (&barrier, &per_thread);
                s.spawn(move || {
                    barrier.wait();
                    let t0 = thread_cpu();
                    f(t);
                    thread_cpu() - t0
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn record(c: &mut Criterion) {
    let (tracer, dir) = file_tracer("record");
    let ks = kernels(&tracer, 64);
    let api = tracer.names().intern("cudaLaunchKernel");
    let rec = tracer.recorder().clone();
    let mut g = c.benchmark_group("record");
    for threads in [1u64, 4, 16] {
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(
            BenchmarkId::new("kernel", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += parallel(threads, |t| {
                            for i in 0..BATCH {
                                rec.kernel(kernel(ks[(i % 64) as usize], t << 32 | i, i));
                            }
                        });
                        // Empty the buffers outside the timed region.
                        tracer.flush(Duration::from_secs(30));
                    }
                    total / (BATCH * threads) as u32
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("api_call", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += parallel(threads, |t| {
                            let tid = gpu_trace_model::clock::thread_id();
                            for i in 0..BATCH {
                                rec.api(launch(api, tid, t << 32 | i, i));
                            }
                        });
                        tracer.flush(Duration::from_secs(30));
                    }
                    total / (BATCH * threads) as u32
                })
            },
        );
    }
    g.finish();
    tracer.shutdown(Duration::from_secs(30));
    let _ = std::fs::remove_dir_all(dir);
}

fn record_and_emit(c: &mut Criterion) {
    let (tracer, dir) = file_tracer("emit");
    let ks = kernels(&tracer, 64);
    let api = tracer.names().intern("cudaLaunchKernel");
    let rec = tracer.recorder().clone();
    let mut g = c.benchmark_group("record_and_emit");
    for threads in [1u64, 4] {
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(
            BenchmarkId::new("kernel", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let t0 = process_cpu();
                    for _ in 0..iters {
                        parallel(threads, |t| {
                            for i in 0..BATCH {
                                rec.kernel(kernel(ks[(i % 64) as usize], t << 32 | i, i));
                            }
                        });
                        tracer.flush(Duration::from_secs(30));
                    }
                    (process_cpu() - t0) / (BATCH * threads) as u32
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("kernel_with_api_call", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let t0 = process_cpu();
                    for _ in 0..iters {
                        parallel(threads, |t| {
                            let tid = gpu_trace_model::clock::thread_id();
                            for i in 0..BATCH {
                                let corr = t << 32 | i;
                                rec.api(launch(api, tid, corr, i));
                                rec.kernel(kernel(ks[(i % 64) as usize], corr, i + 5_000));
                            }
                        });
                        tracer.flush(Duration::from_secs(30));
                    }
                    (process_cpu() - t0) / (BATCH * threads) as u32
                })
            },
        );
    }
    g.finish();
    tracer.shutdown(Duration::from_secs(30));
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1)).sample_size(20);
    targets = baseline, record, record_and_emit
}
criterion_main!(benches);
