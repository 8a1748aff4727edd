//! Model events → Perfetto packets.
//!
//! Everything here runs on the emitter thread. Packets are encoded into a
//! reused buffer and handed to a [`PacketSink`]; the Perfetto glue in
//! [`crate::sink`] implements the sinks over data-source and track-event
//! trace contexts, and the tests implement them over plain vectors.
//!
//! Interning is per sequence: each sequence state remembers which queues,
//! contexts, kernels, names and arg names it has described, and describes
//! new ones in the same packet as the first event that needs them.
//!
//! One module per packet family: [`render_stages`] (kernels, copies,
//! memsets), [`gpu_info`], [`track_events`] (API calls and markers),
//! [`counters`], and [`clocks_logs`] (clock snapshots and GpuLog lines).

mod activity;
mod clocks_logs;
mod counters;
mod gpu_info;
mod render_stages;
#[cfg(test)]
mod test_support;
mod track_events;

use crate::collector::Batch;
use crate::model::{Event, NameId};
use crate::names::{Kernels, Names};
use crate::registry::{Counters, Devices};
pub(crate) use activity::Points as ActivityPoints;
use gpu_trace_model::backend::BackendInfo;
use gpu_trace_model::callstack::Callstacks;
use gpu_trace_reader::pb::Writer;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::VecDeque;
use std::sync::Arc;

/// Receives finished packets (the body of one `TracePacket`).
pub(crate) trait PacketSink {
    fn packet(&mut self, bytes: &[u8]);
}

/// A track-event sequence, whose interning the SDK owns.
pub(crate) trait TrackEventSink: PacketSink {
    /// Iid of an event name on this sequence, and whether it was seen before.
    fn intern_name(&mut self, name: &[u8]) -> (u64, bool);
    /// Iid of a call-site item (a function or file name, a frame, a
    /// stack) keyed by `key`, and whether it was seen before on this
    /// sequence. One iid space for all of them: each stays unique within
    /// its own interned type.
    fn intern_callsite(&mut self, key: &[u8]) -> (u64, bool);
    /// Whether a descriptor for `uuid` was already written on this sequence.
    fn track_seen(&mut self, uuid: u64) -> bool;
    /// The data-source instance this sequence belongs to (0..8).
    fn instance(&self) -> u32;
}

/// Iids of one interned type on one sequence, from 1 in first-seen
/// order: what the SDK does for the sequences it owns, and what sinks
/// that own theirs (the direct writer, the tests' and benches' sinks) use.
#[derive(Default)]
pub(crate) struct Interner(rustc_hash::FxHashMap<Vec<u8>, u64>);

impl Interner {
    /// The iid of `key`, and whether it was interned before.
    pub(crate) fn intern(&mut self, key: &[u8]) -> (u64, bool) {
        if let Some(&iid) = self.0.get(key) {
            return (iid, true);
        }
        let iid = self.0.len() as u64 + 1;
        self.0.insert(key.to_vec(), iid);
        (iid, false)
    }
}

/// Render-stage stage iids; queues use iids from [`QUEUE_IID_BASE`].
pub(crate) const STAGE_KERNEL: u64 = 1;
pub(crate) const STAGE_MEMCPY: u64 = 2;
pub(crate) const STAGE_MEMSET: u64 = 3;
pub(crate) const STAGE_UVM: u64 = 4;
const QUEUE_IID_BASE: u64 = 16;
/// The "stream" of a GPU's unified-memory queue.
const UVM_STREAM: u64 = u64::MAX;

/// Sequence-scoped incremental clock (ids 64–127 are per sequence; the SDK
/// itself uses 64 and 65). Packets on our sequences carry the nanoseconds
/// since the previous packet instead of an absolute BOOTTIME value: two or
/// three bytes instead of eight, plus no clock id.
const DELTA_CLOCK: u32 = 70;

/// A track uuid we never draw on: whether the SDK's track-event sequence has
/// "seen" it tells whether our clock is still set up there (the SDK clears
/// its seen-tracks set when it resets the sequence).
const TE_CLOCK_SENTINEL: u64 = 0x6770_7472_6163_6501;

/// Likewise for our process descriptor (see
/// [`Encoder::describe_process_on_reset`]): the SDK clears the seen set
/// on every entry that finds the sequence reset, also one that only flushes.
const TE_PROCESS_SENTINEL: u64 = 0x6770_7472_6163_6502;

