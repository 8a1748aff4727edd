#![allow(missing_docs)] // criterion_group! generates undocumented items
//! The counters filter's cost per kernel launch and per NVTX/roctx
//! push+pop, in ns:
//!
//! - `range/push_pop/untracked`: a push and a pop while no filter looks at
//!   ranges (must be next to nothing; runs first, before tracking starts);
//! - `range/push_pop/tracked`: the same once a filter with range globs runs;
//! - `launch/*`: one launch's decision: no filter, name globs (the answer
//!   kept per kernel), range globs with three ranges open on the thread,
//!   and both with a launch window.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpu_trace_model::filter::{
    FilterSpec, KernelFilter, KernelSelector, NameBase, NameGlob, SessionFilter, Window, tx,
};
use std::hint::black_box;
use std::sync::Arc;

fn ranges(c: &mut Criterion) {
    let mut g = c.benchmark_group("range");
    g.bench_function(BenchmarkId::new("push_pop", "untracked"), |b| {
        b.iter(|| {
            tx::push(0, black_box("training step"));
            tx::pop(0);
        })
    });
    tx::start();
    tx::push(0, "epoch");
    g.bench_function(BenchmarkId::new("push_pop", "tracked"), |b| {
        b.iter(|| {
            tx::push(0, black_box("training step"));
            tx::pop(0);
        })
    });
    tx::pop(0);
    g.finish();
}

fn selector(spec: FilterSpec) -> KernelSelector<Box<str>> {
    let s = KernelSelector::new(KernelFilter::default());
    s.set(Some(&SessionFilter {
        session: 1,
        spec: Arc::new(spec),
    }));
    s
}

fn launches(c: &mut Criterion) {
    let names = vec![
        NameGlob::new("*gemm*", NameBase::Demangled),
        NameGlob::new("relu*", NameBase::Either),
    ];
    let tx_include = vec!["train*".to_owned()];
    let tx_exclude = vec!["*backward*".to_owned(), "warmup".to_owned()];
    let cases = [
        ("everything", FilterSpec::default()),
        (
            "names",
            FilterSpec {
                names: names.clone(),
                ..Default::default()
            },
        ),
        (
            "ranges",
            FilterSpec {
                tx_include: tx_include.clone(),
                tx_exclude: tx_exclude.clone(),
                ..Default::default()
            },
        ),
        (
            "names_ranges_window",
            FilterSpec {
                names,
                tx_include,
                tx_exclude,
                windows: vec![Window {
                    skip: 10,
                    count: None,
                }],
            },
        ),
    ];
    tx::start();
    for r in ["epoch 3", "training step", "forward"] {
        tx::push(0, r);
    }
    let mut g = c.benchmark_group("launch");
    for (case, spec) in cases {
        let s = selector(spec);
        let mangled = "_Z4gemmIfEvPKT_Pf";
        let picked = s.current().choose(
            || mangled,
            |m: &str| (m.to_owned(), gpu_trace_model::names::demangle(m)),
        );
        assert!(
            picked || case == "names_ranges_window",
            "{case} picks the launch"
        );
        g.bench_function(case, |b| {
            b.iter(|| {
                black_box(s.current().choose(
                    || black_box(mangled),
                    |m: &str| (m.to_owned(), gpu_trace_model::names::demangle(m)),
                ))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, ranges, launches);
criterion_main!(benches);
