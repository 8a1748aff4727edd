//! Packet decoding: per-sequence interning and incremental state, resolved
//! the way trace_processor resolves them.

use crate::DANGLING_SUBMISSIONS;
use crate::checks::{ClockMonotony, OverLimits, Problems, SortWindow, limits};
use crate::model::{
    ArgVal, Args, CallFrame, Callstack, Context, CounterUnits, CounterValue, DeviceInfo, GpuEvent,
    Instant, KernelInfo, LogLine, ProcessInfo, Slice, Stage, Str, Thread, TrackInfo,
};
use crate::pb::{DecodeError, Fields, Value};
use crate::problem::ProblemKind;
use crate::stats::trace_stats;
use crate::trace::Trace;
use crate::visit::{Parts, Visitor};
use crate::wire;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// An interned `GpuRenderStageSpecification` (a stage or a hardware queue).
struct Spec {
    name: Str,
    description: Str,
    stage: Stage,
}

/// An interned `InternedGraphicsContext`.
#[derive(Clone, Copy)]
struct ContextInfo {
    pid: i64,
    api: u64,
}

/// One counter of an interned `GpuCounterDescriptor`.
#[derive(Clone, Default)]
struct CounterSpec {
    name: Str,
    description: Str,
    groups: Vec<u64>,
    units: CounterUnits,
}

/// An interned counter descriptor: the GPU it is for and its counters by id.
struct CounterDesc {
    gpu_id: i64,
    specs: FxHashMap<u64, CounterSpec>,
}

/// A sequence-scoped incremental clock, anchored by a `ClockSnapshot`.
struct IncrementalClock {
    /// The clock's current value (the sum of deltas since the snapshot).
    value: u64,
    /// BOOTTIME at the snapshot.
    boot_at_base: u64,
    /// The clock's value at the snapshot.
    base: u64,
}

/// A point of a global custom clock (`ClockSnapshot`): its value and
/// BOOTTIME at the same instant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ClockPoint {
    value: u64,
    boot: u64,
}

/// The incremental state of one packet sequence.
#[derive(Default)]
struct Seq {
    specs: FxHashMap<u64, Spec>,
    contexts: FxHashMap<u64, ContextInfo>,
    kernels: FxHashMap<u64, Arc<KernelInfo>>,
    arg_names: FxHashMap<u64, Str>,
    event_names: FxHashMap<u64, Str>,
    annotation_names: FxHashMap<u64, Str>,
    counter_descs: FxHashMap<u64, CounterDesc>,
    /// Call stacks: function names and source paths (`InternedString`),
    /// frames (function iid, path iid, line), and stacks resolved when
    /// interned.
    function_names: FxHashMap<u64, Str>,
    source_paths: FxHashMap<u64, Str>,
    frames: FxHashMap<u64, (u64, u64, u32)>,
    callstacks: FxHashMap<u64, Callstack>,
    default_clock: Option<u32>,
    default_track: Option<u64>,
    /// By clock id: a sequence has one or two, looked up every packet.
    incremental: Vec<(u32, IncrementalClock)>,
    /// Whether its incremental state is set: as for the trace processor,
    /// only from a packet that clears it, until a packet loss.
    valid: bool,
}

impl Seq {
    /// Interned entries held.
    fn entries(&self) -> usize {
        self.specs.len()
            + self.contexts.len()
            + self.kernels.len()
            + self.arg_names.len()
            + self.event_names.len()
            + self.annotation_names.len()
            + self.counter_descs.len()
            + self.function_names.len()
            + self.source_paths.len()
            + self.frames.len()
            + self.callstacks.len()
    }

    /// The stack of these frame iids; a frame this sequence does not
    /// define is named so.
    fn resolve_stack(&self, frames: &[u64]) -> Callstack {
        let name = |m: &FxHashMap<u64, Str>, iid: u64| m.get(&iid).cloned().unwrap_or_default();
        frames
            .iter()
            .map(|f| match self.frames.get(f) {
                Some(&(func, file, line)) => CallFrame {
                    function: name(&self.function_names, func),
                    file: name(&self.source_paths, file),
                    line,
                },
                None => CallFrame {
                    function: format!("<unresolved frame {f}>").into(),
                    file: Str::default(),
                    line: 0,
                },
            })
            .collect()
    }
}

/// A packet's timestamp, in BOOTTIME or still on a global custom clock
/// (resolved once every snapshot is known).
#[derive(Clone, Copy)]
enum Ts {
    Boot(u64),
    Custom { clock: u32, value: u64 },
}

/// A timestamp on a custom clock, to be written into item `index` of the
/// GPU events or counters at the end.
struct Pending {
    index: usize,
    clock: u32,
    value: u64,
}

/// Where a track event sorts and what it does; begins and instants have
/// their content in [`RawTe`] at `slot` (ends carry nothing else).
pub(crate) struct TeKey {
    pub(crate) ts: u64,
    /// File order, among equal times.
    pub(crate) order: u32,
    pub(crate) slot: u32,
    pub(crate) ty: u64,
    pub(crate) track: u64,
}

/// The content of a slice begin or an instant, before pairing.
pub(crate) struct RawTe {
    pub(crate) name: Str,
    pub(crate) submissions: Vec<u64>,
    pub(crate) waits: Vec<u64>,
    pub(crate) gpu_api: Option<u64>,
    pub(crate) args: Args,
    pub(crate) callstack: Option<Callstack>,
}

/// A slice begun on a track, while [`Trace::visit`] streams.
struct OpenSlice {
    slice: Slice,
    /// Its begin's position among the track events.
    order: u32,
}

/// One track's state while streaming.
#[derive(Default)]
struct TrackState {
    /// The open slices, `open[..depth]`; those after them ended and are
    /// kept to be reused in place, with their allocations.
    open: Vec<OpenSlice>,
    depth: usize,
    /// The latest timestamp seen on the track.
    last: u64,
    /// Whether its events came out of time order (the visitor was told).
    unordered: bool,
}

/// What [`Trace::visit`] keeps instead of the events it hands over.
struct Stream<'v> {
    v: &'v mut dyn Visitor,
    /// What `v` reads.
    parts: Parts,
    /// The GPU event being decoded, reused.
    gpu: GpuEvent,
    /// The values of the counter event being decoded, reused.
    counters: Vec<CounterValue>,
    /// The track event being decoded, reused.
    raw: RawTe,
    tracks: FxHashMap<u64, TrackState>,
    /// Track events so far (begins, ends and instants).
    order: u32,
    /// Slice ends without a begin, by track: the first one's time and
    /// order (what the problems sort by), and how many; at most
    /// [`limits::TRACKS`] tracks, the ends on others counted alone.
    unmatched: FxHashMap<u64, (u64, u32, u64)>,
    unmatched_elsewhere: u64,
    /// Slots of open slices held, over all tracks.
    open_slots: usize,
    /// Begins and ends on tracks past the limit, and begins past the
    /// limit of open slices.
    over_tracks: u64,
    over_open: u64,
    /// Custom clocks used before any snapshot of them, deduplicated as
    /// `finish` deduplicates its messages.
    unclocked_gpu: Vec<u32>,
    unclocked_counters: Vec<u32>,
}

/// What the packets decode into, apart from the sequences' state.
struct Out<'v> {
    t: Trace,
    /// Set when the events go to a visitor instead of into `t`.
    stream: Option<Stream<'v>>,
    /// Track events, for sorting and pairing.
    te: Vec<Option<RawTe>>,
    te_keys: Vec<TeKey>,
    gpu_pending: Vec<Pending>,
    counter_pending: Vec<Pending>,
    snapshots: FxHashMap<u32, Vec<ClockPoint>>,
    empty: Str,
    problems: Problems,
    clocks: ClockMonotony,
    window: SortWindow,
    /// The byte offset of the packet being decoded.
    at: u64,
    /// By sequence: packets skipped for want of incremental state, and
    /// packet losses the service marked (count, first byte offset).
    skipped: FxHashMap<u32, (u64, u64)>,
    lost: FxHashMap<u32, (u64, u64)>,
    /// The first packet whose content is malformed: its byte offset, where
    /// in it the damage is (also the file's offset) and what it is.
    damaged: Option<(u64, u64, &'static str)>,
    /// What was left out for a limit.
    over: OverLimits,
    /// Where each process is in the trace's list.
    process_index: FxHashMap<i64, usize>,
    /// Interned entries held, over all sequences.
    interned: usize,
}