/// GPU event ids are unique across processes: the pid sits above the
/// correlation id. The first GPU event of a correlation gets the id that API
/// slices point at; further events of the same correlation (graph nodes)
/// get ids from a second, per-process space.
///
/// The correlation id sits above the pid (< 2^22 on Linux) so that the ids
/// of a short run stay short varints.
pub(crate) fn primary_event_id(pid: u32, correlation_id: u64) -> u64 {
    ((correlation_id & ((1 << 41) - 1)) << 22) | (pid as u64 & PID_MASK)
}

/// See [`primary_event_id`].
pub(crate) fn secondary_event_id(pid: u32, n: u64) -> u64 {
    SECONDARY_EVENT_ID_BIT | ((n & ((1 << 41) - 1)) << 22) | (pid as u64 & PID_MASK)
}

/// Set in every id from the second space of [`secondary_event_id`].
pub(crate) use gpu_trace_reader::SECONDARY_EVENT_ID_BIT;

const PID_MASK: u64 = (1 << 22) - 1;

/// Track uuid of a thread's API/marker track.
pub(crate) fn thread_track_uuid(pid: u32, tid: u32) -> u64 {
    // Thread ids repeat across pid namespaces, and a system-mode trace
    // holds processes of several: the pid keeps their tracks apart. Bit 54
    // keeps clear of the small numbers other producers use and of
    // `range_track_uuid`'s bit 61, and the uuid stays a 7–8 byte varint.
    THREAD_TRACK_BIT | ((pid as u64 & PID_MASK) << 32) | tid as u64
}

const THREAD_TRACK_BIT: u64 = 1 << 54;

/// Track uuid of a process-wide (start/end) range.
pub(crate) fn range_track_uuid(pid: u32, id: u64) -> u64 {
    ((pid as u64) << 40) ^ (id & 0xFF_FFFF_FFFF) ^ 0x2000_0000_0000_0000
}

/// Interning state of a render-stage sequence.
#[derive(Debug, Default)]
pub(crate) struct RsSeq {
    started: bool,
    /// Last timestamp on the delta clock (`None`: a custom GPU clock, whose
    /// absolute values are the sequence default).
    last_ts: Option<u64>,
    names: BitSet,
    arg_names: BitSet,
    kernels: BitSet,
    queues: BitSet,
    contexts: HashSet<u64>,
    gpu_info_version: Option<u32>,
    /// Device → activity-counter table version described on this sequence.
    counters_described: HashMap<u32, u32>,
}

impl perfetto_sdk::data_source::Clear for RsSeq {}

/// Interning state of a counter sequence.
#[derive(Debug, Default)]
pub(crate) struct CtrSeq {
    started: bool,
    /// Device → counter-table version described on this sequence.
    described: HashMap<u32, u32>,
}

impl perfetto_sdk::data_source::Clear for CtrSeq {}

#[derive(Debug, Default)]
struct BitSet(Vec<u64>);

impl BitSet {
    /// Sets bit `i`; returns whether it was already set.
    fn test_and_set(&mut self, i: u32) -> bool {
        let (w, b) = ((i / 64) as usize, i % 64);
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        let was = self.0[w] & (1 << b) != 0;
        self.0[w] |= 1 << b;
        was
    }
}

/// Totals of what was written, for the end-of-session summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Totals {
    /// Kernel executions.
    pub(crate) kernels: u64,
    /// Copies and memsets.
    pub(crate) memory_ops: u64,
    /// API calls.
    pub(crate) api_calls: u64,
    /// Markers.
    pub(crate) markers: u64,
    /// Per-kernel counter values.
    pub(crate) counter_samples: u64,
    /// Telemetry values.
    pub(crate) telemetry_samples: u64,
    /// Unified-memory events.
    pub(crate) uvm_events: u64,
    /// Device-memory-in-use samples.
    pub(crate) memory_samples: u64,
}

