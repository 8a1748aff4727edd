#![allow(missing_docs)]
//! Python call sites, ns per capture, over a real CPython (the system's
//! libpython3.11, or `GPU_TRACE_TEST_LIBPYTHON`), from inside Python call
//! chains of 4, 16 and 64 functions (a capture keeps 32 frames):
//!
//! - `baseline/empty_call`: an empty call through a function pointer;
//! - `walk/N`: the C API walk alone (thread-state checks, frame, code and
//!   position of each frame, references released), naming nothing;
//! - `capture/N`: what a launch pays: the walk, each code location looked
//!   up in the cache, the stack of ids interned;
//! - `no_gil/capture`: a thread that does not hold the GIL and is no
//!   Python thread (asked, refused);
//! - `layout_walk/N`: the walk by layout alone, with the GIL released
//!   inside the chain (as PyTorch releases it around an operator), naming
//!   nothing;
//! - `released/capture/N`: what such a launch pays: the walk by layout,
//!   each location looked up, the stack interned.
//!
//! Each capture there finds its locations cached and its frames already
//! materialised as frame objects. `fresh/N/*` is what a training loop
//! sees: each call a new chain of N frames (a Python loop calls `f0()` each
//! time), without a capture and with one at its innermost call; the
//! difference is the capture's cost, the frame objects CPython 3.11+ makes
//! for the walk included. `fresh/N/released_*` the same with the GIL
//! released around the innermost call: the difference is the capture by
//! layout's cost (no frame objects are made).

use cpython_sys::{Python, embed};
use criterion::Criterion;
use gpu_trace_agent::callsites::{CallSites, Layout};
use gpu_trace_model::callstack::Callstacks;
use gpu_trace_model::names::Names;
use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::Arc;

#[inline(never)]
fn empty() {}

fn main() {
    let lib = std::env::var("GPU_TRACE_TEST_LIBPYTHON")
        .unwrap_or_else(|_| embed::DEFAULT_LIBPYTHON.to_owned());
    embed::start(&lib).expect("an interpreter to measure with");
    let sites = Arc::new(
        CallSites::from_process(
            Arc::new(Names::default()),
            Arc::new(Callstacks::default()),
            gpu_trace_agent::callsites::DEPTH,
        )
        .unwrap()
        .unwrap(),
    );
    let py = Arc::new(Python::from_process().unwrap().unwrap());
    let c = Rc::new(RefCell::new(Criterion::default().configure_from_args()));
    {
        let f: fn() = empty;
        c.borrow_mut()
            .bench_function("baseline/empty_call", |b| b.iter(|| black_box(f)()));
    }
    for depth in [4usize, 16, 64] {
        let (c, sites, py) = (c.clone(), sites.clone(), py.clone());
        embed::run_nested(depth, "bench.py", move || {
            let mut c = c.borrow_mut();
            c.bench_function(&format!("walk/{depth}"), |b| {
                b.iter(|| {
                    let mut n = 0usize;
                    py.walk(|f| {
                        black_box((f.code(), f.position()));
                        n += 1;
                        n < gpu_trace_agent::callsites::DEPTH
                    });
                    n
                })
            });
            c.bench_function(&format!("capture/{depth}"), |b| {
                b.iter(|| black_box(sites.capture()))
            });
            // The captures above ran the layout self-check.
            assert_eq!(sites.layout(), Layout::Trusted);
            embed::without_gil(|| {
                assert!(sites.capture().is_some());
                c.bench_function(&format!("layout_walk/{depth}"), |b| {
                    b.iter(|| {
                        let mut n = 0usize;
                        py.walk_layout(|f| {
                            black_box((f.code(), f.position()));
                            n += 1;
                            n < gpu_trace_agent::callsites::DEPTH
                        });
                        n
                    })
                });
                c.bench_function(&format!("released/capture/{depth}"), |b| {
                    b.iter(|| black_box(sites.capture()))
                });
            })
            .unwrap();
            // The interpreter holds the GIL here; another thread is refused.
            let s = sites.clone();
            std::thread::spawn(move || {
                if depth == 4 {
                    Criterion::default()
                        .configure_from_args()
                        .bench_function("no_gil/capture", |b| b.iter(|| black_box(s.capture())));
                }
            })
            .join()
            .unwrap();
        })
        .unwrap();
    }
    thread_local! {
        static CAPTURE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        static RELEASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    for depth in [4usize, 16] {
        let s = sites.clone();
        let prog = embed::Program::new(depth, "fresh.py", move || {
            let capture = || {
                if CAPTURE.with(|c| c.get()) {
                    black_box(s.capture());
                }
            };
            if RELEASE.with(|c| c.get()) {
                embed::without_gil(capture).unwrap();
            } else {
                capture();
            }
        })
        .unwrap();
        let mut c = c.borrow_mut();
        for (name, on, release) in [
            ("without", false, false),
            ("capture", true, false),
            ("released_without", false, true),
            ("released_capture", true, true),
        ] {
            c.bench_function(&format!("fresh/{depth}/{name}"), |b| {
                b.iter_custom(|iters| {
                    CAPTURE.with(|c| c.set(on));
                    RELEASE.with(|c| c.set(release));
                    let t = std::time::Instant::now();
                    prog.run(&format!("loop({iters})")).unwrap();
                    t.elapsed()
                })
            });
        }
    }
    c.borrow_mut().final_summary();
}