/// Decodes packets one at a time.
pub(crate) struct Decoder<'v> {
    /// Sequences by id: their state in `seq_state`.
    seqs: FxHashMap<u32, usize>,
    seq_state: Vec<Seq>,
    /// The last packet's sequence and its index: packets mostly come in
    /// runs of one sequence.
    last_seq: Option<(u32, usize)>,
    out: Out<'v>,
}

/// Payload fields this reader decodes.
fn is_payload(n: u32) -> bool {
    matches!(
        n,
        wire::packet::CLOCK_SNAPSHOT
            | wire::packet::GPU_RENDER_STAGE_EVENT
            | wire::packet::TRACK_EVENT
            | wire::packet::TRACK_DESCRIPTOR
            | wire::packet::GPU_COUNTER_EVENT
            | wire::packet::GPU_LOG
            | wire::packet::GPU_INFO
            | wire::packet::TRACE_STATS
            | wire::packet::TRACE_CONFIG
    )
}

fn blank_event(empty: &Str, seq_id: u32) -> GpuEvent {
    GpuEvent {
        event_id: 0,
        ts: 0,
        dur: 0,
        gpu_id: None,
        stage: Stage::Other(empty.clone()),
        name: empty.clone(),
        queue: empty.clone(),
        queue_description: empty.clone(),
        context: None,
        kernel: None,
        grid: None,
        block: None,
        args: Vec::new(),
        sequence: seq_id,
    }
}

/// The BOOTTIME of `value` on custom clock `clock`, from the snapshots
/// (sorted), if the clock has any.
fn resolve(snapshots: &FxHashMap<u32, Vec<ClockPoint>>, clock: u32, value: u64) -> Option<u64> {
    match snapshots.get(&clock) {
        Some(list) if !list.is_empty() => {
            let i = list.partition_point(|c| c.value <= value);
            let c = list[i.saturating_sub(1)];
            Some((c.boot as i128 + (value as i128 - c.value as i128)) as u64)
        }
        _ => None,
    }
}

fn push_dedup(list: &mut Vec<u32>, clock: u32) {
    if list.last() != Some(&clock) {
        list.push(clock);
    }
}

impl<'v> Decoder<'v> {
    /// A decoder that collects everything into its [`Trace`], or, with a
    /// visitor, hands GPU events, slices, instants and counter values to
    /// it as they complete.
    pub(crate) fn new(visitor: Option<&'v mut dyn Visitor>) -> Self {
        let empty = Str::from("");
        Self {
            seqs: FxHashMap::default(),
            seq_state: Vec::new(),
            last_seq: None,
            out: Out {
                t: Trace::default(),
                stream: visitor.map(|v| Stream {
                    parts: v.parts(),
                    v,
                    gpu: blank_event(&empty, 0),
                    counters: Vec::new(),
                    raw: RawTe::blank(&empty),
                    tracks: FxHashMap::default(),
                    order: 0,
                    unmatched: FxHashMap::default(),
                    unmatched_elsewhere: 0,
                    open_slots: 0,
                    over_tracks: 0,
                    over_open: 0,
                    unclocked_gpu: Vec::new(),
                    unclocked_counters: Vec::new(),
                }),
                te: Vec::new(),
                te_keys: Vec::new(),
                gpu_pending: Vec::new(),
                counter_pending: Vec::new(),
                snapshots: FxHashMap::default(),
                empty,
                problems: Problems::default(),
                clocks: ClockMonotony::default(),
                window: SortWindow::default(),
                at: 0,
                skipped: FxHashMap::default(),
                lost: FxHashMap::default(),
                damaged: None,
                over: OverLimits::default(),
                process_index: FxHashMap::default(),
                interned: 0,
            },
        }
    }

    /// Makes room for the events of a trace of `bytes` bytes, so that the
    /// vectors do not grow (and copy) many times. Rough sizes of
    /// gpu-trace's packets: a GPU event about 60 bytes, a track event 40.
    pub(crate) fn reserve_for(&mut self, bytes: u64) {
        if self.out.stream.is_some() {
            return;
        }
        let n = |per: u64| (bytes / per).min(1 << 28) as usize;
        self.out.t.gpu_events.reserve(n(160));
        self.out.te_keys.reserve(n(64));
        self.out.te.reserve(n(128));
    }

    /// A problem said before all others (a cut).
    pub(crate) fn problem_first(&mut self, kind: ProblemKind, p: String) {
        self.out.problems.push_first(kind, p);
    }

    /// The next packet starts at byte `at` of the file.
    pub(crate) fn at(&mut self, at: u64) {
        self.out.at = at;
    }

    /// The input ends at byte `at` with part of a packet.
    pub(crate) fn truncated_at(&mut self, at: u64) {
        self.out.t.truncated_at = Some(at);
    }

    /// The packet at byte `at` is malformed at byte `bad`: what of it
    /// came before the damage is read, the rest left out. Mostly that is
    /// all of it: the packet's fields are all checked before any is used,
    /// and each payload before it is used; interned entries before the
    /// damage in one payload are kept.
    pub(crate) fn damaged_packet(&mut self, at: u64, bad: u64, what: &'static str) {
        self.out.t.damaged_packets += 1;
        self.out.damaged.get_or_insert((at, bad, what));
    }

    /// Bytes that cannot start a packet at byte `at` (of an input of
    /// `size` bytes, if known): the read stops there.
    pub(crate) fn damaged_at(&mut self, at: u64, what: &str, size: Option<u64>) {
        self.out.t.damaged_at = Some(at);
        let rest = match size {
            Some(s) => format!("the {} bytes from there are not read", s.saturating_sub(at)),
            None => "the rest is not read".to_owned(),
        };
        self.out.problems.push_first(
            ProblemKind::Damaged,
            format!("the trace is damaged at byte {at} ({what}): read up to there; {rest}"),
        );
    }

