#![allow(missing_docs)] // criterion_group! generates undocumented items
//! `gpu-trace-reader` decoding a trace recorded through the real in-process
//! path (1M kernel launches with API slices and flows, 125k copies), in
//! bytes of trace per second. The trace is recorded once and kept in
//! cargo's target tmpdir.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpu_trace_benches::recorded_trace;
use gpu_trace_reader::{GpuEvent, Parts, Slice, Trace, Visitor};
use std::path::Path;

const LAUNCHES: u64 = 1_000_000;

fn read(c: &mut Criterion) {
    let path = recorded_trace(Path::new(env!("CARGO_TARGET_TMPDIR")), LAUNCHES);
    let bytes = std::fs::metadata(&path).expect("trace").len();
    let t = Trace::open(&path).expect("trace decodes");
    // A benchmark of a reader that silently decodes nothing would be
    // worthless.
    assert_eq!(t.kernels().count() as u64, LAUNCHES, "{:?}", t.problems);
    assert!(
        t.slices.len() as u64 >= LAUNCHES,
        "{} slices",
        t.slices.len()
    );
    let mut g = c.benchmark_group("reader");
    g.throughput(Throughput::Bytes(bytes));
    g.sample_size(10);
    g.bench_function("open", |b| b.iter(|| Trace::open(&path).expect("decodes")));
    // The streaming path `gpu-trace stats` reads through.
    g.bench_function("visit", |b| {
        b.iter(|| {
            let mut n = Count::default();
            Trace::visit(&path, &mut n).expect("decodes");
            assert_eq!(n.kernels, LAUNCHES);
            n
        })
    });
    g.finish();
}

/// Counts what a visit hands over, touching each event as a summary would.
#[derive(Default)]
struct Count {
    kernels: u64,
    dur: u64,
    slices: u64,
}

impl Visitor for Count {
    /// As `gpu-trace stats`: no kernel launches.
    fn parts(&self) -> Parts {
        Parts {
            kernel_launch: false,
        }
    }
    fn gpu_event(&mut self, e: &GpuEvent) {
        self.kernels += (e.stage == gpu_trace_reader::Stage::Kernel) as u64;
        self.dur += e.dur;
    }
    fn slice(&mut self, s: &Slice, _: u32) {
        self.slices += 1;
        self.dur += s.dur;
    }
}

criterion_group!(benches, read);
criterion_main!(benches);
