//! Render stages: kernels, copies and memsets on their GPU queues, with
//! the queues, contexts, kernels and names they intern.

use super::clocks_logs::{absolute_timestamp, write_delta_clock_snapshot};
use super::{
    ClockSpec, DELTA_CLOCK, Encoder, PacketSink, QUEUE_IID_BASE, RsSeq, STAGE_KERNEL, STAGE_MEMCPY,
    STAGE_MEMSET, STAGE_UVM, UVM_STREAM,
};
use crate::collector::Batch;
use crate::model::{ArgValue, Event, KernelExec, MemoryOp, MemoryOpKind, NameId};
use crate::names::Names;
use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;
use std::sync::Arc;

impl Encoder {
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
                if let Event::Kernel(_)
                | Event::Memory(_)
                | Event::UnifiedMemory(_)
                | Event::MemoryUsage(_) = e
                {
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
                Event::UnifiedMemory(u) => self.write_uvm(seq, u, ids[b][id], sink),
                Event::MemoryUsage(m) => self.write_memory_usage(m, sink),
                _ => {}
            }
        }
        self.order = order;
    }

    pub(super) fn start_rs_sequence(
        &mut self,
        seq: &mut RsSeq,
        t0: u64,
        sink: &mut dyn PacketSink,
    ) {
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
            for (iid, name, desc, category) in [
                (
                    STAGE_KERNEL,
                    "Kernel",
                    "Kernel execution",
                    wire::spec::CATEGORY_COMPUTE,
                ),
                (
                    STAGE_MEMCPY,
                    "Memcpy",
                    "Memory copy",
                    wire::spec::CATEGORY_COMPUTE,
                ),
                (
                    STAGE_MEMSET,
                    "Memset",
                    "Memory set",
                    wire::spec::CATEGORY_COMPUTE,
                ),
                (
                    STAGE_UVM,
                    "Unified memory",
                    "Unified-memory migration, fault or thrashing",
                    wire::spec::CATEGORY_OTHER,
                ),
            ] {
                i.nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                    s.varint(wire::spec::IID, iid)
                        .string(wire::spec::NAME, name)
                        .string(wire::spec::DESCRIPTION, desc)
                        .varint(wire::spec::CATEGORY, category);
                });
            }
        });
        sink.packet(p.as_bytes());
        if let Some((gpu, boot)) = snapshot {
            self.write_clock_snapshot(gpu, boot, sink);
        }
        // For a trace without track events, where the SDK never describes
        // the process.
        self.describe_process(sink);
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
            // A kind this writer does not know is left out.
            _ => return,
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
                a.bandwidth,
            ],
            MemoryOpKind::Copy { .. } => &[a.device, a.stream, a.bytes, a.src_kind, a.dst_kind],
            MemoryOpKind::Set { .. } => &[a.device, a.stream, a.bytes, a.value, a.memory_kind],
            _ => &[a.device, a.stream, a.bytes],
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
                            // What an interconnect delivered: the first
                            // thing to read off a peer copy.
                            if let Some(bw) = bandwidth_gbps(m.bytes, m.end.saturating_sub(m.start))
                            {
                                arg_double(l, a.bandwidth, bw);
                            }
                        }
                    }
                    MemoryOpKind::Set { value, memory } => {
                        arg_uint(l, a.value, value as u64);
                        arg_str(l, a.memory_kind, memory.name());
                    }
                    _ => {}
                }
                if m.graph_node != 0 {
                    arg_uint(l, a.graph_node, m.graph_node);
                }
            });
        });
        sink.packet(p.as_bytes());
    }

    pub(super) fn intern_queue(&mut self, seq: &mut RsSeq, iid: u64) {
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
        // Whose queue, where a trace may hold several processes.
        let (process, of_process, on) = if self.process_in_queues {
            (
                format!(" · pid {}", self.pid),
                format!(" of process {}", self.pid),
                "on",
            )
        } else {
            (String::new(), String::new(), "of")
        };
        let (name, desc, category) = match (device, stream) {
            (_, UVM_STREAM) => (
                format!("GPU {device}{process} · unified memory"),
                format!(
                    "{api} unified-memory migrations, faults and thrashing{of_process} {on} {dev_name} (GPU {device}), and the CPU's page faults"
                ),
                wire::spec::CATEGORY_OTHER,
            ),
            _ => (
                format!("GPU {device}{process} · stream {stream}"),
                format!("{api} stream {stream}{of_process} on {dev_name} (GPU {device})"),
                wire::spec::CATEGORY_COMPUTE,
            ),
        };
        self.interned
            .nested(wire::interned::GPU_SPECIFICATIONS, |s| {
                s.varint(wire::spec::IID, iid)
                    .string(wire::spec::NAME, &name)
                    .string(wire::spec::DESCRIPTION, &desc)
                    .varint(wire::spec::CATEGORY, category);
            });
    }

    pub(super) fn intern_context(&mut self, seq: &mut RsSeq, iid: u64) {
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

    pub(super) fn intern_event_name(&mut self, seq: &mut RsSeq, n: NameId) {
        if seq.names.test_and_set(n.0) {
            return;
        }
        let s = self.names.get(n);
        self.interned.nested(wire::interned::EVENT_NAMES, |e| {
            e.varint(wire::interned::IID, n.0 as u64)
                .string(wire::interned::NAME, &s);
        });
    }

    pub(super) fn intern_arg_name(&mut self, seq: &mut RsSeq, n: NameId) {
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
}

/// Packet header of a render-stage event: its timestamp, the sequence flag
/// (it uses interned data) and the data it interns.
pub(super) fn rs_header(p: &mut Writer, seq: &mut RsSeq, ts: u64, interned: &Writer) {
    rs_timestamp(p, seq, ts);
    p.varint(
        wire::packet::SEQUENCE_FLAGS,
        wire::packet::SEQ_NEEDS_INCREMENTAL_STATE,
    );
    if !interned.is_empty() {
        p.bytes(wire::packet::INTERNED_DATA, interned.as_bytes());
    }
}

/// The timestamp of a render-stage packet: a delta on the sequence's clock
/// when in order, else absolute.
pub(super) fn rs_timestamp(p: &mut Writer, seq: &mut RsSeq, ts: u64) {
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

fn write_dim3(w: &mut Writer, field: u32, d: crate::model::Dim3) {
    w.nested(field, |x| {
        x.varint(wire::rse::X, d.x as u64)
            .varint(wire::rse::Y, d.y as u64)
            .varint(wire::rse::Z, d.z as u64);
    });
}

pub(super) fn arg_uint(l: &mut Writer, name: NameId, v: u64) {
    l.nested(wire::rse::LAUNCH_ARGS, |a| {
        a.varint(wire::arg::NAME_IID, name.0 as u64)
            .varint(wire::arg::UINT, v);
    });
}

pub(super) fn arg_double(l: &mut Writer, name: NameId, v: f64) {
    l.nested(wire::rse::LAUNCH_ARGS, |a| {
        a.varint(wire::arg::NAME_IID, name.0 as u64)
            .double(wire::arg::DOUBLE, v);
    });
}

/// Bytes per nanosecond are GB/s (10^9 bytes a second); `None` for a copy
/// without a duration.
pub(super) fn bandwidth_gbps(bytes: u64, dur_ns: u64) -> Option<f64> {
    (dur_ns > 0).then(|| bytes as f64 / dur_ns as f64)
}

pub(super) fn arg_str(l: &mut Writer, name: NameId, v: &str) {
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

#[cfg(test)]
mod tests {
    use super::super::Tables;
    use super::super::test_support::Packets;
    use super::*;
    use crate::model::{Dim3, KernelId};
    use gpu_trace_reader::pb::Fields;

    fn kernel_batch(starts: &[u64], kernel: KernelId) -> Batch {
        Batch {
            thread: 1,
            events: starts
                .iter()
                .enumerate()
                .map(|(i, &start)| {
                    let mut exec =
                        KernelExec::new(0, 1 + i as u64 + start, start, start + 10, kernel);
                    exec.context = 1;
                    exec.stream = 7;
                    exec.grid = Dim3::new(1, 1, 1);
                    exec.block = Dim3::new(1, 1, 1);
                    Event::Kernel(exec)
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
        let k = kernels.register(crate::model::KernelDesc::new(
            n.mangled,
            n.demangled,
            n.display,
            names.intern("sm_90"),
        ));
        let mut enc = Encoder::new(
            42,
            gpu_trace_testkit::BACKEND,
            ClockSpec::Boottime,
            None,
            Tables {
                names,
                kernels,
                devices: Arc::new(crate::registry::Devices::default()),
                counters: Arc::new(crate::registry::Counters::default()),
                callstacks: Arc::default(),
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
        // Our reader, which checks the trace processor's clock rules,
        // finds nothing wrong with the two parts as one sequence's.
        let mut file = gpu_trace_reader::pb::Writer::new();
        for p in &sink.0 {
            file.bytes(wire::TRACE_PACKET, p);
        }
        let t = gpu_trace_reader::Trace::from_bytes(file.as_bytes()).expect("a trace");
        let clocks: Vec<_> = t
            .problems
            .iter()
            .filter(|p| p.kind == gpu_trace_reader::ProblemKind::Clock)
            .collect();
        assert!(clocks.is_empty(), "{clocks:?}");
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

    #[test]
    fn kernels_and_copies_carry_ids_stages_and_interned_names_once() {
        use super::super::primary_event_id;
        use super::super::test_support::{Fixture, PID, all, at, s as st, u};
        use crate::model::{CopyKind, MemoryKind};
        use wire::rse as R;
        let mut f = Fixture::new(ClockSpec::Boottime);
        let n = f.kernels.names(&f.names, "_Z6vecAddPfS_S_i");
        let k = f.kernels.register(crate::model::KernelDesc::new(
            n.mangled,
            n.demangled,
            n.display,
            f.names.intern("sm_90"),
        ));
        let mut b = kernel_batch(&[1_000, 2_000], k);
        let mut op = MemoryOp::new(
            0,
            99,
            3_000,
            3_400,
            4096,
            MemoryOpKind::Copy {
                kind: CopyKind::HtoD,
                src: MemoryKind::Pinned,
                dst: MemoryKind::Device,
                peer: None,
            },
        );
        op.context = 1;
        op.stream = 7;
        b.events.push(Event::Memory(op));
        let b = [b];
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
        assert_eq!(ev.len(), 3);
        let corr = |i: usize| match &b[0].events[i] {
            Event::Kernel(k) => k.correlation_id,
            Event::Memory(m) => m.correlation_id,
            _ => unreachable!(),
        };
        for (i, e) in ev.iter().enumerate() {
            assert_eq!(u(e, &[R::EVENT_ID]), Some(primary_event_id(PID, corr(i))));
        }
        assert_eq!(u(ev[0], &[R::STAGE_IID]), Some(STAGE_KERNEL));
        assert_eq!(u(ev[0], &[R::DURATION]), Some(10));
        assert_eq!(u(ev[0], &[R::KERNEL_IID]), Some(k.0 as u64));
        assert_eq!(u(ev[2], &[R::STAGE_IID]), Some(STAGE_MEMCPY));
        assert_eq!(u(ev[2], &[R::DURATION]), Some(400));
        // The kernel, its queue and its name are interned with the first
        // event only.
        let interned = |field: u32| -> usize {
            sink.0
                .iter()
                .flat_map(|p| all(p, wire::packet::INTERNED_DATA))
                .map(|i| all(i.as_bytes().unwrap(), field).len())
                .sum()
        };
        assert_eq!(interned(wire::interned::COMPUTE_KERNELS), 1);
        let names: Vec<String> = sink
            .0
            .iter()
            .flat_map(|p| all(p, wire::packet::INTERNED_DATA))
            .flat_map(|i| all(i.as_bytes().unwrap(), wire::interned::EVENT_NAMES))
            .map(|e| {
                st(e.as_bytes().unwrap(), &[wire::interned::NAME])
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(names, ["vecAdd", "Memcpy HtoD"]);
    }
    /// A queue's name and description, as interned with its first event,
    /// by an encoder that names its process in queues or not.
    fn queue_spec(name_process: bool) -> (String, String) {
        use super::super::test_support::{Fixture, all, s as st, u};
        let mut f = Fixture::new(ClockSpec::Boottime);
        if name_process {
            f.enc.name_process_in_queues();
        }
        let n = f.kernels.names(&f.names, "_Z1kv");
        let k = f.kernels.register(crate::model::KernelDesc::new(
            n.mangled,
            n.demangled,
            n.display,
            f.names.intern("sm_90"),
        ));
        let b = [kernel_batch(&[1_000], k)];
        let ids = f.enc.prepare(&b);
        let mut sink = Packets::default();
        f.enc
            .write_render_stages(&mut RsSeq::default(), &b, &ids, &mut sink);
        let specs: Vec<(String, String)> = sink
            .0
            .iter()
            .flat_map(|p| all(p, wire::packet::INTERNED_DATA))
            .flat_map(|i| all(i.as_bytes().unwrap(), wire::interned::GPU_SPECIFICATIONS))
            .map(|v| v.as_bytes().unwrap())
            .filter(|sp| u(sp, &[wire::spec::IID]).is_some_and(|iid| iid >= QUEUE_IID_BASE))
            .map(|sp| {
                (
                    st(sp, &[wire::spec::NAME]).unwrap().to_owned(),
                    st(sp, &[wire::spec::DESCRIPTION]).unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(specs.len(), 1, "{specs:?}");
        specs.into_iter().next().unwrap()
    }

    #[test]
    fn queues_name_their_process_where_a_trace_holds_several() {
        use super::super::test_support::PID;
        assert_eq!(
            queue_spec(false),
            (
                "GPU 0 · stream 7".to_owned(),
                "CUDA stream 7 on GPU (GPU 0)".to_owned()
            )
        );
        assert_eq!(
            queue_spec(true),
            (
                format!("GPU 0 · pid {PID} · stream 7"),
                format!("CUDA stream 7 of process {PID} on GPU (GPU 0)")
            )
        );
    }
}
