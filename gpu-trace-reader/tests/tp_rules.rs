//! The trace processor's rules that the reader checks itself: small traces
//! written packet by packet, each breaking one rule, and the problem the
//! reader must report (and, where the trace processor drops data, what the
//! reader drops with it). Both read paths, [`Trace::from_bytes`] and
//! [`Trace::visit_bytes`], must say the same.

use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire::{self, packet as P};
use gpu_trace_reader::{DANGLING_SUBMISSIONS, Parts, Problem, ProblemKind, Trace, Visitor};

/// A trace: packets appended as `Trace.packet` fields, and where each
/// starts.
#[derive(Default)]
struct File(Writer, Vec<usize>);

impl File {
    fn packet(&mut self, f: impl FnOnce(&mut Writer)) -> &mut Self {
        self.1.push(self.0.len());
        self.0.nested(wire::TRACE_PACKET, f);
        self
    }

    /// The byte offset of packet `i`.
    fn at(&self, i: usize) -> usize {
        self.1[i]
    }

    fn problems(&self) -> Vec<String> {
        let open = Trace::from_bytes(self.0.as_bytes()).expect("a trace");
        struct Nothing;
        impl Visitor for Nothing {
            fn parts(&self) -> Parts {
                Parts::ALL
            }
        }
        let visited = Trace::visit_bytes(self.0.as_bytes(), &mut Nothing).expect("a trace");
        // The visitor keeps no events, so it cannot check arrows.
        let without_arrows: Vec<&Problem> = open
            .problems
            .iter()
            .filter(|p| p.kind != ProblemKind::Dangling)
            .collect();
        assert!(
            open.problems
                .iter()
                .all(|p| (p.kind == ProblemKind::Dangling)
                    == p.text.starts_with(DANGLING_SUBMISSIONS))
        );
        assert_eq!(
            without_arrows,
            visited.problems.iter().collect::<Vec<_>>(),
            "both read paths"
        );
        open.problems.iter().map(ToString::to_string).collect()
    }

    fn kinds(&self) -> Vec<ProblemKind> {
        let open = Trace::from_bytes(self.0.as_bytes()).expect("a trace");
        open.problems.iter().map(|p| p.kind).collect()
    }
}

const SEQ: u64 = 7;

/// A packet of sequence `SEQ` that clears its incremental state and names
/// event 1 "launch".
fn start(p: &mut Writer) {
    p.varint(P::SEQUENCE_ID, SEQ)
        .varint(P::SEQUENCE_FLAGS, P::SEQ_INCREMENTAL_STATE_CLEARED)
        .nested(P::INTERNED_DATA, |i| {
            i.nested(wire::interned::EVENT_NAMES, |n| {
                n.varint(wire::interned::IID, 1)
                    .string(wire::interned::NAME, "launch");
            });
        });
}

/// A slice begin (or end) named by iid 1, on track 5, at `ts`.
fn slice(p: &mut Writer, ts: u64, begin: bool, submits: Option<u64>) {
    p.varint(P::SEQUENCE_ID, SEQ)
        .varint(P::SEQUENCE_FLAGS, P::SEQ_NEEDS_INCREMENTAL_STATE)
        .varint(P::TIMESTAMP, ts)
        .nested(P::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TRACK_UUID, 5);
            if begin {
                t.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_BEGIN)
                    .varint(wire::track_event::NAME_IID, 1);
                if let Some(id) = submits {
                    t.nested(wire::track_event::GPU_CORRELATION, |c| {
                        c.varint(wire::track_event::SUBMISSION_IDS, id);
                    });
                }
            } else {
                t.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_END);
            }
        });
}

fn snapshot(p: &mut Writer, clocks: &[(u64, u64, bool)]) {
    p.varint(P::SEQUENCE_ID, SEQ);
    p.nested(P::CLOCK_SNAPSHOT, |cs| {
        for &(id, ts, incremental) in clocks {
            cs.nested(wire::clock_snapshot::CLOCKS, |c| {
                c.varint(wire::clock_snapshot::CLOCK_ID, id)
                    .varint(wire::clock_snapshot::TIMESTAMP, ts);
                if incremental {
                    c.bool(wire::clock_snapshot::IS_INCREMENTAL, true);
                }
            });
        }
    });
}

fn service(p: &mut Writer, ts: u64, field: u32) {
    p.varint(P::SEQUENCE_ID, 1)
        .varint(P::TIMESTAMP, ts)
        .nested(P::SERVICE_EVENT, |e| {
            e.bool(field, true);
        });
}

#[test]
fn a_clean_trace_has_no_problem() {
    let mut f = File::default();
    f.packet(start)
        .packet(|p| slice(p, 100, true, None))
        .packet(|p| slice(p, 200, false, None));
    assert_eq!(f.problems(), Vec::<String>::new());
}