    /// Decodes one `TracePacket`.
    pub(crate) fn packet(&mut self, p: &[u8]) -> Result<(), DecodeError> {
        self.out.t.packets += 1;
        let mut seq_id = 0u32;
        let mut flags = 0u64;
        let mut ts = None;
        let mut clock = None;
        let mut state = false;
        let (mut cleared, mut dropped) = (false, false);
        let mut service_event = None;
        // Most packets carry one payload; more than two are decoded in a
        // second pass.
        let mut payloads: [(u32, &[u8]); 2] = [(0, &[]); 2];
        let mut n_payloads = 0;
        for f in Fields::new(p) {
            let (n, v) = f?;
            match n {
                wire::packet::SEQUENCE_ID => seq_id = v.as_u64().unwrap_or(0) as u32,
                wire::packet::SEQUENCE_FLAGS => flags = v.as_u64().unwrap_or(0),
                wire::packet::TIMESTAMP => ts = v.as_u64(),
                wire::packet::TIMESTAMP_CLOCK_ID => clock = v.as_u64().map(|c| c as u32),
                wire::packet::DEFAULTS | wire::packet::INTERNED_DATA => state = true,
                wire::packet::INCREMENTAL_STATE_CLEARED => cleared = v.as_u64() == Some(1),
                wire::packet::PREVIOUS_PACKET_DROPPED => dropped = v.as_u64() == Some(1),
                wire::packet::SERVICE_EVENT => service_event = v.as_bytes(),
                n if is_payload(n) => {
                    if let Value::Len(b) = v {
                        if n_payloads < payloads.len() {
                            payloads[n_payloads] = (n, b);
                        }
                        n_payloads += 1;
                    }
                }
                _ => {}
            }
        }
        if let Some(b) = service_event {
            for (n, v) in Fields::new(b).map_while(Result::ok) {
                match n {
                    wire::service_event::ALL_DATA_SOURCES_FLUSHED if v.as_u64() == Some(1) => {
                        self.out.window.flush()
                    }
                    wire::service_event::READ_TRACING_BUFFERS_COMPLETED
                        if v.as_u64() == Some(1) =>
                    {
                        self.out.window.read()
                    }
                    _ => {}
                }
            }
        }
        let known = self.seqs.contains_key(&seq_id);
        if !known && self.seqs.len() >= limits::SEQUENCES {
            self.out.over.sequence_packets += 1;
            return Ok(());
        }
        if cleared || flags & wire::packet::SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            let fresh = Seq {
                valid: true,
                ..Seq::default()
            };
            match self.seqs.get(&seq_id) {
                Some(&i) => {
                    let old = std::mem::replace(&mut self.seq_state[i], fresh);
                    self.out.interned -= old.entries();
                }
                None => {
                    self.seqs.insert(seq_id, self.seq_state.len());
                    self.seq_state.push(fresh);
                }
            }
        } else if dropped && known {
            // The service lost packets of this sequence before this one
            // (on a sequence's first packet the flag only says that it
            // cannot know). Its state is stale until the next clear.
            let e = self.out.lost.entry(seq_id).or_insert((0, self.out.at));
            e.0 += 1;
            let i = self.seqs[&seq_id];
            self.seq_state[i].valid = false;
        }
        let i = match self.last_seq {
            Some((id, i)) if id == seq_id => i,
            _ => {
                let next = self.seq_state.len();
                let i = *self.seqs.entry(seq_id).or_insert(next);
                if i == next {
                    self.seq_state.push(Seq::default());
                }
                self.last_seq = Some((seq_id, i));
                i
            }
        };
        let seq = &mut self.seq_state[i];
        // Defaults and interned data first: they apply to this packet too.
        // Interned data on a sequence whose state is not set is ignored, as
        // the trace processor ignores it.
        if state {
            for f in Fields::new(p) {
                match f? {
                    (wire::packet::DEFAULTS, Value::Len(b)) => defaults(seq, b),
                    (wire::packet::INTERNED_DATA, Value::Len(b)) if seq.valid => {
                        intern(seq, b, &mut self.out.interned, &mut self.out.over)?
                    }
                    _ => {}
                }
            }
        }
        if flags & wire::packet::SEQ_NEEDS_INCREMENTAL_STATE != 0 && !seq.valid {
            // The trace processor skips the packet; so does this reader.
            let e = self.out.skipped.entry(seq_id).or_insert((0, self.out.at));
            e.0 += 1;
            return Ok(());
        }
        let out = &mut self.out;
        let clock_id = clock.or(seq.default_clock).unwrap_or(wire::clock::BOOTTIME);
        let raw_ts = ts.unwrap_or(0);
        let stamp = if clock_id == wire::clock::BOOTTIME || ts.is_none() {
            Ts::Boot(raw_ts)
        } else if clock_id >= 128 {
            if !out.t.custom_clocks_used.contains(&clock_id) {
                out.t.custom_clocks_used.push(clock_id);
            }
            Ts::Custom {
                clock: clock_id,
                value: raw_ts,
            }
        } else if let Some((_, c)) = seq.incremental.iter_mut().find(|(id, _)| *id == clock_id) {
            c.value = c.value.wrapping_add(raw_ts);
            Ts::Boot(c.boot_at_base.wrapping_add(c.value.wrapping_sub(c.base)))
        } else {
            // Other builtin clocks are not converted by this reader.
            Ts::Boot(raw_ts)
        };
        // What the trace processor's sorter sees: every timestamped packet
        // but clock snapshots and service events, which it reads at once.
        let snapshot = payloads[..n_payloads.min(payloads.len())]
            .iter()
            .any(|&(n, _)| n == wire::packet::CLOCK_SNAPSHOT);
        if ts.is_some() && service_event.is_none() && !snapshot {
            let boot = match stamp {
                Ts::Boot(v) => Some(v),
                Ts::Custom { clock, value } => resolve(&out.snapshots, clock, value),
            };
            match boot {
                Some(v) => {
                    if !out.window.event(v, out.at) {
                        return Ok(());
                    }
                }
                None => out.window.unconvertible(),
            }
        }
        if n_payloads <= payloads.len() {
            for &(n, b) in &payloads[..n_payloads] {
                out.payload(seq, seq_id, n, b, stamp, ts.is_some())?;
            }
        } else {
            for f in Fields::new(p) {
                if let (n, Value::Len(b)) = f?
                    && is_payload(n)
                {
                    out.payload(seq, seq_id, n, b, stamp, ts.is_some())?;
                }
            }
        }
        Ok(())
    }

    /// Resolves custom clocks and pairs slices.
    pub(crate) fn finish(self) -> Trace {
        let mut out = self.out;
        if let Some(st) = out.stream.take() {
            return finish_stream(out, st);
        }
        let mut problems = Vec::new();
        let snapshots = &out.snapshots;
        let mut resolve = |p: &Pending| -> u64 {
            resolve(snapshots, p.clock, p.value).unwrap_or_else(|| {
                problems.push(format!("clock {} used without a ClockSnapshot", p.clock));
                p.value
            })
        };
        for p in &out.gpu_pending {
            out.t.gpu_events[p.index].ts = resolve(p);
        }
        for p in &out.counter_pending {
            out.t.counters[p.index].ts = resolve(p);
        }
        problems.dedup();
        problems
            .into_iter()
            .for_each(|p| out.problems.push(ProblemKind::Clock, p));
        let (te, keys) = (
            std::mem::take(&mut out.te),
            std::mem::take(&mut out.te_keys),
        );
        out.t.pair_slices(te, keys, &mut out.problems);
        dangling_submissions(&out.t, &mut out.problems);
        out.sequence_problems();
        out.t.problems = out.problems.into_problems();
        out.t
    }
}

/// The end of a [`Trace::visit`]: problems in the order [`Trace::open`]
/// reports them, and the slices that never ended.
fn finish_stream(mut out: Out<'_>, st: Stream<'_>) -> Trace {
    let snapshots = &out.snapshots;
    let mut problems: Vec<String> = st
        .unclocked_gpu
        .iter()
        .chain(&st.unclocked_counters)
        .filter(|&&c| resolve(snapshots, c, 0).is_none())
        .map(|c| format!("clock {c} used without a ClockSnapshot"))
        .collect();
    problems.dedup();
    problems
        .into_iter()
        .for_each(|p| out.problems.push(ProblemKind::Clock, p));
    let mut unmatched: Vec<(u64, (u64, u32, u64))> = st.unmatched.into_iter().collect();
    unmatched.sort_by_key(|(_, (ts, order, _))| (*ts, *order));
    for (track, (_, _, n)) in unmatched {
        out.problems.push_n(
            ProblemKind::Unpaired { slices: 1 },
            format!("slice end without begin on track {track:#x}"),
            n,
        );
    }
    if st.unmatched_elsewhere > 0 {
        out.problems.push(
            ProblemKind::Unpaired {
                slices: st.unmatched_elsewhere,
            },
            format!(
                "{} slice ends without begin on other tracks",
                st.unmatched_elsewhere
            ),
        );
    }
    out.over.track_events += st.over_tracks;
    out.over.open_slices += st.over_open;
    let mut open: Vec<(u64, usize)> = st
        .tracks
        .iter()
        .filter(|(_, s)| s.depth > 0)
        .map(|(t, s)| (*t, s.depth))
        .collect();
    open.sort_unstable();
    for (track, n) in open {
        out.problems.push(
            ProblemKind::Unpaired { slices: n as u64 },
            format!("{n} unterminated slices on track {track:#x}"),
        );
    }
    out.sequence_problems();
    out.t.problems = out.problems.into_problems();
    out.t
}

/// Submission arrows (API call → GPU work) to GPU events the trace does not
/// have: the trace processor draws no arrow for them. Only [`Trace::open`]
/// and friends check them (a visitor keeps no events).
fn dangling_submissions(t: &Trace, problems: &mut Problems) {
    let ids: rustc_hash::FxHashSet<u64> = t.gpu_events.iter().map(|e| e.event_id).collect();
    let mut n = 0u64;
    let mut first = None;
    for s in &t.slices {
        for id in s.submissions.iter().filter(|id| !ids.contains(id)) {
            n += 1;
            first.get_or_insert((s.name.clone(), s.ts, *id));
        }
    }
    if let Some((name, ts, id)) = first {
        problems.push(
            ProblemKind::Dangling,
            format!("{DANGLING_SUBMISSIONS}: {n} (the first: {name} at {ts} ns, to event {id})"),
        );
    }
}

