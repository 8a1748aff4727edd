//! Decodes a trace that gpu-trace-core's in-process path wrote
//! (`benches`' `recorded_trace(dir, 1000)`: 1000 kernel launches with their
//! API slices and submission arrows, a copy after every eighth launch, two
//! threads, 64 kernel classes), and checks what it holds.

use gpu_trace_reader::{Stage, Trace};
use std::collections::HashSet;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/launches-1000.pftrace"
);

#[test]
fn every_launch_copy_and_arrow_is_decoded() {
    let t = Trace::open(TRACE).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.kernels().count(), 1000);
    assert_eq!(t.memory_ops().count(), 125);
    assert_eq!(t.slices.len(), 1125);
    let launches = t.slices.iter().filter(|s| s.name == "cudaLaunchKernel");
    assert_eq!(launches.count(), 1000);
    let ids = t.gpu_events_by_id();
    for s in &t.slices {
        assert_eq!(s.submissions.len(), 1, "{s:?}");
        let g = ids[&s.submissions[0]];
        assert!(g.ts > s.ts, "GPU work after its launch: {g:?} {s:?}");
        assert_eq!(s.dur, 3_000);
    }
    // The recording thread has a thread descriptor; the second, made-up
    // thread id (all copies, and the odd launches) has none.
    let on_threads = t.slices.iter().filter(|s| t.thread_of(s.track).is_some());
    assert_eq!(on_threads.count(), 500);
    let classes: HashSet<&str> = t
        .kernels()
        .map(|k| k.kernel.as_ref().expect("interned kernel").name.as_str())
        .collect();
    assert_eq!(classes.len(), 64);
    let k = t.kernels().next().unwrap();
    assert_eq!(
        (k.dur, k.grid, k.block),
        (2_500, Some([1024, 1, 1]), Some([256, 1, 1]))
    );
    assert_eq!(k.context.map(|c| c.api), Some(4), "CUDA context");
    let m = t.memory_ops().next().unwrap();
    assert_eq!(m.stage, Stage::Memcpy);
    assert_eq!(m.bytes(), Some(1 << 20));
    assert_eq!(t.devices.len(), 1);
    assert_eq!(t.devices[0].name, "Bench GPU");
}

#[test]
fn reading_in_chunks_and_from_memory_agree() {
    let bytes = std::fs::read(TRACE).unwrap();
    let a = Trace::open(TRACE).unwrap();
    let b = Trace::from_bytes(&bytes).unwrap();
    assert_eq!(a.gpu_events, b.gpu_events);
    assert_eq!(a.slices, b.slices);
    let mut seen = Vec::new();
    Trace::open_with(TRACE, |done, total| seen.push((done, total))).unwrap();
    assert_eq!(seen.last(), Some(&(bytes.len() as u64, bytes.len() as u64)));
}

#[test]
fn a_trace_cut_mid_packet_keeps_what_came_before() {
    let bytes = std::fs::read(TRACE).unwrap();
    let t = Trace::from_bytes(&bytes[..bytes.len() / 2]).unwrap();
    assert!(t.kernels().count() > 100, "{}", t.kernels().count());
    assert!(
        t.problems
            .iter()
            .any(|p| p.starts_with("trace ends mid-packet")),
        "{:?}",
        t.problems
    );
    assert!(Trace::from_bytes(&[0xff]).is_err(), "not a trace at all");
}
