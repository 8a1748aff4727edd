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

use crate::backend::BackendInfo;
use crate::collector::Batch;
use crate::model::{
    ApiCall, ArgValue, CounterGroup, CounterSpec, Event, KernelExec, Marker, MarkerEvent, MemoryOp,
    MemoryOpKind, NameId, Unit,
};
use crate::names::{Kernels, Names};
use crate::pb::Writer;
use crate::registry::{Counters, Devices};
use crate::wire;
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
    /// Whether a descriptor for `uuid` was already written on this sequence.
    fn track_seen(&mut self, uuid: u64) -> bool;
    /// The data-source instance this sequence belongs to (0..8).
    fn instance(&self) -> u32;
}

/// Render-stage stage iids; queues use iids from [`QUEUE_IID_BASE`].
pub(crate) const STAGE_KERNEL: u64 = 1;
pub(crate) const STAGE_MEMCPY: u64 = 2;
pub(crate) const STAGE_MEMSET: u64 = 3;
const QUEUE_IID_BASE: u64 = 16;

/// Sequence-scoped incremental clock (ids 64–127 are per sequence; the SDK
/// itself uses 64 and 65). Packets on our sequences carry the nanoseconds
/// since the previous packet instead of an absolute BOOTTIME value: two or
/// three bytes instead of eight, plus no clock id.
const DELTA_CLOCK: u32 = 70;

/// A track uuid we never draw on: whether the SDK's track-event sequence has
/// "seen" it tells whether our clock is still set up there (the SDK clears
/// its seen-tracks set when it resets the sequence).
const TE_CLOCK_SENTINEL: u64 = 0x6770_7472_6163_6501;

/// GPU event ids are unique across processes: the pid sits above the
/// correlation id. The first GPU event of a correlation gets the id that API
/// slices point at; further events of the same correlation (graph nodes)
/// get ids from a second, per-process space.
///
/// The correlation id sits above the pid (< 2^22 on Linux) so that the ids
/// of a short run stay short varints.
pub fn primary_event_id(pid: u32, correlation_id: u64) -> u64 {
    ((correlation_id & ((1 << 41) - 1)) << 22) | (pid as u64 & PID_MASK)
}

/// See [`primary_event_id`].
pub fn secondary_event_id(pid: u32, n: u64) -> u64 {
    SECONDARY_EVENT_ID_BIT | ((n & ((1 << 41) - 1)) << 22) | (pid as u64 & PID_MASK)
}

/// Set in every id from the second space of [`secondary_event_id`].
pub use gpu_trace_reader::SECONDARY_EVENT_ID_BIT;

const PID_MASK: u64 = (1 << 22) - 1;

/// Track uuid of a thread's API/marker track.
pub fn thread_track_uuid(pid: u32, tid: u32) -> u64 {
    // Thread ids repeat across pid namespaces, and a system-mode trace
    // holds processes of several: the pid keeps their tracks apart. Bit 54
    // keeps clear of the small numbers other producers use and of
    // `range_track_uuid`'s bit 61, and the uuid stays a 7–8 byte varint.
    THREAD_TRACK_BIT | ((pid as u64 & PID_MASK) << 32) | tid as u64
}

const THREAD_TRACK_BIT: u64 = 1 << 54;