impl Out<'_> {
    /// The problems of sequences and of the sort window, once the whole
    /// trace is read.
    fn sequence_problems(&mut self) {
        let mut skipped: Vec<_> = self.skipped.iter().collect();
        skipped.sort_unstable();
        for (seq, (n, at)) in skipped {
            self.problems.push(ProblemKind::Sequence, format!(
                "{n} packets of sequence {seq} need incremental state it did not have (none was set by a packet clearing it, or a packet loss made it stale; the first at byte {at}): the trace processor skips them, and so does this reader"
            ));
        }
        let mut lost: Vec<_> = self.lost.iter().collect();
        lost.sort_unstable();
        for (seq, (n, at)) in lost {
            self.problems.push(ProblemKind::Sequence, format!(
                "the service lost packets of sequence {seq} before {n} of its packets (previous_packet_dropped; the first at byte {at})"
            ));
        }
        std::mem::take(&mut self.window).finish(&mut self.problems);
        self.over.finish(&mut self.problems);
        if let Some((at, bad, what)) = self.damaged {
            let n = self.t.damaged_packets;
            self.problems.push_first(ProblemKind::Damaged, format!(
                "{n} packet{} malformed inside, left out from the damage on (the first at byte {at}: {what} at byte {bad})",
                if n == 1 { " is" } else { "s are" }
            ));
        }
    }
}

impl Stream<'_> {
    /// Pairs a track event with the open slices of its track, in file
    /// order.
    fn track_event(&mut self, ty: u64, track: u64, ts: u64) {
        let e = &mut self.raw;
        let order = self.order;
        self.order = self.order.wrapping_add(1);
        if !self.tracks.contains_key(&track) && self.tracks.len() >= limits::TRACKS {
            // No state for another track: its instants still go out,
            // its slices are counted.
            if ty == wire::track_event::TYPE_INSTANT {
                let i = Instant {
                    track,
                    name: e.name.clone(),
                    ts,
                    args: std::mem::take(&mut e.args),
                };
                self.v.instant(&i);
                e.args = i.args;
            } else {
                self.over_tracks += 1;
            }
            return;
        }
        let t = self.tracks.entry(track).or_default();
        if ts < t.last && !t.unordered {
            t.unordered = true;
            self.v.unordered_track(track);
        }
        t.last = t.last.max(ts);
        match ty {
            wire::track_event::TYPE_SLICE_BEGIN => {
                let depth = t.depth as u32;
                t.depth += 1;
                // The vectors change places with an ended slice's, which
                // the next track event reuses. A begin past the limit of
                // open slices holds no slot (nor do those inside it): its
                // end finds none either.
                let room = t.open.len() == depth as usize && self.open_slots < limits::OPEN_SLICES;
                match t.open.get_mut(depth as usize) {
                    Some(o) => {
                        let s = &mut o.slice;
                        s.track = track;
                        set_str(&mut s.name, &e.name);
                        s.ts = ts;
                        s.dur = 0;
                        s.depth = depth;
                        std::mem::swap(&mut s.submissions, &mut e.submissions);
                        std::mem::swap(&mut s.waits, &mut e.waits);
                        s.gpu_api = e.gpu_api;
                        std::mem::swap(&mut s.args, &mut e.args);
                        s.callstack = e.callstack.take();
                        o.order = order;
                    }
                    None if room => {
                        self.open_slots += 1;
                        t.open.push(OpenSlice {
                            slice: Slice {
                                track,
                                name: e.name.clone(),
                                ts,
                                dur: 0,
                                depth,
                                submissions: std::mem::take(&mut e.submissions),
                                waits: std::mem::take(&mut e.waits),
                                gpu_api: e.gpu_api,
                                args: std::mem::take(&mut e.args),
                                callstack: e.callstack.take(),
                            },
                            order,
                        })
                    }
                    None => self.over_open += 1,
                }
            }
            wire::track_event::TYPE_SLICE_END => match t.depth.checked_sub(1) {
                Some(d) => {
                    t.depth = d;
                    if let Some(o) = t.open.get_mut(d) {
                        o.slice.dur = ts.saturating_sub(o.slice.ts);
                        self.v.slice(&o.slice, o.order);
                    }
                }
                None => {
                    let room = self.unmatched.len() < limits::TRACKS;
                    match self.unmatched.get_mut(&track) {
                        Some(u) => u.2 += 1,
                        None if room => {
                            self.unmatched.insert(track, (ts, order, 1));
                        }
                        None => self.unmatched_elsewhere += 1,
                    }
                }
            },
            _ => {
                let i = Instant {
                    track,
                    name: e.name.clone(),
                    ts,
                    args: std::mem::take(&mut e.args),
                };
                self.v.instant(&i);
                e.args = i.args;
            }
        }
    }
}

