//! Clock snapshots (the delta clock, a custom GPU clock) and GpuLog lines.

use super::{ClockSpec, DELTA_CLOCK, Encoder, PacketSink, RsSeq};
use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;

impl Encoder {
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
}

/// An absolute BOOTTIME timestamp, explicit because our sequences default
/// to the delta clock.
pub(super) fn absolute_timestamp(p: &mut Writer, ts: u64) {
    p.varint(wire::packet::TIMESTAMP, ts);
    p.varint(
        wire::packet::TIMESTAMP_CLOCK_ID,
        wire::clock::BOOTTIME as u64,
    );
}

/// Declares the delta clock at `t0` (BOOTTIME).
pub(super) fn write_delta_clock_snapshot(p: &mut Writer, t0: u64) {
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
