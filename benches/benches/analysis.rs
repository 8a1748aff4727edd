#![allow(missing_docs)] // criterion_group! generates undocumented items
//! `gpu-trace-analysis` summarising the reader benchmark's trace (1M
//! kernel launches with API slices and flows, 125k copies), beside the
//! bare streaming read it is built on (`visit`, a visitor that only
//! counts): the ratio is what the summary costs over decoding. Then the
//! same trace with two per-kernel counters on every tenth kernel, whose
//! values are matched to their kernels in the same pass. Both traces are
//! recorded once and kept in cargo's target tmpdir.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpu_trace_analysis::{ReadOptions, summarize};
use gpu_trace_benches::{profiled_trace, recorded_trace};
use gpu_trace_reader::{GpuEvent, Parts, Slice, Trace, Visitor};
use std::path::Path;

const LAUNCHES: u64 = 1_000_000;
/// Kernels between two profiled ones.
const PROFILED_EVERY: u64 = 10;

fn analyze(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let plain = recorded_trace(dir, LAUNCHES);
    let profiled = profiled_trace(dir, LAUNCHES, PROFILED_EVERY);
    let bytes = |p: &Path| std::fs::metadata(p).expect("trace").len();
    let o = ReadOptions::default();
    // A benchmark of a summary that silently found nothing would be
    // worthless.
    let s = summarize(&[&profiled], &o).expect("trace reads");
    assert_eq!(s.all.kernel_count(), LAUNCHES);
    assert_eq!(
        s.all.counters.first().map(|c| c.kernels),
        Some(LAUNCHES / PROFILED_EVERY),
        "{:?}",
        s.files[0].warnings
    );
    assert!(
        !s.all
            .counters_by_kernel
            .iter()
            .any(|c| c.kernel.as_deref() == Some("(kernel not in the trace)")),
        "every value finds its kernel"
    );

    let mut g = c.benchmark_group("analysis");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes(&plain)));
    g.bench_function("visit", |b| {
        b.iter(|| {
            let mut n = Count::default();
            Trace::visit(&plain, &mut n).expect("decodes");
            assert_eq!(n.kernels, LAUNCHES);
            n
        })
    });
    g.bench_function("summary", |b| {
        b.iter(|| {
            let s = summarize(&[&plain], &o).expect("reads");
            assert_eq!(s.all.kernel_count(), LAUNCHES);
            s
        })
    });
    g.throughput(Throughput::Bytes(bytes(&profiled)));
    g.bench_function("summary_counters", |b| {
        b.iter(|| {
            let s = summarize(&[&profiled], &o).expect("reads");
            assert_eq!(s.all.counters.len(), 2);
            s
        })
    });
    g.finish();
}

/// Counts what a visit hands over, touching each event (the reader
/// benchmark's visitor).
#[derive(Default)]
struct Count {
    kernels: u64,
    dur: u64,
    slices: u64,
}

impl Visitor for Count {
    /// As the summary: no kernel launches.
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

criterion_group!(benches, analyze);
criterion_main!(benches);