/// Remembers which correlations already have their primary GPU event, in a
/// bounded window (events of one correlation arrive close together).
///
/// Correlation ids grow as a process makes API calls, so most fall in a
/// window of [`RECENT_IDS`] ids below the largest seen, kept as a ring of
/// bits: a set and an eviction queue for every GPU event cost a quarter of
/// the direct writer's time on a 2-core AMD EPYC virtual machine (hash
/// inserts and removals missing the cache). Ids outside that window (older
/// ones, or another series of ids) go to the set, bounded as before.
#[derive(Debug)]
struct SeenCorrelations {
    /// One past the largest id in the ring; 0 before the first.
    end: u64,
    /// Bit `id % RECENT_IDS` of every id in `end - RECENT_IDS .. end` seen.
    recent: Box<[u64]>,
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

const SEEN_WINDOW: usize = 1 << 18;
/// Ids the ring of [`SeenCorrelations`] covers: 128 KiB of bits.
const RECENT_IDS: u64 = 1 << 20;

impl Default for SeenCorrelations {
    fn default() -> Self {
        Self {
            end: 0,
            recent: vec![0; (RECENT_IDS / 64) as usize].into_boxed_slice(),
            set: HashSet::default(),
            order: VecDeque::new(),
        }
    }
}

impl SeenCorrelations {
    fn first(&mut self, corr: u64) -> bool {
        if corr >= self.end {
            if self.end == 0 || corr - self.end >= RECENT_IDS {
                self.recent.fill(0);
            } else {
                // Clear the bits of the ids the ring moves past.
                for id in self.end..=corr {
                    self.clear_bit(id);
                }
            }
            self.end = corr + 1;
            return !self.test_and_set(corr);
        }
        if self.end - corr <= RECENT_IDS {
            return !self.test_and_set(corr);
        }
        if !self.set.insert(corr) {
            return false;
        }
        self.order.push_back(corr);
        if self.order.len() > SEEN_WINDOW
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
    }

    fn clear_bit(&mut self, id: u64) {
        let i = id % RECENT_IDS;
        self.recent[(i / 64) as usize] &= !(1 << (i % 64));
    }

    /// Sets `id`'s bit; whether it was set.
    fn test_and_set(&mut self, id: u64) -> bool {
        let i = id % RECENT_IDS;
        let w = &mut self.recent[(i / 64) as usize];
        let was = *w & (1 << (i % 64)) != 0;
        *w |= 1 << (i % 64);
        was
    }
}

/// Well-known arg names, interned once.
#[derive(Debug, Clone, Copy)]
struct ArgNames {
    device: NameId,
    stream: NameId,
    waves: NameId,
    graph_node: NameId,
    bytes: NameId,
    src_kind: NameId,
    dst_kind: NameId,
    src_device: NameId,
    dst_device: NameId,
    bandwidth: NameId,
    value: NameId,
    memory_kind: NameId,
}

/// How GPU timestamps are expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClockSpec {
    /// CLOCK_BOOTTIME, the trace clock: no clock id needed.
    Boottime,
    /// A global custom clock (id ≥ 128) described by snapshots.
    Custom(u32),
}

/// Reads a simultaneous (custom GPU clock, BOOTTIME) pair.
pub(crate) type ClockSampler = Arc<dyn Fn() -> Option<(u64, u64)> + Send + Sync>;

/// The emitter's encoder: process-wide naming and ids, plus scratch buffers.
pub(crate) struct Encoder {
    pid: u32,
    /// Whether queue names say which process they belong to (see
    /// [`Encoder::name_process_in_queues`]).
    process_in_queues: bool,
    backend: BackendInfo,
    clock: ClockSpec,
    /// Reads (custom GPU clock, BOOTTIME) for snapshots.
    clock_sampler: Option<ClockSampler>,
    names: Arc<Names>,
    kernels: Arc<Kernels>,
    devices: Arc<Devices>,
    counters: Arc<Counters>,
    callstacks: Arc<Callstacks>,
    /// Scratch for the interned data of an API call's stack.
    stack_interned: Writer,
    queues: HashMap<(u32, u64), u64>,
    queue_list: Vec<(u32, u64)>,
    /// Local copies of kernel descriptions, indexed by id, so that the
    /// per-event path takes no lock.
    kernel_cache: Vec<Option<Arc<crate::model::KernelDesc>>>,
    copy_names: HashMap<crate::model::CopyKind, NameId>,
    memset_name: NameId,
    args: ArgNames,
    seen: SeenCorrelations,
    secondary: u64,
    pkt: Writer,
    interned: Writer,
    totals: Totals,
    thread_names: HashMap<u32, String>,
    known_thread_names: crate::collector::ThreadNames,
    /// The latest value of any delta-clock snapshot written. A sequence
    /// whose incremental state was cleared describes its clock again; a
    /// snapshot earlier than that sequence's previous one is invalid to the
    /// trace processor, which then drops every later packet of the sequence
    /// (seen on the H200: GPU work recorded late, after a clear). So each
    /// snapshot is taken at this floor or later.
    snapshot_floor: u64,
    /// Per counter family (per-kernel, telemetry, activity) and GPU: a
    /// version bumped whenever it reports a counter it had not reported
    /// before, and those counters' ids.
    device_counters: [HashMap<u32, (u32, Vec<u32>)>; counters::COUNTER_STREAMS],
    /// Last delta-clock timestamp per track-event instance.
    te_last: [Option<u64>; 8],
    /// The default track of each track-event instance (the busiest thread),
    /// whose events then omit their track uuid.
    te_default: [Option<u64>; 8],
    /// Open NVTX push depth per thread, and open start/end ranges: ends of
    /// ranges that began before tracing did are dropped.
    marker_depth: HashMap<u32, u32>,
    open_ranges: HashSet<u64>,
    /// Scratch for time-sorting one pass.
    order: Vec<(u64, u32, u32, bool)>,
    /// Busy and wait accounting, and the counters it writes.
    activity: activity::State,
    /// What the process descriptor says beyond the SDK's (its rank), and
    /// the uuid of the process track it describes where not the SDK's
    /// (tests).
    process: Option<ProcessDesc>,
    process_uuid: Option<u64>,
}

