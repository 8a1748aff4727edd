#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Cost of the busy % accounting the emitter runs on every kernel, copy and
//! synchronising call (`gpu_trace_perfetto`'s busy accounting), per interval added, and of
//! writing a second of it out.
//!
//! * `busy/add/one_stream`: back-to-back 5 µs kernels with 1 µs gaps, in
//!   order (a launch-bound loop);
//! * `busy/add/eight_streams`: eight streams of 500 ns kernels 6 µs apart,
//!   interleaved and disjoint (thousands of separate stretches per 10 ms);
//! * `busy/add/overlapping`: eight streams of 20 µs kernels that overlap;
//! * `busy/advance/1s`: writing the points of one second of `one_stream`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gpu_trace_perfetto::bench::BusyAccounting;
use std::hint::black_box;

const N: u64 = 100_000;

fn patterns() -> Vec<(&'static str, Vec<(u64, u64)>)> {
    let one: Vec<(u64, u64)> = (0..N).map(|i| (i * 6_000, i * 6_000 + 5_000)).collect();
    let eight: Vec<(u64, u64)> = (0..N)
        .map(|i| {
            let (round, s) = (i / 8, i % 8);
            let t = round * 6_000 + s * 700;
            (t, t + 500)
        })
        .collect();
    let overlap: Vec<(u64, u64)> = (0..N)
        .map(|i| {
            let (round, s) = (i / 8, i % 8);
            let t = round * 10_000 + s * 1_300;
            (t, t + 20_000)
        })
        .collect();
    vec![
        ("one_stream", one),
        ("eight_streams", eight),
        ("overlapping", overlap),
    ]
}

fn add(c: &mut Criterion) {
    let mut g = c.benchmark_group("busy/add");
    g.throughput(Throughput::Elements(N));
    for (name, intervals) in patterns() {
        g.bench_with_input(BenchmarkId::from_parameter(name), &intervals, |b, iv| {
            b.iter_batched(
                BusyAccounting::default,
                |mut acc| {
                    for &(s, e) in iv {
                        acc.add(1, s, e);
                    }
                    // Dropping what is held is part of the cost: the
                    // emitter writes it out eventually.
                    black_box(acc.advance(u64::MAX / 2))
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn advance(c: &mut Criterion) {
    let mut g = c.benchmark_group("busy/advance");
    // One second of a launch-bound loop: 100 intervals of 10 ms.
    let iv: Vec<(u64, u64)> = (0..166_666u64)
        .map(|i| (i * 6_000, i * 6_000 + 5_000))
        .collect();
    g.bench_function("1s", |b| {
        b.iter_batched(
            || {
                let mut acc = BusyAccounting::default();
                for &(s, e) in &iv {
                    acc.add(1, s, e);
                }
                acc
            },
            |mut acc| black_box(acc.advance(1_000_000_000)),
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, add, advance);
criterion_main!(benches);