#[test]
fn a_clock_snapshot_that_goes_back_is_a_problem() {
    let mut f = File::default();
    f.packet(|p| snapshot(p, &[(6, 1_000, false), (64, 50, true)]))
        .packet(|p| snapshot(p, &[(6, 2_000, false), (64, 40, true)]));
    assert_eq!(
        f.problems(),
        [format!(
            "the ClockSnapshot at byte {} takes clock 64 of sequence 7 back (40 after 50): the trace processor stops converting from that clock and drops what is timed on it",
            f.at(1)
        )]
    );
    let mut f = File::default();
    f.packet(|p| snapshot(p, &[(6, 1_000, false), (128, 50, false)]))
        .packet(|p| snapshot(p, &[(6, 900, false), (128, 60, false)]));
    assert_eq!(
        f.problems(),
        [format!(
            "the ClockSnapshot at byte {} takes BOOTTIME back (900 after 1000): the trace processor rejects it",
            f.at(1)
        )]
    );
}

#[test]
fn packets_before_the_state_is_set_are_skipped_as_the_trace_processor_skips_them() {
    let mut f = File::default();
    // No packet clears the sequence's state first.
    f.packet(|p| slice(p, 100, true, None))
        .packet(|p| slice(p, 200, false, None));
    assert_eq!(
        f.problems(),
        [
            "2 packets of sequence 7 need incremental state it did not have (none was set by a packet clearing it, or a packet loss made it stale; the first at byte 0): the trace processor skips them, and so does this reader"
        ]
    );
    assert!(Trace::from_bytes(f.0.as_bytes()).unwrap().slices.is_empty());
}

#[test]
fn a_packet_loss_makes_the_state_stale_until_the_next_clear() {
    let mut f = File::default();
    f.packet(start)
        .packet(|p| slice(p, 100, true, None))
        .packet(|p| {
            p.bool(P::PREVIOUS_PACKET_DROPPED, true);
            slice(p, 200, false, None)
        })
        .packet(start)
        .packet(|p| slice(p, 300, true, None))
        .packet(|p| slice(p, 400, false, None));
    let problems = f.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].starts_with("1 unterminated slices on track 0x5"));
    assert!(problems[1].starts_with("1 packets of sequence 7 need incremental state"));
    assert!(
        problems[2].starts_with("the service lost packets of sequence 7 before 1 of its packets")
    );
    assert_eq!(
        f.kinds(),
        [
            ProblemKind::Unpaired { slices: 1 },
            ProblemKind::Sequence,
            ProblemKind::Sequence
        ]
    );
}

#[test]
fn an_interned_name_used_before_it_is_defined_is_a_problem() {
    let mut f = File::default();
    f.packet(|p| {
        p.varint(P::SEQUENCE_ID, SEQ)
            .varint(P::SEQUENCE_FLAGS, P::SEQ_INCREMENTAL_STATE_CLEARED);
    })
    .packet(|p| slice(p, 100, true, None))
    .packet(|p| slice(p, 200, false, None));
    assert_eq!(
        f.problems(),
        [
            "track events of sequence 7 use interned names it has not defined (before their definition, or after the sequence's state was cleared)"
        ]
    );
}

#[test]
fn an_arrow_to_gpu_work_not_in_the_trace_is_a_problem() {
    let mut f = File::default();
    f.packet(start)
        .packet(|p| slice(p, 100, true, Some(42)))
        .packet(|p| slice(p, 200, false, None));
    assert_eq!(
        f.problems(),
        [format!(
            "{DANGLING_SUBMISSIONS}: 1 (the first: launch at 100 ns, to event 42)"
        )]
    );
}

#[test]
fn slices_that_do_not_close_or_never_began_are_problems() {
    let mut f = File::default();
    f.packet(start)
        .packet(|p| slice(p, 100, false, None))
        .packet(|p| slice(p, 200, true, None));
    assert_eq!(
        f.problems(),
        [
            "slice end without begin on track 0x5",
            "1 unterminated slices on track 0x5"
        ]
    );
}

#[test]
fn events_behind_the_sort_window_are_a_problem() {
    use wire::service_event::{
        ALL_DATA_SOURCES_FLUSHED as FLUSHED, READ_TRACING_BUFFERS_COMPLETED as READ,
    };
    let mut f = File::default();
    f.packet(start).packet(|p| slice(p, 1_000, true, None));
    // Two reads of the buffers, each after two flushes: the second
    // extracts the slice begin at 1,000 ns.
    for _ in 0..2 {
        f.packet(|p| service(p, 5, FLUSHED))
            .packet(|p| service(p, 5, FLUSHED))
            .packet(|p| service(p, 5, READ));
    }
    // Its end, timed before it, arrives too late: dropped, so the slice
    // never ends.
    f.packet(|p| slice(p, 900, false, None));
    assert_eq!(
        f.problems(),
        [
            "1 unterminated slices on track 0x5".to_owned(),
            format!(
                "1 events come after the trace processor's sort window has passed them (the first at byte {}, at 900 ns, after it had sorted up to 1000 ns): it drops them, and so does this reader",
                f.at(8)
            )
        ]
    );
}

#[test]
fn a_repeated_problem_is_said_once_with_its_count() {
    let mut f = File::default();
    f.packet(start);
    for i in 0..3 {
        f.packet(|p| slice(p, 100 + i, false, None));
    }
    assert_eq!(f.problems(), ["slice end without begin on track 0x5 (×3)"]);
}
