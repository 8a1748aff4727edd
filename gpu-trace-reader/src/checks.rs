//! What Perfetto's trace processor would reject or drop in a trace, found
//! while decoding, so that a problem shows in [`crate::Trace::problems`]
//! whether or not anyone loads the file in the trace processor. Each check
//! follows the trace processor's own rule (v59: `ClockSynchronizer`,
//! `TraceSorter`, `ProtoTraceReader`) and says what it would do.
//!
//! Memory is bounded: problems are kept once each with a count, up to a
//! limit, and the per-key state of each check is capped.

use crate::problem::{Problem, ProblemKind};
use rustc_hash::FxHashMap;

/// At most this many distinct problem lines; later ones are counted.
const MAX_PROBLEMS: usize = 200;

/// What the reader keeps of a trace at most, whatever the trace claims,
/// so that a hostile or damaged file cannot make it grow without bound
/// (a few bytes of file each, these grew memory 12 to 45 times the file's
/// size). Past a limit the rest is counted and said in a problem line.
/// Each is far above what a real trace has.
pub(crate) mod limits {
    /// Packet sequences (one per trace writer: a thread of a data source).
    pub(crate) const SEQUENCES: usize = 1 << 16;
    /// Tracks whose slices are being paired while streaming, and track
    /// descriptors kept.
    pub(crate) const TRACKS: usize = 1 << 16;
    /// Slices open at once while streaming, over all tracks.
    pub(crate) const OPEN_SLICES: usize = 1 << 18;
    /// Processes described.
    pub(crate) const PROCESSES: usize = 1 << 16;
    /// GPU log lines kept.
    pub(crate) const LOG_LINES: usize = 1 << 16;
    /// Interned entries held at once, over all sequences.
    pub(crate) const INTERNED: usize = 1 << 20;
}

/// What was left out for a limit: counts, said once the trace is read.
#[derive(Default)]
pub(crate) struct OverLimits {
    /// Packets of sequences past [`limits::SEQUENCES`].
    pub(crate) sequence_packets: u64,
    /// Slice begins and ends on tracks past [`limits::TRACKS`].
    pub(crate) track_events: u64,
    /// Slices begun past [`limits::OPEN_SLICES`].
    pub(crate) open_slices: u64,
    /// Track descriptors of tracks past [`limits::TRACKS`].
    pub(crate) descriptors: u64,
    /// Process descriptors of processes past [`limits::PROCESSES`].
    pub(crate) processes: u64,
    /// Log lines past [`limits::LOG_LINES`].
    pub(crate) logs: u64,
    /// Interned entries past [`limits::INTERNED`].
    pub(crate) interned: u64,
}

