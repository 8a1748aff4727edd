//! What Linux perf shows for GPUs whose kernel driver it knows, and CUDA
//! and HIP keep to themselves, derived from the activity the trace already
//! holds:
//!
//! - engine busy %: per GPU, the share of each 10 ms ([`crate::busy`]) in
//!   which at least one kernel ran (overlapping kernels count once), and
//!   the same for each copy direction and for memsets: perf's
//!   `rcs0-busy` / `bcs0-busy`. GPU counters (`GpuCounterEvent`) on the
//!   render stages' own sequences, so that they come with the GPU work
//!   whoever records it, at no cost to the application;
//! - GPU wait %: per CPU thread, the share of each 10 ms spent inside
//!   calls that wait for the GPU ([`crate::waits`]): perf's `dma_fence`
//!   waits. A counter track under the thread (a track-event counter on the
//!   API calls' sequence);
//! - unified-memory migrations and faults, as render stages on each GPU's
//!   "unified memory" queue;
//! - device memory in use per GPU, as `GpuMemTotalEvent`s of this process.

use super::clocks_logs::absolute_timestamp;
use super::counters::{CounterPoint, SeqRef, Stream};
use super::render_stages::{arg_str, arg_uint, rs_header};
use super::{Encoder, PacketSink, RsSeq, STAGE_UVM};
use crate::busy::{Busy, Point};
use crate::model::{
    ApiCall, CopyKind, CounterGroup, CounterId, CounterSpec, KernelExec, MemoryOp, MemoryOpKind,
    MemoryUsage, NameId, UnifiedMemoryEvent, Unit, UvmKind,
};
use crate::names::Names;
use gpu_trace_reader::wire;
use rustc_hash::FxHashMap as HashMap;

/// A GPU engine whose busy time is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Engine {
    /// Kernels.
    Compute,
    /// Copies host to device (and to arrays).
    CopyHtoD,
    /// Copies device to host (and from arrays).
    CopyDtoH,
    /// Copies within the device (and between arrays).
    CopyDtoD,
    /// Copies between GPUs.
    CopyPeer,
    /// Memsets.
    Memset,
}

impl Engine {
    /// The copy engine work of a copy; `None` for host-to-host copies
    /// (the host does them) and unknown directions.
    fn of_copy(kind: CopyKind) -> Option<Engine> {
        Some(match kind {
            CopyKind::HtoD | CopyKind::HtoA => Engine::CopyHtoD,
            CopyKind::DtoH | CopyKind::AtoH => Engine::CopyDtoH,
            CopyKind::DtoD | CopyKind::AtoA | CopyKind::AtoD | CopyKind::DtoA => Engine::CopyDtoD,
            CopyKind::PtoP => Engine::CopyPeer,
            _ => return None,
        })
    }

    fn spec(self) -> CounterSpec {
        // The name is `ENGINE_COUNTERS[i]`: readers know the tracks by it.
        let (i, group, what) = match self {
            Engine::Compute => (
                0,
                CounterGroup::System,
                "at least one kernel ran (overlapping kernels count once)",
            ),
            Engine::CopyHtoD => (
                1,
                CounterGroup::Memory,
                "a host-to-device copy ran (or a unified-memory migration to this GPU)",
            ),
            Engine::CopyDtoH => (
                2,
                CounterGroup::Memory,
                "a device-to-host copy ran (or a unified-memory migration from this GPU)",
            ),
            Engine::CopyDtoD => (3, CounterGroup::Memory, "a copy within the GPU ran"),
            Engine::CopyPeer => (4, CounterGroup::Memory, "a copy to or from another GPU ran"),
            Engine::Memset => (
                5,
                CounterGroup::Memory,
                "a memset ran (CUDA and HIP do not say which engine runs it)",
            ),
        };
        let mut s = CounterSpec::new(crate::busy::ENGINE_COUNTERS[i], Unit::Percent, group);
        s.description = format!(
            "Share of each {} ms in which {what}, from the trace's own GPU activity records",
            crate::busy::INTERVAL / 1_000_000
        );
        s
    }
}

/// Busy and wait accounting between the events the emitter sees and the
/// points it writes.
#[derive(Debug, Default)]
pub(crate) struct State {
    gpu: Busy<(u32, Engine)>,
    waits: Busy<u32>,
    /// Whether each API name waits for the GPU.
    wait_names: HashMap<NameId, bool>,
    ids: HashMap<Engine, CounterId>,
    uvm_names: Option<UvmNames>,
}