impl Out<'_> {
    /// A track event named `n` interned ids its sequence does not define.
    fn unresolved_names(problems: &mut Problems, n: u64, seq_id: u32) {
        if n > 0 {
            problems.push(ProblemKind::Unresolved, format!(
                "track events of sequence {seq_id} use interned names it has not defined (before their definition, or after the sequence's state was cleared)"
            ));
        }
    }

    fn payload(
        &mut self,
        seq: &mut Seq,
        seq_id: u32,
        n: u32,
        b: &[u8],
        stamp: Ts,
        has_ts: bool,
    ) -> Result<(), DecodeError> {
        match n {
            wire::packet::CLOCK_SNAPSHOT => {
                let clocks = parse_snapshot(b)?;
                let values: Vec<(u32, u64)> = clocks.iter().map(|c| (c.id, c.value)).collect();
                self.clocks.snapshot(
                    &values,
                    seq_id,
                    wire::clock::BOOTTIME,
                    self.at,
                    &mut self.problems,
                );
                let boot = clocks
                    .iter()
                    .find(|c| c.id == wire::clock::BOOTTIME)
                    .map(|c| c.value);
                if let Some(boot) = boot {
                    for c in &clocks {
                        if c.id >= 128 {
                            // Kept sorted: a streaming read resolves
                            // against the snapshots read so far.
                            let list = self.snapshots.entry(c.id).or_default();
                            let p = ClockPoint {
                                value: c.value,
                                boot,
                            };
                            let at = list.partition_point(|x| *x <= p);
                            list.insert(at, p);
                        } else if c.incremental {
                            let clock = IncrementalClock {
                                value: c.value,
                                boot_at_base: boot,
                                base: c.value,
                            };
                            match seq.incremental.iter_mut().find(|(id, _)| *id == c.id) {
                                Some((_, x)) => *x = clock,
                                None => seq.incremental.push((c.id, clock)),
                            }
                        }
                    }
                }
            }
            wire::packet::GPU_RENDER_STAGE_EVENT => {
                if let Some(st) = &mut self.stream {
                    let e = &mut st.gpu;
                    render_stage(seq, b, seq_id, &self.empty, &mut self.problems, e, st.parts)?;
                    e.ts = match stamp {
                        Ts::Boot(v) => v,
                        Ts::Custom { clock, value } => resolve(&self.snapshots, clock, value)
                            .unwrap_or_else(|| {
                                push_dedup(&mut st.unclocked_gpu, clock);
                                value
                            }),
                    };
                    st.v.gpu_event(e);
                    return Ok(());
                }
                let mut e = blank_event(&self.empty, seq_id);
                render_stage(
                    seq,
                    b,
                    seq_id,
                    &self.empty,
                    &mut self.problems,
                    &mut e,
                    Parts::ALL,
                )?;
                match stamp {
                    Ts::Boot(v) => e.ts = v,
                    Ts::Custom { clock, value } => self.gpu_pending.push(Pending {
                        index: self.t.gpu_events.len(),
                        clock,
                        value,
                    }),
                }
                self.t.gpu_events.push(e);
            }
            wire::packet::TRACK_EVENT => {
                let Ts::Boot(v) = stamp else {
                    self.problems.push(
                        ProblemKind::Clock,
                        "track event on a custom clock (not supported by this reader)".into(),
                    );
                    return Ok(());
                };
                let is_pairable = |ty| {
                    matches!(
                        ty,
                        wire::track_event::TYPE_SLICE_BEGIN
                            | wire::track_event::TYPE_SLICE_END
                            | wire::track_event::TYPE_INSTANT
                    )
                };
                if let Some(st) = &mut self.stream {
                    let mut unresolved = 0;
                    let (ty, track) =
                        track_event(seq, b, &self.empty, &mut st.raw, &mut unresolved)?;
                    Self::unresolved_names(&mut self.problems, unresolved, seq_id);
                    if is_pairable(ty) {
                        st.track_event(ty, track, v);
                    }
                    return Ok(());
                }
                let mut e = RawTe::blank(&self.empty);
                let mut unresolved = 0;
                let (ty, track) = track_event(seq, b, &self.empty, &mut e, &mut unresolved)?;
                Self::unresolved_names(&mut self.problems, unresolved, seq_id);
                if !is_pairable(ty) {
                    return Ok(());
                }
                self.te_keys.push(TeKey {
                    ts: v,
                    order: self.te_keys.len() as u32,
                    slot: self.te.len() as u32,
                    ty,
                    track,
                });
                if ty != wire::track_event::TYPE_SLICE_END {
                    self.te.push(Some(e));
                }
            }
            wire::packet::TRACK_DESCRIPTOR => {
                let (uuid, info, process) = track_descriptor(b)?;
                if self.t.tracks.len() < limits::TRACKS || self.t.tracks.contains_key(&uuid) {
                    self.t.tracks.insert(uuid, info);
                } else {
                    self.over.descriptors += 1;
                }
                if let Some(p) = process {
                    let at = match stamp {
                        Ts::Boot(v) if has_ts => v,
                        _ => 0,
                    };
                    describe_process(
                        &mut self.t.processes,
                        &mut self.process_index,
                        &mut self.over,
                        p,
                        at,
                    );
                }
            }
            wire::packet::GPU_COUNTER_EVENT => {
                if !has_ts {
                    self.problems.push(
                        ProblemKind::Malformed,
                        "counter event without timestamp".into(),
                    );
                }
                if let Some(st) = &mut self.stream {
                    st.counters.clear();
                    counter_event(seq, b, &mut st.counters, &mut self.problems)?;
                    for c in &mut st.counters {
                        c.ts = match stamp {
                            Ts::Boot(v) => v,
                            Ts::Custom { clock, value } => resolve(&self.snapshots, clock, value)
                                .unwrap_or_else(|| {
                                    push_dedup(&mut st.unclocked_counters, clock);
                                    value
                                }),
                        };
                        st.v.counter(c);
                    }
                    return Ok(());
                }
                let first = self.t.counters.len();
                counter_event(seq, b, &mut self.t.counters, &mut self.problems)?;
                match stamp {
                    Ts::Boot(v) => self.t.counters[first..].iter_mut().for_each(|c| c.ts = v),
                    Ts::Custom { clock, value } => {
                        for index in first..self.t.counters.len() {
                            self.counter_pending.push(Pending {
                                index,
                                clock,
                                value,
                            });
                        }
                    }
                }
            }
            wire::packet::GPU_LOG => {
                let mut l = gpu_log(b)?;
                l.ts = match stamp {
                    Ts::Boot(v) => v,
                    Ts::Custom { clock, value } => {
                        resolve(&self.snapshots, clock, value).unwrap_or(value)
                    }
                };
                if self.t.logs.len() < limits::LOG_LINES {
                    self.t.logs.push(l);
                } else {
                    self.over.logs += 1;
                }
            }
            wire::packet::GPU_INFO => self.t.devices = gpu_info(b)?,
            wire::packet::TRACE_STATS => self.t.losses = Some(trace_stats(b)?),
            wire::packet::TRACE_CONFIG => {
                config_sources(b, &mut self.t)?;
                if let Some(st) = &mut self.stream {
                    st.v.config(&self.t.data_sources);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn s(v: &Value<'_>) -> String {
    v.as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

fn text(v: &Value<'_>) -> Str {
    Str::from_utf8_lossy(v.as_bytes().unwrap_or_default())
}

fn defaults(seq: &mut Seq, b: &[u8]) {
    for (n, v) in Fields::new(b).map_while(Result::ok) {
        match n {
            wire::packet::DEFAULTS_CLOCK_ID => seq.default_clock = v.as_u64().map(|c| c as u32),
            wire::packet::DEFAULTS_TRACK_EVENT => {
                for (tn, tv) in Fields::new(v.as_bytes().unwrap_or_default()).map_while(Result::ok)
                {
                    if tn == wire::track_event::TRACK_UUID {
                        seq.default_track = tv.as_u64();
                    }
                }
            }
            _ => {}
        }
    }
}

fn intern(
    seq: &mut Seq,
    b: &[u8],
    held: &mut usize,
    over: &mut OverLimits,
) -> Result<(), DecodeError> {
    // Stacks are resolved once the whole message is read: their frames may
    // come after them in it.
    let mut stacks: Vec<(u64, Vec<u64>)> = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        let Value::Len(m) = v else { continue };
        match n {
            wire::interned::FUNCTION_NAMES => {
                let (iid, name) = iid_name(m)?;
                keep(&mut seq.function_names, held, over, iid, name);
            }
            wire::interned::SOURCE_PATHS => {
                let (iid, name) = iid_name(m)?;
                keep(&mut seq.source_paths, held, over, iid, name);
            }
            wire::interned::FRAMES => {
                let (mut iid, mut frame) = (0, (0, 0, 0));
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    let x = v.as_u64().unwrap_or(0);
                    match n {
                        wire::frame::IID => iid = x,
                        wire::frame::FUNCTION_NAME_ID => frame.0 = x,
                        wire::frame::SOURCE_PATH_IID => frame.1 = x,
                        wire::frame::LINE_NUMBER => frame.2 = x as u32,
                        _ => {}
                    }
                }
                keep(&mut seq.frames, held, over, iid, frame);
            }
            wire::interned::CALLSTACKS => {
                let (mut iid, mut frames) = (0, Vec::new());
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match (n, v) {
                        (wire::callstack::IID, v) => iid = v.as_u64().unwrap_or(0),
                        (wire::callstack::FRAME_IDS, Value::Varint(x)) => frames.push(x),
                        (wire::callstack::FRAME_IDS, Value::Len(p)) => packed(p, &mut frames)?,
                        _ => {}
                    }
                }
                stacks.push((iid, frames));
            }
            wire::interned::GPU_SPECIFICATIONS => {
                let (mut iid, mut name, mut description) = (0, None, None);
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::spec::IID => iid = v.as_u64().unwrap_or(0),
                        wire::spec::NAME => name = Some(text(&v)),
                        wire::spec::DESCRIPTION => description = Some(text(&v)),
                        _ => {}
                    }
                }
                let name = name.unwrap_or_default();
                let stage = Stage::from_name(&name);
                keep(
                    &mut seq.specs,
                    held,
                    over,
                    iid,
                    Spec {
                        name,
                        description: description.unwrap_or_default(),
                        stage,
                    },
                );
            }
            wire::interned::GRAPHICS_CONTEXTS => {
                let (mut iid, mut c) = (0, ContextInfo { pid: 0, api: 0 });
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::context::IID => iid = v.as_u64().unwrap_or(0),
                        wire::context::PID => c.pid = v.as_u64().unwrap_or(0) as i64,
                        wire::context::API => c.api = v.as_u64().unwrap_or(0),
                        _ => {}
                    }
                }
                keep(&mut seq.contexts, held, over, iid, c);
            }
            wire::interned::COMPUTE_KERNELS => {
                let mut iid = 0;
                let mut k = KernelInfo::default();
                for f in Fields::new(m) {
                    let (n, v) = f?;
                    match n {
                        wire::kernel::IID => iid = v.as_u64().unwrap_or(0),
                        wire::kernel::NAME => k.name = s(&v),
                        wire::kernel::DEMANGLED_NAME => k.demangled = s(&v),
                        wire::kernel::ARCH => k.arch = s(&v),
                        wire::kernel::ARGS => {
                            if let Some(a) = compute_arg(seq, v.as_bytes().unwrap_or_default())? {
                                k.args.push(a);
                            }
                        }
                        _ => {}
                    }
                }
                keep(&mut seq.kernels, held, over, iid, Arc::new(k));
            }
            wire::interned::COMPUTE_ARG_NAMES => {
                let (iid, name) = iid_name(m)?;
                keep(&mut seq.arg_names, held, over, iid, name);
            }
            wire::interned::EVENT_NAMES => {
                let (iid, name) = iid_name(m)?;
                keep(&mut seq.event_names, held, over, iid, name);
            }
            wire::interned::DEBUG_ANNOTATION_NAMES => {
                let (iid, name) = iid_name(m)?;
                keep(&mut seq.annotation_names, held, over, iid, name);
            }
            wire::interned::GPU_COUNTER_DESCRIPTORS => {
                let (iid, desc) = counter_descriptor(m)?;
                keep(&mut seq.counter_descs, held, over, iid, desc);
            }
            _ => {}
        }
    }
    for (iid, frames) in stacks {
        let stack = seq.resolve_stack(&frames);
        keep(&mut seq.callstacks, held, over, iid, stack);
    }
    Ok(())
}