/// Track uuid of a process-wide (start/end) range.
pub fn range_track_uuid(pid: u32, id: u64) -> u64 {
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
pub struct Totals {
    /// Kernel executions.
    pub kernels: u64,
    /// Copies and memsets.
    pub memory_ops: u64,
    /// API calls.
    pub api_calls: u64,
    /// Markers.
    pub markers: u64,
    /// Counter samples (per-kernel and periodic).
    pub counter_samples: u64,
}

/// Remembers which correlations already have their primary GPU event, in a
/// bounded window (events of one correlation arrive close together).
#[derive(Debug, Default)]
struct SeenCorrelations {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

const SEEN_WINDOW: usize = 1 << 18;

impl SeenCorrelations {
    fn first(&mut self, corr: u64) -> bool {
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
    backend: BackendInfo,
    clock: ClockSpec,
    /// Reads (custom GPU clock, BOOTTIME) for snapshots.
    clock_sampler: Option<ClockSampler>,
    names: Arc<Names>,
    kernels: Arc<Kernels>,
    devices: Arc<Devices>,
    counters: Arc<Counters>,
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
    /// Per GPU: a version bumped whenever it reports a counter it had not
    /// reported before, and those counters' ids.
    device_counters: HashMap<u32, (u32, Vec<u32>)>,
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
}

/// The tracer's tables the encoder reads.
pub(crate) struct Tables {
    pub(crate) names: Arc<Names>,
    pub(crate) kernels: Arc<Kernels>,
    pub(crate) devices: Arc<Devices>,
    pub(crate) counters: Arc<Counters>,
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
            value: names.intern("value"),
            memory_kind: names.intern("memory_kind"),
        };
        Self {
            pid,
            backend,
            clock,
            clock_sampler,
            memset_name: names.intern("Memset"),
            names,
            kernels,
            devices,
            counters,
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
            device_counters: HashMap::default(),
            te_last: [None; 8],
            te_default: [None; 8],
            marker_depth: HashMap::default(),
            open_ranges: HashSet::default(),
            order: Vec::new(),
        }
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
                            self.event_id(k.correlation_id)
                        }
                        Event::Memory(m) => {
                            self.totals.memory_ops += 1;
                            self.event_id(m.correlation_id)
                        }
                        Event::Api(_) => {
                            self.totals.api_calls += 1;
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
                            self.totals.counter_samples += c.values.len() as u64;
                            0
                        }
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

    // ----- render stages -------------------------------------------------

    /// Writes the GPU events of `batches` to one render-stage sequence.
    pub(crate) fn write_render_stages(
        &mut self,
        seq: &mut RsSeq,
        batches: &[Batch],
        ids: &[Vec<u64>],
        sink: &mut dyn PacketSink,
    ) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (bi, b) in batches.iter().enumerate() {
            for (ei, e) in b.events.iter().enumerate() {
                if let Event::Kernel(_) | Event::Memory(_) = e {
                    order.push((e.time(), bi as u32, ei as u32, false));
                }
            }
        }
        // Time order keeps deltas small and non-negative.
        order.sort_by_key(|o| o.0);
        let t0 = order
            .first()
            .map_or_else(crate::clock::boottime_ns, |o| o.0);
        self.start_rs_sequence(seq, t0, sink);
        self.write_gpu_info_if_changed(seq, sink);
        for &(_, bi, ei, _) in &order {
            let (b, id) = (bi as usize, ei as usize);
            match &batches[b].events[id] {
                Event::Kernel(k) => self.write_kernel(seq, k, ids[b][id], sink),
                Event::Memory(m) => self.write_memory(seq, m, ids[b][id], sink),
                _ => {}
            }
        }
        self.order = order;
    }

    fn start_rs_sequence(&mut self, seq: &mut RsSeq, t0: u64, sink: &mut dyn PacketSink) {
        if seq.started {
            return;
        }
        seq.started = true;
        let p = &mut self.pkt;
        p.clear();
        p.varint(
            wire::packet::SEQUENCE_FLAGS,
            wire::packet::SEQ_INCREMENTAL_STATE_CLEARED,
        );
        let mut snapshot = None;
        match self.clock {
            ClockSpec::Custom(id) => {
                p.nested(wire::packet::DEFAULTS, |d| {
                    d.varint(wire::packet::DEFAULTS_CLOCK_ID, id as u64);
                });
                // Every new sequence describes the clock it uses at once.
                snapshot = self.clock_sampler.as_ref().and_then(|s| s());
            }
            ClockSpec::Boottime => {
                p.varint(wire::packet::TIMESTAMP, t0);
                p.varint(
                    wire::packet::TIMESTAMP_CLOCK_ID,
                    wire::clock::BOOTTIME as u64,
                );
                p.nested(wire::packet::DEFAULTS, |d| {
                    d.varint(wire::packet::DEFAULTS_CLOCK_ID, DELTA_CLOCK as u64);
                });
                let at = t0.max(self.snapshot_floor);
                self.snapshot_floor = at;
                write_delta_clock_snapshot(p, at);
                seq.last_ts = Some(at);
            }
        }
        p.nested(wire::packet::INTERNED_DATA, |i| {
            for (iid, name, desc) in [
                (STAGE_KERNEL, "Kernel", "Kernel execution"),
                (STAGE_MEMCPY, "Memcpy", "Memory copy"),
                (STAGE_MEMSET, "Memset", "Memory set"),
            ] {
                i.nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                    s.varint(wire::spec::IID, iid)
                        .string(wire::spec::NAME, name)
                        .string(wire::spec::DESCRIPTION, desc)
                        .varint(wire::spec::CATEGORY, wire::spec::CATEGORY_COMPUTE);
                });
            }
        });
        sink.packet(p.as_bytes());
        if let Some((gpu, boot)) = snapshot {
            self.write_clock_snapshot(gpu, boot, sink);
        }
    }

    fn write_gpu_info_if_changed(&mut self, seq: &mut RsSeq, sink: &mut dyn PacketSink) {
        let v = self.devices.version();
        if seq.gpu_info_version == Some(v) || v == 0 {
            return;
        }
        seq.gpu_info_version = Some(v);
        let devices = self.devices.snapshot();
        let p = &mut self.pkt;
        p.clear();
        absolute_timestamp(p, crate::clock::boottime_ns());
        p.nested(wire::packet::GPU_INFO, |gi| {
            // The list index is the gpu_id: fill gaps so that ids line up.
            let max = devices.iter().map(|d| d.id).max().unwrap_or(0);
            for id in 0..=max {
                gi.nested(wire::gpu_info::GPUS, |g| {
                    match devices.iter().find(|d| d.id == id) {
                        Some(d) => write_gpu(g, d),
                        None => {
                            g.string(wire::gpu_info::NAME, &format!("GPU {id} (not used)"));
                        }
                    }
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    fn kernel_desc(&mut self, id: crate::model::KernelId) -> Option<Arc<crate::model::KernelDesc>> {
        let i = id.0 as usize;
        if let Some(Some(d)) = self.kernel_cache.get(i) {
            return Some(d.clone());
        }
        let d = self.kernels.get(id)?;
        if self.kernel_cache.len() <= i {
            self.kernel_cache.resize(i + 1, None);
        }
        self.kernel_cache[i] = Some(d.clone());
        Some(d)
    }

    fn write_kernel(
        &mut self,
        seq: &mut RsSeq,
        k: &KernelExec,
        id: u64,
        sink: &mut dyn PacketSink,
    ) {
        let Some(desc) = self.kernel_desc(k.kernel) else {
            return;
        };
        let queue = self.queue_iid(k.device, k.stream);
        let ctx = self.context_iid(k.context);
        self.interned.clear();
        self.intern_queue(seq, queue);
        self.intern_context(seq, ctx);
        if !seq.kernels.test_and_set(k.kernel.0) {
            for (n, _) in &desc.args {
                self.intern_arg_name(seq, *n);
            }
            let names = &self.names;
            self.interned.nested(wire::interned::COMPUTE_KERNELS, |kk| {
                kk.varint(wire::kernel::IID, k.kernel.0 as u64)
                    .string(wire::kernel::NAME, &names.get(desc.mangled))
                    .string(wire::kernel::DEMANGLED_NAME, &names.get(desc.demangled))
                    .string(wire::kernel::ARCH, &names.get(desc.arch));
                for (n, v) in &desc.args {
                    kk.nested(wire::kernel::ARGS, |a| write_arg(a, *n, *v, names));
                }
            });
        }
        self.intern_event_name(seq, desc.display);
        for n in [self.args.device, self.args.stream] {
            self.intern_arg_name(seq, n);
        }
        if k.waves_per_sm.is_some() {
            self.intern_arg_name(seq, self.args.waves);
        }
        if k.graph_node != 0 {
            self.intern_arg_name(seq, self.args.graph_node);
        }

        let args = self.args;
        let p = &mut self.pkt;
        p.clear();
        rs_header(p, seq, k.start, &self.interned);
        p.nested(wire::packet::GPU_RENDER_STAGE_EVENT, |e| {
            e.varint(wire::rse::EVENT_ID, id)
                .varint(wire::rse::DURATION, k.end.saturating_sub(k.start))
                .varint(wire::rse::HW_QUEUE_IID, queue)
                .varint(wire::rse::STAGE_IID, STAGE_KERNEL)
                .varint(wire::rse::CONTEXT, ctx)
                .varint(wire::rse::GPU_ID, k.device as u64)
                .varint(wire::rse::KERNEL_IID, k.kernel.0 as u64)
                .varint(wire::rse::NAME_IID, desc.display.0 as u64);
            e.nested(wire::rse::LAUNCH, |l| {
                write_dim3(l, wire::rse::LAUNCH_GRID, k.grid);
                write_dim3(l, wire::rse::LAUNCH_WORKGROUP, k.block);
                arg_uint(l, args.device, k.device as u64);
                arg_uint(l, args.stream, k.stream);
                if let Some(w) = k.waves_per_sm {
                    l.nested(wire::rse::LAUNCH_ARGS, |a| {
                        a.varint(wire::arg::NAME_IID, args.waves.0 as u64)
                            .double(wire::arg::DOUBLE, w as f64);
                    });
                }
                if k.graph_node != 0 {
                    arg_uint(l, args.graph_node, k.graph_node);
                }
            });
        });
        sink.packet(p.as_bytes());
    }

    fn write_memory(&mut self, seq: &mut RsSeq, m: &MemoryOp, id: u64, sink: &mut dyn PacketSink) {
        let queue = self.queue_iid(m.device, m.stream);
        let ctx = self.context_iid(m.context);
        let (stage, name) = match m.kind {
            MemoryOpKind::Copy { kind, .. } => (STAGE_MEMCPY, self.copy_name(kind)),
            MemoryOpKind::Set { .. } => (STAGE_MEMSET, self.memset_name),
        };
        self.interned.clear();
        self.intern_queue(seq, queue);
        self.intern_context(seq, ctx);
        self.intern_event_name(seq, name);
        let a = self.args;
        let used: &[NameId] = match m.kind {
            MemoryOpKind::Copy { peer: Some(_), .. } => &[
                a.device,
                a.stream,
                a.bytes,
                a.src_kind,
                a.dst_kind,
                a.src_device,
                a.dst_device,
            ],
            MemoryOpKind::Copy { .. } => &[a.device, a.stream, a.bytes, a.src_kind, a.dst_kind],
            MemoryOpKind::Set { .. } => &[a.device, a.stream, a.bytes, a.value, a.memory_kind],
        };
        for &n in used {
            self.intern_arg_name(seq, n);
        }
        if m.graph_node != 0 {
            self.intern_arg_name(seq, a.graph_node);
        }
        let p = &mut self.pkt;
        p.clear();
        rs_header(p, seq, m.start, &self.interned);
        p.nested(wire::packet::GPU_RENDER_STAGE_EVENT, |e| {
            e.varint(wire::rse::EVENT_ID, id)
                .varint(wire::rse::DURATION, m.end.saturating_sub(m.start))
                .varint(wire::rse::HW_QUEUE_IID, queue)
                .varint(wire::rse::STAGE_IID, stage)
                .varint(wire::rse::CONTEXT, ctx)
                .varint(wire::rse::GPU_ID, m.device as u64)
                .varint(wire::rse::NAME_IID, name.0 as u64);
            e.nested(wire::rse::LAUNCH, |l| {
                arg_uint(l, a.device, m.device as u64);
                arg_uint(l, a.stream, m.stream);
                arg_uint(l, a.bytes, m.bytes);
                match m.kind {
                    MemoryOpKind::Copy { src, dst, peer, .. } => {
                        arg_str(l, a.src_kind, src.name());
                        arg_str(l, a.dst_kind, dst.name());
                        if let Some((s, d)) = peer {
                            arg_uint(l, a.src_device, s as u64);
                            arg_uint(l, a.dst_device, d as u64);
                        }
                    }
                    MemoryOpKind::Set { value, memory } => {
                        arg_uint(l, a.value, value as u64);
                        arg_str(l, a.memory_kind, memory.name());
                    }
                }
                if m.graph_node != 0 {
                    arg_uint(l, a.graph_node, m.graph_node);
                }
            });
        });
        sink.packet(p.as_bytes());
    }

    fn intern_queue(&mut self, seq: &mut RsSeq, iid: u64) {
        if seq.queues.test_and_set(iid as u32) {
            return;
        }
        let (device, stream) = self.queue_list[(iid - QUEUE_IID_BASE) as usize];
        let dev_name = self
            .devices
            .get(device)
            .map(|d| d.name)
            .unwrap_or_else(|| "GPU".to_owned());
        let api = self.backend.name;
        self.interned
            .nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                s.varint(wire::spec::IID, iid)
                    .string(wire::spec::NAME, &format!("GPU {device} · stream {stream}"))
                    .string(
                        wire::spec::DESCRIPTION,
                        &format!("{api} stream {stream} on {dev_name} (GPU {device})"),
                    )
                    .varint(wire::spec::CATEGORY, wire::spec::CATEGORY_COMPUTE);
            });
    }

    fn intern_context(&mut self, seq: &mut RsSeq, iid: u64) {
        if !seq.contexts.insert(iid) {
            return;
        }
        let api = self.backend.gpu_api;
        let pid = self.pid;
        self.interned
            .nested(wire::interned::GRAPHICS_CONTEXTS, |c| {
                c.varint(wire::context::IID, iid)
                    .varint(wire::context::PID, pid as u64)
                    .varint(wire::context::API, api);
            });
    }

    fn intern_event_name(&mut self, seq: &mut RsSeq, n: NameId) {
        if seq.names.test_and_set(n.0) {
            return;
        }
        let s = self.names.get(n);
        self.interned.nested(wire::interned::EVENT_NAMES, |e| {
            e.varint(wire::interned::IID, n.0 as u64)
                .string(wire::interned::NAME, &s);
        });
    }

    fn intern_arg_name(&mut self, seq: &mut RsSeq, n: NameId) {
        if seq.arg_names.test_and_set(n.0) {
            return;
        }
        let s = self.names.get(n);
        self.interned
            .nested(wire::interned::COMPUTE_ARG_NAMES, |e| {
                e.varint(wire::arg_name::IID, n.0 as u64)
                    .string(wire::arg_name::NAME, &s);
            });
    }

    /// A GpuLog line on a render-stage sequence.
    pub(crate) fn write_log(
        &mut self,
        seq: &mut RsSeq,
        warning: bool,
        message: &str,
        sink: &mut dyn PacketSink,
    ) {
        let now = crate::clock::boottime_ns();
        self.start_rs_sequence(seq, now, sink);
        let p = &mut self.pkt;
        p.clear();
        absolute_timestamp(p, now);
        p.nested(wire::packet::GPU_LOG, |l| {
            l.varint(
                wire::gpu_log::SEVERITY,
                if warning {
                    wire::gpu_log::WARNING
                } else {
                    wire::gpu_log::INFO
                },
            )
            .string(wire::gpu_log::TAG, "gpu-trace")
            .string(wire::gpu_log::MESSAGE, message);
        });
        sink.packet(p.as_bytes());
    }

    /// A clock snapshot pairing the custom GPU clock with BOOTTIME.
    pub(crate) fn write_clock_snapshot(&mut self, gpu: u64, boot: u64, sink: &mut dyn PacketSink) {
        let ClockSpec::Custom(id) = self.clock else {
            return;
        };
        let p = &mut self.pkt;
        p.clear();
        p.varint(wire::packet::TIMESTAMP, boot);
        p.varint(
            wire::packet::TIMESTAMP_CLOCK_ID,
            wire::clock::BOOTTIME as u64,
        );
        p.nested(wire::packet::CLOCK_SNAPSHOT, |cs| {
            cs.nested(wire::clock_snapshot::CLOCKS, |c| {
                c.varint(wire::clock_snapshot::CLOCK_ID, id as u64)
                    .varint(wire::clock_snapshot::TIMESTAMP, gpu);
            });
            cs.nested(wire::clock_snapshot::CLOCKS, |c| {
                c.varint(wire::clock_snapshot::CLOCK_ID, wire::clock::BOOTTIME as u64)
                    .varint(wire::clock_snapshot::TIMESTAMP, boot);
            });
        });
        sink.packet(p.as_bytes());
    }

    // ----- API calls and markers ------------------------------------------

    /// Writes the API calls of `batches` to a track-event sequence, in
    /// time order.
    pub(crate) fn write_api_calls(&mut self, batches: &[Batch], sink: &mut dyn TrackEventSink) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (bi, b) in batches.iter().enumerate() {
            for (ei, e) in b.events.iter().enumerate() {
                if let Event::Api(a) = e {
                    order.push((a.start, bi as u32, ei as u32, false));
                    order.push((a.end.max(a.start), bi as u32, ei as u32, true));
                }
            }
        }
        // Stable: a call's end stays after its begin, and after the previous
        // call's end when timestamps tie.
        order.sort_by_key(|o| o.0);
        self.begin_te_pass(&order, batches, sink);
        for &(ts, bi, ei, end) in &order {
            let Event::Api(a) = &batches[bi as usize].events[ei as usize] else {
                continue;
            };
            if end {
                let uuid = thread_track_uuid(self.pid, a.thread);
                self.write_end(uuid, ts, sink);
            } else {
                self.write_api(a, sink);
            }
        }
        self.order = order;
    }

    /// Writes the markers of `batches` to a track-event sequence, in time
    /// order.
    pub(crate) fn write_markers(&mut self, batches: &[Batch], sink: &mut dyn TrackEventSink) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (bi, b) in batches.iter().enumerate() {
            for (ei, e) in b.events.iter().enumerate() {
                if let Event::Marker(m) = e {
                    order.push((m.ts, bi as u32, ei as u32, false));
                }
            }
        }
        order.sort_by_key(|o| o.0);
        self.begin_te_pass(&order, batches, sink);
        for &(_, bi, ei, _) in &order {
            let b = &batches[bi as usize];
            if let Event::Marker(m) = &b.events[ei as usize]
                && self.marker_is_balanced(m)
            {
                self.write_marker(m, b, sink);
            }
        }
        self.order = order;
    }

    /// Tracks push depth and open ranges; false for an end whose begin was
    /// never recorded (it happened before tracing started).
    fn marker_is_balanced(&mut self, m: &MarkerEvent) -> bool {
        match m.marker {
            Marker::Push { .. } => {
                *self.marker_depth.entry(m.thread).or_default() += 1;
                true
            }
            Marker::Pop { .. } => match self.marker_depth.get_mut(&m.thread) {
                Some(d) if *d > 0 => {
                    *d -= 1;
                    true
                }
                _ => false,
            },
            Marker::Start { id, .. } => {
                self.open_ranges.insert(id);
                true
            }
            Marker::End { id } => self.open_ranges.remove(&id),
            Marker::Mark { .. } => true,
        }
    }

    /// Sets up the delta clock on a (new or reset) sequence, and describes
    /// the threads of this pass.
    fn begin_te_pass(
        &mut self,
        order: &[(u64, u32, u32, bool)],
        batches: &[Batch],
        sink: &mut dyn TrackEventSink,
    ) {
        let Some(&(t0, ..)) = order.first() else {
            return;
        };
        let inst = sink.instance() as usize % self.te_last.len();
        if !sink.track_seen(TE_CLOCK_SENTINEL) {
            // The busiest thread of this pass becomes the default track.
            let mut count: HashMap<u32, u32> = HashMap::default();
            for &(_, bi, _, _) in order {
                *count.entry(batches[bi as usize].thread).or_default() += 1;
            }
            let busiest = count
                .into_iter()
                .max_by_key(|&(t, n)| (n, t))
                .map(|(t, _)| t);
            let default_track = busiest.map(|t| thread_track_uuid(self.pid, t));
            let p = &mut self.pkt;
            p.clear();
            absolute_timestamp(p, t0);
            p.nested(wire::packet::DEFAULTS, |d| {
                d.varint(wire::packet::DEFAULTS_CLOCK_ID, DELTA_CLOCK as u64);
                if let Some(u) = default_track {
                    d.nested(wire::packet::DEFAULTS_TRACK_EVENT, |t| {
                        t.varint(wire::track_event::TRACK_UUID, u);
                    });
                }
            });
            // The snapshot never goes back on a sequence (see
            // `snapshot_floor`); events before it get absolute timestamps.
            let at = t0.max(self.snapshot_floor);
            self.snapshot_floor = at;
            write_delta_clock_snapshot(p, at);
            sink.packet(p.as_bytes());
            self.te_last[inst] = Some(at);
            self.te_default[inst] = default_track;
        }
        let mut seen = rustc_hash::FxHashSet::default();
        for &(_, bi, _, _) in order {
            let tid = batches[bi as usize].thread;
            if seen.insert(tid) {
                self.describe_thread(tid, sink);
            }
        }
    }

    /// The timestamp of a track-event packet: a delta on our clock when in
    /// order, else absolute BOOTTIME.
    fn te_stamp(&mut self, ts: u64, inst: u32) -> Stamp {
        let slot = &mut self.te_last[inst as usize % 8];
        match *slot {
            Some(last) if ts >= last => {
                *slot = Some(ts);
                Stamp::Delta(ts - last)
            }
            _ => Stamp::Absolute(ts),
        }
    }

    fn describe_thread(&mut self, tid: u32, sink: &mut dyn TrackEventSink) {
        let uuid = thread_track_uuid(self.pid, tid);
        if sink.track_seen(uuid) {
            return;
        }
        let pid = self.pid;
        let known = &self.known_thread_names;
        let name = self
            .thread_names
            .entry(tid)
            .or_insert_with(|| thread_name(pid, tid, known))
            .clone();
        let p = &mut self.pkt;
        p.clear();
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, uuid);
            t.nested(wire::track_descriptor::THREAD, |th| {
                th.varint(wire::track_descriptor::THREAD_PID, pid as u64)
                    .varint(wire::track_descriptor::THREAD_TID, tid as u64)
                    .string(wire::track_descriptor::THREAD_NAME, &name);
            });
        });
        sink.packet(p.as_bytes());
    }

    fn write_api(&mut self, a: &ApiCall, sink: &mut dyn TrackEventSink) {
        let uuid = thread_track_uuid(self.pid, a.thread);
        let name = self.names.get(a.name);
        let (iid, seen) = sink.intern_name(name.as_bytes());
        let gpu_api = self.backend.gpu_api;
        let pid = self.pid;
        let stamp = self.te_stamp(a.start, sink.instance());
        let uuid = self.explicit_track(uuid, sink.instance());
        let p = &mut self.pkt;
        p.clear();
        te_header(p, stamp, (!seen).then_some((iid, &*name)), true);
        p.nested(wire::packet::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_BEGIN);
            if let Some(u) = uuid {
                t.varint(wire::track_event::TRACK_UUID, u);
            }
            t.varint(wire::track_event::NAME_IID, iid);
            let submits = a.submits && a.correlation_id != 0;
            if submits || !a.waits.is_empty() {
                t.nested(wire::track_event::GPU_CORRELATION, |c| {
                    if submits {
                        c.varint(
                            wire::track_event::SUBMISSION_IDS,
                            primary_event_id(pid, a.correlation_id),
                        );
                    }
                    for &w in &a.waits {
                        c.varint(wire::track_event::WAIT_IDS, primary_event_id(pid, w));
                    }
                });
            }
            t.varint(wire::track_event::GPU_API, gpu_api);
            if a.status != 0 {
                t.nested(wire::track_event::DEBUG_ANNOTATIONS, |d| {
                    d.string(wire::debug_annotation::NAME, "status")
                        .int(wire::debug_annotation::INT, a.status as i64);
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    fn write_end(&mut self, uuid: u64, ts: u64, sink: &mut dyn TrackEventSink) {
        let stamp = self.te_stamp(ts, sink.instance());
        let uuid = self.explicit_track(uuid, sink.instance());
        let p = &mut self.pkt;
        p.clear();
        te_header(p, stamp, None, false);
        p.nested(wire::packet::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TYPE, wire::track_event::TYPE_SLICE_END);
            if let Some(u) = uuid {
                t.varint(wire::track_event::TRACK_UUID, u);
            }
        });
        sink.packet(p.as_bytes());
    }

    /// `Some(uuid)` unless it is the sequence's default track.
    fn explicit_track(&self, uuid: u64, inst: u32) -> Option<u64> {
        (self.te_default[inst as usize % 8] != Some(uuid)).then_some(uuid)
    }

    fn write_marker(&mut self, m: &MarkerEvent, b: &Batch, sink: &mut dyn TrackEventSink) {
        let thread_uuid = thread_track_uuid(self.pid, m.thread);
        let (ty, uuid, text, domain) = match m.marker {
            Marker::Push { domain, text } => (
                wire::track_event::TYPE_SLICE_BEGIN,
                thread_uuid,
                Some(text),
                domain,
            ),
            Marker::Pop { .. } => (wire::track_event::TYPE_SLICE_END, thread_uuid, None, None),
            Marker::Mark { domain, text } => (
                wire::track_event::TYPE_INSTANT,
                thread_uuid,
                Some(text),
                domain,
            ),
            Marker::Start { id, domain, text } => {
                let uuid = range_track_uuid(self.pid, id);
                self.describe_range_track(uuid, domain, sink);
                (
                    wire::track_event::TYPE_SLICE_BEGIN,
                    uuid,
                    Some(text),
                    domain,
                )
            }
            Marker::End { id } => {
                let uuid = range_track_uuid(self.pid, id);
                self.describe_range_track(uuid, None, sink);
                (wire::track_event::TYPE_SLICE_END, uuid, None, None)
            }
        };
        let text = text.map(|t| b.text(t));
        let interned = text.as_deref().map(|s| {
            let (iid, seen) = sink.intern_name(s.as_bytes());
            (iid, seen)
        });
        let domain = domain.map(|d| self.names.get(d));
        let stamp = self.te_stamp(m.ts, sink.instance());
        let uuid = self.explicit_track(uuid, sink.instance());
        let p = &mut self.pkt;
        p.clear();
        match (&interned, &text) {
            (Some((iid, false)), Some(s)) => te_header(p, stamp, Some((*iid, s)), true),
            _ => te_header(p, stamp, None, interned.is_some()),
        }
        p.nested(wire::packet::TRACK_EVENT, |t| {
            t.varint(wire::track_event::TYPE, ty);
            if let Some(u) = uuid {
                t.varint(wire::track_event::TRACK_UUID, u);
            }
            if let Some((iid, _)) = interned {
                t.varint(wire::track_event::NAME_IID, iid);
            }
            if let Some(d) = &domain {
                t.nested(wire::track_event::DEBUG_ANNOTATIONS, |a| {
                    a.string(wire::debug_annotation::NAME, "domain")
                        .string(wire::debug_annotation::STRING, d);
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    fn describe_range_track(
        &mut self,
        uuid: u64,
        domain: Option<NameId>,
        sink: &mut dyn TrackEventSink,
    ) {
        if sink.track_seen(uuid) {
            return;
        }
        let name = match domain {
            Some(d) => format!("Ranges ({})", self.names.get(d)),
            None => "Ranges".to_owned(),
        };
        let parent = perfetto_process_uuid();
        let p = &mut self.pkt;
        p.clear();
        p.nested(wire::packet::TRACK_DESCRIPTOR, |t| {
            t.varint(wire::track_descriptor::UUID, uuid);
            if let Some(parent) = parent {
                t.varint(wire::track_descriptor::PARENT_UUID, parent);
            }
            t.string(wire::track_descriptor::NAME, &name);
        });
        sink.packet(p.as_bytes());
    }

    // ----- counters -------------------------------------------------------

    /// Writes the counter samples of `batches` to one counter sequence.
    ///
    /// Per-kernel values are written at the kernel's start and return to
    /// zero at its end, so that each value covers exactly its kernel.
    pub(crate) fn write_counters(
        &mut self,
        seq: &mut CtrSeq,
        batches: &[Batch],
        sink: &mut dyn PacketSink,
    ) {
        let mut specs: Option<Vec<CounterSpec>> = None;
        for b in batches {
            for e in &b.events {
                match e {
                    Event::KernelCounters(c) => {
                        for (ts, zero) in [(c.start, false), (c.end, true)] {
                            let point = CounterPoint {
                                device: c.device,
                                ts,
                                values: &c.values,
                                zero,
                            };
                            self.write_counter_point(seq, &point, &mut specs, sink);
                        }
                    }
                    Event::Counters(c) => {
                        let point = CounterPoint {
                            device: c.device,
                            ts: c.ts,
                            values: &c.values,
                            zero: false,
                        };
                        self.write_counter_point(seq, &point, &mut specs, sink);
                    }
                    _ => {}
                }
            }
        }
    }

    fn write_counter_point(
        &mut self,
        seq: &mut CtrSeq,
        point: &CounterPoint<'_>,
        specs: &mut Option<Vec<CounterSpec>>,
        sink: &mut dyn PacketSink,
    ) {
        // A GPU's descriptor lists the counters that GPU has reported:
        // listing every registered counter would draw empty tracks for the
        // counters another GPU offers and this one does not.
        let offered = self.device_counters.entry(point.device).or_default();
        for (id, _) in point.values {
            if !offered.1.contains(&id.0) {
                offered.1.push(id.0);
                offered.0 += 1;
            }
        }
        let version = offered.0;
        let iid = self.counter_descriptor_iid(point.device, version);
        let first = !seq.started;
        seq.started = true;
        let describe = seq.described.get(&point.device) != Some(&version);
        if describe {
            seq.described.insert(point.device, version);
        }
        let p = &mut self.pkt;
        p.clear();
        p.varint(wire::packet::TIMESTAMP, point.ts);
        if let ClockSpec::Custom(id) = self.clock {
            p.varint(wire::packet::TIMESTAMP_CLOCK_ID, id as u64);
        }
        p.varint(
            wire::packet::SEQUENCE_FLAGS,
            if first {
                wire::packet::SEQ_INCREMENTAL_STATE_CLEARED
            } else {
                wire::packet::SEQ_NEEDS_INCREMENTAL_STATE
            },
        );
        if first || describe {
            let specs = specs.get_or_insert_with(|| self.counters.snapshot());
            let ids = &self.device_counters[&point.device].1;
            p.nested(wire::packet::INTERNED_DATA, |i| {
                i.nested(wire::interned::GPU_COUNTER_DESCRIPTORS, |d| {
                    d.varint(wire::counters::IDESC_IID, iid)
                        .varint(wire::counters::IDESC_GPU_ID, point.device as u64);
                    d.nested(wire::counters::IDESC_DESCRIPTOR, |cd| {
                        write_counter_descriptor(cd, specs, ids)
                    });
                });
            });
        }
        p.nested(wire::packet::GPU_COUNTER_EVENT, |ev| {
            ev.varint(wire::counters::DESCRIPTOR_IID, iid);
            for (id, v) in point.values {
                ev.nested(wire::counters::COUNTERS, |c| {
                    c.varint(wire::counters::COUNTER_ID, id.0 as u64).double(
                        wire::counters::DOUBLE_VALUE,
                        if point.zero { 0.0 } else { *v },
                    );
                });
            }
        });
        sink.packet(p.as_bytes());
    }

    fn counter_descriptor_iid(&self, device: u32, version: u32) -> u64 {
        ((version as u64) << 16) | (device as u64 + 1)
    }
}

struct CounterPoint<'a> {
    device: u32,
    ts: u64,
    values: &'a [(crate::model::CounterId, f64)],
    zero: bool,
}

/// A packet timestamp on a sequence with the delta clock as default.
#[derive(Debug, Clone, Copy)]
enum Stamp {
    Delta(u64),
    Absolute(u64),
}

/// An absolute BOOTTIME timestamp, explicit because our sequences default
/// to the delta clock.
fn absolute_timestamp(p: &mut Writer, ts: u64) {
    p.varint(wire::packet::TIMESTAMP, ts);
    p.varint(
        wire::packet::TIMESTAMP_CLOCK_ID,
        wire::clock::BOOTTIME as u64,
    );
}

/// Declares the delta clock at `t0` (BOOTTIME).
fn write_delta_clock_snapshot(p: &mut Writer, t0: u64) {
    p.nested(wire::packet::CLOCK_SNAPSHOT, |cs| {
        cs.nested(wire::clock_snapshot::CLOCKS, |c| {
            c.varint(wire::clock_snapshot::CLOCK_ID, DELTA_CLOCK as u64)
                .varint(wire::clock_snapshot::TIMESTAMP, t0)
                .bool(wire::clock_snapshot::IS_INCREMENTAL, true);
        });
        cs.nested(wire::clock_snapshot::CLOCKS, |c| {
            c.varint(wire::clock_snapshot::CLOCK_ID, wire::clock::BOOTTIME as u64)
                .varint(wire::clock_snapshot::TIMESTAMP, t0);
        });
    });
}

/// The timestamp of a render-stage packet.
/// Packet header of a render-stage event: its timestamp, the sequence flag
/// (it uses interned data) and the data it interns.
fn rs_header(p: &mut Writer, seq: &mut RsSeq, ts: u64, interned: &Writer) {
    rs_timestamp(p, seq, ts);
    p.varint(
        wire::packet::SEQUENCE_FLAGS,
        wire::packet::SEQ_NEEDS_INCREMENTAL_STATE,
    );
    if !interned.is_empty() {
        p.bytes(wire::packet::INTERNED_DATA, interned.as_bytes());
    }
}

fn rs_timestamp(p: &mut Writer, seq: &mut RsSeq, ts: u64) {
    match seq.last_ts {
        Some(last) if ts >= last => {
            p.varint(wire::packet::TIMESTAMP, ts - last);
            seq.last_ts = Some(ts);
        }
        Some(_) => absolute_timestamp(p, ts),
        // Custom GPU clock: its absolute values are the sequence default.
        None => {
            p.varint(wire::packet::TIMESTAMP, ts);
        }
    }
}

/// Packet header of a track event: its timestamp, the event name to intern,
/// and whether the packet refers to interned data (slice ends do not).
fn te_header(p: &mut Writer, stamp: Stamp, new_name: Option<(u64, &str)>, needs_state: bool) {
    match stamp {
        Stamp::Delta(d) => {
            p.varint(wire::packet::TIMESTAMP, d);
        }
        Stamp::Absolute(ts) => absolute_timestamp(p, ts),
    }
    if needs_state {
        p.varint(
            wire::packet::SEQUENCE_FLAGS,
            wire::packet::SEQ_NEEDS_INCREMENTAL_STATE,
        );
    }
    if let Some((iid, name)) = new_name {
        p.nested(wire::packet::INTERNED_DATA, |i| {
            i.nested(wire::interned::EVENT_NAMES, |e| {
                e.varint(wire::interned::IID, iid)
                    .string(wire::interned::NAME, name);
            });
        });
    }
}

fn write_dim3(w: &mut Writer, field: u32, d: crate::model::Dim3) {
    w.nested(field, |x| {
        x.varint(wire::rse::X, d.x as u64)
            .varint(wire::rse::Y, d.y as u64)
            .varint(wire::rse::Z, d.z as u64);
    });
}

fn arg_uint(l: &mut Writer, name: NameId, v: u64) {
    l.nested(wire::rse::LAUNCH_ARGS, |a| {
        a.varint(wire::arg::NAME_IID, name.0 as u64)
            .varint(wire::arg::UINT, v);
    });
}

fn arg_str(l: &mut Writer, name: NameId, v: &str) {
    l.nested(wire::rse::LAUNCH_ARGS, |a| {
        a.varint(wire::arg::NAME_IID, name.0 as u64)
            .string(wire::arg::STRING, v);
    });
}

fn write_arg(a: &mut Writer, name: NameId, v: ArgValue, names: &Names) {
    a.varint(wire::arg::NAME_IID, name.0 as u64);
    match v {
        ArgValue::Int(i) => a.int(wire::arg::INT, i),
        ArgValue::Uint(u) => a.varint(wire::arg::UINT, u),
        ArgValue::Double(d) => a.double(wire::arg::DOUBLE, d),
        ArgValue::Name(n) => a.string(wire::arg::STRING, &names.get(n)),
    };
}

fn write_gpu(g: &mut Writer, d: &crate::model::Device) {
    g.string(wire::gpu_info::NAME, &d.name);
    if let Some(v) = d.vendor {
        g.string(wire::gpu_info::VENDOR, v.name());
    }
    if !d.arch_id.is_empty() {
        g.string(wire::gpu_info::MODEL, &d.arch_id);
    }
    if !d.architecture.is_empty() {
        g.string(wire::gpu_info::ARCHITECTURE, &d.architecture);
    }
    if let Some(u) = d.uuid {
        g.bytes(wire::gpu_info::UUID, &u);
    }
    if let Some(p) = &d.pci_bdf {
        g.string(wire::gpu_info::PCI_BDF, p);
    }
    let mut kv = |k: &str, v: &str| {
        g.nested(wire::gpu_info::EXTRA_INFO, |e| {
            e.string(wire::gpu_info::KEY, k)
                .string(wire::gpu_info::VALUE, v);
        });
    };
    kv("gpu_id", &d.id.to_string());
    if d.sm_count > 0 {
        kv("sm_count", &d.sm_count.to_string());
    }
    if let Some(m) = d.total_memory {
        kv("total_memory", &m.to_string());
    }
    for (k, v) in &d.extra {
        kv(k, v);
    }
}

fn unit_code(u: Unit) -> u64 {
    match u {
        Unit::None => 0,
        Unit::Bit => 1,
        Unit::Byte => 7,
        Unit::Kilobyte => 8,
        Unit::Megabyte => 9,
        Unit::Gigabyte => 10,
        Unit::Hertz => 13,
        Unit::Megahertz => 15,
        Unit::Nanosecond => 19,
        Unit::Microsecond => 20,
        Unit::Millisecond => 21,
        Unit::Second => 22,
        Unit::Milliwatt => 28,
        Unit::Watt => 29,
        Unit::Joule => 31,
        Unit::Volt => 32,
        Unit::Celsius => 34,
        Unit::Percent => 37,
        Unit::Instruction => 40,
    }
}

/// Describes the counters `ids` (`CounterId`s: index into `specs` + 1).
fn write_counter_descriptor(cd: &mut Writer, specs: &[CounterSpec], ids: &[u32]) {
    for (i, s) in specs.iter().enumerate() {
        if !ids.contains(&(i as u32 + 1)) {
            continue;
        }
        cd.nested(wire::counters::DESC_SPECS, |sp| {
            sp.varint(wire::counters::SPEC_COUNTER_ID, i as u64 + 1)
                .string(wire::counters::SPEC_NAME, &s.name);
            if !s.description.is_empty() {
                sp.string(wire::counters::SPEC_DESCRIPTION, &s.description);
            }
            if s.unit != Unit::None {
                sp.varint(wire::counters::SPEC_NUM_UNITS, unit_code(s.unit));
            }
            if let Some(per) = s.per {
                sp.varint(wire::counters::SPEC_DEN_UNITS, unit_code(per));
            }
            sp.varint(
                wire::counters::SPEC_GROUPS,
                match s.group {
                    CounterGroup::Compute => wire::counters::GROUP_COMPUTE,
                    CounterGroup::Memory => wire::counters::GROUP_MEMORY,
                    CounterGroup::System => wire::counters::GROUP_SYSTEM,
                },
            )
            .varint(
                wire::counters::SPEC_VALUE_DIRECTION,
                wire::counters::FORWARDS_LOOKING,
            );
        });
    }
    cd.bool(wire::counters::DESC_SUPPORTS_INSTRUMENTED, true)
        .bool(wire::counters::DESC_SUPPORTS_NAMES, true);
}

/// The thread's name now, or as it was when it first recorded if it has
/// exited since.
fn thread_name(pid: u32, tid: u32, known: &crate::collector::ThreadNames) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .ok()
        .or_else(|| known.get(tid))
        .unwrap_or_else(|| format!("thread {tid}"))
}

/// The SDK's process track, parent of process-wide range tracks.
fn perfetto_process_uuid() -> Option<u64> {
    // Zero until track events are initialised (unit tests).
    Some(perfetto_sdk::track_event::TrackEventTrack::process_track_uuid()).filter(|&u| u != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::Batch;
    use crate::model::{Dim3, KernelExec, KernelId};
    use crate::pb::Fields;

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

    #[derive(Default)]
    struct Packets(Vec<Vec<u8>>);

    impl PacketSink for Packets {
        fn packet(&mut self, bytes: &[u8]) {
            self.0.push(bytes.to_vec());
        }
    }

    fn kernel_batch(starts: &[u64], kernel: KernelId) -> Batch {
        Batch {
            thread: 1,
            events: starts
                .iter()
                .enumerate()
                .map(|(i, &start)| {
                    Event::Kernel(KernelExec {
                        device: 0,
                        context: 1,
                        stream: 7,
                        correlation_id: 1 + i as u64 + start,
                        start,
                        end: start + 10,
                        kernel,
                        grid: Dim3::new(1, 1, 1),
                        block: Dim3::new(1, 1, 1),
                        waves_per_sm: None,
                        graph_node: 0,
                    })
                })
                .collect(),
            text: Vec::new(),
        }
    }

    /// The delta-clock values of the clock snapshots in `packets`.
    fn snapshots(packets: &[Vec<u8>]) -> Vec<u64> {
        let mut out = Vec::new();
        for p in packets {
            for (f, v) in Fields::new(p).map_while(Result::ok) {
                if f != wire::packet::CLOCK_SNAPSHOT {
                    continue;
                }
                for (_, c) in Fields::new(v.as_bytes().unwrap()).map_while(Result::ok) {
                    let fields: Vec<_> = Fields::new(c.as_bytes().unwrap())
                        .map_while(Result::ok)
                        .collect();
                    let id = fields
                        .iter()
                        .find(|f| f.0 == wire::clock_snapshot::CLOCK_ID);
                    let ts = fields
                        .iter()
                        .find(|f| f.0 == wire::clock_snapshot::TIMESTAMP);
                    if id.and_then(|f| f.1.as_u64()) == Some(DELTA_CLOCK as u64) {
                        out.push(ts.and_then(|f| f.1.as_u64()).unwrap());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_cleared_sequence_never_describes_its_clock_earlier_than_before() {
        let names = Arc::new(crate::names::Names::default());
        let kernels = Arc::new(crate::names::Kernels::default());
        let n = kernels.names(&names, "_Z1kv");
        let k = kernels.register(crate::model::KernelDesc {
            mangled: n.mangled,
            demangled: n.demangled,
            display: n.display,
            arch: names.intern("sm_90"),
            args: vec![],
        });
        let mut enc = Encoder::new(
            42,
            crate::testing::BACKEND,
            ClockSpec::Boottime,
            None,
            Tables {
                names,
                kernels,
                devices: Arc::new(crate::registry::Devices::default()),
                counters: Arc::new(crate::registry::Counters::default()),
                thread_names: crate::collector::ThreadNames::default(),
            },
        );
        let mut sink = Packets::default();
        // A part written at 5,000; then the incremental state is cleared
        // and the next part holds GPU work recorded earlier (it arrived
        // late), at 3,000.
        let first = [kernel_batch(&[5_000, 6_000], k)];
        let ids = enc.prepare(&first);
        let mut seq = RsSeq::default();
        enc.write_render_stages(&mut seq, &first, &ids, &mut sink);
        let late = [kernel_batch(&[3_000, 7_000], k)];
        let ids = enc.prepare(&late);
        let mut cleared = RsSeq::default();
        enc.write_render_stages(&mut cleared, &late, &ids, &mut sink);
        let snaps = snapshots(&sink.0);
        assert_eq!(snaps.len(), 2, "{snaps:?}");
        assert!(snaps[1] >= snaps[0], "the clock went back: {snaps:?}");
        // The early event is still written, with an absolute timestamp.
        let absolute = sink
            .0
            .iter()
            .filter(|p| {
                Fields::new(p).map_while(Result::ok).any(|(f, v)| {
                    f == wire::packet::TIMESTAMP_CLOCK_ID
                        && v.as_u64() == Some(wire::clock::BOOTTIME as u64)
                })
            })
            .count();
        assert!(
            absolute >= 3,
            "sequence starts and the late event: {absolute}"
        );
    }
}