#[derive(Debug, Clone, Copy)]
struct UvmNames {
    kinds: [NameId; UvmKind::ALL.len()],
    bytes: NameId,
    faults: NameId,
    pc: NameId,
    address: NameId,
    src: NameId,
    dst: NameId,
    cause: NameId,
}

impl State {
    pub(super) fn kernel(&mut self, k: &KernelExec) {
        self.gpu.add((k.device, Engine::Compute), k.start, k.end);
    }

    pub(super) fn memory_op(&mut self, m: &MemoryOp) {
        let engine = match m.kind {
            MemoryOpKind::Copy { kind, .. } => Engine::of_copy(kind),
            MemoryOpKind::Set { .. } => Some(Engine::Memset),
            // A kind this writer does not know keeps no engine busy.
            _ => None,
        };
        if let Some(e) = engine {
            self.gpu.add((m.device, e), m.start, m.end);
        }
    }

    /// Migrations move pages on the copy engines, as copies do.
    pub(super) fn unified_memory(&mut self, u: &UnifiedMemoryEvent) {
        let engine = match u.kind {
            UvmKind::MigrationHtoD => Engine::CopyHtoD,
            UvmKind::MigrationDtoH => Engine::CopyDtoH,
            UvmKind::MigrationDtoD => Engine::CopyPeer,
            _ => return,
        };
        self.gpu.add((u.device, engine), u.start, u.end);
    }

    pub(super) fn api_call(&mut self, a: &ApiCall, names: &Names) {
        let waits = *self
            .wait_names
            .entry(a.name)
            .or_insert_with(|| crate::waits::waits_for_gpu(&names.get(a.name)));
        if waits {
            self.waits.add(a.thread, a.start, a.end);
        }
    }
}

/// Counter points ready to be written.
#[derive(Debug, Default)]
pub(crate) struct Points {
    /// Busy % per (GPU, engine), in the GPU clock domain.
    pub(crate) busy: Vec<Point<(u32, Engine)>>,
    /// GPU wait % per thread, CLOCK_BOOTTIME.
    pub(crate) waits: Vec<Point<u32>>,
}

impl Points {
    pub(crate) fn is_empty(&self) -> bool {
        self.busy.is_empty() && self.waits.is_empty()
    }
}

/// Track uuid of a thread's "GPU wait" counter track.
pub(super) fn wait_track_uuid(pid: u32, tid: u32) -> u64 {
    WAIT_TRACK_BIT | ((pid as u64 & super::PID_MASK) << 32) | tid as u64
}

const WAIT_TRACK_BIT: u64 = 1 << 55;

impl Encoder {
    /// The points of every interval that ended before the watermarks:
    /// `gpu` for GPU work (in its clock), `host` for API calls (BOOTTIME).
    pub(crate) fn advance_activity(&mut self, gpu: u64, host: u64) -> Points {
        Points {
            busy: self.activity.gpu.advance(gpu),
            waits: self.activity.waits.advance(host),
        }
    }

    /// Everything still pending (the session stops, the process exits).
    pub(crate) fn finish_activity(&mut self) -> Points {
        Points {
            busy: self.activity.gpu.finish(),
            waits: self.activity.waits.finish(),
        }
    }

    /// Records that arrived after their interval was written.
    pub(crate) fn activity_late(&self) -> u64 {
        self.activity.gpu.late() + self.activity.waits.late()
    }

    /// Writes busy points to a render-stage sequence.
    pub(crate) fn write_busy(
        &mut self,
        seq: &mut RsSeq,
        points: &[Point<(u32, Engine)>],
        sink: &mut dyn PacketSink,
    ) {
        let Some(t0) = points.iter().map(|p| p.ts).min() else {
            return;
        };
        self.start_rs_sequence(seq, t0, sink);
        let mut order: Vec<&Point<(u32, Engine)>> = points.iter().collect();
        order.sort_by_key(|p| (p.ts, p.key));
        // Every counter of this pass is registered before the first
        // descriptor is written, so that each lists what its GPU reports.
        for p in &order {
            let counters = &self.counters;
            let engine = p.key.1;
            self.activity
                .ids
                .entry(engine)
                .or_insert_with(|| counters.register(engine.spec()));
        }
        let mut specs = None;
        for p in order {
            let (device, engine) = p.key;
            let id = self.activity.ids[&engine];
            let point = CounterPoint {
                stream: Stream::Activity,
                device,
                ts: p.ts,
                values: &[(id, p.percent)],
                zero: false,
            };
            self.write_counter_point(SeqRef::Rs(seq), &point, &mut specs, sink);
        }
    }