/// Sets interned entry `iid` (in the arguments after `map`), unless a new
/// entry would hold more than [`limits::INTERNED`].
fn keep<V>(map: &mut FxHashMap<u64, V>, held: &mut usize, over: &mut OverLimits, iid: u64, v: V) {
    if let Some(slot) = map.get_mut(&iid) {
        *slot = v;
    } else if *held < limits::INTERNED {
        map.insert(iid, v);
        *held += 1;
    } else {
        over.interned += 1;
    }
}

fn counter_descriptor(m: &[u8]) -> Result<(u64, CounterDesc), DecodeError> {
    let mut iid = 0;
    let mut d = CounterDesc {
        gpu_id: 0,
        specs: FxHashMap::default(),
    };
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            wire::counters::IDESC_IID => iid = v.as_u64().unwrap_or(0),
            wire::counters::IDESC_GPU_ID => d.gpu_id = v.as_u64().unwrap_or(0) as i64,
            wire::counters::IDESC_DESCRIPTOR => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    if n != wire::counters::DESC_SPECS {
                        continue;
                    }
                    let mut id = 0;
                    let mut sp = CounterSpec::default();
                    for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                        let (n, v) = f?;
                        let x = || v.as_u64().unwrap_or(0);
                        match n {
                            wire::counters::SPEC_COUNTER_ID => id = x(),
                            wire::counters::SPEC_NAME => sp.name = text(&v),
                            wire::counters::SPEC_DESCRIPTION => sp.description = text(&v),
                            wire::counters::SPEC_GROUPS => sp.groups.push(x()),
                            wire::counters::SPEC_NUM_UNITS => sp.units.numerator.push(x()),
                            wire::counters::SPEC_DEN_UNITS => sp.units.denominator.push(x()),
                            _ => {}
                        }
                    }
                    d.specs.insert(id, sp);
                }
            }
            _ => {}
        }
    }
    Ok((iid, d))
}

fn iid_name(m: &[u8]) -> Result<(u64, Str), DecodeError> {
    let (mut iid, mut name) = (0, None);
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            wire::interned::IID => iid = v.as_u64().unwrap_or(0),
            wire::interned::NAME => name = Some(text(&v)),
            _ => {}
        }
    }
    Ok((iid, name.unwrap_or_default()))
}

fn compute_arg(seq: &Seq, m: &[u8]) -> Result<Option<(Str, ArgVal)>, DecodeError> {
    let (mut name, mut val) = (None, None);
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            wire::arg::NAME_IID => {
                let iid = v.as_u64().unwrap_or(0);
                name = Some(match seq.arg_names.get(&iid) {
                    Some(n) => n.clone(),
                    None => format!("<unresolved arg name {iid}>").into(),
                });
            }
            wire::arg::NAME => name = Some(text(&v)),
            wire::arg::INT => val = v.as_u64().map(|x| ArgVal::Int(x as i64)),
            wire::arg::UINT => val = v.as_u64().map(ArgVal::Uint),
            wire::arg::DOUBLE => val = v.as_f64().map(ArgVal::Double),
            wire::arg::STRING => val = Some(ArgVal::Str(s(&v))),
            _ => {}
        }
    }
    Ok(name.zip(val))
}

/// How many args a `ComputeKernelLaunch` has, to allocate them once.
fn count_args(launch: Option<&[u8]>) -> usize {
    Fields::new(launch.unwrap_or_default())
        .map_while(Result::ok)
        .filter(|(n, _)| *n == wire::rse::LAUNCH_ARGS)
        .count()
}

fn dim3(m: &[u8]) -> Result<[u32; 3], DecodeError> {
    let mut d = [0u32; 3];
    for f in Fields::new(m) {
        let (n, v) = f?;
        let x = v.as_u64().unwrap_or(0) as u32;
        match n {
            wire::rse::X => d[0] = x,
            wire::rse::Y => d[1] = x,
            wire::rse::Z => d[2] = x,
            _ => {}
        }
    }
    Ok(d)
}

/// Points `dst` at `src`'s text, unless it already does: most events share
/// their queue, stage and name with the event before, so the reused event
/// mostly keeps its strings without touching their reference counts.
#[inline]
fn set_str(dst: &mut Str, src: &Str) {
    if !Str::ptr_eq(dst, src) {
        *dst = src.clone();
    }
}

/// A compute arg's name and value as they are on the wire, before they are
/// stored.
enum WireName<'s> {
    Interned(&'s Str),
    Owned(Str),
}

enum WireVal<'b> {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(&'b [u8]),
}

impl WireName<'_> {
    fn as_str(&self) -> &Str {
        match self {
            WireName::Interned(s) => s,
            WireName::Owned(s) => s,
        }
    }
}

/// Decodes a `ComputeKernelArg` without storing it.
#[inline]
fn wire_arg<'s, 'b>(
    seq: &'s Seq,
    m: &'b [u8],
) -> Result<Option<(WireName<'s>, WireVal<'b>)>, DecodeError> {
    let (mut name, mut val) = (None, None);
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            wire::arg::NAME_IID => {
                let iid = v.as_u64().unwrap_or(0);
                name = Some(match seq.arg_names.get(&iid) {
                    Some(n) => WireName::Interned(n),
                    None => WireName::Owned(format!("<unresolved arg name {iid}>").into()),
                });
            }
            wire::arg::NAME => name = Some(WireName::Owned(text(&v))),
            wire::arg::INT => val = v.as_u64().map(|x| WireVal::Int(x as i64)),
            wire::arg::UINT => val = v.as_u64().map(WireVal::Uint),
            wire::arg::DOUBLE => val = v.as_f64().map(WireVal::Double),
            wire::arg::STRING => val = Some(WireVal::Str(v.as_bytes().unwrap_or_default())),
            _ => {}
        }
    }
    Ok(name.zip(val))
}

/// Stores arg `i` of `args` (overwriting what a reused event held there:
/// a name that is the same is not cloned, a string keeps its allocation).
fn store_arg(args: &mut Args, i: usize, name: WireName<'_>, val: WireVal<'_>) {
    let fresh = |val: WireVal<'_>| match val {
        WireVal::Int(x) => ArgVal::Int(x),
        WireVal::Uint(x) => ArgVal::Uint(x),
        WireVal::Double(x) => ArgVal::Double(x),
        WireVal::Str(b) => ArgVal::Str(String::from_utf8_lossy(b).into_owned()),
    };
    let Some((n, v)) = args.get_mut(i) else {
        let name = match name {
            WireName::Interned(s) => s.clone(),
            WireName::Owned(s) => s,
        };
        args.push((name, fresh(val)));
        return;
    };
    match name {
        WireName::Interned(s) => set_str(n, s),
        WireName::Owned(s) => *n = s,
    }
    match (v, val) {
        (ArgVal::Str(old), WireVal::Str(b)) => {
            old.clear();
            match std::str::from_utf8(b) {
                Ok(t) => old.push_str(t),
                Err(_) => old.push_str(&String::from_utf8_lossy(b)),
            }
        }
        (v, val) => *v = fresh(val),
    }
}