/// The process's name and labels, as its descriptor gives them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessDesc {
    pub(crate) name: String,
    pub(crate) labels: Vec<String>,
}

/// The tracer's tables the encoder reads.
pub(crate) struct Tables {
    pub(crate) names: Arc<Names>,
    pub(crate) kernels: Arc<Kernels>,
    pub(crate) devices: Arc<Devices>,
    pub(crate) counters: Arc<Counters>,
    /// Source call stacks of API calls.
    pub(crate) callstacks: Arc<Callstacks>,
    /// Names of recording threads, as they were when each first recorded
    /// (for threads that have exited by the time their events are written).
    pub(crate) thread_names: crate::collector::ThreadNames,
}

impl Encoder {
    pub(crate) fn new(
        pid: u32,
        backend: BackendInfo,
        clock: ClockSpec,
        clock_sampler: Option<ClockSampler>,
        tables: Tables,
    ) -> Self {
        let Tables {
            names,
            kernels,
            devices,
            counters,
            callstacks,
            thread_names,
        } = tables;
        let args = ArgNames {
            device: names.intern("device"),
            stream: names.intern("stream"),
            waves: names.intern("launch__waves_per_multiprocessor"),
            graph_node: names.intern("graph_node_id"),
            bytes: names.intern("bytes"),
            src_kind: names.intern("src_kind"),
            dst_kind: names.intern("dst_kind"),
            src_device: names.intern("src_device"),
            dst_device: names.intern("dst_device"),
            bandwidth: names.intern("bandwidth_GBps"),
            value: names.intern("value"),
            memory_kind: names.intern("memory_kind"),
        };
        Self {
            pid,
            process_in_queues: false,
            backend,
            clock,
            clock_sampler,
            memset_name: names.intern("Memset"),
            names,
            kernels,
            devices,
            counters,
            callstacks,
            stack_interned: Writer::new(),
            queues: HashMap::default(),
            queue_list: Vec::new(),
            kernel_cache: Vec::new(),
            copy_names: HashMap::default(),
            args,
            seen: SeenCorrelations::default(),
            secondary: 0,
            pkt: Writer::new(),
            interned: Writer::new(),
            totals: Totals::default(),
            thread_names: HashMap::default(),
            known_thread_names: thread_names,
            snapshot_floor: 0,
            device_counters: Default::default(),
            te_last: [None; 8],
            te_default: [None; 8],
            marker_depth: HashMap::default(),
            open_ranges: HashSet::default(),
            order: Vec::new(),
            activity: activity::State::default(),
            process: None,
            process_uuid: None,
        }
    }

    /// Names the process in every GPU queue it describes from now on
    /// ("GPU 0 · pid 4242 · stream 7"). For a trace that may hold several
    /// processes (a system session): the trace processor keys a GPU queue's
    /// track by its name and iid alone, so the same stream number of two
    /// processes on one GPU would otherwise share a track, each process's
    /// kernels drawn among the other's.
    pub(crate) fn name_process_in_queues(&mut self) {
        self.process_in_queues = true;
    }

    /// Names the process's rank in the trace (see [`gpu_trace_model::rank`]).
    pub(crate) fn set_rank(&mut self, rank: Option<gpu_trace_model::rank::Rank>) {
        self.process = rank.map(|r| ProcessDesc {
            name: format!("{}{}", track_events::sdk_process_name(), r.name_suffix()),
            labels: r.labels(),
        });
    }

    /// Describes the process under `uuid`, for a trace whose track-event
    /// sequence is not the SDK's (the direct file writer's).
    pub(crate) fn set_process_uuid(&mut self, uuid: u64) {
        self.process_uuid = Some(uuid);
    }

    pub(crate) fn totals(&self) -> Totals {
        self.totals
    }

