//! Decodes a trace that the in-process path (gpu-trace-perfetto) wrote
//! (`benches`' `recorded_trace(dir, 1000)`: 1000 kernel launches with their
//! API slices and submission arrows, a copy after every eighth launch, two
//! threads, 64 kernel classes), and checks what it holds.

use gpu_trace_reader::{ProblemKind, Stage, Trace};
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
            .any(|p| p.kind == ProblemKind::Cut && p.text.starts_with("trace ends mid-packet")),
        "{:?}",
        t.problems
    );
    assert!(Trace::from_bytes(&[0xff]).is_err(), "not a trace at all");
    // It stops where the last whole packet ends: the bytes up to there are
    // a whole trace with the same events.
    let at = t.truncated_at.expect("where the trace stops") as usize;
    assert!(at <= bytes.len() / 2 && at > bytes.len() / 4, "{at}");
    let whole = Trace::from_bytes(&bytes[..at]).unwrap();
    assert_eq!(whole.truncated_at, None);
    assert_eq!(whole.gpu_events, t.gpu_events);
    assert_eq!(Trace::open(TRACE).unwrap().truncated_at, None);
}

#[test]
fn empty_input_and_other_files_are_errors_naming_why() {
    use gpu_trace_reader::ReadError;
    assert!(matches!(Trace::from_bytes(&[]), Err(ReadError::Empty)));
    // Text parses as a few protobuf fields (`r` is field 14, length
    // delimited), but a trace starts with a packet.
    let passwd = "root:x:0:0:root:/root:/bin/bash\n".repeat(10);
    let e = Trace::from_bytes(passwd.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a Perfetto trace: it starts with protobuf field 14, not a TracePacket (field 1)"
    );
    let mut c = Collect::default();
    assert!(matches!(
        Trace::visit_bytes(&[], &mut c),
        Err(ReadError::Empty)
    ));
}

#[test]
fn the_sessions_sources_and_categories_are_read() {
    let t = Trace::open(TRACE).unwrap();
    assert_eq!(t.data_sources, ["track_event", "gpu.renderstages.nv"]);
    assert_eq!(t.track_event_categories, ["cuda", "nvtx"]);
}

/// Collects what [`Trace::visit`] hands over, in [`Trace::open`]'s order.
#[derive(Default)]
struct Collect {
    /// The config's data sources, with the number of GPU events, slices
    /// and counter values handed over before them.
    config: Vec<(Vec<String>, usize)>,
    gpu: Vec<gpu_trace_reader::GpuEvent>,
    slices: Vec<(gpu_trace_reader::Slice, u32)>,
    instants: Vec<gpu_trace_reader::Instant>,
    counters: Vec<gpu_trace_reader::CounterValue>,
    unordered: Vec<u64>,
}

impl gpu_trace_reader::Visitor for Collect {
    fn config(&mut self, data_sources: &[String]) {
        let before = self.gpu.len() + self.slices.len() + self.counters.len();
        self.config.push((data_sources.to_vec(), before));
    }
    fn gpu_event(&mut self, e: &gpu_trace_reader::GpuEvent) {
        self.gpu.push(e.clone());
    }
    fn slice(&mut self, s: &gpu_trace_reader::Slice, begin: u32) {
        self.slices.push((s.clone(), begin));
    }
    fn instant(&mut self, i: &gpu_trace_reader::Instant) {
        self.instants.push(i.clone());
    }
    fn counter(&mut self, c: &gpu_trace_reader::CounterValue) {
        self.counters.push(c.clone());
    }
    fn unordered_track(&mut self, track: u64) {
        self.unordered.push(track);
    }
}