impl OverLimits {
    /// One problem line per limit that was reached.
    pub(crate) fn finish(&self, problems: &mut Problems) {
        let int = |n: usize| {
            let d = n.to_string();
            let mut out = String::new();
            for (i, c) in d.chars().enumerate() {
                if i > 0 && (d.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let lines = [
            (
                self.sequence_packets,
                format!(
                    "packets of sequences past the first {} (this reader's limit) are left out",
                    int(limits::SEQUENCES)
                ),
            ),
            (
                self.track_events,
                format!(
                    "slice begins and ends on tracks past the first {} (this reader's limit) are not paired into slices, only counted",
                    int(limits::TRACKS)
                ),
            ),
            (
                self.open_slices,
                format!(
                    "slices begun while {} were open (this reader's limit) are not kept, only counted",
                    int(limits::OPEN_SLICES)
                ),
            ),
            (
                self.descriptors,
                format!(
                    "track descriptors past the first {} tracks (this reader's limit) are left out",
                    int(limits::TRACKS)
                ),
            ),
            (
                self.processes,
                format!(
                    "process descriptors past the first {} processes (this reader's limit) are left out",
                    int(limits::PROCESSES)
                ),
            ),
            (
                self.logs,
                format!(
                    "GPU log lines past the first {} (this reader's limit) are left out",
                    int(limits::LOG_LINES)
                ),
            ),
            (
                self.interned,
                format!(
                    "interned entries past {} held at once (this reader's limit) are left out: what refers to them is unresolved",
                    int(limits::INTERNED)
                ),
            ),
        ];
        for (n, what) in lines {
            if n > 0 {
                problems.push_first(ProblemKind::OverLimit, format!("{n} {what}"));
            }
        }
    }
}

/// Problems in the order first seen, each once, with how often it came
/// up.
#[derive(Default)]
pub(crate) struct Problems {
    lines: Vec<Problem>,
    index: FxHashMap<String, usize>,
    more: u64,
    /// Problems said before all others, whatever came first: damage, a
    /// cut, a limit of the reader. A few kinds, each once.
    first: Vec<Problem>,
}

impl Problems {
    pub(crate) fn push(&mut self, kind: ProblemKind, p: String) {
        self.push_n(kind, p, 1);
    }

    /// A problem to say before all others (see `first`).
    pub(crate) fn push_first(&mut self, kind: ProblemKind, p: String) {
        if !self.first.iter().any(|f| f.text == p) {
            self.first.push(Problem::new(kind, p));
        }
    }

    /// `p`, `n` times over.
    pub(crate) fn push_n(&mut self, kind: ProblemKind, p: String, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(&i) = self.index.get(&p) {
            self.lines[i].count = self.lines[i].count.saturating_add(n);
        } else if self.lines.len() < MAX_PROBLEMS {
            self.index.insert(p.clone(), self.lines.len());
            self.lines.push(Problem {
                kind,
                text: p,
                count: n,
            });
        } else {
            self.more = self.more.saturating_add(n);
        }
    }

    /// The problems, the first ones first.
    pub(crate) fn into_problems(self) -> Vec<Problem> {
        let mut out = self.first;
        out.extend(self.lines);
        if self.more > 0 {
            out.push(Problem::new(
                ProblemKind::OverLimit,
                format!("and {} more problems of other kinds, not listed", self.more),
            ));
        }
        out
    }
}

/// Clock snapshots that go back. The trace processor keeps, for each
/// clock and each set of clocks snapshotted together, the values in file
/// order; a value below the one before is "not monotonic". For the trace
/// clock (BOOTTIME) it rejects the snapshot (`invalid_clock_snapshots`);
/// any other clock it stops converting from, so events timed on it are
/// dropped.
#[derive(Default)]
pub(crate) struct ClockMonotony {
    /// (clock, its sequence if sequence-scoped, the snapshot's clock set)
    /// → the last value.
    last: FxHashMap<(u32, u32, u64), u64>,
}

/// The clock-state entries kept at most (a hostile trace cannot grow it).
const MAX_CLOCK_KEYS: usize = 1 << 16;

/// Sequence-scoped clock ids.
fn sequence_scoped(id: u32) -> bool {
    (64..128).contains(&id)
}

impl ClockMonotony {
    /// Checks one snapshot of `clocks` (id, value) on sequence `seq`, read
    /// at byte `at`.
    pub(crate) fn snapshot(
        &mut self,
        clocks: &[(u32, u64)],
        seq: u32,
        boottime: u32,
        at: u64,
        problems: &mut Problems,
    ) {
        let scope = |id: u32| if sequence_scoped(id) { seq } else { 0 };
        let mut ids: Vec<(u32, u32)> = clocks.iter().map(|&(id, _)| (id, scope(id))).collect();
        ids.sort_unstable();
        let set = ids.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &(id, s)| {
            (h ^ ((id as u64) << 32 | s as u64)).wrapping_mul(0x0100_0000_01b3)
        });
        for &(id, value) in clocks {
            let key = (id, scope(id), set);
            let room = self.last.len() < MAX_CLOCK_KEYS;
            match self.last.get_mut(&key) {
                Some(last) => {
                    if value < *last {
                        problems.push(ProblemKind::Clock, if id == boottime {
                            format!(
                                "the ClockSnapshot at byte {at} takes BOOTTIME back ({value} after {}): the trace processor rejects it",
                                *last
                            )
                        } else {
                            format!(
                                "the ClockSnapshot at byte {at} takes clock {id}{} back ({value} after {}): the trace processor stops converting from that clock and drops what is timed on it",
                                if sequence_scoped(id) {
                                    format!(" of sequence {seq}")
                                } else {
                                    String::new()
                                },
                                *last
                            )
                        });
                    }
                    *last = value;
                }
                None if room => {
                    self.last.insert(key, value);
                }
                None => {}
            }
        }
    }
}

/// The trace processor's sort window. It sorts packets by time, but where
/// the service marked its reads of the buffers (`TracingServiceEvent`
/// `all_data_sources_flushed` and `read_tracing_buffers_completed`), it
/// sorts only up to them: at a read marker after two flushes since the
/// last such extraction, the events before the previous extraction's
/// marker are extracted in time order (stopping at the first that comes
/// after that marker in the file), and an event that arrives later with an
/// earlier time than the last extracted is dropped
/// (`sorter_push_event_out_of_order`). A timestamp it cannot convert yet
/// makes it sort the whole trace instead, which drops nothing.
#[derive(Default)]
pub(crate) struct SortWindow {
    /// Events pushed so far (their file order).
    events: u64,
    flushes: u32,
    /// Events before this one are extracted at the next qualifying read.
    limit: u64,
    /// The time of the last extracted event.
    latest: Option<u64>,
    /// Not yet extracted: (time, file order).
    pending: Vec<(u64, u64)>,
    full_sort: bool,
    /// Dropped events: how many, and the first one's byte and time.
    dropped: u64,
    first: Option<(u64, u64, u64)>,
}

/// Pending events kept at most; past that (a huge trace with no read
/// markers, which the trace processor sorts whole) the check stops.
const MAX_PENDING: usize = 1 << 24;

impl SortWindow {
    /// An event at time `ts`, read at byte `at`: false if the trace
    /// processor drops it.
    pub(crate) fn event(&mut self, ts: u64, at: u64) -> bool {
        if self.full_sort {
            return true;
        }
        if let Some(latest) = self.latest
            && ts < latest
        {
            self.dropped += 1;
            self.first.get_or_insert((at, ts, latest));
            return false;
        }
        if self.pending.len() >= MAX_PENDING {
            self.full_sort = true;
            self.pending = Vec::new();
            return true;
        }
        self.pending.push((ts, self.events));
        self.events += 1;
        true
    }

    /// A timestamp that cannot be converted yet: the trace processor
    /// defers the packet and sorts the whole trace.
    pub(crate) fn unconvertible(&mut self) {
        self.full_sort = true;
        self.pending = Vec::new();
    }

    /// `all_data_sources_flushed`.
    pub(crate) fn flush(&mut self) {
        self.flushes += 1;
    }

    /// `read_tracing_buffers_completed`.
    pub(crate) fn read(&mut self) {
        if self.full_sort || self.flushes < 2 {
            return;
        }
        self.pending.sort_unstable();
        let n = self
            .pending
            .iter()
            .take_while(|&&(_, order)| order < self.limit)
            .count();
        if n > 0 {
            self.latest = Some(self.pending[n - 1].0);
            self.pending.drain(..n);
        }
        self.limit = self.events;
        self.flushes = 0;
    }

    /// The problem, if events were dropped.
    pub(crate) fn finish(self, problems: &mut Problems) {
        if let Some((at, ts, latest)) = self.first {
            problems.push(ProblemKind::Order, format!(
                "{} events come after the trace processor's sort window has passed them (the first at byte {at}, at {ts} ns, after it had sorted up to {latest} ns): it drops them, and so does this reader",
                self.dropped
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_kept_once_with_a_count_and_bounded() {
        let mut p = Problems::default();
        for _ in 0..3 {
            p.push(ProblemKind::Malformed, "a".into());
        }
        p.push(ProblemKind::Clock, "b".into());
        for i in 0..MAX_PROBLEMS + 5 {
            p.push(ProblemKind::Malformed, format!("x{i}"));
        }
        let problems = p.into_problems();
        assert_eq!(problems[0].to_string(), "a (×3)");
        assert_eq!(
            (problems[0].kind, problems[0].count),
            (ProblemKind::Malformed, 3)
        );
        assert_eq!(problems[1].to_string(), "b");
        assert_eq!(problems[1].kind, ProblemKind::Clock);
        assert_eq!(problems.len(), MAX_PROBLEMS + 1);
        let last = problems.last().unwrap();
        assert_eq!(last.text, "and 7 more problems of other kinds, not listed");
        assert_eq!(last.kind, ProblemKind::OverLimit);
    }

    #[test]
    fn a_clock_going_back_within_one_set_is_a_problem() {
        let mut c = ClockMonotony::default();
        let mut p = Problems::default();
        c.snapshot(&[(6, 100), (64, 5)], 3, 6, 0, &mut p);
        c.snapshot(&[(6, 200), (64, 9)], 3, 6, 10, &mut p);
        // Another sequence's clock 64 is another clock.
        c.snapshot(&[(6, 300), (64, 1)], 4, 6, 20, &mut p);
        assert!(p.lines.is_empty());
        c.snapshot(&[(6, 400), (64, 2)], 3, 6, 30, &mut p);
        c.snapshot(&[(6, 350)], 3, 6, 40, &mut p);
        // BOOTTIME alone is another set: no problem yet.
        assert_eq!(p.lines.len(), 1, "{:?}", p.lines);
        assert!(
            p.lines[0]
                .text
                .contains("clock 64 of sequence 3 back (2 after 9)")
        );
        c.snapshot(&[(6, 390), (64, 20)], 3, 6, 50, &mut p);
        assert!(
            p.lines[1]
                .text
                .contains("takes BOOTTIME back (390 after 400)")
        );
    }

    #[test]
    fn the_sort_window_drops_what_comes_after_an_extraction() {
        let mut w = SortWindow::default();
        w.event(10, 0);
        w.event(30, 1);
        w.flush();
        w.flush();
        w.read(); // Extracts nothing (limit 0), marks 2 events.
        w.event(20, 2); // Not yet extracted past: kept.
        w.flush();
        w.flush();
        w.read(); // Extracts 10, 20? No: 20 came after the mark; 10 only.
        assert_eq!(w.latest, Some(10));
        w.event(5, 3); // Earlier than 10: dropped.
        w.event(15, 4);
        w.flush();
        w.flush();
        w.read(); // Extracts 20 and 30 (both before the mark), not 15.
        // Sorted: 15 (after the mark) stops the extraction at once.
        assert_eq!(w.latest, Some(10));
        w.flush();
        w.flush();
        w.read(); // Now 15, 20, 30 are all before the mark.
        assert_eq!(w.latest, Some(30));
        w.event(25, 5);
        let mut p = Problems::default();
        w.finish(&mut p);
        assert_eq!(
            p.lines[0].text,
            "2 events come after the trace processor's sort window has passed them (the first at byte 3, at 5 ns, after it had sorted up to 10 ns): it drops them, and so does this reader"
        );
    }

    #[test]
    fn without_two_flushes_nothing_is_extracted() {
        let mut w = SortWindow::default();
        w.event(10, 0);
        w.flush();
        w.read();
        w.flush();
        w.read();
        w.event(5, 1);
        assert_eq!(w.dropped, 0);
    }
}