/// Decodes a `GpuRenderStageEvent` into `e`, overwriting all of it (a
/// reused event keeps the allocations and strings it can). A kernel's
/// launch is decoded only if `parts` has it (and the kernel stage comes
/// before it, as gpu-trace writes it).
fn render_stage(
    seq: &Seq,
    b: &[u8],
    seq_id: u32,
    empty: &Str,
    problems: &mut Problems,
    e: &mut GpuEvent,
    parts: Parts,
) -> Result<(), DecodeError> {
    e.event_id = 0;
    e.ts = 0;
    e.dur = 0;
    e.gpu_id = None;
    e.context = None;
    e.grid = None;
    e.block = None;
    e.sequence = seq_id;
    let mut has_id = false;
    let mut name_iid = None;
    let mut queue: Option<&Spec> = None;
    let mut stage: Option<&Spec> = None;
    let mut kernel: Option<&Arc<KernelInfo>> = None;
    let mut n_args = 0;
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::rse::EVENT_ID => {
                has_id = true;
                e.event_id = v.as_u64().unwrap_or(0)
            }
            wire::rse::DURATION => e.dur = v.as_u64().unwrap_or(0),
            wire::rse::GPU_ID => e.gpu_id = v.as_u64().map(|x| x as i64),
            wire::rse::HW_QUEUE_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.specs.get(&iid) {
                    Some(sp) => queue = Some(sp),
                    None => problems.push(
                        ProblemKind::Unresolved,
                        format!("hw_queue_iid {iid} not interned"),
                    ),
                }
            }
            wire::rse::STAGE_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.specs.get(&iid) {
                    // The first stage with a name names the event (unless
                    // it has a name of its own); the last sets its kind.
                    Some(sp) => {
                        if stage.is_none() || e.name.is_empty() {
                            set_str(&mut e.name, &sp.name);
                        }
                        stage = Some(sp);
                    }
                    None => problems.push(
                        ProblemKind::Unresolved,
                        format!("stage_iid {iid} not interned"),
                    ),
                }
            }
            wire::rse::CONTEXT => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.contexts.get(&iid) {
                    Some(c) => {
                        e.context = Some(Context {
                            iid,
                            pid: c.pid,
                            api: c.api,
                        })
                    }
                    None => problems.push(
                        ProblemKind::Unresolved,
                        format!("context {iid:#x} not interned"),
                    ),
                }
            }
            wire::rse::KERNEL_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.kernels.get(&iid) {
                    Some(k) => kernel = Some(k),
                    None => problems.push(
                        ProblemKind::Unresolved,
                        format!("kernel_iid {iid} not interned"),
                    ),
                }
            }
            wire::rse::NAME_IID => name_iid = v.as_u64(),
            wire::rse::LAUNCH
                if !parts.kernel_launch && stage.is_some_and(|sp| sp.stage == Stage::Kernel) => {}
            wire::rse::LAUNCH => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    let m = v.as_bytes().unwrap_or_default();
                    match n {
                        wire::rse::LAUNCH_GRID => e.grid = Some(dim3(m)?),
                        wire::rse::LAUNCH_WORKGROUP => e.block = Some(dim3(m)?),
                        wire::rse::LAUNCH_ARGS => {
                            if let Some((name, val)) = wire_arg(seq, m)? {
                                if name.as_str().starts_with("<unresolved") {
                                    problems
                                        .push(ProblemKind::Unresolved, name.as_str().to_string());
                                }
                                if n_args == 0 && e.args.capacity() == 0 {
                                    e.args.reserve_exact(count_args(v.as_bytes()));
                                }
                                store_arg(&mut e.args, n_args, name, val);
                                n_args += 1;
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    e.args.truncate(n_args);
    match queue {
        Some(sp) => {
            set_str(&mut e.queue, &sp.name);
            set_str(&mut e.queue_description, &sp.description);
        }
        None => {
            set_str(&mut e.queue, empty);
            set_str(&mut e.queue_description, empty);
        }
    }
    match stage {
        Some(sp) => match (&mut e.stage, &sp.stage) {
            (Stage::Other(a), Stage::Other(b)) => set_str(a, b),
            (a, b) if *a == *b => {}
            (a, b) => *a = b.clone(),
        },
        None => {
            set_str(&mut e.name, empty);
            match &mut e.stage {
                Stage::Other(a) => set_str(a, empty),
                a => *a = Stage::Other(empty.clone()),
            }
        }
    }
    match (&mut e.kernel, kernel) {
        (Some(a), Some(b)) if Arc::ptr_eq(a, b) => {}
        (a, b) => *a = b.cloned(),
    }
    if let Some(iid) = name_iid {
        match seq.event_names.get(&iid) {
            Some(n) => set_str(&mut e.name, n),
            None => problems.push(
                ProblemKind::Unresolved,
                format!("name_iid {iid} not in event_names"),
            ),
        }
    }
    if !has_id {
        problems.push(
            ProblemKind::Malformed,
            "render stage without event_id".into(),
        );
    }
    Ok(())
}

/// A debug annotation: its name and value, `None` for a kind this reader
/// does not decode, `Err(())` when its interned name is not defined.
#[allow(clippy::type_complexity)]
fn annotation(seq: &Seq, m: &[u8]) -> Result<Result<Option<(Str, ArgVal)>, ()>, DecodeError> {
    let (mut name, mut val) = (None, None);
    let mut unresolved = false;
    for f in Fields::new(m) {
        let (n, v) = f?;
        match n {
            // name_iid
            1 => {
                name = v
                    .as_u64()
                    .and_then(|i| seq.annotation_names.get(&i).cloned());
                unresolved = name.is_none();
            }
            wire::debug_annotation::NAME => name = Some(text(&v)),
            wire::debug_annotation::UINT => val = v.as_u64().map(ArgVal::Uint),
            wire::debug_annotation::INT => val = v.as_u64().map(|x| ArgVal::Int(x as i64)),
            wire::debug_annotation::STRING => val = Some(ArgVal::Str(s(&v))),
            // bool_value, double_value
            2 => val = v.as_u64().map(ArgVal::Uint),
            5 => val = v.as_f64().map(ArgVal::Double),
            _ => {}
        }
    }
    if unresolved {
        return Ok(Err(()));
    }
    Ok(Ok(name.zip(val)))
}

impl RawTe {
    fn blank(empty: &Str) -> RawTe {
        RawTe {
            name: empty.clone(),
            submissions: Vec::new(),
            waits: Vec::new(),
            gpu_api: None,
            args: Vec::new(),
            callstack: None,
        }
    }
}

/// A track event's type and track; its content goes into `e`, which is
/// overwritten (a reused one keeps its allocations; an end's name is left
/// as it is, ends have none).
/// Interned ids it names that its sequence does not define are counted in
/// `unresolved`.
fn track_event(
    seq: &Seq,
    b: &[u8],
    empty: &Str,
    e: &mut RawTe,
    unresolved: &mut u64,
) -> Result<(u64, u64), DecodeError> {
    let mut ty = 0;
    let mut track = seq.default_track.unwrap_or(0);
    let mut named = false;
    e.submissions.clear();
    e.waits.clear();
    e.gpu_api = None;
    e.args.clear();
    e.callstack = None;
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::track_event::TYPE => ty = v.as_u64().unwrap_or(0),
            wire::track_event::TRACK_UUID => track = v.as_u64().unwrap_or(0),
            wire::track_event::NAME_IID => {
                named = true;
                let iid = v.as_u64().unwrap_or(0);
                match seq.event_names.get(&iid) {
                    Some(n) => set_str(&mut e.name, n),
                    None => {
                        e.name = format!("<unresolved name {iid}>").into();
                        *unresolved += 1;
                    }
                }
            }
            wire::track_event::NAME => {
                named = true;
                e.name = text(&v)
            }
            wire::track_event::GPU_API => e.gpu_api = v.as_u64(),
            wire::track_event::CALLSTACK_IID => {
                let iid = v.as_u64().unwrap_or(0);
                match seq.callstacks.get(&iid) {
                    Some(c) => e.callstack = Some(c.clone()),
                    None => *unresolved += 1,
                }
            }
            wire::track_event::GPU_CORRELATION => {
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match (n, v) {
                        (wire::track_event::SUBMISSION_IDS, Value::Varint(x)) => {
                            e.submissions.push(x)
                        }
                        (wire::track_event::WAIT_IDS, Value::Varint(x)) => e.waits.push(x),
                        (wire::track_event::SUBMISSION_IDS, Value::Len(p)) => {
                            packed(p, &mut e.submissions)?
                        }
                        (wire::track_event::WAIT_IDS, Value::Len(p)) => packed(p, &mut e.waits)?,
                        _ => {}
                    }
                }
            }
            wire::track_event::DEBUG_ANNOTATIONS => {
                match annotation(seq, v.as_bytes().unwrap_or_default())? {
                    Ok(Some(a)) => e.args.push(a),
                    Ok(None) => {}
                    Err(()) => *unresolved += 1,
                }
            }
            _ => {}
        }
    }
    if !named && ty != wire::track_event::TYPE_SLICE_END {
        set_str(&mut e.name, empty);
    }
    Ok((ty, track))
}

/// Appends the packed varints of `p` to `out`.
fn packed(p: &[u8], out: &mut Vec<u64>) -> Result<(), DecodeError> {
    let mut i = 0;
    while i < p.len() {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = *p
                .get(i)
                .ok_or_else(|| DecodeError::at(p, i, "truncated packed varint"))?;
            if shift > 63 {
                return Err(DecodeError::at(p, i, "packed varint longer than 10 bytes"));
            }
            i += 1;
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        out.push(v);
    }
    Ok(())
}