/// Visits `data` and checks that it agrees with `Trace::from_bytes`.
fn visit_agrees_with_open(data: &[u8]) -> Trace {
    let whole = Trace::from_bytes(data).unwrap();
    let mut c = Collect::default();
    let rest = Trace::visit_bytes(data, &mut c).unwrap();
    assert!(c.unordered.is_empty());
    c.slices.sort_by_key(|(s, begin)| (s.ts, s.depth, *begin));
    let slices: Vec<_> = c.slices.into_iter().map(|(s, _)| s).collect();
    c.instants.sort_by_key(|i| i.ts);
    assert_eq!(c.gpu, whole.gpu_events);
    assert_eq!(slices, whole.slices);
    assert_eq!(c.instants, whole.instants);
    assert_eq!(c.counters, whole.counters);
    assert_eq!(rest.problems, whole.problems);
    assert_eq!(rest.packets, whole.packets);
    assert_eq!(rest.logs, whole.logs);
    assert_eq!(rest.devices, whole.devices);
    assert_eq!(rest.tracks, whole.tracks);
    assert_eq!(rest.losses, whole.losses);
    assert!(rest.gpu_events.is_empty() && rest.slices.is_empty());
    whole
}

#[test]
fn a_visitor_learns_the_sessions_sources_before_any_event() {
    let mut c = Collect::default();
    Trace::visit(TRACE, &mut c).unwrap();
    assert_eq!(
        c.config,
        [(
            vec!["track_event".to_owned(), "gpu.renderstages.nv".to_owned()],
            0
        )]
    );
    assert!(!c.gpu.is_empty());
}

#[test]
fn visiting_hands_over_what_open_collects() {
    let data = std::fs::read(TRACE).unwrap();
    let t = visit_agrees_with_open(&data);
    assert_eq!(t.slices.len(), 1125);
    // Cut short: the slices still open at the cut are reported the same.
    visit_agrees_with_open(&data[..data.len() * 2 / 3]);
}

/// A [`Collect`] that reads no kernel launches.
#[derive(Default)]
struct NoLaunches(Collect);

impl gpu_trace_reader::Visitor for NoLaunches {
    fn parts(&self) -> gpu_trace_reader::Parts {
        gpu_trace_reader::Parts {
            kernel_launch: false,
        }
    }
    fn gpu_event(&mut self, e: &gpu_trace_reader::GpuEvent) {
        self.0.gpu_event(e);
    }
}

#[test]
fn a_visitor_without_kernel_launches_gets_everything_else() {
    let whole = Trace::open(TRACE).unwrap();
    let mut v = NoLaunches::default();
    Trace::visit(TRACE, &mut v).unwrap();
    assert_eq!(v.0.gpu.len(), whole.gpu_events.len());
    for (got, all) in v.0.gpu.iter().zip(&whole.gpu_events) {
        if all.stage == Stage::Kernel {
            assert!(got.grid.is_none() && got.block.is_none() && got.args.is_empty());
            let mut all = all.clone();
            (all.grid, all.block) = (None, None);
            all.args.clear();
            assert_eq!(*got, all);
        } else {
            assert_eq!(got, all, "memory operations keep their args");
            assert!(got.bytes().is_some());
        }
    }
}

#[test]
fn visiting_pairs_nested_unended_and_unbegun_slices_as_open_does() {
    use gpu_trace_reader::{pb::Writer, wire};
    let mut w = Writer::new();
    let mut te = |ts: u64, ty: u64, track: u64, name: &str| {
        let mut p = Writer::new();
        p.varint(wire::packet::SEQUENCE_ID, 1)
            .varint(wire::packet::TIMESTAMP, ts)
            .nested(wire::packet::TRACK_EVENT, |t| {
                t.varint(wire::track_event::TYPE, ty)
                    .varint(wire::track_event::TRACK_UUID, track);
                if !name.is_empty() {
                    t.string(wire::track_event::NAME, name);
                }
            });
        w.bytes(wire::TRACE_PACKET, p.as_bytes());
    };
    use wire::track_event::{TYPE_INSTANT as I, TYPE_SLICE_BEGIN as B, TYPE_SLICE_END as E};
    te(5, E, 2, "");
    te(10, B, 1, "outer");
    te(10, B, 2, "other");
    te(20, B, 1, "inner");
    te(20, I, 1, "mark");
    te(30, E, 1, "");
    te(40, E, 1, "");
    te(40, E, 2, "");
    te(45, E, 3, "");
    te(50, B, 3, "open");
    te(60, B, 1, "open too");
    let t = visit_agrees_with_open(w.as_bytes());
    assert_eq!(t.slices.len(), 3);
    assert_eq!(t.problems.len(), 4, "{:?}", t.problems);
}