    fn uvm_names(&mut self) -> UvmNames {
        if let Some(n) = self.activity.uvm_names {
            return n;
        }
        let names = &self.names;
        let n = UvmNames {
            kinds: UvmKind::ALL.map(|k| names.intern(k.name())),
            bytes: self.args.bytes,
            faults: names.intern("faults"),
            pc: names.intern("pc"),
            address: names.intern("address"),
            src: names.intern("src"),
            dst: names.intern("dst"),
            cause: names.intern("cause"),
        };
        self.activity.uvm_names = Some(n);
        n
    }

    /// A unified-memory event on its GPU's "unified memory" queue.
    pub(super) fn write_uvm(
        &mut self,
        seq: &mut RsSeq,
        u: &UnifiedMemoryEvent,
        id: u64,
        sink: &mut dyn PacketSink,
    ) {
        let n = self.uvm_names();
        let queue = self.queue_iid(u.device, super::UVM_STREAM);
        let ctx = self.context_iid(0);
        let kind_index = UvmKind::ALL.iter().position(|k| *k == u.kind).unwrap_or(0);
        let name = n.kinds[kind_index];
        let value_name = match u.kind.value_name() {
            "faults" => n.faults,
            "pc" => n.pc,
            _ => n.bytes,
        };
        self.interned.clear();
        self.intern_queue(seq, queue);
        self.intern_context(seq, ctx);
        self.intern_event_name(seq, name);
        for a in [value_name, n.address, n.src, n.dst, n.cause] {
            self.intern_arg_name(seq, a);
        }
        let p = &mut self.pkt;
        p.clear();
        rs_header(p, seq, u.start, &self.interned);
        p.nested(wire::packet::GPU_RENDER_STAGE_EVENT, |e| {
            e.varint(wire::rse::EVENT_ID, id);
            if u.kind.has_duration() {
                e.varint(wire::rse::DURATION, u.end.saturating_sub(u.start));
            }
            e.varint(wire::rse::HW_QUEUE_IID, queue)
                .varint(wire::rse::STAGE_IID, STAGE_UVM)
                .varint(wire::rse::CONTEXT, ctx)
                .varint(wire::rse::GPU_ID, u.device as u64)
                .varint(wire::rse::NAME_IID, name.0 as u64);
            e.nested(wire::rse::LAUNCH, |l| {
                arg_uint(l, value_name, u.value);
                arg_str(l, n.address, &format!("{:#x}", u.address));
                if let Some(s) = u.src {
                    arg_uint(l, n.src, s as u64);
                }
                if let Some(d) = u.dst {
                    arg_uint(l, n.dst, d as u64);
                }
                if let Some(c) = u.cause {
                    arg_str(l, n.cause, c);
                }
            });
        });
        sink.packet(p.as_bytes());
    }