/// Adds what a process descriptor written at `at` says, as
/// trace_processor takes it: the latest name, and labels. `index` finds
/// each process in `list`.
fn describe_process(
    list: &mut Vec<ProcessInfo>,
    index: &mut FxHashMap<i64, usize>,
    over: &mut OverLimits,
    p: ProcessInfo,
    at: u64,
) {
    let Some(&i) = index.get(&p.pid) else {
        if list.len() >= limits::PROCESSES {
            over.processes += 1;
            return;
        }
        index.insert(p.pid, list.len());
        list.push(ProcessInfo { named_at: at, ..p });
        return;
    };
    let known = &mut list[i];
    if !p.name.is_empty() && at >= known.named_at {
        known.name = p.name;
        known.named_at = at;
    }
    if !p.labels.is_empty() {
        known.labels = p.labels;
    }
}

fn track_descriptor(b: &[u8]) -> Result<(u64, TrackInfo, Option<ProcessInfo>), DecodeError> {
    let mut uuid = 0;
    let mut t = TrackInfo::default();
    let mut process = None;
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::track_descriptor::PROCESS => {
                let mut p = ProcessInfo::default();
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match n {
                        wire::track_descriptor::PROCESS_PID => {
                            p.pid = v.as_u64().unwrap_or(0) as i64
                        }
                        wire::track_descriptor::PROCESS_NAME => p.name = s(&v),
                        wire::track_descriptor::PROCESS_LABELS => p.labels.push(s(&v)),
                        _ => {}
                    }
                }
                process = Some(p);
            }
            wire::track_descriptor::UUID => uuid = v.as_u64().unwrap_or(0),
            wire::track_descriptor::PARENT_UUID => t.parent = v.as_u64(),
            wire::track_descriptor::NAME => t.name = s(&v),
            wire::track_descriptor::THREAD => {
                let mut th = Thread { pid: 0, tid: 0 };
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match n {
                        wire::track_descriptor::THREAD_PID => {
                            th.pid = v.as_u64().unwrap_or(0) as i64
                        }
                        wire::track_descriptor::THREAD_TID => {
                            th.tid = v.as_u64().unwrap_or(0) as i64
                        }
                        wire::track_descriptor::THREAD_NAME => t.name = s(&v),
                        _ => {}
                    }
                }
                t.thread = Some(th);
            }
            _ => {}
        }
    }
    Ok((uuid, t, process))
}

/// Appends the values of one `GpuCounterEvent` to `out` (their timestamps
/// are the caller's).
fn counter_event(
    seq: &Seq,
    b: &[u8],
    out: &mut Vec<CounterValue>,
    problems: &mut Problems,
) -> Result<(), DecodeError> {
    let mut iid = None;
    let mut gpu = None;
    let first = out.len();
    let blank = CounterSpec::default();
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::counters::DESCRIPTOR_IID => iid = v.as_u64(),
            wire::counters::GPU_ID => gpu = v.as_u64().map(|x| x as i64),
            wire::counters::COUNTERS => {
                let (mut id, mut value) = (0, 0.0);
                for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                    let (n, v) = f?;
                    match n {
                        wire::counters::COUNTER_ID => id = v.as_u64().unwrap_or(0),
                        wire::counters::INT_VALUE => value = v.as_u64().unwrap_or(0) as i64 as f64,
                        wire::counters::DOUBLE_VALUE => value = v.as_f64().unwrap_or(0.0),
                        _ => {}
                    }
                }
                // Named once the descriptor is known (it may follow).
                out.push(CounterValue {
                    gpu_id: id as i64,
                    name: blank.name.clone(),
                    ts: 0,
                    value,
                    groups: Vec::new(),
                    units: CounterUnits::default(),
                    description: blank.description.clone(),
                });
            }
            _ => {}
        }
    }
    let desc = iid.and_then(|i| seq.counter_descs.get(&i));
    if iid.is_some() && desc.is_none() {
        problems.push(
            ProblemKind::Unresolved,
            format!("counter_descriptor_iid {} not interned", iid.unwrap_or(0)),
        );
    }
    for c in &mut out[first..] {
        // `gpu_id` held the counter id until here.
        let id = c.gpu_id as u64;
        let spec = desc.and_then(|d| d.specs.get(&id)).unwrap_or(&blank);
        c.gpu_id = desc.map(|d| d.gpu_id).or(gpu).unwrap_or(0);
        c.name = spec.name.clone();
        c.description = spec.description.clone();
        c.groups = spec.groups.clone();
        c.units = spec.units.clone();
    }
    Ok(())
}

fn gpu_log(b: &[u8]) -> Result<LogLine, DecodeError> {
    let mut l = LogLine {
        ts: 0,
        severity: 0,
        tag: String::new(),
        message: String::new(),
    };
    for f in Fields::new(b) {
        let (n, v) = f?;
        match n {
            wire::gpu_log::SEVERITY => l.severity = v.as_u64().unwrap_or(0),
            wire::gpu_log::TAG => l.tag = s(&v),
            wire::gpu_log::MESSAGE => l.message = s(&v),
            _ => {}
        }
    }
    Ok(l)
}

fn gpu_info(b: &[u8]) -> Result<Vec<DeviceInfo>, DecodeError> {
    let mut out = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        if n != wire::gpu_info::GPUS {
            continue;
        }
        let mut d = DeviceInfo {
            gpu_id: out.len(),
            ..Default::default()
        };
        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
            let (n, v) = f?;
            match n {
                wire::gpu_info::NAME => d.name = s(&v),
                wire::gpu_info::VENDOR => d.vendor = s(&v),
                wire::gpu_info::MODEL => d.model = s(&v),
                wire::gpu_info::ARCHITECTURE => d.architecture = s(&v),
                wire::gpu_info::PCI_BDF => d.pci_bdf = s(&v),
                wire::gpu_info::UUID => d.uuid = v.as_bytes().unwrap_or_default().to_vec(),
                wire::gpu_info::EXTRA_INFO => {
                    let (mut k, mut val) = (String::new(), String::new());
                    for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                        let (n, v) = f?;
                        match n {
                            wire::gpu_info::KEY => k = s(&v),
                            wire::gpu_info::VALUE => val = s(&v),
                            _ => {}
                        }
                    }
                    d.extra.push((k, val));
                }
                _ => {}
            }
        }
        out.push(d);
    }
    Ok(out)
}

/// One clock of a `ClockSnapshot`.
struct SnapshotClock {
    id: u32,
    value: u64,
    incremental: bool,
}

fn parse_snapshot(b: &[u8]) -> Result<Vec<SnapshotClock>, DecodeError> {
    let mut out = Vec::new();
    for f in Fields::new(b) {
        let (n, v) = f?;
        if n != wire::clock_snapshot::CLOCKS {
            continue;
        }
        let mut c = SnapshotClock {
            id: 0,
            value: 0,
            incremental: false,
        };
        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
            let (n, v) = f?;
            match n {
                wire::clock_snapshot::CLOCK_ID => c.id = v.as_u64().unwrap_or(0) as u32,
                wire::clock_snapshot::TIMESTAMP => c.value = v.as_u64().unwrap_or(0),
                wire::clock_snapshot::IS_INCREMENTAL => c.incremental = v.as_u64() == Some(1),
                _ => {}
            }
        }
        out.push(c);
    }
    Ok(out)
}

fn config_sources(b: &[u8], t: &mut Trace) -> Result<(), DecodeError> {
    for f in Fields::new(b) {
        let (n, v) = f?;
        if n != wire::config::DATA_SOURCES {
            continue;
        }
        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
            let (n, v) = f?;
            if n != wire::config::DS_CONFIG {
                continue;
            }
            for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                let (n, v) = f?;
                match n {
                    wire::config::DSC_NAME => t.data_sources.push(s(&v)),
                    wire::config::DSC_TRACK_EVENT_CONFIG => {
                        for f in Fields::new(v.as_bytes().unwrap_or_default()) {
                            let (n, v) = f?;
                            if n == wire::config::TE_ENABLED_CATEGORIES {
                                let c = s(&v);
                                if !t.track_event_categories.contains(&c) {
                                    t.track_event_categories.push(c);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}