    /// Assigns event ids to the GPU events of `batches` (0 for other
    /// events) and counts everything once, whatever the number of sessions.
    pub(crate) fn prepare(&mut self, batches: &[Batch]) -> Vec<Vec<u64>> {
        batches
            .iter()
            .map(|b| {
                b.events
                    .iter()
                    .map(|e| match e {
                        Event::Kernel(k) => {
                            self.totals.kernels += 1;
                            self.activity.kernel(k);
                            self.event_id(k.correlation_id)
                        }
                        Event::Memory(m) => {
                            self.totals.memory_ops += 1;
                            self.activity.memory_op(m);
                            self.event_id(m.correlation_id)
                        }
                        Event::Api(a) => {
                            self.totals.api_calls += 1;
                            self.activity.api_call(a, &self.names);
                            0
                        }
                        Event::Marker(_) => {
                            self.totals.markers += 1;
                            0
                        }
                        Event::KernelCounters(c) => {
                            self.totals.counter_samples += c.values.len() as u64;
                            0
                        }
                        Event::Counters(c) => {
                            self.totals.telemetry_samples += c.values.len() as u64;
                            0
                        }
                        Event::Log(_) => 0,
                        Event::UnifiedMemory(u) => {
                            self.totals.uvm_events += 1;
                            self.activity.unified_memory(u);
                            self.secondary += 1;
                            secondary_event_id(self.pid, self.secondary)
                        }
                        Event::MemoryUsage(_) => {
                            self.totals.memory_samples += 1;
                            0
                        }
                        // An event this writer does not know: not written.
                        _ => 0,
                    })
                    .collect()
            })
            .collect()
    }

    fn event_id(&mut self, corr: u64) -> u64 {
        if corr != 0 && self.seen.first(corr) {
            primary_event_id(self.pid, corr)
        } else {
            self.secondary += 1;
            secondary_event_id(self.pid, self.secondary)
        }
    }

    fn queue_iid(&mut self, device: u32, stream: u64) -> u64 {
        if let Some(&q) = self.queues.get(&(device, stream)) {
            return q;
        }
        let q = QUEUE_IID_BASE + self.queue_list.len() as u64;
        self.queue_list.push((device, stream));
        self.queues.insert((device, stream), q);
        q
    }

    fn context_iid(&self, context: u32) -> u64 {
        // Unique per process and context; small for the usual few contexts.
        ((context as u64) << 22) | (self.pid as u64 & PID_MASK)
    }

    fn copy_name(&mut self, kind: crate::model::CopyKind) -> NameId {
        let names = &self.names;
        *self
            .copy_names
            .entry(kind)
            .or_insert_with(|| names.intern(&format!("Memcpy {}", kind.name())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_correlation_is_first_once_in_order_out_of_order_and_far_apart() {
        let mut s = SeenCorrelations::default();
        assert!(s.first(5));
        assert!(!s.first(5), "a graph's second node");
        assert!(s.first(9));
        assert!(s.first(7), "ids below the largest, never seen");
        assert!(!s.first(7));
        assert!(!s.first(9));
        // A jump past the ring forgets it; the ids it held are then older
        // than the ring and go to the set, first once more.
        let far = 9 + 3 * RECENT_IDS;
        assert!(s.first(far));
        assert!(!s.first(far));
        assert!(s.first(5));
        assert!(!s.first(5));
        // Just inside the ring, below the largest.
        assert!(s.first(far - RECENT_IDS + 1));
        assert!(!s.first(far - RECENT_IDS + 1));
        // The ring moves on by small steps: a bit it passes is cleared,
        // so an id a whole ring later is new.
        let mut t = SeenCorrelations::default();
        for id in 1..=3 * RECENT_IDS {
            assert!(t.first(id), "{id}");
        }
        assert!(!t.first(3 * RECENT_IDS));
        assert!(!t.first(2 * RECENT_IDS + 1));
        // One below the ring goes to the set: first there.
        assert!(t.first(2 * RECENT_IDS));
    }

    #[test]
    fn thread_tracks_of_different_processes_stay_apart() {
        // The same tid in two pid namespaces is two tracks.
        assert_ne!(thread_track_uuid(100, 7), thread_track_uuid(200, 7));
        assert_ne!(thread_track_uuid(100, 7), thread_track_uuid(100, 8));
        // Stable within a process.
        assert_eq!(thread_track_uuid(100, 7), thread_track_uuid(100, 7));
        // Never a range track's uuid.
        let (pid, tid) = ((1 << 22) - 1, u32::MAX);
        assert_ne!(
            thread_track_uuid(pid, tid),
            range_track_uuid(pid, tid as u64)
        );
        assert_eq!(thread_track_uuid(pid, tid) & (1 << 61), 0);
    }
}