    /// Device memory in use, as this process's `GpuMemTotalEvent` (the
    /// trace processor's "GPU Memory" track of the process and GPU).
    pub(super) fn write_memory_usage(&mut self, m: &MemoryUsage, sink: &mut dyn PacketSink) {
        let pid = self.pid;
        let p = &mut self.pkt;
        p.clear();
        // Host time: explicit, whatever the sequence's GPU clock.
        absolute_timestamp(p, m.ts);
        p.nested(wire::packet::GPU_MEM_TOTAL_EVENT, |g| {
            g.varint(wire::gpu_mem_total::GPU_ID, m.device as u64)
                .varint(wire::gpu_mem_total::PID, pid as u64)
                .varint(wire::gpu_mem_total::SIZE, m.bytes);
        });
        sink.packet(p.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{Fixture, Packets, TePackets, all, at, s, u};
    use super::super::{ClockSpec, RsSeq};
    use super::*;
    use crate::collector::Batch;
    use crate::model::{Event, KernelDesc, MemoryKind};
    use wire::counters as C;

    const MS: u64 = 1_000_000;

    fn batch(events: Vec<Event>) -> Batch {
        Batch {
            thread: 9,
            events,
            text: vec![],
        }
    }

    fn kernel(f: &Fixture, device: u32, start: u64, end: u64) -> Event {
        let n = f.kernels.names(&f.names, "_Z1kv");
        let k = f.kernels.register(KernelDesc::new(
            n.mangled,
            n.demangled,
            n.display,
            f.names.intern("sm_90"),
        ));
        Event::Kernel(KernelExec::new(device, start, start, end, k))
    }

    fn copy(device: u32, kind: CopyKind, start: u64, end: u64) -> Event {
        Event::Memory(MemoryOp::new(
            device,
            start + 1,
            start,
            end,
            4096,
            MemoryOpKind::Copy {
                kind,
                src: MemoryKind::Pinned,
                dst: MemoryKind::Device,
                peer: None,
            },
        ))
    }

    /// (counter name, GPU, value) of every counter packet, by the
    /// descriptors written before it on the sequence, which must describe
    /// each counter used (the trace processor drops a value it cannot
    /// resolve, as `gpu_counters_invalid_spec`).
    fn counter_values(packets: &[Vec<u8>]) -> Vec<(String, u64, f64)> {
        // iid → (GPU, counter id → name).
        let mut desc = std::collections::HashMap::new();
        let mut out = Vec::new();
        for p in packets {
            for d in all(p, wire::packet::INTERNED_DATA).iter().flat_map(|i| {
                all(
                    i.as_bytes().unwrap(),
                    wire::interned::GPU_COUNTER_DESCRIPTORS,
                )
            }) {
                let d = d.as_bytes().unwrap();
                let specs = at(d, &[C::IDESC_DESCRIPTOR]).unwrap().as_bytes().unwrap();
                let names: std::collections::HashMap<u64, String> = all(specs, C::DESC_SPECS)
                    .iter()
                    .map(|sp| {
                        let sp = sp.as_bytes().unwrap();
                        (
                            u(sp, &[C::SPEC_COUNTER_ID]).unwrap(),
                            s(sp, &[C::SPEC_NAME]).unwrap().to_owned(),
                        )
                    })
                    .collect();
                desc.insert(
                    u(d, &[C::IDESC_IID]).unwrap(),
                    (u(d, &[C::IDESC_GPU_ID]).unwrap(), names),
                );
            }
            let Some(ev) = at(p, &[wire::packet::GPU_COUNTER_EVENT]) else {
                continue;
            };
            let ev = ev.as_bytes().unwrap();
            let (gpu, names) = &desc[&u(ev, &[C::DESCRIPTOR_IID]).unwrap()];
            let id = u(ev, &[C::COUNTERS, C::COUNTER_ID]).unwrap();
            let v = at(ev, &[C::COUNTERS, C::DOUBLE_VALUE])
                .unwrap()
                .as_f64()
                .unwrap();
            let name = names
                .get(&id)
                .unwrap_or_else(|| panic!("counter {id} is not in its descriptor"));
            out.push((name.clone(), *gpu, v));
        }
        out
    }

    #[test]
    fn busy_counts_each_engine_of_each_gpu_as_the_union_of_its_work() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        // GPU 0: two overlapping kernels [1, 4) and [3, 6) ms: 5 ms of the
        // first 10 ms. A copy HtoD [2, 4.5) ms. GPU 1: a kernel [0, 10) ms.
        let b = [batch(vec![
            kernel(&f, 0, 3 * MS, 6 * MS),
            copy(0, CopyKind::HtoD, 2 * MS, 4 * MS + MS / 2),
            kernel(&f, 1, 0, 10 * MS),
            kernel(&f, 0, MS, 4 * MS),
            // A host-to-host copy is no GPU engine's work.
            copy(0, CopyKind::HtoH, 0, 10 * MS),
        ])];
        f.enc.prepare(&b);
        let p = f.enc.finish_activity();
        let mut seq = RsSeq::default();
        let mut sink = Packets::default();
        f.enc.write_busy(&mut seq, &p.busy, &mut sink);
        let mut got = counter_values(&sink.0);
        got.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let want = [
            ("Compute busy", 0, 50.0),
            ("Compute busy", 0, 0.0),
            ("Compute busy", 1, 100.0),
            ("Compute busy", 1, 0.0),
            ("Copy HtoD busy", 0, 25.0),
            ("Copy HtoD busy", 0, 0.0),
        ];
        let mut want: Vec<_> = want.iter().map(|&(n, g, v)| (n.to_owned(), g, v)).collect();
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(got, want);
        // Described with units and groups: percent; SYSTEM for compute,
        // MEMORY for copies; not per-kernel (instrumented) counters.
        let specs = f.counters.snapshot();
        let compute = specs.iter().find(|s| s.name == "Compute busy").unwrap();
        assert_eq!(
            (compute.unit, compute.group),
            (Unit::Percent, CounterGroup::System)
        );
        let copy = specs.iter().find(|s| s.name == "Copy HtoD busy").unwrap();
        assert_eq!(copy.group, CounterGroup::Memory);
        let desc = sink
            .0
            .iter()
            .find_map(|p| {
                at(
                    p,
                    &[
                        wire::packet::INTERNED_DATA,
                        wire::interned::GPU_COUNTER_DESCRIPTORS,
                        C::IDESC_DESCRIPTOR,
                    ],
                )
            })
            .unwrap();
        assert_eq!(
            u(desc.as_bytes().unwrap(), &[C::DESC_SUPPORTS_INSTRUMENTED]),
            Some(0)
        );
    }

    #[test]
    fn busy_values_sit_at_interval_starts_on_the_sequence_clock() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        let b = [batch(vec![kernel(&f, 0, 12 * MS, 17 * MS)])];
        f.enc.prepare(&b);
        // Not final before the watermark passes the interval's end.
        assert!(f.enc.advance_activity(19 * MS, 0).busy.is_empty());
        let p = f.enc.advance_activity(30 * MS, 0);
        assert_eq!(p.busy.len(), 2);
        let mut seq = RsSeq::default();
        let mut sink = Packets::default();
        f.enc.write_busy(&mut seq, &p.busy, &mut sink);
        // The sequence starts at the first point (absolute, then deltas).
        let ts: Vec<u64> = sink
            .0
            .iter()
            .filter(|p| at(p, &[wire::packet::GPU_COUNTER_EVENT]).is_some())
            .map(|p| u(p, &[wire::packet::TIMESTAMP]).unwrap())
            .collect();
        assert_eq!(ts, [0, 10 * MS], "10 ms: the value, then its return to 0");
    }

    #[test]
    fn threads_wait_inside_synchronising_calls_only() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        let call = |name: &str, thread: u32, start: u64, end: u64| {
            Event::Api(ApiCall::new(f.names.intern(name), thread, start, end, 1))
        };
        let b = [batch(vec![
            // Thread 5 waits 4 ms in a stream sync and 2 ms in a blocking
            // copy in the first interval: 60%.
            call("cuStreamSynchronize", 5, MS, 5 * MS),
            call("cuMemcpyDtoH_v2", 5, 6 * MS, 8 * MS),
            // A launch and an async copy are no waits.
            call("cuLaunchKernel", 5, 0, MS),
            call("cuMemcpyHtoDAsync_v2", 5, 8 * MS, 9 * MS),
            // Thread 6: a device sync of 25 ms from 10 ms on.
            call("cudaDeviceSynchronize_v3020", 6, 10 * MS, 35 * MS),
        ])];
        f.enc.prepare(&b);
        let p = f.enc.finish_activity();
        let mut got: Vec<_> = p.waits.iter().map(|p| (p.key, p.ts, p.percent)).collect();
        got.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(
            got,
            [
                (5, 0, 60.0),
                (5, 10 * MS, 0.0),
                (6, 10 * MS, 100.0),
                (6, 30 * MS, 50.0),
                (6, 40 * MS, 0.0),
            ]
        );
        let mut sink = TePackets::default();
        f.enc.write_waits(&p.waits, &mut sink);
        // One counter track per thread, under the thread's track.
        let tracks: Vec<&[u8]> = sink
            .packets
            .iter()
            .filter_map(|p| at(p, &[wire::packet::TRACK_DESCRIPTOR]))
            .map(|v| v.as_bytes().unwrap())
            .filter(|d| at(d, &[wire::track_descriptor::COUNTER]).is_some())
            .collect();
        assert_eq!(tracks.len(), 2);
        for d in &tracks {
            assert_eq!(s(d, &[wire::track_descriptor::NAME]), Some("GPU wait"));
            assert_eq!(
                s(
                    d,
                    &[
                        wire::track_descriptor::COUNTER,
                        wire::track_descriptor::COUNTER_UNIT_NAME
                    ]
                ),
                Some("%")
            );
        }
        let parents: Vec<u64> = tracks
            .iter()
            .map(|d| u(d, &[wire::track_descriptor::PARENT_UUID]).unwrap())
            .collect();
        assert!(parents.contains(&super::super::thread_track_uuid(
            super::super::test_support::PID,
            5
        )));
        let values: Vec<f64> = sink
            .packets
            .iter()
            .filter_map(|p| at(p, &[wire::packet::TRACK_EVENT]))
            .map(|t| {
                let t = t.as_bytes().unwrap();
                assert_eq!(
                    u(t, &[wire::track_event::TYPE]),
                    Some(wire::track_event::TYPE_COUNTER)
                );
                at(t, &[wire::track_event::DOUBLE_COUNTER_VALUE])
                    .unwrap()
                    .as_f64()
                    .unwrap()
            })
            .collect();
        assert_eq!(values, [60.0, 0.0, 100.0, 50.0, 0.0]);
    }

    #[test]
    fn unified_memory_events_sit_on_their_gpus_queue_with_their_args() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        let mut m =
            UnifiedMemoryEvent::new(1, UvmKind::MigrationHtoD, 1_000, 3_000, 0x7f00_0000, 65_536);
        m.src = Some(0);
        m.dst = Some(1);
        m.cause = Some("prefetch");
        let fault = UnifiedMemoryEvent::new(1, UvmKind::CpuPageFault, 5_000, 0, 0x1000, 0x4242);
        let b = [batch(vec![
            Event::UnifiedMemory(m),
            Event::UnifiedMemory(fault),
        ])];
        let ids = f.enc.prepare(&b);
        let mut seq = RsSeq::default();
        let mut sink = Packets::default();
        f.enc.write_render_stages(&mut seq, &b, &ids, &mut sink);
        let ev: Vec<&[u8]> = sink
            .0
            .iter()
            .filter_map(|p| at(p, &[wire::packet::GPU_RENDER_STAGE_EVENT]))
            .map(|v| v.as_bytes().unwrap())
            .collect();
        assert_eq!(ev.len(), 2);
        use wire::rse as R;
        assert_eq!(u(ev[0], &[R::STAGE_IID]), Some(STAGE_UVM));
        assert_eq!(u(ev[0], &[R::DURATION]), Some(2_000));
        assert_eq!(u(ev[0], &[R::GPU_ID]), Some(1));
        // The CPU fault is an instant, on the same queue.
        assert_eq!(u(ev[1], &[R::DURATION]), None);
        assert_eq!(u(ev[1], &[R::GPU_ID]), Some(1));
        assert_eq!(u(ev[0], &[R::HW_QUEUE_IID]), u(ev[1], &[R::HW_QUEUE_IID]));
        // Queue names say what they are.
        let queues: Vec<String> = sink
            .0
            .iter()
            .flat_map(|p| all(p, wire::packet::INTERNED_DATA))
            .flat_map(|i| all(i.as_bytes().unwrap(), wire::interned::GPU_SPECIFICATIONS))
            .filter_map(|q| s(q.as_bytes().unwrap(), &[wire::spec::NAME]).map(str::to_owned))
            .collect();
        assert!(
            queues.contains(&"GPU 1 · unified memory".to_owned()),
            "{queues:?}"
        );
        assert!(
            queues.contains(&"Unified memory".to_owned()),
            "the stage: {queues:?}"
        );
        // The migration also made GPU 1's copy engine busy.
        let p = f.enc.finish_activity();
        assert_eq!(p.busy[0].key, (1, Engine::CopyHtoD));
    }

    #[test]
    fn memory_in_use_is_a_gpu_memory_total_of_this_process() {
        let mut f = Fixture::new(ClockSpec::Custom(0x8000_0001));
        let b = [batch(vec![Event::MemoryUsage(MemoryUsage::new(
            2,
            7_000,
            1 << 20,
        ))])];
        let ids = f.enc.prepare(&b);
        let mut seq = RsSeq::default();
        let mut sink = Packets::default();
        f.enc.write_render_stages(&mut seq, &b, &ids, &mut sink);
        let p = sink
            .0
            .iter()
            .find(|p| at(p, &[wire::packet::GPU_MEM_TOTAL_EVENT]).is_some())
            .unwrap();
        use wire::gpu_mem_total as G;
        let g = at(p, &[wire::packet::GPU_MEM_TOTAL_EVENT])
            .unwrap()
            .as_bytes()
            .unwrap();
        assert_eq!(u(g, &[G::GPU_ID]), Some(2));
        assert_eq!(
            u(g, &[G::PID]),
            Some(super::super::test_support::PID as u64)
        );
        assert_eq!(u(g, &[G::SIZE]), Some(1 << 20));
        // Host time, on BOOTTIME whatever the GPU clock.
        assert_eq!(u(p, &[wire::packet::TIMESTAMP]), Some(7_000));
        assert_eq!(
            u(p, &[wire::packet::TIMESTAMP_CLOCK_ID]),
            Some(wire::clock::BOOTTIME as u64)
        );
    }
}
